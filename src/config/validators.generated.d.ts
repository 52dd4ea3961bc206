// Types of validators.generated.js, Ajv's code for ConfigSchema and TeamsSchema (scripts/config-validators.mjs).
import type { ValidateFunction } from 'ajv'

export const validateConfig: ValidateFunction
export const validateTeams: ValidateFunction
