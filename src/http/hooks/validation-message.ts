import type { FastifySchemaValidationError } from 'fastify'
import { shownValue } from '../../observe/caller-text.js'

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

function unknownField(name: string, context: string | undefined, schema: { properties?: Record<string, unknown> } | undefined): string {
  return notTaken(name, Object.keys(schema?.properties ?? {}), KINDS[context ?? ''] ?? 'a field')
}

/** `advertiserID: not a parameter of this call (it takes advertiserId, dryRun)`: what it is not, and what it could have been. */
export function notTaken(name: string, known: readonly string[], kind = 'a parameter'): string {
  return `${shownValue(name)}: not ${kind} of this call (${known.length === 0 ? 'it takes none' : `it takes ${known.join(', ')}`})`
}
