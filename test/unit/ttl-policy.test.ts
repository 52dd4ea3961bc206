import { describe, it, expect } from 'vitest'
import { cacheControlAllowsStore, isSettled, lifetimes, todayIn, type TtlPolicy } from '../../src/reports/ttl-policy.js'

const MIN = 60_000
const HOUR = 60 * MIN
const POLICY: TtlPolicy = {
  recentMs: 5 * MIN,
  settledMs: 24 * HOUR,
  settledAfterDays: 3,
  timeZone: 'UTC',
  staleWhileRevalidateMs: MIN,
  staleIfErrorMs: 24 * HOUR,
}

// 2026-01-10T10:00Z: 23:00 on the 10th in Auckland (UTC+13 in summer), 02:00 in Los Angeles.
const JAN10_10Z = Date.UTC(2026, 0, 10, 10)
// 2026-01-10T12:00Z: already the 11th in Auckland.
const JAN10_12Z = Date.UTC(2026, 0, 10, 12)
// 2026-01-10T05:00Z: still the 9th in Los Angeles (UTC-8).
const JAN10_05Z = Date.UTC(2026, 0, 10, 5)

describe('todayIn', () => {
  it.each([
    { zone: 'UTC', now: JAN10_10Z, want: '2026-01-10' },
    { zone: 'UTC', now: Date.UTC(2026, 0, 10, 23, 59, 59, 999), want: '2026-01-10' },
    { zone: 'UTC', now: Date.UTC(2026, 0, 11), want: '2026-01-11' },
    { zone: 'Pacific/Auckland', now: JAN10_10Z, want: '2026-01-10' },
    { zone: 'Pacific/Auckland', now: JAN10_12Z, want: '2026-01-11' },
    { zone: 'America/Los_Angeles', now: JAN10_10Z, want: '2026-01-10' },
    { zone: 'America/Los_Angeles', now: JAN10_05Z, want: '2026-01-09' },
    { zone: 'Pacific/Kiritimati', now: Date.UTC(2025, 11, 31, 10), want: '2026-01-01' },
    { zone: 'UTC', now: Date.UTC(2024, 1, 29, 12), want: '2024-02-29' },
  ])('$zone at $now is $want', ({ zone, now, want }) => {
    expect(todayIn(zone, now)).toBe(want)
  })

  it('changes the date at a zone\'s midnight within a minute of UTC, asked just before it too', () => {
    // Monrovia was 44 min 30 s behind UTC until 1972: its midnight fell at 00:44:30 UTC.
    const midnight = Date.UTC(1971, 5, 1, 0, 44, 30)
    expect(todayIn('Africa/Monrovia', midnight - 1)).toBe('1971-05-31')
    expect(todayIn('Africa/Monrovia', midnight)).toBe('1971-06-01')
    expect(todayIn('Africa/Monrovia', midnight - 1)).toBe('1971-05-31')
    expect(todayIn('UTC', midnight)).toBe('1971-06-01')
  })

  it('rejects an unknown time zone', () => {
    expect(() => todayIn('Mars/Olympus_Mons', JAN10_10Z)).toThrow(RangeError)
  })
})

describe('isSettled', () => {
  // settledAfterDays 3: settled once today is MORE than 3 days after dateTo.
  it.each([
    { name: 'dateTo 4 days back is settled', zone: 'UTC', dateTo: '2026-01-06', now: JAN10_10Z, want: true },
    { name: 'dateTo exactly 3 days back is not', zone: 'UTC', dateTo: '2026-01-07', now: JAN10_10Z, want: false },
    { name: 'dateTo today is not', zone: 'UTC', dateTo: '2026-01-10', now: JAN10_10Z, want: false },
    { name: 'dateTo in the future is not', zone: 'UTC', dateTo: '2026-02-01', now: JAN10_10Z, want: false },
    { name: 'long settled', zone: 'UTC', dateTo: '2025-06-30', now: JAN10_10Z, want: true },
    { name: 'flips at UTC midnight (last ms before)', zone: 'UTC', dateTo: '2026-01-07', now: Date.UTC(2026, 0, 10, 23, 59, 59, 999), want: false },
    { name: 'flips at UTC midnight (first ms after)', zone: 'UTC', dateTo: '2026-01-07', now: Date.UTC(2026, 0, 11), want: true },
    { name: 'Auckland already on the 11th: 01-07 settled', zone: 'Pacific/Auckland', dateTo: '2026-01-07', now: JAN10_12Z, want: true },
    { name: 'UTC still on the 10th: 01-07 not settled', zone: 'UTC', dateTo: '2026-01-07', now: JAN10_12Z, want: false },
    { name: 'Los Angeles still on the 9th: 01-06 not settled', zone: 'America/Los_Angeles', dateTo: '2026-01-06', now: JAN10_05Z, want: false },
    { name: 'UTC already on the 10th: 01-06 settled', zone: 'UTC', dateTo: '2026-01-06', now: JAN10_05Z, want: true },
    { name: 'across a month end', zone: 'UTC', dateTo: '2026-02-25', now: Date.UTC(2026, 2, 1), want: true },
    { name: 'counts Feb 29 (4 days from 02-26 to 03-01)', zone: 'UTC', dateTo: '2024-02-26', now: Date.UTC(2024, 2, 1), want: true },
  ])('$name', ({ zone, dateTo, now, want }) => {
    expect(isSettled(dateTo, now, { settledAfterDays: 3, timeZone: zone })).toBe(want)
  })

  it('with settledAfterDays 0, yesterday is settled and today is not', () => {
    const policy = { settledAfterDays: 0, timeZone: 'UTC' }
    expect(isSettled('2026-01-09', JAN10_10Z, policy)).toBe(true)
    expect(isSettled('2026-01-10', JAN10_10Z, policy)).toBe(false)
  })

  it('rejects a date that is not one', () => {
    expect(() => isSettled('2026-02-30', JAN10_10Z, POLICY)).toThrow(RangeError)
  })
})

