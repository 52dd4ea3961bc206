// Laravel's `throttle:api` middleware (Illuminate\Routing\Middleware\ThrottleRequests)
// writes its count on every answer of an authenticated API route: `X-RateLimit-Limit` and
// `X-RateLimit-Remaining` (addHeaders). It keys the count by the token's user
// (resolveRequestSignature: the sha1 of the user's auth identifier), so every caller of
// one token reads one count, lowered by each other caller's calls. By default the sandbox
// writes the headers and refuses nothing for them (its 429s are the `throttles` failure
// mode); `setThrottle({ refuse: true })` makes it refuse past the count as Laravel does.
// A route may be throttled on its own besides (`setRouteThrottle`: `->middleware('throttle:5,1')`
// inside the api group), a second ThrottleRequests after the first: it counts the route's
// calls the first let through and refuses past its own limit with its own headers, and each
// answer carries the headers of the stricter of the two, as Laravel writes them
// (getHeaders keeps an inner middleware's X-RateLimit-* whose remaining is not above the outer's).
// Routes may share one limiter (`limiter`): Laravel keys a plain `throttle:5,1` by the token's
// user alone (resolveRequestSignature), and a named limiter (`throttle:reports`) by its name
// and what its `by()` says, so two routes behind either are one count of both, one window,
// one refusal with one reset. A route without `limiter` counts alone (`throttle:5,1,<prefix>`).

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

/** A route's own throttle: `limit` calls a window of `windowMs`, refused past it; `limiter`: the name of the count it shares with every route of that name (none: its own). */
export interface RouteThrottle { limit: number; windowMs: number; limiter?: string }

type Windows = Map<number, { start: number; hits: number }>

/** Each account's calls in its current window, as Laravel's RateLimiter counts them (a window from its first hit). */
export class ThrottleCounts {
  readonly #windows: Windows = new Map()
  #settings: ThrottleSettings = { limit: THROTTLE_LIMIT, windowMs: WINDOW_MS, refuse: false }
  readonly #routes = new Map<string, { throttle: RouteThrottle; windows: Windows }>()

  /** The count from now on; every window begins anew, and no route is throttled on its own. */
  set(settings: Partial<ThrottleSettings>): void {
    this.#settings = { limit: THROTTLE_LIMIT, windowMs: WINDOW_MS, refuse: false, ...settings }
    this.#windows.clear()
    this.#routes.clear()
  }

  /** The own throttle of the route at `path` (its pattern, as the routes are registered) from now on, its windows begun anew (a named limiter's, on each of its routes); null: none. */
  setRoute(path: string, throttle: RouteThrottle | null): void {
    if (throttle === null) {
      this.#routes.delete(path)
      return
    }
    const windows: Windows = new Map()
    this.#routes.set(path, { throttle, windows })
    if (throttle.limiter === undefined) return
    for (const route of this.#routes.values()) if (route.throttle.limiter === throttle.limiter) route.windows = windows
  }

  /** Counts a call of the account's token on the route at `path` (a refused call is not counted: Laravel checks before it hits). */
  hit(account: number, now: number, path?: string): ThrottleVerdict {
    const { limit, windowMs, refuse } = this.#settings
    const api = count(this.#windows, account, now, limit, windowMs, refuse)
    const route = path === undefined ? undefined : this.#routes.get(path)
    if (api.retryAfterSec !== null || route === undefined) return api
    const own = count(route.windows, account, now, route.throttle.limit, route.throttle.windowMs, true)
    // The route's refusal, or its count where it leaves no more than the api's.
    return own.retryAfterSec !== null || own.remaining <= api.remaining ? own : api
  }
}

/** One limiter's hit of the account's call: what is left of its window, or its refusal. */
function count(windows: Windows, account: number, now: number, limit: number, windowMs: number, refuse: boolean): ThrottleVerdict {
  let window = windows.get(account)
  if (window === undefined || now - window.start >= windowMs) {
    window = { start: now, hits: 0 }
    windows.set(account, window)
  }
  if (refuse && window.hits >= limit) return { limit, remaining: 0, retryAfterSec: Math.max(1, Math.ceil((window.start + windowMs - now) / 1000)) }
  window.hits += 1
  return { limit, remaining: Math.max(0, limit - window.hits), retryAfterSec: null }
}
