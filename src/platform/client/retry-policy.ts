// Which failed platform calls are sent again: reads only, on a gateway-side
// failure of the platform's front (502/503/504) that says no time to come back, or a connection reset, at most twice,
// after an exponential backoff with full jitter, and only inside the call's time budget.

export const MAX_RETRIES = 2
const BASE_DELAY_MS = 100
const MAX_DELAY_MS = 1000

const RETRIED_STATUSES = new Set([502, 503, 504])
// undici reports a connection the platform closed mid-call as UND_ERR_SOCKET.
const RESET_CODES = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET'])

export interface Attempt {
  read: boolean
  /** A string or buffer body (or none): a stream cannot be sent again. */
  replayable: boolean
  /** Retries already made. */
  retries: number
  /** The platform's status (and whether its `retry-after` says a time: retryAfterMs), or the error of a call that got none. */
  outcome: { status: number; retryAfter?: boolean } | { error: unknown }
}

export function isRetryable(a: Attempt): boolean {
  if (!a.read || !a.replayable || a.retries >= MAX_RETRIES) return false
  // A platform that says when to come back (retry-after) is taken at its word: the caller
  // gets the answer and its retry-after, rather than a retry sooner than asked.
  if ('status' in a.outcome) return RETRIED_STATUSES.has(a.outcome.status) && !a.outcome.retryAfter
  const code = (a.outcome.error as { code?: string } | null)?.code
  return code !== undefined && RESET_CODES.has(code)
}

/** Full jitter: anywhere between 0 and the exponential ceiling of this retry. */
export function backoffMs(retries: number, random: () => number = Math.random): number {
  return Math.floor(random() * Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** retries))
}

/** A retry is started only if, taking as long as the failed attempt did, it ends before the deadline. */
export function fitsBudget(now: number, delayMs: number, lastAttemptMs: number, deadline: number): boolean {
  return now + delayMs + lastAttemptMs < deadline
}
