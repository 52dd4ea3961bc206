import type { Answer } from './knee-estimator.js'
import type { SeatOutcome } from './seat.js'
import type { WorkEstimates } from './work-estimates.js'

/** A deadline passed at this many times the call's expected time says the platform is overloaded; sooner, it says nothing. */
export const OVERLOAD_TIMEOUTS = 2

/**
 * What a call's outcome teaches the work estimates of its kind (an answer's time; a cut's
 * lower bound), and what it tells the limit: overload (a 502/503/504, a broken connection,
 * a deadline passed far past the expected time), ok (the platform's work done), or other.
 */
export function learnFrom(work: WorkEstimates, team: string, workClass: string, expected: number | null, outcome: SeatOutcome, now: number): Answer['outcome'] {
  if (outcome.kind === 'dropped') return 'other'
  if (outcome.kind === 'none') {
    if (outcome.timedOut) work.cut(team, workClass, outcome.latencyMs, now)
    // A connection error is overload; a deadline passed says so only past OVERLOAD_TIMEOUTS times the kind's expected time (a kind not yet known: nothing).
    if (!outcome.timedOut) return 'overload'
    return expected !== null && outcome.latencyMs >= OVERLOAD_TIMEOUTS * expected ? 'overload' : 'other'
  }
  const { status, latencyMs } = outcome
  if (status === 502 || status === 503 || status === 504) return 'overload'
  if (status === 429 || (status >= 400 && status < 500)) return 'other'
  // An answer, or a report that failed after its work (another 5xx): the platform's time.
  work.answered(team, workClass, latencyMs)
  return 'ok'
}
