import { describe, expect, it } from 'vitest'
import { retryAfterMs, retryAfterSeconds } from '../../src/platform/pauses/retry-after.js'
import { inTimeZone } from '../helpers/time-zone.js'

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

describe('retryAfterMs: the one reader for pauses and callers', () => {
  it.each([
    ['7', 7000],
    [' 0 ', 0],
    ['Tue, 10 Mar 2026 12:00:05 GMT', 5000],
    ['Tue, 10 Mar 2026 11:59:00 GMT', 0],
    [undefined, null],
    ['soon', null],
    ['-3', null],
  ])('%s → %s ms', (value, ms) => {
    expect(retryAfterMs(value, NOW)).toBe(ms)
  })

  it('reads an asctime date as GMT whatever the zone the gateway runs in', () => {
    inTimeZone('America/New_York', () => {
      // Local time is now five hours behind UTC.
      expect(new Date(NOW).getHours()).not.toBe(new Date(NOW).getUTCHours())
      expect(retryAfterMs('Tue Mar 10 12:00:05 2026', NOW)).toBe(5000)
      expect(retryAfterSeconds('Tue Mar 10 12:00:05 2026', NOW)).toBe(5)
    })
  })
})
