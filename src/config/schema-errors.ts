import type { ErrorObject } from 'ajv'
import { maskUrlPassword } from './mask-url.js'
import { nearestName } from './near-names.js'
import { settingsAt } from './setting-names.js'
import { ENV_KEYS, getPath } from './sources.js'
import { validateConfig } from './validators.generated.js'

// Validation against the one schema, and its errors as one line per key that says what
// is wrong, never a secret's value.

// validateConfig is Ajv's code for ConfigSchema, generated from it (scripts/config-validators.mjs).
// Its errors are verbose: they carry their parentSchema, whose `description` is the hint a
// union (Duration, Size) gives; without it every branch's own failure would be the message.

export function validateSchema(raw: Record<string, unknown>, envSources: Map<string, string>, problems: string[]): void {
  if (validateConfig(raw)) return
  problems.push(...schemaProblems(validateConfig.errors ?? [], raw, envSources))
}

/**
 * A validator's errors as one line per key, each naming the key as the config does;
 * `at`: where in `raw` the validated value sits (validateTeams validates `teams`).
 */
export function schemaProblems(errors: ErrorObject[], raw: Record<string, unknown>, envSources: Map<string, string>, at: readonly string[] = []): string[] {
  const lines = new Set<string>()
  for (const error of withoutBranchNoise(errors)) {
    const line = describeError(error, raw, envSources, at)
    if (line) lines.add(line)
  }
  return [...lines]
}

// Union branches each report their own failure; one line per key reads better. A
// union (anyOf) whose branches only failed at its own value stands for them all; one
// whose branch got further (an object branch with a bad member) gives way to the
// deeper errors, which name the member.
function withoutBranchNoise(errors: ErrorObject[]): ErrorObject[] {
  const dropped = new Set<ErrorObject>()
  for (const union of errors) {
    if (union.keyword !== 'anyOf') continue
    const branches = errors.filter((e) => e !== union && e.schemaPath.startsWith(`${union.schemaPath}/`))
    const deeper = branches.some((e) => e.instancePath.startsWith(`${union.instancePath}/`))
    // A nullable setting (a string or null) given a string that breaks a rule: the rule
    // is the message ("at least 16 characters"), not "must match a schema in anyOf".
    const ruled = branches.filter((e) => e.keyword !== 'type')
    const oneBranch = ruled.length > 0 && new Set(ruled.map((e) => branchOf(union, e))).size === 1
    const described = (union.parentSchema as { description?: string } | undefined)?.description !== undefined
    if (!deeper && oneBranch && !described) {
      for (const e of branches) if (!ruled.includes(e)) dropped.add(e)
      dropped.add(union)
      continue
    }
    for (const e of branches) if (!deeper || e.instancePath === union.instancePath) dropped.add(e)
    if (deeper) dropped.add(union)
  }
  return errors.filter((e) => !dropped.has(e))
}

function branchOf(union: ErrorObject, e: ErrorObject): string {
  return e.schemaPath.slice(union.schemaPath.length + 1).split('/')[0] ?? ''
}

function describeError(error: ErrorObject, raw: Record<string, unknown>, envSources: Map<string, string>, at: readonly string[]): string | null {
  const segments = [...at, ...error.instancePath.split('/').slice(1).map(unescapePointer)]
  if (error.keyword === 'additionalProperties') {
    const extra = (error.params as { additionalProperty: string }).additionalProperty
    const meant = nearestName(extra, settingsAt(segments))
    return `${[...segments, extra].join('.')}: unknown setting${meant === null ? '' : `; did you mean ${[...segments, meant].join('.')}?`}`
  }
  const dotted = segments.join('.')
  // A value of the environment is named by its variable; an item of a list variable
  // (ADMIN_HOSTS) by the list's: the operator wrote no `admin.hosts.1`.
  const name = variableOf(segments, envSources) ?? (dotted || '(root)')
  const value = getPath(raw, segments)
  const hidden = (envSources.has(dotted) && isSecretPath(dotted)) || TEAM_KEYS.test(dotted) || TEAM_WEBHOOK.test(dotted) || HOLDS_PASSWORD.has(dotted)
  const shown = hidden ? '' : ` (got ${JSON.stringify(maskUrlPassword(value))})`
  if (error.keyword === 'required') {
    return `${dotted ? `${dotted}.` : ''}${(error.params as { missingProperty: string }).missingProperty}: required`
  }
  return `${name}: ${hintFor(dotted, error)}${shown}`
}

/** The variable that set the setting at `segments`, or the list holding it; undefined for a setting of a file or the defaults. */
function variableOf(segments: readonly string[], envSources: Map<string, string>): string | undefined {
  const own = envSources.get(segments.join('.'))
  if (own !== undefined || segments.length < 2 || !/^\d+$/.test(segments.at(-1) as string)) return own
  return envSources.get(segments.slice(0, -1).join('.'))
}

