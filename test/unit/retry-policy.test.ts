import { describe, expect, it } from 'vitest'
import { backoffMs, fitsBudget, isRetryable, MAX_RETRIES, type Attempt } from '../../src/platform/client/retry-policy.js'

// Which failed platform calls are sent again, and when.

const read = (outcome: Attempt['outcome'], more: Partial<Attempt> = {}): Attempt => ({ read: true, replayable: true, retries: 0, outcome, ...more })

describe('isRetryable', () => {
  it.each([502, 503, 504])('retries a read answered %d', (status) => {
    expect(isRetryable(read({ status }))).toBe(true)
  })

  it.each([200, 400, 401, 404, 429, 500])('does not retry a read answered %d', (status) => {
    expect(isRetryable(read({ status }))).toBe(false)
  })

  it('does not retry a read whose answer says when to come back (retry-after)', () => {
    expect(isRetryable(read({ status: 503, retryAfter: true }))).toBe(false)
    expect(isRetryable(read({ status: 503, retryAfter: false }))).toBe(true)
  })

  it.each(['ECONNRESET', 'UND_ERR_SOCKET', 'EPIPE'])('retries a read whose connection was reset (%s)', (code) => {
    expect(isRetryable(read({ error: Object.assign(new Error('reset'), { code }) }))).toBe(true)
  })

  it('does not retry a timeout or a refused connection', () => {
    expect(isRetryable(read({ error: Object.assign(new Error('t'), { code: 'UND_ERR_HEADERS_TIMEOUT' }) }))).toBe(false)
    expect(isRetryable(read({ error: Object.assign(new Error('r'), { code: 'ECONNREFUSED' }) }))).toBe(false)
  })

  it('never retries a write, a streamed body, or a read already retried twice', () => {
    expect(isRetryable(read({ status: 503 }, { read: false }))).toBe(false)
    expect(isRetryable(read({ status: 503 }, { replayable: false }))).toBe(false)
    expect(isRetryable(read({ status: 503 }, { retries: MAX_RETRIES - 1 }))).toBe(true)
    expect(isRetryable(read({ status: 503 }, { retries: MAX_RETRIES }))).toBe(false)
  })
})

describe('backoffMs', () => {
  it('is full jitter under a ceiling that doubles', () => {
    expect([0, 1, 2].map((n) => backoffMs(n, () => 0.999))).toEqual([99, 199, 399])
    expect(backoffMs(10, () => 0.999)).toBe(999)
    expect(backoffMs(1, () => 0)).toBe(0)
  })
})

describe('fitsBudget', () => {
  it('starts a retry only if one more attempt as long as the last ends before the deadline', () => {
    expect(fitsBudget(1000, 100, 200, 1301)).toBe(true)
    expect(fitsBudget(1000, 100, 200, 1300)).toBe(false)
  })
})
