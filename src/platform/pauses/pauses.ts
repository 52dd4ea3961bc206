import type { Clock, Timer } from '../../clock.js'

/**
 * One home for what a platform 429 pauses on one credential and replica: the scopes,
 * their strikes and backoff, their trials and their ends. A 429 is charged to whoever
 * drew it:
 *
 * - one team's 429 on one route pauses that team on that route (`team-route`);
 * - the same team throttled on another route within ESCALATION_WINDOW_MS pauses the team
 *   (`team`): every route of its calls, no other team's;
 * - two teams throttled on the same route pause the route (`route`), for every team;
 * - two teams throttled on different routes pause the credential (`credential`): the
 *   platform throttles the credential, not a caller. So does the platform's own word: a
 *   429 on the probe call while the credential is paused keeps it paused.
 *
 * A pause lasts the 429's retry-after or, without one, 1 s doubling with each 429 in a
 * row on that scope (its strikes), at most platform.maxPause. A paused scope other than
 * the credential lets one call through every PAUSE_PROBE_INTERVAL_MS as its trial; the
 * credential is tested by the probe call. The first answer that is not a 429 ends the
 * pause it tests, and clears the strikes of every scope the answered call falls under.
 * Pure state and timers: sharing with the other replicas is pause-sharing.ts's.
 */

/** Throttles this close together are one episode: their teams and routes decide the scope. */
export const ESCALATION_WINDOW_MS = 10_000
/** How often a pause is tested: a trial call, or the probe call for the credential. */
export const PAUSE_PROBE_INTERVAL_MS = 5_000
/** A 429 without retry-after: 1 s, doubling with each further 429 in a row. */
export const FIRST_PAUSE_MS = 1000
/** The longest pause whatever the platform asks or the settings say: a date far ahead would take a team down for that long on one answer. */
export const LONGEST_PAUSE_MS = 15 * 60_000
/** Scopes kept (pauses and strikes); past this many the oldest strikes go first. */
export const MAX_SCOPES = 1024

export type PauseScope =
  | { kind: 'credential' }
  | { kind: 'team'; team: string }
  | { kind: 'route'; route: string }
  | { kind: 'team-route'; team: string; route: string }

/** A call's place: whose it is and on which route. */
export interface Throttle {
  team: string
  route: string
  /** Epoch ms of the 429. */
  at: number
  /** The 429 of a route's own limiter (a smaller limit than the token's count: CountShares.routeOwn), which refuses that route alone. */
  own?: boolean
}

export interface Pause {
  scope: PauseScope
  /** Epoch ms it ends unless an answer ends it first. */
  until: number
  /** The team whose call began it, and that call's route. */
  team: string
  route: string
  /** Begun by a route's own limiter's 429 (Throttle.own): told to the peers, whose escalation weighs it with that route's alone. */
  own?: boolean
}

/** How a call went through the pauses: the scope it is the trial of, and whether it is the probe call. */
export type Passing = { trial?: string | null; probe?: boolean }

export type Admission = { kind: 'open' } | { kind: 'trial'; scope: string; pause: Pause } | { kind: 'paused'; waitMs: number; pause: Pause }

/** The map key of a scope: one string per scope, never two scopes one key. */
export function scopeKey(scope: PauseScope): string {
  switch (scope.kind) {
    case 'credential':
      return 'credential'
    case 'team':
      return `team\n${scope.team}`
    case 'route':
      return `route\n${scope.route}`
    case 'team-route':
      return `team-route\n${scope.team}\n${scope.route}`
  }
}

/** The scope a key names, or null for a key that names none. */
export function scopeOfKey(key: string): PauseScope | null {
  const [kind, a, b, ...rest] = key.split('\n')
  if (rest.length > 0) return null
  if (kind === 'credential' && a === undefined) return { kind }
  if (kind === 'team' && a && b === undefined) return { kind, team: a }
  if (kind === 'route' && a && b === undefined) return { kind, route: a }
  if (kind === 'team-route' && a && b) return { kind, team: a, route: b }
  return null
}

/** Whether a call of `team` on `route` falls under `scope`. */
export function covers(scope: PauseScope, team: string, route: string): boolean {
  switch (scope.kind) {
    case 'credential':
      return true
    case 'team':
      return scope.team === team
    case 'route':
      return scope.route === route
    case 'team-route':
      return scope.team === team && scope.route === route
  }
}

/**
 * The scope a caller's 429 (`latest`) pauses given the throttles seen before it within
 * `windowMs` (`recent`, this replica's and its peers').
 */
export function throttleScope(recent: readonly Throttle[], latest: Throttle, windowMs: number): PauseScope {
  // A route's own limiter refuses that route alone: its 429 is weighed with that route's alone,
  // so it pauses the route at most, and widens no other 429's pause beyond that 429's route.
  const episode = recent.filter((t) => latest.at - t.at <= windowMs && (latest.own === true ? t.route === latest.route : t.own !== true))
  if (episode.some((t) => t.team !== latest.team)) {
    return episode.every((t) => t.route === latest.route) ? { kind: 'route', route: latest.route } : { kind: 'credential' }
  }
  if (episode.some((t) => t.route !== latest.route)) return { kind: 'team', team: latest.team }
  return { kind: 'team-route', team: latest.team, route: latest.route }
}

