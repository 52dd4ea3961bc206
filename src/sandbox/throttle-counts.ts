// Laravel's `throttle:api` middleware (Illuminate\Routing\Middleware\ThrottleRequests)
// writes its count on every answer of an authenticated API route: `X-RateLimit-Limit` and
// `X-RateLimit-Remaining` (addHeaders). It keys the count by the token's user
// (resolveRequestSignature: the sha1 of the user's auth identifier), so every caller of
// one token reads one count, lowered by each other caller's calls. By default the sandbox
// writes the headers and refuses nothing for them (its 429s are the `throttles` failure
// mode); `setThrottle({ refuse: true })` makes it refuse past the count as Laravel does.

/** Laravel's default `api` limiter: `Limit::perMinute(60)`. */
export const THROTTLE_LIMIT = 60
const WINDOW_MS = 60_000

/** The count kept per token user: `limit` calls a window of `windowMs` from its first hit; `refuse`: past it, a 429 (Laravel's), else only the headers. */
export interface ThrottleSettings { limit: number; windowMs: number; refuse: boolean }

/** What the count says of a call: let through with what is left, or refused with the seconds to the window's end. */
export type ThrottleVerdict = { limit: number; remaining: number; retryAfterSec: null } | { limit: number; remaining: 0; retryAfterSec: number }

/** `value` as throttle settings (`limit` and `windowMs` whole numbers above 0, `refuse` a boolean, each optional), or what is wrong with it. */
export function parseThrottle(value: unknown): Partial<ThrottleSettings> | string {
  if (typeof value !== 'object' || value === null) return 'the throttle is an object: limit, windowMs, refuse'
  const unknown = Object.keys(value).find((k) => !['limit', 'windowMs', 'refuse'].includes(k))
  if (unknown !== undefined) return `"${unknown}" is no throttle setting (limit, windowMs, refuse)`
  const t = value as Record<string, unknown>
  for (const key of ['limit', 'windowMs'] as const) if (t[key] !== undefined && !(Number.isSafeInteger(t[key]) && (t[key] as number) > 0)) return `"${key}" must be a whole number above 0`
  if (t.refuse !== undefined && typeof t.refuse !== 'boolean') return '"refuse" must be true or false'
  return t as Partial<ThrottleSettings>
}

/** Each account's calls in its current window, as Laravel's RateLimiter counts them (a window from its first hit). */
export class ThrottleCounts {
  readonly #windows = new Map<number, { start: number; hits: number }>()
  #settings: ThrottleSettings = { limit: THROTTLE_LIMIT, windowMs: WINDOW_MS, refuse: false }

  /** The count from now on; every window begins anew. */
  set(settings: Partial<ThrottleSettings>): void {
    this.#settings = { limit: THROTTLE_LIMIT, windowMs: WINDOW_MS, refuse: false, ...settings }
    this.#windows.clear()
  }

  /** Counts a call of the account's token (a refused call is not counted: Laravel checks before it hits). */
  hit(account: number, now: number): ThrottleVerdict {
    const { limit, windowMs, refuse } = this.#settings
    let window = this.#windows.get(account)
    if (window === undefined || now - window.start >= windowMs) {
      window = { start: now, hits: 0 }
      this.#windows.set(account, window)
    }
    if (refuse && window.hits >= limit) return { limit, remaining: 0, retryAfterSec: Math.max(1, Math.ceil((window.start + windowMs - now) / 1000)) }
    window.hits += 1
    return { limit, remaining: Math.max(0, limit - window.hits), retryAfterSec: null }
  }
}
