import type { FastifySchemaValidationError } from 'fastify'
import { shownValue } from '../../observe/caller-text.js'
import { SHORTEST_REDACTED } from '../../observe/logger.js'

// Fastify's schema validation failure (FST_ERR_VALIDATION) in the contract's words:
// which field, and what it must be. Callers never see the framework's code or Ajv's
// JSON pointer syntax.

interface ValidationFailure {
  validation: (FastifySchemaValidationError & { parentSchema?: { description?: string; properties?: Record<string, unknown> } })[]
  validationContext?: string
}

export function isValidationFailure(err: unknown): err is ValidationFailure {
  return Array.isArray((err as { validation?: unknown }).validation)
}

/**
 * `token: must be …` for each failed field, joined; a field's schema description says what it
 * must be. `scrub` redacts the secrets in a name the caller chose before it is bounded: a
 * secret longer than the bound, cut first, would leave its head for no scrub to find.
 */
export function validationMessage(err: ValidationFailure, scrub: (text: string) => string = (text) => text): string {
  const lines = err.validation.map((v) => {
    const params = v.params as { missingProperty?: string; additionalProperty?: string }
    const path = v.instancePath.split('/').filter(Boolean)
    if (v.keyword === 'required') return `${[...path, params.missingProperty].join('.')}: required`
    if (v.keyword === 'additionalProperties') return unknownField(scrub([...path, params.additionalProperty].join('.')), err.validationContext, v.parentSchema)
    const field = path.join('.') || err.validationContext || 'request'
    // A query parameter arrives as a string, or as a list when given more than once: a
    // string parameter that is not a string was repeated.
    if (err.validationContext === 'querystring' && v.keyword === 'type' && (v.params as { type?: unknown }).type === 'string') return `${field}: given more than once`
    // A whole body that is no object (a list, a string, none) in the proxy listener's words.
    if (err.validationContext === 'body' && path.length === 0 && v.keyword === 'type' && (v.params as { type?: unknown }).type === 'object') return 'body: must be a JSON object'
    const description = v.parentSchema?.description
    return `${field}: ${description ? `must be ${description}` : (v.message ?? 'is invalid')}`
  })
  return [...new Set(lines)].join('; ')
}

const KINDS: Record<string, string> = { querystring: 'a parameter', params: 'a path parameter', body: 'a field of the body' }

/**
 * A name an admin call does not take is repeated only where that tells nothing of a secret:
 * when it is shorter than any secret the answer redacts (SHORTEST_REDACTED), or a near
 * spelling of a name the call takes (`advertiserID`, `dry_run`, `advertiser`, `tema`): what
 * decides is the name and the call's public names, never a secret. Any other may be a guess
 * at a secret of the gateway's (a viewer's token is a right one, so no bound of guesses
 * counts it), and whether its echo came back `[REDACTED]` would answer the guess.
 */
function unknownField(name: string, context: string | undefined, schema: { properties?: Record<string, unknown> } | undefined): string {
  const known = Object.keys(schema?.properties ?? {})
  const kind = KINDS[context ?? ''] ?? 'a field'
  return name.length < SHORTEST_REDACTED || known.some((k) => nearSpelling(name, k)) ? notTaken(name, known, kind) : notTakenUnnamed(known, kind)
}

/**
 * Whether `name` is `known` misspelt: as letters and digits of one case, it begins `known`,
 * or they are two edits apart at most. Not a name that `known` begins (`team…` of any
 * length): a secret may begin with a word a call takes.
 */
export function nearSpelling(name: string, known: string): boolean {
  const [a, b] = [spelling(name), spelling(known)]
  if (a.length === 0) return false
  return b.startsWith(a) || (Math.abs(a.length - b.length) <= 2 && a.length <= 64 && edits(a, b) <= 2)
}

/** A name as letters and digits of one case: `dry_run`, `dryRun` and `DryRun` are one. */
function spelling(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]/g, '')
}

/** The Levenshtein distance of two short texts. */
function edits(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const next = [i]
    for (let j = 1; j <= b.length; j++) next[j] = Math.min((row[j] as number) + 1, (next[j - 1] as number) + 1, (row[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1))
    row = next
  }
  return row[b.length] as number
}

/** `advertiserID: not a parameter of this call (it takes advertiserId, dryRun)`: what it is not, and what it could have been. */
export function notTaken(name: string, known: readonly string[], kind = 'a parameter'): string {
  return `${shownValue(name)}: not ${kind} of this call (${takes(known)})`
}

/** The refusal of a name not repeated (unknownField): what the call takes, and why the name is not shown. */
function notTakenUnnamed(known: readonly string[], kind: string): string {
  return `${kind} not of this call (${takes(known)}); its name is not repeated: of ${SHORTEST_REDACTED} characters or more and no other spelling of one the call takes, it may be a secret`
}

function takes(known: readonly string[]): string {
  return known.length === 0 ? 'it takes none' : `it takes ${known.join(', ')}`
}
