/**
 * A `retry-after` value (RFC 9110, 10.2.3) as whole seconds from `now`: delay-seconds or
 * an HTTP date. Null when absent or unreadable; a date in the past is 0. Never read as
 * milliseconds: `retry-after: 2` is two seconds.
 */
export function retryAfterSeconds(value: string | string[] | undefined, now: number): number | null {
  const raw = (Array.isArray(value) ? value[0] : value)?.trim()
  if (!raw) return null
  if (/^\d+$/.test(raw)) return Number(raw)
  // Only the date forms HTTP allows (IMF-fixdate, and the obsolete RFC 850 and asctime
  // ones) name a weekday or month; Date.parse alone would also take "1.5" or "2026".
  if (!/[A-Za-z]{3}/.test(raw)) return null
  // HTTP dates are GMT; asctime's form does not say so, and would be read as local time.
  const at = Date.parse(/\bGMT\b/.test(raw) ? raw : `${raw} GMT`)
  if (Number.isNaN(at)) return null
  return Math.max(0, Math.ceil((at - now) / 1000))
}

/**
 * The error the caller gets for a failed platform answer, carrying the platform's
 * `retry-after` (as seconds) for the error handler to send on.
 */
export function withRetryAfter<E extends Error>(err: E, headers: Record<string, string | string[] | undefined>, now: number): E {
  const seconds = retryAfterSeconds(headers['retry-after'], now)
  return seconds === null ? err : Object.assign(err, { retryAfterSec: seconds })
}
