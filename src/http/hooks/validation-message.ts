import type { FastifySchemaValidationError } from 'fastify'

// Fastify's schema validation failure (FST_ERR_VALIDATION) in the contract's words:
// which field, and what it must be. Callers never see the framework's code or Ajv's
// JSON pointer syntax.

interface ValidationFailure {
  validation: (FastifySchemaValidationError & { parentSchema?: { description?: string } })[]
  validationContext?: string
}

export function isValidationFailure(err: unknown): err is ValidationFailure {
  return Array.isArray((err as { validation?: unknown }).validation)
}

/** `token: must be …` for each failed field, joined; a field's schema description says what it must be. */
export function validationMessage(err: ValidationFailure): string {
  const lines = err.validation.map((v) => {
    const params = v.params as { missingProperty?: string }
    const path = v.instancePath.split('/').filter(Boolean)
    if (v.keyword === 'required') return `${[...path, params.missingProperty].join('.')}: required`
    const field = path.join('.') || err.validationContext || 'request'
    const description = v.parentSchema?.description
    return `${field}: ${description ? `must be ${description}` : (v.message ?? 'is invalid')}`
  })
  return [...new Set(lines)].join('; ')
}
