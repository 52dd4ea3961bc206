import { canonicalPath } from '../canonical-path.js'
import type { Clock, Timer } from '../../clock.js'

/**
 * What a platform 429 pauses: the route it came from, or, when the platform
 * throttles more than one route or team at once, the credential.
 */

// Throttles of two routes or two teams this close together mean the platform limits the
// credential, not one route: the whole credential is paused.
export const ESCALATION_WINDOW_MS = 10_000
// How often a pause is tested: the probe call for a credential pause, one caller's call
// (a trial) for a route pause.
export const PAUSE_PROBE_INTERVAL_MS = 5_000
// A 429 without retry-after: 1 s, doubling with each further 429 in a row (capped by maxPause).
const FIRST_PAUSE_MS = 1000
// Strikes are kept by route, and routes are callers' paths: past this many, they start
// over, so that no structure grows with what callers send.
export const MAX_STRUCK_ROUTES = 1024

/**
 * A call's route: its path without the query in its one spelling (canonical-path.ts),
 * each numeric segment as `{id}`. Every spelling of a path is one route, so a caller's
 * spelling never makes one throttled route count as two.
 */
export function routeTemplate(url: string): string {
  const path = canonicalPath(url.split(/[?#]/, 1)[0] || '/')
  return path
    .split('/')
    .map((segment) => (/^\d+$/.test(segment) ? '{id}' : segment))
    .join('/')
}

export interface Throttle {
  route: string
  team: string
  /** Epoch ms of the 429. */
  at: number
}

/**
 * The scope a caller's throttle `latest` pauses, given the throttles seen before it
 * (`recent`): the credential when another route or another team was throttled within
 * `windowMs`; else its route. (The probe call's own 429 pauses its route: it is the
 * gateway's call, no evidence against the credential.)
 */
export function pauseScope(recent: readonly Throttle[], latest: Throttle, windowMs: number): 'route' | 'credential' {
  const other = recent.some((t) => latest.at - t.at <= windowMs && (t.route !== latest.route || t.team !== latest.team))
  return other ? 'credential' : 'route'
}

/** How long a 429 pauses: its retry-after, or the doubling backoff after `strikes` 429s in a row; never longer than `maxMs`. */
export function pauseLength(retryAfterMs: number | null, strikes: number, maxMs: number): number {
  return Math.min(retryAfterMs ?? FIRST_PAUSE_MS * 2 ** strikes, maxMs)
}

export type Admission = { kind: 'open' } | { kind: 'trial' } | { kind: 'paused'; waitMs: number }

interface RoutePause {
  until: number
  team: string
  /** When the next caller's call may go through as a trial. */
  trialAt: number
  timer: Timer
}

/**
 * The paused routes of one credential on one replica. A paused route refuses calls
 * until its pause ends, except one call every probe interval: that trial's answer
 * ends the pause (non-429) or renews it (429), as a half-open breaker does.
 */
export class RoutePauses {
  readonly #paused = new Map<string, RoutePause>()
  readonly #strikes = new Map<string, number>()
  readonly #clock: Clock
  readonly #onExpired: (route: string, team: string) => void

  constructor(opts: { clock: Clock; onExpired: (route: string, team: string) => void }) {
    this.#clock = opts.clock
    this.#onExpired = opts.onExpired
  }

  /** The 429's pause length for `route` (counting a 429 without retry-after as a strike). */
  lengthFor(route: string, retryAfterMs: number | null, maxMs: number): number {
    const strikes = this.#strikes.get(route) ?? 0
    if (retryAfterMs === null) {
      if (strikes === 0 && this.#strikes.size >= MAX_STRUCK_ROUTES) this.#strikes.clear()
      this.#strikes.set(route, strikes + 1)
    }
    return pauseLength(retryAfterMs, strikes, maxMs)
  }

  /** Pauses `route` for `ms` (a longer pause under way stays); true when a pause began. */
  pause(route: string, ms: number, team: string): boolean {
    const now = this.#clock.now()
    const until = now + ms
    const current = this.#paused.get(route)
    if (ms <= 0) return false
    if (current) {
      // A trial's 429 (or a peer's) renews the pause: the next trial one interval on.
      current.trialAt = now + PAUSE_PROBE_INTERVAL_MS
      if (until <= current.until) return false
      this.#clock.clearTimeout(current.timer)
      current.until = until
      current.timer = this.#expiry(route, ms)
      return false
    }
    this.#paused.set(route, { until, team, trialAt: now + PAUSE_PROBE_INTERVAL_MS, timer: this.#expiry(route, ms) })
    return true
  }

  /** Ends the pause of `route`; the team whose call began it, or null when it was not paused. */
  resume(route: string): string | null {
    this.#strikes.delete(route)
    const current = this.#paused.get(route)
    if (!current) return null
    this.#clock.clearTimeout(current.timer)
    this.#paused.delete(route)
    return current.team
  }

  /** Whether a call on `route` may go now: open, as the trial of a paused route, or refused. */
  admit(route: string): Admission {
    const current = this.#paused.get(route)
    if (!current) return { kind: 'open' }
    const now = this.#clock.now()
    if (now >= current.until) {
      // Its expiry timer is late (a busy event loop): the pause is over all the same.
      const team = this.resume(route)
      if (team !== null) this.#onExpired(route, team)
      return { kind: 'open' }
    }
    if (now < current.trialAt) return { kind: 'paused', waitMs: current.until - now }
    // One trial per interval: a trial that gets no answer (a timeout) lets the next one through later.
    current.trialAt = now + PAUSE_PROBE_INTERVAL_MS
    return { kind: 'trial' }
  }

  /** Milliseconds left of the pause of `route`; 0 when it is not paused. */
  leftOf(route: string): number {
    const current = this.#paused.get(route)
    return current ? Math.max(0, current.until - this.#clock.now()) : 0
  }

  /** Ends every pause's timer (shutdown). */
  clear(): void {
    for (const pause of this.#paused.values()) this.#clock.clearTimeout(pause.timer)
    this.#paused.clear()
  }

  #expiry(route: string, ms: number): Timer {
    return this.#clock.setTimeout(() => {
      const team = this.resume(route)
      if (team !== null) this.#onExpired(route, team)
    }, ms).unref()
  }
}
