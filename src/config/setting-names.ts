import type { TSchema } from '@sinclair/typebox'
import { configSchema } from './validators.generated.js'

// The names of the settings the schema knows at a place of the configuration: an unknown
// setting's message names the one it was likely meant to be.

/** The setting names the schema knows under `path` (a team's, a credential's, … and every branch of a choice). */
export function settingsAt(path: readonly string[]): string[] {
  let schemas: TSchema[] = [configSchema]
  for (const segment of path) schemas = schemas.flatMap(branches).flatMap((schema) => childOf(schema, segment))
  return [...new Set(schemas.flatMap(branches).flatMap((schema) => Object.keys((schema.properties ?? {}) as Record<string, TSchema>)))]
}

function branches(schema: TSchema): TSchema[] {
  return Array.isArray(schema.anyOf) ? (schema.anyOf as TSchema[]).flatMap(branches) : [schema]
}

function childOf(schema: TSchema, segment: string): TSchema[] {
  if (schema.type === 'array' && schema.items && /^\d+$/.test(segment)) return [schema.items as TSchema]
  if (schema.type !== 'object') return []
  const own = (schema.properties as Record<string, TSchema> | undefined)?.[segment]
  return own ? [own] : Object.values((schema.patternProperties ?? {}) as Record<string, TSchema>)
}
