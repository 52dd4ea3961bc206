import { pauseLength } from './pauses.js'

/**
 * The one reader of `retry-after` (RFC 9110, 10.2.3): delay-seconds or an HTTP date.
 * HTTP dates are GMT, whatever the zone of the machine reading them.
 */

/**
 * A `retry-after` value as milliseconds from `now`. Null when absent, unreadable or on
 * several lines (a field of one value, RFC 9110 5.3: two lines say no one time); a date
 * in the past is 0. Delay-seconds are seconds: `retry-after: 2` is 2000 ms.
 */
export function retryAfterMs(value: string | string[] | undefined, now: number): number | null {
  const raw = Array.isArray(value) ? undefined : value?.trim()
  if (!raw) return null
  if (/^\d+$/.test(raw)) return Number(raw) * 1000
  // Only the date forms HTTP allows (IMF-fixdate, and the obsolete RFC 850 and asctime
  // ones) name a weekday or month; Date.parse alone would also take "1.5" or "2026".
  if (!/[A-Za-z]{3}/.test(raw)) return null
  // asctime's form does not say GMT, and Date.parse would read it in the local zone.
  const at = Date.parse(/\bGMT\b/.test(raw) ? raw : `${raw} GMT`)
  if (Number.isNaN(at)) return null
  return Math.max(0, at - now)
}

/** The same as whole seconds, rounded up: what the gateway passes on to a caller. */
export function retryAfterSeconds(value: string | string[] | undefined, now: number): number | null {
  const ms = retryAfterMs(value, now)
  return ms === null ? null : Math.ceil(ms / 1000)
}

/**
 * A platform answer's headers with its `retry-after` as the gateway passes it on, on every
 * status: the pause that value draws (pauseLength: never past platform.maxPause), in whole
 * seconds rounded up; none when the platform's is absent or unreadable. The platform client
 * hands every answer on so: a caller told to come back in 3,000 years would stop for good,
 * while the gateway sends the call again once its pause ends.
 */
export function withBoundedRetryAfter<H extends Record<string, string | string[] | undefined>>(headers: H, now: number, maxPauseMs: number): H {
  if (headers['retry-after'] === undefined) return headers
  const ms = retryAfterMs(headers['retry-after'], now)
  const passed: Record<string, string | string[] | undefined> = { ...headers }
  if (ms === null) delete passed['retry-after']
  else passed['retry-after'] = String(Math.ceil(pauseLength(ms, 0, maxPauseMs) / 1000))
  return passed as H
}

/**
 * The error the caller gets for a failed platform answer, carrying its `retry-after` as
 * the platform client hands it on (withBoundedRetryAfter), in seconds, for the error
 * handler to send on.
 */
export function withRetryAfter<E extends Error>(err: E, headers: Record<string, string | string[] | undefined>, now: number): E {
  const seconds = retryAfterSeconds(headers['retry-after'], now)
  return seconds === null ? err : Object.assign(err, { retryAfterSec: seconds })
}
