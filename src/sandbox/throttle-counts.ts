// Laravel's `throttle:api` middleware (Illuminate\Routing\Middleware\ThrottleRequests)
// writes its count on every answer of an authenticated API route: `X-RateLimit-Limit` and
// `X-RateLimit-Remaining` (addHeaders). It keys the count by the token's user
// (resolveRequestSignature: the sha1 of the user's auth identifier), so every caller of
// one token reads one count, lowered by each other caller's calls. The sandbox writes the
// headers and refuses nothing for them: its 429s are the `throttles` failure mode.

/** Laravel's default `api` limiter: `Limit::perMinute(60)`. */
export const THROTTLE_LIMIT = 60
const WINDOW_MS = 60_000

/** Each account's calls in its current minute, as Laravel's RateLimiter counts them (a window from its first hit). */
export class ThrottleCounts {
  readonly #windows = new Map<number, { start: number; hits: number }>()

  /** Counts a call of the account's token; returns what `X-RateLimit-Remaining` then says. */
  hit(account: number, now: number): number {
    let window = this.#windows.get(account)
    if (window === undefined || now - window.start >= WINDOW_MS) {
      window = { start: now, hits: 0 }
      this.#windows.set(account, window)
    }
    window.hits += 1
    return Math.max(0, THROTTLE_LIMIT - window.hits)
  }
}
