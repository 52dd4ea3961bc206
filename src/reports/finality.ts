import { epochDay } from './report-query.js'
import { todayIn, type TtlPolicy } from './ttl-policy.js'

const DAY_MS = 86_400_000

/** Which of a report's figures may still change, as fetched at one instant. */
export interface Finality {
  /** The last calendar day (platform's zone) whose figures no longer change, `YYYY-MM-DD`. */
  settledThrough: string
  /** The report's days whose figures may still change, `<first>/<last>` (ISO 8601), or null: none. */
  provisional: string | null
}

/**
 * The finality of a report of `dateFrom` to `dateTo` fetched at `fetchedAt`: a day's
 * figures are settled once today, in the platform's zone, is more than
 * `settledAfterDays` days after it (ttl-policy.ts isSettled); judged at the fetch, since
 * it is the fetched figures that are final or not. With 3 days and a fetch on 2026-01-10,
 * days up to 2026-01-06 are settled, and a report of 2026-01-01 to 2026-01-10 has
 * 2026-01-07/2026-01-10 provisional.
 */
export function finalityOf(dateFrom: string, dateTo: string, fetchedAt: number, policy: Pick<TtlPolicy, 'settledAfterDays' | 'timeZone'>): Finality {
  const today = epochDay(todayIn(policy.timeZone, fetchedAt))
  const from = epochDay(dateFrom)
  const to = epochDay(dateTo)
  if (today === null || from === null || to === null) throw new RangeError(`finalityOf: not a calendar date (${dateFrom}, ${dateTo})`)
  const settled = today - policy.settledAfterDays - 1
  return { settledThrough: dayText(settled), provisional: to <= settled ? null : `${dayText(Math.max(from, settled + 1))}/${dateTo}` }
}

/**
 * Whether an answer of `status` holds a report's figures, and so says their finality: a
 * 2xx. A 3xx is a redirect (its location alone reaches the caller), a 4xx or 5xx a
 * refusal or a failure; each says what its call cost, not a finality it does not have.
 */
export function holdsFigures(status: number): boolean {
  return status >= 200 && status < 300
}

/** What a report answer's `report-settled-through` and `report-provisional-days` say (`none`: no day provisional). */
export function finalityFields(dateFrom: string, dateTo: string, fetchedAt: number, policy: Pick<TtlPolicy, 'settledAfterDays' | 'timeZone'>): { settledThrough: string; provisionalDays: string } {
  const f = finalityOf(dateFrom, dateTo, fetchedAt, policy)
  return { settledThrough: f.settledThrough, provisionalDays: f.provisional ?? 'none' }
}

function dayText(day: number): string {
  const at = new Date(0)
  at.setTime(day * DAY_MS)
  const year = at.getUTCFullYear()
  return `${String(year).padStart(4, '0')}-${String(at.getUTCMonth() + 1).padStart(2, '0')}-${String(at.getUTCDate()).padStart(2, '0')}`
}