/** How long a 429 pauses: its retry-after, or the doubling backoff after `strikes` 429s in a row; never longer than `maxMs` nor LONGEST_PAUSE_MS. */
export function pauseLength(retryAfterMs: number | null, strikes: number, maxMs: number): number {
  return Math.min(retryAfterMs ?? FIRST_PAUSE_MS * 2 ** Math.min(strikes, 20), maxMs, LONGEST_PAUSE_MS)
}

interface Held extends Pause {
  /** When the next call may go through as its trial (scopes other than the credential). */
  trialAt: number
  timer: Timer
}

export interface PausesOptions {
  clock: Clock
  /** platform.maxPause. */
  maxPauseMs: number
  /** A pause began on this replica (`source`: this replica's 429, or a peer's word). */
  onBegan: (pause: Pause, source: 'platform' | 'peer') => void
  /** A pause ended: an answer that is not a 429 (`platform`), a peer's word, or its time. */
  onEnded: (pause: Pause, source: 'platform' | 'peer' | 'expired') => void
}

/** The pauses of one credential on one replica. */
export class Pauses {
  readonly #o: PausesOptions
  readonly #held = new Map<string, Held>()
  readonly #strikes = new Map<string, number>()
  #recent: Throttle[] = []

  constructor(opts: PausesOptions) {
    this.#o = opts
  }

  /** Until when (epoch ms) the credential is paused; 0 when it is not. */
  get credentialUntil(): number {
    const held = this.#held.get('credential')
    return held && held.until > this.#o.clock.now() ? held.until : 0
  }

