import { describe, expect, it } from 'vitest'
import { retryAfterMs, retryAfterSeconds, withBoundedRetryAfter } from '../../src/platform/pauses/retry-after.js'
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

  it('reads a retry-after on several lines as none: the field is one value, and two say no one time', () => {
    expect(retryAfterSeconds(['3', '9'], NOW)).toBeNull()
    expect(retryAfterSeconds(['3', '3'], NOW)).toBeNull()
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

describe('withBoundedRetryAfter: the retry-after a caller is told, the pause it draws', () => {
  const MAX_PAUSE_MS = 60_000
  const told = (value: string | string[] | undefined) => withBoundedRetryAfter({ 'content-type': 'application/json', 'retry-after': value }, NOW, MAX_PAUSE_MS)['retry-after']

  it.each([
    ['7', '7'],
    ['60', '60'],
    ['61', '60'],
    ['99999999999', '60'],
    ['9'.repeat(400), '60'],
    ['Tue, 10 Mar 2026 12:00:05 GMT', '5'],
    ['Tue, 10 Mar 2026 12:00:00 GMT', '0'],
    ['Mon, 09 Mar 2026 12:00:00 GMT', '0'],
    ['Sat, 10 Mar 5026 12:00:00 GMT', '60'],
  ])('%s → %s', (value, seconds) => {
    expect(told(value)).toBe(seconds)
  })

  it('rounds a date part of a second ahead up, and stays within a maxPause that is no whole second', () => {
    expect(told('Tue, 10 Mar 2026 12:00:01 GMT')).toBe('1')
    expect(withBoundedRetryAfter({ 'retry-after': '9' }, NOW, 1500)['retry-after']).toBe('2')
  })

  it.each([['-5'], ['1.5'], ['abc'], [''], [['1', '99999999999']]])('drops %j: what the platform said is no time', (value) => {
    const headers = withBoundedRetryAfter({ 'content-type': 'application/json', 'retry-after': value }, NOW, MAX_PAUSE_MS)
    expect(headers).toEqual({ 'content-type': 'application/json' })
  })

  it('leaves headers without a retry-after as they are', () => {
    const headers = { 'content-type': 'application/json' }
    expect(withBoundedRetryAfter(headers, NOW, MAX_PAUSE_MS)).toBe(headers)
  })
})
