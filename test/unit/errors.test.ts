import { STATUS_CODES } from 'node:http'
import Fastify from 'fastify'
import { describe, expect, it } from 'vitest'
import * as errorModule from '../../src/errors.js'
import { allErrors } from '../../src/errors.js'

// Contract, "Errors": every error the gateway answers with has a GW_ code and a status,
// and Fastify serializes it as {statusCode, code, error, message}.

type AnyErrorClass = new (...args: unknown[]) => Error & { code: string; statusCode: number }
const catalogue = Object.entries(allErrors) as [string, AnyErrorClass][]

// The statuses the contract fixes for its codes; admin-only codes are the implementation's.
const CONTRACT_STATUS: Record<string, number[]> = {
  GW_BAD_QUERY: [400],
  GW_UNAUTHORIZED: [401],
  GW_FORBIDDEN: [403],
  GW_NOT_FOUND: [404],
  GW_RATE_LIMITED: [429],
  GW_PLATFORM_AUTH: [502],
  GW_PLATFORM_REFUSED: [502],
  GW_UPSTREAM: [502],
  GW_UPSTREAM_TIMEOUT: [504],
  GW_BAD_REQUEST: [400],
  GW_PAYLOAD_TOO_LARGE: [413],
  GW_OVERLOADED: [503],
}

// Every constructor is named FastifyError: the catalogue's names say which takes a number.
const NUMBER_ARGUMENT = new Set(['RateLimitedError', 'PayloadTooLargeError', 'HeadersTooLargeError'])
const nameOf = new Map(catalogue.map(([name, E]) => [E, name]))

/** One instance of each error, with a made-up argument for its message. */
function make(Err: AnyErrorClass): Error & { code: string; statusCode: number } {
  return new Err(NUMBER_ARGUMENT.has(nameOf.get(Err) ?? '') ? 42 : 'detail-x')
}

/** An @fastify/error constructor (its prototype carries the library's marker) of a GW_* code. */
function isGatewayError(value: unknown): value is AnyErrorClass {
  if (typeof value !== 'function' || !(Symbol.for('fastify-error-generic') in value.prototype)) return false
  return new (value as AnyErrorClass)('detail-x').code.startsWith('GW_')
}

describe('the error catalogue (src/errors.ts)', () => {
  it('lists every GW_* error the module exports', () => {
    const exported = Object.entries(errorModule).filter(([, value]) => isGatewayError(value))
    expect(exported.length).toBeGreaterThan(0)
    const listed = new Set<unknown>(Object.values(allErrors))
    expect(exported.filter(([, E]) => !listed.has(E)).map(([name]) => name)).toEqual([])
  })

  it('holds every code of the contract', () => {
    const codes = new Set(catalogue.map(([, E]) => make(E).code))
    for (const code of Object.keys(CONTRACT_STATUS)) expect(codes).toContain(code)
  })

  it.each(catalogue)('%s has a GW_ code and a 4xx/5xx status', (_name, Err) => {
    const err = make(Err)
    expect(err).toBeInstanceOf(Error)
    expect(err.code).toMatch(/^GW_[A-Z_]+$/)
    expect(err.statusCode).toBeGreaterThanOrEqual(400)
    expect(err.statusCode).toBeLessThan(600)
    if (CONTRACT_STATUS[err.code]) expect(CONTRACT_STATUS[err.code]).toContain(err.statusCode)
  })

  it('gives a code the same status wherever it is used', () => {
    const statusOf = new Map<string, number>()
    for (const [, E] of catalogue) {
      const { code, statusCode } = make(E)
      expect(statusOf.get(code) ?? statusCode, code).toBe(statusCode)
      statusOf.set(code, statusCode)
    }
  })

  it('keeps the cause it is given', () => {
    const cause = new Error('socket hang up')
    expect(new allErrors.UpstreamError('ECONNRESET', { cause }).cause).toBe(cause)
  })

  it.each(catalogue)('%s serializes in Fastify\'s shape', async (_name, Err) => {
    const app = Fastify({ logger: false })
    app.get('/', async () => {
      throw make(Err)
    })
    const res = await app.inject({ method: 'GET', url: '/' })
    await app.close()
    const expected = make(Err)
    expect(res.statusCode).toBe(expected.statusCode)
    expect(res.headers['content-type']).toMatch(/^application\/json/)
    expect(res.json()).toEqual({
      statusCode: expected.statusCode,
      code: expected.code,
      error: STATUS_CODES[expected.statusCode],
      message: expected.message,
    })
  })

  it('puts the argument into the message', () => {
    expect(new allErrors.BadQueryError('dateFrom: not a calendar date (2026-02-30)').message).toBe('dateFrom: not a calendar date (2026-02-30)')
    expect(new allErrors.RateLimitedError(42).message).toBe('rate limit reached; retry in 42 s')
    expect(new allErrors.UpstreamError('ECONNRESET').message).toBe('the platform failed: ECONNRESET')
  })
})
