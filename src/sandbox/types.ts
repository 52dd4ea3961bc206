// The sandbox's public shapes, in a module of their own so that its parts can share
// them without importing sandbox.ts, which imports them all.
import type { RouteThrottle, ThrottleSettings } from './throttle-counts.js'

export interface SandboxAccount { id: number; name: string; parentId: number | null; currency: string }
export interface SandboxCredentials { username: string; password: string; clientId: number; clientSecret: string }

export interface SandboxOptions {
  host?: string
  port?: number
  /** Same seed, same data. */
  seed?: number
  /** Added before every /api/v1 answer. */
  latencyMs?: number
  /** `expires_in` and JWT `exp` of issued tokens. */
  tokenTtlSeconds?: number
  /** Laravel's `throttle:api` count from the start (setThrottle's settings), the probe of a gateway started on it included. */
  throttle?: Partial<ThrottleSettings>
  /**
   * The time the throttles count on (ms since the epoch), their windows and their refusals'
   * `retry-after` and `x-ratelimit-reset`; default the wall clock. A test stands it still to
   * keep a run of calls in one window however long a loaded machine takes over them.
   */
  throttleClock?: () => number
  /** The grant_type the token request must carry. */
  grantType?: string
  /** The password the login takes (default the demo's): a person's short one, as a platform may have. */
  password?: string
  /**
   * Report answers in the caller's language, as a localized Laravel app writes them: the
   * position labels in German when `accept-language` prefers it, with `Content-Language`
   * and `Vary: Accept-Language` (locale.ts). Absent: English for everyone, no `Vary`.
   */
  localized?: boolean
  /**
   * A POST report without `campaignIds` reports on every campaign the token reads (its
   * account's and its children's), as a controller that takes the caller's campaigns when
   * none are named does; it reads no account field. Absent: `campaignIds` is required (422).
   */
  reportAllCampaigns?: boolean
  /**
   * A report read narrows its rows to the campaigns of `filter[campaignIds]` in Laravel's
   * merged input, as a controller built on spatie/laravel-query-builder reads its filters
   * (`QueryBuilderRequest::filters()` takes `$this->input('filter')`, query and body
   * merged; `AllowedFilter` splits a value at commas), each one the token reads, whatever
   * account or campaigns the call names besides. Absent: `filter` is not read.
   */
  reportFilter?: boolean
  /**
   * APP_DEBUG=true: an exception's JSON answer (a 404, 403, 405, 429, 500; not a 401 or a
   * 422) carries Laravel's debug fields, `exception`, `file`, `line` and `trace`
   * (debug-answers.ts). Absent: `message` alone, as in production.
   */
  debug?: boolean
  /**
   * Laravel Debugbar installed with its storage off: every answer to a request that wants
   * JSON carries what it collected in `phpdebugbar`, `phpdebugbar-1`, … headers
   * (debug-answers.ts). Absent: none.
   */
  debugbar?: boolean
  logger?: boolean
}

export type GarbledBody = 'html' | 'html-as-json' | 'truncated-json' | 'empty'

/** `times`: the next N /api/v1 requests only, then back to none; absent: until changed. */
export type FailureMode =
  | { kind: 'none' }
  | { kind: 'status'; status: number; body?: unknown; headers?: Record<string, string>; times?: number }
  /** A redirect as Laravel answers one (`redirect($location, $status)`, default 302): Symfony's RedirectResponse, its page naming `location`. */
  | { kind: 'redirect'; location: string; status?: number; headers?: Record<string, string>; times?: number }
  | { kind: 'hang'; times?: number }
  | { kind: 'reset'; times?: number }
  /** A 200 whose headers come at once and whose body comes one small chunk every `intervalMs`, `chunks` times (default 10). */
  | { kind: 'trickle'; intervalMs: number; chunks?: number; times?: number }
  /** A 200 JSON answer of about `bytes` bytes, sent as fast as the connection takes it. */
  | { kind: 'large'; bytes: number; times?: number }
  /** A 200 that is no report: an HTML maintenance page, HTML labelled as JSON, JSON cut short, or nothing; gzip-encoded with `gzip`. */
  | { kind: 'garbled'; body: GarbledBody; gzip?: boolean; times?: number }
  /** The route's own answer with its body cut halfway: its content-length is the whole's, and the connection closes after half of it. */
  | { kind: 'cut'; times?: number }
  /** The route's own answer, once releaseHeld() is called (a call kept at the platform for as long as a test needs it there). */
  | { kind: 'held'; times?: number }
  /**
   * `answer` written on the connection byte for byte (each character one byte, latin1), its
   * status line, header lines and framing as given, and the connection then closed: what
   * PHP behind a web server can send besides a well-formed answer (an Early Hints `103`
   * before it, as Laravel's Vite preloading and Symfony's sendEarlyHints write, trailers, a
   * body after a `204` or a `HEAD` answer, a `content-length` that is not the body's, a
   * byte-order mark a PHP file prints before the body).
   */
  | { kind: 'raw'; answer: string; times?: number }

