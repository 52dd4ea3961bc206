import { epochDay } from './report-query.js'

export interface TtlPolicy {
  /** Freshness of a report whose dateTo is not settled yet. */
  recentMs: number
  /** Freshness of a report whose dateTo is settled. */
  settledMs: number
  /** A day's figures stop changing on the platform this many days after it. */
  settledAfterDays: number
  /** The platform's time zone (IANA name): "today" is its calendar date. */
  timeZone: string
  staleWhileRevalidateMs: number
  staleIfErrorMs: number
}

/** Epoch ms: fresh until freshUntil; served stale while refreshing until staleUntil; served stale on platform failure until errorUntil. */
export interface Lifetimes {
  freshUntil: number
  staleUntil: number
  errorUntil: number
}

// Building a DateTimeFormat costs far more than using one, and there are few zones.
const formatters = new Map<string, Intl.DateTimeFormat>()

function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone)
  if (formatter === undefined) {
    // Gregorian calendar and Latin digits whatever the process's default locale.
    formatter = new Intl.DateTimeFormat('en-US-u-ca-gregory-nu-latn', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
    })
    formatters.set(timeZone, formatter)
  }
  return formatter
}

// Each zone's date at its last second asked. Every offset in the time zone database is a
// whole number of seconds, so within one second of UTC a zone's date does not change; a
// fill asks it once per report (lifetimes), and a burst of fills shares the answer:
// formatToParts costs some 25 µs a call.
const lastDates = new Map<string, { second: number; date: string }>()

/** The calendar date `YYYY-MM-DD` at the instant `now` (epoch ms) in `timeZone`. */
export function todayIn(timeZone: string, now: number): string {
  const second = Math.floor(now / 1000)
  const last = lastDates.get(timeZone)
  if (last !== undefined && last.second === second) return last.date
  const parts = formatterFor(timeZone).formatToParts(now)
  const part = (type: Intl.DateTimeFormatPartTypes): string => parts.find((p) => p.type === type)?.value ?? ''
  const date = `${part('year').padStart(4, '0')}-${part('month')}-${part('day')}`
  lastDates.set(timeZone, { second, date })
  return date
}

/**
 * Whether a report ending on `dateTo` no longer changes: true when today (in the
 * platform's zone) is MORE than settledAfterDays days after dateTo. With 3 days and
 * today 2026-01-10, dateTo 2026-01-06 is settled and 2026-01-07 is not yet.
 */
export function isSettled(
  dateTo: string,
  now: number,
  policy: Pick<TtlPolicy, 'settledAfterDays' | 'timeZone'>,
): boolean {
  const end = epochDay(dateTo)
  const today = epochDay(todayIn(policy.timeZone, now))
  if (end === null || today === null) throw new RangeError(`isSettled: not a calendar date (${dateTo})`)
  return today - end > policy.settledAfterDays
}

/**
 * Lifetimes of a report fetched at `fetchedAt`. Settledness is judged at fetch time:
 * it is the fetched figures that are final or not. Stale-if-error counts from the
 * end of freshness (RFC 5861) but never ends before the revalidation window.
 */
export function lifetimes(dateTo: string, fetchedAt: number, policy: TtlPolicy): Lifetimes {
  const freshUntil = fetchedAt + (isSettled(dateTo, fetchedAt, policy) ? policy.settledMs : policy.recentMs)
  const staleUntil = freshUntil + policy.staleWhileRevalidateMs
  const errorUntil = Math.max(freshUntil + policy.staleIfErrorMs, staleUntil)
  return { freshUntil, staleUntil, errorUntil }
}

/** The longest freshness the policy gives any report: what no stored entry may exceed. */
export function longestFreshness(policy: Pick<TtlPolicy, 'recentMs' | 'settledMs'>): number {
  return Math.max(policy.recentMs, policy.settledMs)
}

/**
 * Whether the platform's cache-control lets the gateway store a response. Only
 * `no-store` forbids it. `no-cache` and `private` do not: the platform (Laravel)
 * sends `no-cache, private` on every response, so honouring them would disable the
 * cache entirely, and freshness here is the gateway's own policy.
 */
export function cacheControlAllowsStore(header: string | readonly string[] | undefined): boolean {
  if (header === undefined) return true
  const joined = typeof header === 'string' ? header : header.join(',')
  return !withoutQuotedStrings(joined).split(',').some((directive) => directive.split('=')[0]?.trim().toLowerCase() === 'no-store')
}

/**
 * The header with each quoted argument (`no-cache="a, no-store"`, which may hold commas and
 * directive names) as `""`, in one pass: a quote that no unescaped quote closes leaves the
 * rest as it is (no later quote could close then either).
 */
function withoutQuotedStrings(header: string): string {
  let out = ''
  let from = 0
  for (let open = header.indexOf('"'); open !== -1; open = header.indexOf('"', from)) {
    let at = open + 1
    while (at < header.length && header[at] !== '"') at += header[at] === '\\' ? 2 : 1
    if (at >= header.length) break
    out += `${header.slice(from, open)}""`
    from = at + 1
  }
  return out + header.slice(from)
}
