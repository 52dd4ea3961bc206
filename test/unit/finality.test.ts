import { describe, expect, it } from 'vitest'
import { finalityOf, holdsFigures } from '../../src/reports/finality.js'

const UTC = { settledAfterDays: 3, timeZone: 'UTC' }

describe('which of a report\'s figures may still change', () => {
  it.each([
    // [dateFrom, dateTo, fetched at, settled through, provisional]
    ['2026-01-01', '2026-01-10', '2026-01-10T12:00:00Z', '2026-01-06', '2026-01-07/2026-01-10'],
    ['2026-01-01', '2026-01-06', '2026-01-10T12:00:00Z', '2026-01-06', null],
    ['2026-01-01', '2026-01-07', '2026-01-10T12:00:00Z', '2026-01-06', '2026-01-07/2026-01-07'],
    ['2026-01-08', '2026-01-09', '2026-01-10T12:00:00Z', '2026-01-06', '2026-01-08/2026-01-09'],
    // Across a month and a year.
    ['2025-12-20', '2026-01-02', '2026-01-03T00:00:00Z', '2025-12-30', '2025-12-31/2026-01-02'],
  ])('%s to %s fetched %s: settled through %s, provisional %s', (from, to, at, settled, provisional) => {
    expect(finalityOf(from, to, Date.parse(at), UTC)).toEqual({ settledThrough: settled, provisional })
  })

  it('counts days in the platform\'s zone and after its settledAfterDays', () => {
    // 23:30 UTC on the 10th is the 11th in Tokyo: a day later there.
    const at = Date.parse('2026-01-10T23:30:00Z')
    expect(finalityOf('2026-01-01', '2026-01-10', at, { settledAfterDays: 3, timeZone: 'Asia/Tokyo' }).settledThrough).toBe('2026-01-07')
    expect(finalityOf('2026-01-01', '2026-01-10', at, { settledAfterDays: 0, timeZone: 'UTC' })).toEqual({ settledThrough: '2026-01-09', provisional: '2026-01-10/2026-01-10' })
  })

  it('is said by an answer that holds figures (a 2xx), not by a redirect, a refusal or a failure', () => {
    expect([200, 203, 204, 299].map(holdsFigures)).toEqual([true, true, true, true])
    expect([199, 301, 302, 304, 400, 404, 422, 500, 502].map(holdsFigures)).toEqual([false, false, false, false, false, false, false, false, false])
  })
})
