import { describe, expect, it } from 'vitest'
import { isOwnRequestId, ownRequestId } from '../../src/request-id.js'
import { requestIdOf } from '../../src/routes/request-log.js'

// Issue 16, item 7: the id space of the gateway's own platform calls is closed to callers.

describe('request ids', () => {
  it.each([
    ['ownership-1', true],
    ['token-probe-abc', true],
    ['OWNERSHIP-1', true],
    ['Token-Probe-x', true],
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
    expect(requestIdOf({ 'x-request-id': 'ownership-spoofed' })).toMatch(/^[0-9a-f-]{36}$/)
    expect(requestIdOf({ 'x-request-id': 'trace-1' })).toBe('trace-1')
  })
})