  /** Every pause under way. */
  all(): Pause[] {
    const now = this.#o.clock.now()
    return [...this.#held.values()].filter((p) => p.until > now).map(({ scope, until, team, route }) => ({ scope, until, team, route }))
  }

  /** The longest pause under way that a call of `team` on `route` falls under (the credential's too unless `credential` is false); null when none. */
  covering(team: string, route: string, credential = true): Pause | null {
    let found: Pause | null = null
    const now = this.#o.clock.now()
    for (const held of this.#held.values()) {
      if (!credential && held.scope.kind === 'credential') continue
      if (held.until > now && covers(held.scope, team, route) && (found === null || held.until > found.until)) found = held
    }
    return found
  }

  /**
   * Whether a call of `team` on `route` may go now: open, as the trial of a pause it falls
   * under (other than the credential's), or refused for the time left. The credential's
   * own pause is the governor's to hold calls in.
   */
  admit(team: string, route: string): Admission {
    const now = this.#o.clock.now()
    let blocking: Held | null = null
    let trial: Held | null = null
    for (const held of this.#held.values()) {
      if (held.scope.kind === 'credential' || !covers(held.scope, team, route)) continue
      if (held.until <= now) {
        // Its expiry timer is late (a busy event loop): the pause is over all the same.
        this.#end(scopeKey(held.scope), 'expired')
        continue
      }
      if (now >= held.trialAt && trial === null) trial = held
      else if (blocking === null || held.until > blocking.until) blocking = held
    }
    if (blocking !== null) return { kind: 'paused', waitMs: blocking.until - now, pause: blocking }
    if (trial !== null) {
      // One trial per interval: a trial that gets no answer (a timeout) lets the next one through later.
      trial.trialAt = now + PAUSE_PROBE_INTERVAL_MS
      return { kind: 'trial', scope: scopeKey(trial.scope), pause: trial }
    }
    return { kind: 'open' }
  }

  /**
   * The platform answered 429 to a call of `team` on `route`. `trial`: the scope the call
   * was the trial of (its pause goes on, longer); `probe`: the probe call (it keeps a
   * credential pause it tests, and otherwise pauses its route alone: a team that makes it
   * run cannot pause the credential). Returns the pause begun or lengthened, or null.
   */
  throttled(team: string, route: string, retryAfterMs: number | null, how: Passing = {}, own = false): Pause | null {
    const now = this.#o.clock.now()
    const scope = this.#scopeOf(team, route, now, how, own)
    if (!how.probe && !how.trial) {
      this.#recent = this.#recent.filter((t) => now - t.at <= ESCALATION_WINDOW_MS)
      this.#note({ team, route, at: now, ...(own ? { own } : {}) })
    }
    const key = scopeKey(scope)
    const strikes = this.#strikes.get(key) ?? 0
    if (retryAfterMs === null) this.#strike(key, strikes + 1)
    const ms = pauseLength(retryAfterMs, strikes, this.#o.maxPauseMs)
    return this.#pause({ scope, until: now + ms, team, route, ...(own ? { own } : {}) }, 'platform') ? (this.#held.get(key) as Pause) : null
  }

  /**
   * How long (ms) a 429 to a call of `team` on `route` pauses if it is charged now
   * (`throttled`, with the same arguments): what its caller is told. Changes nothing.
   */
  drawn(team: string, route: string, retryAfterMs: number | null, how: Passing = {}): number {
    const key = scopeKey(this.#scopeOf(team, route, this.#o.clock.now(), how))
    return pauseLength(retryAfterMs, this.#strikes.get(key) ?? 0, this.#o.maxPauseMs)
  }

  /** The scope a 429 at `now` to a call of `team` on `route` pauses (`throttled`). */
  #scopeOf(team: string, route: string, now: number, how: Passing, own = false): PauseScope {
    if (how.probe === true) return this.credentialUntil > 0 ? { kind: 'credential' } : { kind: 'route', route }
    if (how.trial) return scopeOfKey(how.trial) ?? { kind: 'team-route', team, route }
    return throttleScope(this.#recent, { team, route, at: now, ...(own ? { own } : {}) }, ESCALATION_WINDOW_MS)
  }

  /**
   * The platform answered a call of `team` on `route` with something else than a 429:
   * the strikes of every scope it falls under start over, and the pause it was the trial
   * of ends (the probe call's ends the credential's). Returns the pauses ended.
   */
  answered(team: string, route: string, how: Passing = {}): Pause[] {
    for (const key of [...this.#strikes.keys()]) {
      const scope = scopeOfKey(key)
      if (scope && covers(scope, team, route)) this.#strikes.delete(key)
    }
    const ended: Pause[] = []
    const ends = how.probe === true ? (this.credentialUntil > 0 ? 'credential' : scopeKey({ kind: 'route', route })) : (how.trial ?? null)
    if (ends !== null) {
      const pause = this.#end(ends, 'platform')
      if (pause) ended.push(pause)
    }
    return ended
  }

  /** A peer's pause: taken as its own (a longer one under way stays). Its throttle counts toward the escalation window here too. */
  adopt(pause: Pause): boolean {
    const now = this.#o.clock.now()
    if (pause.scope.kind !== 'credential' && !this.#recent.some((t) => t.team === pause.team && t.route === pause.route)) this.#note({ team: pause.team, route: pause.route, at: now, ...(pause.own === true ? { own: true } : {}) })
    return this.#pause(pause, 'peer')
  }

  /** A peer says the pause of `key` ended. */
  endFromPeer(key: string): Pause | null {
    return this.#end(key, 'peer')
  }

  /** Ends every pause's timer (shutdown). */
  clear(): void {
    for (const held of this.#held.values()) this.#o.clock.clearTimeout(held.timer)
    this.#held.clear()
  }

  /** True when a pause began (rather than lengthened one under way, or nothing). */
  #pause(pause: Pause, source: 'platform' | 'peer'): boolean {
    const now = this.#o.clock.now()
    const until = Math.min(pause.until, now + LONGEST_PAUSE_MS)
    if (until <= now) return false
    const key = scopeKey(pause.scope)
    const current = this.#held.get(key)
    if (current) {
      // A trial's 429 (or a peer's) renews the pause: the next trial one interval on.
      current.trialAt = now + PAUSE_PROBE_INTERVAL_MS
      if (until <= current.until) return false
      this.#o.clock.clearTimeout(current.timer)
      current.until = until
      current.timer = this.#expiry(key, until - now)
      return false
    }
    if (this.#held.size >= MAX_SCOPES) return false
    const held: Held = { ...pause, until, trialAt: now + PAUSE_PROBE_INTERVAL_MS, timer: this.#expiry(key, until - now) }
    this.#held.set(key, held)
    this.#o.onBegan({ scope: pause.scope, until, team: pause.team, route: pause.route }, source)
    return true
  }

  #end(key: string, source: 'platform' | 'peer' | 'expired'): Pause | null {
    const held = this.#held.get(key)
    if (!held) return null
    this.#o.clock.clearTimeout(held.timer)
    this.#held.delete(key)
    const pause = { scope: held.scope, until: held.until, team: held.team, route: held.route }
    this.#o.onEnded(pause, source)
    return pause
  }

  #expiry(key: string, ms: number): Timer {
    return this.#o.clock.setTimeout(() => this.#end(key, 'expired'), ms).unref()
  }

  #strike(key: string, strikes: number): void {
    // Routes are callers' paths: the map is bounded, the oldest strikes going first.
    if (!this.#strikes.has(key) && this.#strikes.size >= MAX_SCOPES) this.#strikes.delete(this.#strikes.keys().next().value as string)
    this.#strikes.set(key, strikes)
  }

  #note(throttle: Throttle): void {
    this.#recent.push(throttle)
    if (this.#recent.length > MAX_SCOPES) this.#recent.shift()
  }
}
