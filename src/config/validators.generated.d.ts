// Types of validators.generated.js, Ajv's code for ConfigSchema and TeamsSchema, and ConfigSchema as JSON (scripts/config-validators.mjs).
import type { TSchema } from '@sinclair/typebox'
import type { ValidateFunction } from 'ajv'

export const validateConfig: ValidateFunction
export const validateTeams: ValidateFunction
export const configSchema: TSchema
