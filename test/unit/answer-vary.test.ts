import { describe, expect, it } from 'vitest'
import { varyAllowsSharing } from '../../src/reports/answer-vary.js'

describe('varyAllowsSharing', () => {
  it.each([
    [undefined, true],
    ['', true],
    ['Accept-Language', true],
    ['accept, accept-encoding, content-type', true],
    ['Authorization', true],
    ['Origin, Cookie', true],
    [['Accept-Language', 'Origin'], true],
    ['*', false],
    ['Accept-Language, *', false],
    [' * ', false],
    ['X-Request-Id', false],
    ['accept, TRACEPARENT', false],
    [['Accept-Language', 'x-request-id'], false],
  ] as const)('vary %j: %s', (vary, shared) => {
    expect(varyAllowsSharing(vary)).toBe(shared)
  })
})
