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
  return durationsOf(raw)
    .filter(({ value }) => typeof value === 'number' && value >= 1 && value < 1000)
    .map(({ path, value }) => `${path.join('.')}: ${String(value)} is read as ${String(value)} ms (a duration given as a number is milliseconds); write ${String(value)}s if seconds were meant, or ${String(value)}ms to keep it`)
}

/** Each duration setting `raw` (the merged settings) holds, with its path: a setting, a team's, an item of a list. */
export function durationsOf(raw: Record<string, unknown>): { path: string[]; value: unknown }[] {
  const found: { path: string[]; value: unknown }[] = []
  walk(configSchema, raw, [], found)
  return found
}

function walk(schema: TSchema, value: unknown, path: string[], found: { path: string[]; value: unknown }[]): void {
  if (schema.description === DURATION_DESCRIPTION && Array.isArray(schema.anyOf)) {
    found.push({ path, value })
    return
  }
  if (Array.isArray(schema.anyOf)) {
    for (const branch of schema.anyOf as TSchema[]) walk(branch, value, path, found)
    return
  }
  if (schema.type === 'array' && Array.isArray(value) && schema.items) {
    value.forEach((item, i) => walk(schema.items as TSchema, item, [...path, String(i)], found))
    return
  }
  if (schema.type !== 'object' || !isPlainObject(value)) return
  const properties = (schema.properties ?? {}) as Record<string, TSchema>
  const patterns = Object.values((schema.patternProperties ?? {}) as Record<string, TSchema>)
  for (const [key, child] of Object.entries(value)) {
    const own = properties[key] ?? patterns[0]
    if (own) walk(own, child, [...path, key], found)
  }
}
