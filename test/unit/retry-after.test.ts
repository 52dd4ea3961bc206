import { describe, expect, it } from 'vitest'
import { retryAfterSeconds } from '../../src/platform/client/retry-after.js'

const NOW = Date.parse('2026-03-10T12:00:00Z')

describe('retryAfterSeconds', () => {
  it('reads delay-seconds as seconds, not milliseconds', () => {
    expect(retryAfterSeconds('2', NOW)).toBe(2)
    expect(retryAfterSeconds(' 120 ', NOW)).toBe(120)
    expect(retryAfterSeconds('0', NOW)).toBe(0)
    expect(retryAfterSeconds('2026', NOW)).toBe(2026)
  })

  it('reads an HTTP date as the seconds until it, rounded up', () => {
    expect(retryAfterSeconds('Tue, 10 Mar 2026 12:00:30 GMT', NOW)).toBe(30)
    expect(retryAfterSeconds('Tue, 10 Mar 2026 12:00:30 GMT', NOW + 500)).toBe(30)
    // The obsolete forms HTTP recipients must accept.
    expect(retryAfterSeconds('Tuesday, 10-Mar-26 12:01:00 GMT', NOW)).toBe(60)
    expect(retryAfterSeconds('Tue Mar 10 12:00:05 2026', NOW)).toBe(5)
  })

  it('reads a date in the past as 0', () => {
    expect(retryAfterSeconds('Mon, 09 Mar 2026 12:00:00 GMT', NOW)).toBe(0)
  })

  it('takes the first of repeated headers', () => {
    expect(retryAfterSeconds(['3', '9'], NOW)).toBe(3)
  })

  it.each([undefined, '', '  ', '-1', '1.5', 'soon', '2s', 'Tue, 99 Foo 2026'])('gives null for %j', (value) => {
    expect(retryAfterSeconds(value, NOW)).toBeNull()
  })
})