function hintFor(dotted: string, error: ErrorObject): string {
  const schema = error.parentSchema as NumberSchema | undefined
  const range = schema ? rangeOf(schema) : null
  if (schema?.description) return range ? `must be ${range}: ${schema.description}` : `must be ${schema.description}`
  if (error.keyword === 'minLength') return `must be at least ${(error.params as { limit: number }).limit} characters long`
  if (/port$/i.test(dotted)) return 'must be an integer from 0 to 65535'
  if (dotted === 'logLevel') return 'must be one of fatal, error, warn, info, debug, trace, silent'
  if (dotted.endsWith('baseUrl')) return 'must be an http:// or https:// URL'
  if (dotted === 'redis.url') return 'must be a redis:// or rediss:// URL'
  if (range) return `must be ${range}`
  if (error.keyword === 'anyOf' && schema) return `must be ${kindsOf(schema)}`
  if (error.keyword === 'type' && schema) return `must be ${kindsOf(schema)}`
  return error.message ?? 'is invalid'
}

interface NumberSchema {
  description?: string
  type?: string
  minimum?: number
  maximum?: number
  exclusiveMinimum?: number
  exclusiveMaximum?: number
}

interface KindSchema extends NumberSchema {
  anyOf?: KindSchema[]
  const?: unknown
  enum?: unknown[]
  minLength?: number
  minItems?: number
  items?: KindSchema
  properties?: Record<string, unknown>
}

// What a setting takes, in words (Ajv's own are `must be object`), a union's each branch's
// kind joined by "or" ("a non-empty string or null"), so that a setting no description
// explains still says what to write; a mapping names its settings.
function kindsOf(schema: KindSchema): string {
  const range = rangeOf(schema)
  if (range) return range
  if (schema.description) return schema.description
  if (schema.anyOf) return schema.anyOf.map(kindsOf).join(' or ')
  if (schema.const !== undefined) return JSON.stringify(schema.const)
  if (schema.enum) return schema.enum.map((v) => JSON.stringify(v)).join(' or ')
  switch (schema.type) {
    case 'null': return 'null'
    case 'boolean': return 'true or false'
    case 'integer': return 'a whole number'
    case 'number': return 'a number'
    case 'string': return schema.minLength ? 'a non-empty string' : 'a string'
    case 'array': return `a list of ${schema.items ? itemKindsOf(schema.items) : 'values'}${schema.minItems ? ` (at least ${schema.minItems})` : ''}`
    case 'object': return mappingOf(Object.keys(schema.properties ?? {}))
    default: return 'a value of another kind'
  }
}

// A list's items in words, a mapping's in the plural: "a list of mappings of the settings
// (host, port)".
function itemKindsOf(items: KindSchema): string {
  return kindsOf(items).replace(/^a mapping of its settings/, 'mappings of the settings')
}

// A mapping in words, by the settings it has.
function mappingOf(settings: readonly string[]): string {
  return settings.length > 0 ? `a mapping of its settings (${settings.join(', ')})` : 'a mapping'
}

// The values a number setting takes, in words: a description says what the setting is
// for, this what it may be ("a whole number, at least 1").
function rangeOf(schema: NumberSchema): string | null {
  if (schema.type !== 'integer' && schema.type !== 'number') return null
  const kind = schema.type === 'integer' ? 'a whole number' : 'a number'
  if (schema.minimum !== undefined && schema.maximum !== undefined) return `${kind} from ${schema.minimum} to ${schema.maximum}`
  if (schema.minimum !== undefined && schema.exclusiveMaximum !== undefined) return `${kind} from ${schema.minimum}, below ${schema.exclusiveMaximum}`
  if (schema.minimum !== undefined) return `${kind}, at least ${schema.minimum}`
  if (schema.exclusiveMinimum !== undefined) return `${kind} above ${schema.exclusiveMinimum}`
  if (schema.exclusiveMaximum !== undefined) return `${kind} below ${schema.exclusiveMaximum}`
  return kind
}

// A team key list may hold a plaintext key by mistake: never repeat it.
const TEAM_KEYS = /^teams\.[^.]+\.keys(\.\d+(\.hash)?)?$/
// A team's webhook secret, its URL (a receiver's own token rides in its path or query:
// Slack's /services/T…/B…/<token>, ?tok=…), and its webhook as a whole (a wrong shape of it holds both).
const TEAM_WEBHOOK = /^teams\.[^.]+\.webhook(\.secret|\.url)?$/
// Settings whose value holds a password in some form (a malformed URL cannot be masked).
const HOLDS_PASSWORD = new Set(['redis.url'])

function isSecretPath(dotted: string): boolean {
  return ENV_KEYS.some((k) => k.secret && k.path.join('.') === dotted)
}

function unescapePointer(s: string): string {
  return s.replace(/~1/g, '/').replace(/~0/g, '~')
}
