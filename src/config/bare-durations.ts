import type { TSchema } from '@sinclair/typebox'
import { DURATION_DESCRIPTION } from './duration-description.js'
import { configSchema } from './validators.generated.js'
import { isPlainObject } from './sources.js'

// A duration given as a number is milliseconds (config/default.yaml says so, and writes
// each of its own with a unit). A number under 1000 is almost always seconds meant:
// `rateLimit: { max: 600, window: 60 }` is 600 calls per 60 ms, no limit at all;
// `platform.queueTimeout: 5` refuses every call that waits. Taken as written, and said.

/** One warning for each duration of `raw` (the merged settings) given as a number from 1 to 999. */
export function bareDurationWarnings(raw: Record<string, unknown>): string[] {
  const warnings: string[] = []
  walk(configSchema, raw, [], warnings)
  return warnings
}

function walk(schema: TSchema, value: unknown, path: string[], warnings: string[]): void {
  if (schema.description === DURATION_DESCRIPTION && Array.isArray(schema.anyOf)) {
    if (typeof value === 'number' && value >= 1 && value < 1000) {
      warnings.push(`${path.join('.')}: ${value} is read as ${value} ms (a duration given as a number is milliseconds); write ${value}s if seconds were meant, or ${value}ms to keep it`)
    }
    return
  }
  if (Array.isArray(schema.anyOf)) {
    for (const branch of schema.anyOf as TSchema[]) walk(branch, value, path, warnings)
    return
  }
  if (schema.type === 'array' && Array.isArray(value) && schema.items) {
    value.forEach((item, i) => walk(schema.items as TSchema, item, [...path, String(i)], warnings))
    return
  }
  if (schema.type !== 'object' || !isPlainObject(value)) return
  const properties = (schema.properties ?? {}) as Record<string, TSchema>
  const patterns = Object.values((schema.patternProperties ?? {}) as Record<string, TSchema>)
  for (const [key, child] of Object.entries(value)) {
    const own = properties[key] ?? patterns[0]
    if (own) walk(own, child, [...path, key], warnings)
  }
}
