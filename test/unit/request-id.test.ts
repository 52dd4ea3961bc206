import { describe, expect, it } from 'vitest'
import { isOwnRequestId, newRequestId, ownRequestId } from '../../src/observe/request-id.js'
import { requestIdFor, requestIdOf } from '../../src/http/hooks/request-log.js'

// The id space of the gateway's own platform calls is closed to callers.

describe('request ids', () => {
  it.each([
    ['ownership-1', true],
    ['token-probe-abc', true],
    ['OWNERSHIP-1', true],
    ['Token-Probe-x', true],
    ['job-00abc123000145XyZ', true],
    ['JOB-1', true],
    ['refresh-ahead-1764500000000', true],
    ['job', false],
    ['jobs-1', false],
    ['refresh-1', false],
    ['ownership', false],
    ['my-ownership-1', false],
    ['token-probe', false],
    ['trace-abc.123:x', false],
  ])('%s lies in the gateway\'s own space: %s', (id, own) => {
    expect(isOwnRequestId(id)).toBe(own)
  })

  it('makes the gateway\'s own ids in its own space', () => {
    for (const kind of ['ownership', 'token-probe'] as const) expect(isOwnRequestId(ownRequestId(kind))).toBe(true)
  })

  it('replaces a caller\'s id in the gateway\'s space, keeps any other plain one', () => {
    expect(requestIdFor({ 'x-request-id': 'ownership-spoofed' })).toMatch(/^[0-9a-f-]{36}$/)
    expect(requestIdFor({ 'x-request-id': 'trace-1' })).toBe('trace-1')
    // Shaped like a team key (rgw_ and 16 base64url characters or more): a new id; a shorter one is no key.
    expect(requestIdFor({ 'x-request-id': 'trace.rgw_abcdefghij0123456789' })).toMatch(/^[0-9a-f-]{36}$/)
    expect(requestIdFor({ 'x-request-id': 'rgw_short' })).toBe('rgw_short')
    expect(requestIdOf({ headers: { 'x-request-id': 'ownership-spoofed' } })).toMatch(/^[0-9a-f-]{36}$/)
    expect(requestIdOf({ headers: { 'x-request-id': 'trace-1' } })).toBe('trace-1')
  })

  it('names a request by one id whoever asks, and each of two requests with the same headers by its own', () => {
    const headers = Object.freeze({ host: 'gw.test' })
    const req = { headers }
    const id = requestIdOf(req)
    expect(requestIdOf(req)).toBe(id)
    expect(requestIdOf({ headers })).not.toBe(id)
    expect(requestIdFor(headers)).not.toBe(requestIdFor(headers))
    // Kept off the headers: a copy of them (forwarded to the platform) carries nothing of it.
    expect(Object.getOwnPropertySymbols(headers)).toEqual([])
  })

  it('gives each caller request a new random id of the UUID form (version 4, RFC 9562 variant), never the same twice, across draws of random bytes', () => {
    const ids = Array.from({ length: 10_000 }, () => newRequestId())
    for (const id of [ids[0], ids[9_999]]) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(new Set(ids).size).toBe(ids.length)
    expect(requestIdFor({})).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
  })
})