describe('lifetimes', () => {
  it.each([
    {
      name: 'recent report',
      dateTo: '2026-01-10',
      policy: POLICY,
      want: { freshUntil: JAN10_10Z + 5 * MIN, staleUntil: JAN10_10Z + 6 * MIN, errorUntil: JAN10_10Z + 5 * MIN + 24 * HOUR },
    },
    {
      name: 'settled report',
      dateTo: '2026-01-01',
      policy: POLICY,
      want: { freshUntil: JAN10_10Z + 24 * HOUR, staleUntil: JAN10_10Z + 24 * HOUR + MIN, errorUntil: JAN10_10Z + 48 * HOUR },
    },
    {
      name: 'stale-if-error shorter than revalidation still covers it',
      dateTo: '2026-01-10',
      policy: { ...POLICY, staleWhileRevalidateMs: 10 * MIN, staleIfErrorMs: 2 * MIN },
      want: { freshUntil: JAN10_10Z + 5 * MIN, staleUntil: JAN10_10Z + 15 * MIN, errorUntil: JAN10_10Z + 15 * MIN },
    },
    {
      name: 'no stale windows',
      dateTo: '2026-01-10',
      policy: { ...POLICY, staleWhileRevalidateMs: 0, staleIfErrorMs: 0 },
      want: { freshUntil: JAN10_10Z + 5 * MIN, staleUntil: JAN10_10Z + 5 * MIN, errorUntil: JAN10_10Z + 5 * MIN },
    },
    {
      name: 'settledness judged in the platform zone at fetch time',
      dateTo: '2026-01-07',
      policy: { ...POLICY, timeZone: 'Pacific/Auckland' },
      fetchedAt: JAN10_12Z,
      want: { freshUntil: JAN10_12Z + 24 * HOUR, staleUntil: JAN10_12Z + 24 * HOUR + MIN, errorUntil: JAN10_12Z + 48 * HOUR },
    },
  ])('$name', ({ dateTo, policy, fetchedAt, want }) => {
    expect(lifetimes(dateTo, fetchedAt ?? JAN10_10Z, policy)).toEqual(want)
  })
})

describe('cacheControlAllowsStore', () => {
  it.each([
    { header: undefined, want: true },
    { header: '', want: true },
    { header: 'no-cache, private', want: true },
    { header: 'private', want: true },
    { header: 'no-cache', want: true },
    { header: 'max-age=0, must-revalidate', want: true },
    { header: 'no-store', want: false },
    { header: 'No-Store', want: false },
    { header: 'NO-STORE', want: false },
    { header: 'private, no-store, max-age=0', want: false },
    { header: 'no-cache,no-store', want: false },
    { header: '  no-store  ', want: false },
    { header: 'no-store=1', want: false },
    { header: 'no-storex, x-no-store', want: true },
    { header: 'no-cache="set-cookie, no-store"', want: true },
    { header: ['no-cache', 'no-store'], want: false },
    { header: ['no-cache', 'private'], want: true },
    { header: 'no-cache="a\\", no-store", private', want: true },
    { header: 'no-cache="a, no-store', want: false },
    { header: 'private, "x", no-store, "unclosed', want: false },
  ])('$header → $want', ({ header, want }) => {
    expect(cacheControlAllowsStore(header)).toBe(want)
  })

  it('reads a header of unclosed quotes in one pass (a platform cache-control of `"` then `\\"` repeated)', () => {
    // Quoted strings looked for from every quote read 64 KiB of such a header in 2.2 s, 1 MiB in minutes.
    const header = `"${'\\"'.repeat(512 * 1024)}, no-store`
    const started = performance.now()
    expect(cacheControlAllowsStore(header)).toBe(false)
    expect(performance.now() - started).toBeLessThan(2000)
  })
})
