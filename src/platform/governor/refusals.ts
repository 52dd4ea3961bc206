import { DeadlineError, OverloadedError } from '../../errors.js'
import type { Priority } from './fair-queue.js'
import { NoIdleSeatError, type RefusalReason } from './seat.js'

/**
 * The error a refused call gets: NoIdleSeatError for background work (no caller waits for
 * it), GW_UPSTREAM_TIMEOUT for the deadline rule, else GW_OVERLOADED with a retry-after of
 * the pause left (`pauseLeftMs`), a second at least.
 */
export function refusal(credential: string, reason: RefusalReason, text: string, priority: Priority, pauseLeftMs: number): Error {
  if (priority !== 'caller') return new NoIdleSeatError(credential)
  if (reason === 'deadline') return new DeadlineError(text)
  return Object.assign(new OverloadedError(text), { retryAfterSec: Math.max(1, Math.ceil(pauseLeftMs / 1000)) })
}

export function pauseText(credential: string, pauseLeftMs: number): string {
  return `credential ${credential} is paused by the platform for ${Math.ceil(pauseLeftMs / 1000)} s`
}

/** Why a call that cannot end before its deadline is not sent. */
export function tooLate(expected: number | null, leftMs: number): string {
  return `calls of its kind take about ${Math.round((expected ?? 0) / 100) / 10} s at the platform and its deadline leaves ${Math.max(0, Math.round(leftMs / 100) / 10)} s`
}