/**
 * Failures drawn at random, each a share (0 to 1) of the /api/v1 requests that no set
 * failure takes: a 500, 502 or 503; a 429 with `retry-after: 1`; a hang; a cut body
 * (the `cut` failure). Absent: 0.
 */
export interface Weather {
  serverErrors?: number
  throttles?: number
  hangs?: number
  cuts?: number
}

export interface SandboxRequestRecord {
  method: string
  path: string
  /** The raw query string, without `?`. */
  query: string
  headers: Record<string, string | string[] | undefined>
  body: string
  /** Accounts whose data the call read or changed, as the platform resolved them (a parent fallback included). */
  accounts: number[]
  /** Epoch milliseconds. */
  at: number
  /**
   * The latency and work (setLatency, setCapacity's perDayMs) the sandbox waited out
   * before it answered an /api/v1 request; null until that wait ends, and for any other request.
   */
  waitedMs: number | null
}

/**
 * What the platform can do at once, as a pool of PHP workers does: at most `workers` calls
 * are worked on at once and the others wait for one, first come first served; a report
 * call is worked on `perDayMs` for each day of its range (on top of the latency), so that
 * a year-long report holds its worker far longer than a week's; a list call (a page of
 * campaigns or creative sets) `perRowMs` for each row it answers, so that a page of 500
 * holds its worker far longer than a page of one (Laravel's paginate() reads and
 * serializes the page's rows).
 */
export interface Capacity {
  workers?: number
  perDayMs?: number
  perRowMs?: number
}

export interface Sandbox {
  url: string
  /** The main parent account's API client (password grant). */
  credentials: SandboxCredentials
  /** The longest report range it answers, in days counting both ends; a longer one is its 422. */
  maxReportDays: number
  /** 100 with children 101-103, which the credential reads; 200 with child 201, which it may not. */
  accounts: SandboxAccount[]
  /** Mints a token the sandbox accepts; default: the main parent's, living tokenTtlSeconds (<= 0: already expired). */
  issueToken(opts?: { accountId?: number; ttlSeconds?: number }): string
  /** Accepts any string as a token, like one generated by hand in the dashboard. */
  acceptToken(token: string, accountId?: number): void
  revokeToken(token: string): void
  revokeAllTokens(): void
  /** Every /api/v1 answer waits `ms`, or a time drawn evenly between `ms` and `maxMs`. */
  setLatency(ms: number, maxMs?: number): void
  /** The platform's capacity (Capacity); `{}` takes it away (every call worked on at once, no cost per day or row). */
  setCapacity(capacity: Capacity): void
  /** Failures at random rates (Weather); `{}` ends them. */
  setWeather(weather: Weather): void
  /**
   * Laravel's `throttle:api` count of each token user's calls (`x-ratelimit-limit`,
   * `x-ratelimit-remaining` on every answer of an authenticated route): by default 60 a
   * minute, written and never refused; `refuse: true` answers past it 429 `Too Many
   * Attempts.` with `retry-after` (the seconds to the window's end) and `x-ratelimit-reset`,
   * as Laravel does. Every window begins anew, and no route is throttled on its own (setRouteThrottle).
   */
  setThrottle(throttle: Partial<ThrottleSettings>): void
  /**
   * A route throttled on its own inside the api group (`->middleware('throttle:5,1')`):
   * `limit` calls of a token user a window of `windowMs`, past it a 429 with its own
   * `x-ratelimit-limit`, `x-ratelimit-remaining: 0`, `retry-after` and `x-ratelimit-reset`;
   * each answer of the route carries the stricter count of the two, as Laravel writes it.
   * `path`: the route's pattern (`/api/v1/campaign/banner/create`); null removes it.
   * `limiter`: routes given one name share one count, window and refusal (Laravel keys a
   * plain `throttle:5,1`, or a named limiter, by the token's user, whatever the route).
   */
  setRouteThrottle(path: string, throttle: RouteThrottle | null): void
  setFailure(mode: FailureMode): void
  /**
   * The failure of one path only (exact, without the query), whatever the token: a route
   * behind another guard answers 401 to a valid token, a route throttled on its own 429.
   * Taken before the failure of setFailure; `{ kind: 'none' }` removes it. `/oauth/token`
   * too: a login that is down (a 503, `reset`), which setFailure and the weather leave be.
   */
  setRouteFailure(path: string, mode: FailureMode): void
  clearRouteFailures(): void
  /** Lets every call the `held` failure keeps now go on to its answer (concurrency().held; a call still in its latency is not held yet). */
  releaseHeld(): void
  /** Every request except the /__sandbox controls, token requests included. */
  requests: SandboxRequestRecord[]
  /** Each trickle failure ended: the chunks it was to send and those it sent before its caller went away. */
  trickles: { chunks: number; sent: number }[]
  /** Empties `requests` and `trickles`. */
  clearRequests(): void
  countRequests(filter?: (r: SandboxRequestRecord) => boolean): number
  /** /api/v1 requests being answered now, the most at once since resetConcurrency(), and those the `held` failure keeps now (past their latency). */
  concurrency(): { inFlight: number; peak: number; held: number }
  resetConcurrency(): void
  /** Also ends hung and delayed requests. */
  close(): Promise<void>
}
