import type { Logger } from 'pino'
import { OverloadedError } from '../errors.js'
import { MemoryPermits, type Permits, type Release, type Taken } from './permits.js'

export type { Release } from './permits.js'

export interface Timers {
  set(fn: () => void, ms: number): unknown
  clear(handle: unknown): void
}

export type RefusalReason = 'queue_full' | 'team_queue_full' | 'queue_timeout' | 'paused'

/** A team's bulkhead: the most calls it may have in flight, and waiting, on this credential. */
export interface TeamLimits {
  maxConcurrent: number
  queue: number
}

export interface GovernorOptions {
  credential: string
  /** Calls in flight at once. */
  maxConcurrent: number
  /** Calls waiting for a slot; one more is refused. */
  queueLimit: number
  /** Longest wait for a slot. */
  queueTimeoutMs: number
  /** A team's share of the slots, relative to the others' (default 1). */
  weightOf?: (team: string) => number
  /** A team's bulkhead (issue 15); default half of maxConcurrent and of queueLimit, rounded up. */
  limitsOf?: (team: string) => { maxConcurrent?: number | null; queue?: number | null } | undefined
  log: Pick<Logger, 'info' | 'warn'>
  now?: () => number
  timers?: Timers
  /** A call refused with GW_OVERLOADED. */
  onRefused?: (reason: RefusalReason) => void
  /** A pause began on this replica. */
  onPaused?: () => void
  /** Who may start a call (issue 15): default maxConcurrent on this replica, no team leases. */
  permits?: Permits
}

/** A background call found no idle slot: it is skipped, not queued (issue 17). */
export class NoIdleSlotError extends Error {
  constructor(credential: string) {
    super(`no idle platform slot of credential ${credential} for a background call`)
  }
}

// Background calls (refreshes ahead) take at most this share of the slots.
const BACKGROUND_SHARE = 4
const BACKGROUND_TEAM = '(background)'

interface Waiter {
  team: string
  /** Left the queue (its time is up, or its callers hung up) while a permit was being taken for it. */
  gone: boolean
  expiresAt: number
  timer: unknown
  resolve(release: Release): void
  reject(err: Error): void
  detach(): void
}

// A 429 without retry-after: 1 s, doubling on each further 429, at most 60 s.
const FIRST_PAUSE_MS = 1000
const LONGEST_BACKOFF_MS = 60_000
// A retry-after the gateway will honour; a longer one (a misconfigured proxy, a date far
// ahead) would take every team down for that long on one answer.
const LONGEST_PAUSE_MS = 15 * 60_000

// setTimeout fires at once beyond 2^31 - 1 ms; a queueTimeout of weeks means "very long".
const LONGEST_TIMER_MS = 2 ** 31 - 1

const realTimers: Timers = {
  set: (fn, ms) => setTimeout(fn, Math.min(ms, LONGEST_TIMER_MS)).unref(),
  clear: (handle) => clearTimeout(handle as NodeJS.Timeout),
}

/**
 * The platform calls of one credential on one replica (issue #8): a call starts with a
 * permit (permits.ts: counted on this replica, or leased across replicas in Redis), the
 * rest queued per team and served round-robin (a team's weight is how many calls it gets
 * per turn), so that one team's burst costs another team at most about one platform
 * latency. While the platform has throttled the credential (a 429), nothing starts; a
 * call whose wait could not end in time is refused at once. Permits are taken one at a
 * time, in turn order; a call refused one waits for a release here, a peer's notice
 * (wake) or the permits' retry interval.
 */
export class CallGovernor {
  readonly credential: string
  readonly #o: GovernorOptions
  readonly #now: () => number
  readonly #timers: Timers
  #inFlight = 0
  readonly #teamInFlight = new Map<string, number>()
  #queued = 0
  readonly #queues = new Map<string, Waiter[]>()
  // Teams with queued calls, in turn order; #at is the team whose turn it is.
  readonly #ring: string[] = []
  #at = 0
  #credit = 0
  #pausedUntil = 0
  #resumeTimer: unknown = null
  #strikes = 0
  // The team whose call began the pause under way ('(gateway)' for the probe call, or a peer's team).
  #pausedBy = ''
  readonly #permits: Permits
  // A permit is being taken (one at a time, in turn order); #again: look again after it.
  #taking = false
  #again = false
  #retryTimer: unknown = null
  #background = 0

  constructor(opts: GovernorOptions) {
    this.credential = opts.credential
    this.#o = opts
    this.#now = opts.now ?? Date.now
    this.#timers = opts.timers ?? realTimers
    this.#permits = opts.permits ?? new MemoryPermits(opts.maxConcurrent)
  }

  /** Permits this replica holds. */
  get permitsHeld(): number {
    return this.#permits.held
  }

  /** Calls waiting per team. */
  waiting(): Map<string, number> {
    return new Map([...this.#queues].map(([team, queue]) => [team, queue.length]))
  }

  /** A permit may have come free elsewhere (another replica's notice): queued calls try again. */
  wake(): void {
    if (this.#queued > 0) this.#dispatch()
  }

  get inFlight(): number {
    return this.#inFlight
  }

  get queued(): number {
    return this.#queued
  }

  /** Until when (epoch ms) the credential is paused; 0 when it is not. */
  get pausedUntil(): number {
    return this.#pausedUntil > this.#now() ? this.#pausedUntil : 0
  }

  /**
   * A slot for one call of `team`. Waits no longer than queueTimeout nor past
   * `deadline` (epoch ms): GW_OVERLOADED then, as when the queue is full. Rejects with
   * the signal's reason when it aborts, and the call leaves the queue.
   */
  acquire(team: string, signal?: AbortSignal, deadline = Infinity): Promise<Release> {
    if (signal?.aborted) return Promise.reject(signal.reason as Error)
    const now = this.#now()
    const limits = this.limitsOf(team)
    // After every dispatch either no permit is free or every queued team is at its cap, so a
    // call of a team under its cap with nothing queued is let in past the queue's limits:
    // it waits only while its permit is taken.
    const startsNow = this.#inFlight < this.#o.maxConcurrent && !this.#queues.has(team) && this.#running(team) < limits.maxConcurrent && !this.#isPaused(now)
    if (!startsNow && this.#queued >= this.#o.queueLimit) return Promise.reject(this.#refuse('queue_full', `the queue of credential ${this.credential} is full`))
    // One team's burst fills its own share of the queue, never the other teams' (issue 15).
    if (!startsNow && (this.#queues.get(team)?.length ?? 0) >= limits.queue) {
      return Promise.reject(this.#refuse('team_queue_full', `team ${team} has ${limits.queue} platform calls of credential ${this.credential} waiting already`))
    }
    const expiresAt = Math.min(now + this.#o.queueTimeoutMs, deadline)
    if (this.#pausedUntil > expiresAt) return Promise.reject(this.#refuse('paused', this.#pauseText()))
    return new Promise<Release>((resolve, reject) => {
      const onAbort = () => {
        this.#remove(waiter)
        reject(signal?.reason as Error)
      }
      const waiter: Waiter = {
        team,
        gone: false,
        expiresAt,
        // A signal that aborts at the deadline ends the wait itself, with its own reason
        // (the call's timeout): a timer of ours for the same instant would race it.
        timer: signal && deadline <= now + this.#o.queueTimeoutMs ? null : this.#timers.set(() => {
          this.#remove(waiter)
          reject(this.#refuse('queue_timeout', `no platform slot of credential ${this.credential} within ${Math.max(0, expiresAt - now)} ms`))
        }, expiresAt - now),
        resolve,
        reject,
        detach: () => {
          this.#timers.clear(waiter.timer)
          signal?.removeEventListener('abort', onAbort)
        },
      }
      signal?.addEventListener('abort', onAbort, { once: true })
      this.#enqueue(waiter)
      this.#dispatch()
    })
  }

  /**
   * A slot for a background call (a refresh ahead), or null: only while no caller's call
   * waits, a slot is free and background calls hold under a quarter of the slots (at
   * least one), so it never takes a slot a waiting caller needs. It never queues.
   */
  tryBackground(): Release | null | Promise<Release | null> {
    if (this.#queued > 0 || this.#taking || this.#inFlight >= this.#o.maxConcurrent || this.#isPaused(this.#now())) return null
    const share = Math.max(1, Math.floor(this.#o.maxConcurrent / BACKGROUND_SHARE))
    if (this.#background >= share) return null
    // Held while the permit is taken, so two refreshes cannot both pass the share check.
    this.#background += 1
    const granted = (taken: Taken): Release | null => {
      if ('full' in taken) {
        this.#background -= 1
        return null
      }
      const release = this.#start(BACKGROUND_TEAM, taken.release)
      let released = false
      return () => {
        if (released) return
        released = true
        this.#background -= 1
        release()
      }
    }
    // The background share is a team cap, so it holds across replicas with leased permits.
    const taking = this.#permits.take(BACKGROUND_TEAM, share)
    return taking instanceof Promise ? taking.then(granted) : granted(taking)
  }

  /**
   * The platform answered 429: no call starts until its retry-after (seconds or an HTTP
   * date) has passed, or, without one, for a pause that doubles with each 429 in a row.
   * Returns how long the pause lasts from now (ms), for the other replicas. `longestMs`
   * caps it (platform.maxPause when pauses are isolated).
   */
  throttled(retryAfter: string | undefined, team: string, longestMs = LONGEST_PAUSE_MS): number {
    const given = parseRetryAfter(retryAfter, this.#now())
    const ms = Math.min(given ?? Math.min(FIRST_PAUSE_MS * 2 ** this.#strikes, LONGEST_BACKOFF_MS), longestMs, LONGEST_PAUSE_MS)
    if (given === null) this.#strikes += 1
    this.pause(ms, 'platform', team)
    return ms
  }

  /** The platform answered something else than 429: the next pause without retry-after starts short again. */
  answered(): void {
    this.#strikes = 0
  }

  /** No call starts for `ms` from now (or longer, if already paused longer). */
  pause(ms: number, source: 'platform' | 'peer', team: string): void {
    const now = this.#now()
    const until = now + Math.min(ms, LONGEST_PAUSE_MS)
    if (until <= now || until <= this.#pausedUntil) return
    const began = !this.#isPaused(now)
    this.#pausedUntil = until
    if (began) {
      this.#pausedBy = team
      this.#o.log.warn({ credential: this.credential, scope: 'credential', team, source, pauseMs: until - now, until: new Date(until).toISOString() }, 'platform credential paused: the platform answered 429')
      this.#o.onPaused?.()
    }
    // Calls that would still be waiting when their time is up are told so now.
    for (const queue of [...this.#queues.values()]) {
      for (const waiter of [...queue]) {
        if (waiter.expiresAt < until) {
          this.#remove(waiter)
          waiter.reject(this.#refuse('paused', this.#pauseText()))
        }
      }
    }
    if (this.#resumeTimer !== null) this.#timers.clear(this.#resumeTimer)
    this.#resumeTimer = this.#timers.set(() => this.#resume(), until - now)
  }

  /** The platform answers again (the probe call, or a peer saw it do so): the pause ends now. */
  resumeNow(source: 'platform' | 'peer'): void {
    if (!this.#isPaused(this.#now())) return
    this.#pausedUntil = 0
    if (this.#resumeTimer !== null) this.#timers.clear(this.#resumeTimer)
    this.#resume(source)
  }

  #resume(source: 'platform' | 'peer' | 'expired' = 'expired'): void {
    this.#resumeTimer = null
    const now = this.#now()
    if (this.#isPaused(now)) {
      this.#resumeTimer = this.#timers.set(() => this.#resume(), this.#pausedUntil - now)
      return
    }
    this.#o.log.info({ credential: this.credential, scope: 'credential', team: this.#pausedBy, source, queued: this.#queued }, 'platform credential resumed')
    this.#dispatch()
  }

  #isPaused(now: number): boolean {
    return now < this.#pausedUntil
  }

  #pauseText(): string {
    return `credential ${this.credential} is paused by the platform for ${Math.ceil((this.#pausedUntil - this.#now()) / 1000)} s`
  }

  #refuse(reason: RefusalReason, text: string): Error {
    this.#o.onRefused?.(reason)
    const waitMs = this.#pausedUntil - this.#now()
    return Object.assign(new OverloadedError(text), { retryAfterSec: Math.max(1, Math.ceil(waitMs / 1000)) })
  }

  /** The team's bulkhead as its config gives it, with the credential's halves as defaults. */
  limitsOf(team: string): TeamLimits {
    const own = this.#o.limitsOf?.(team)
    return {
      maxConcurrent: Math.min(own?.maxConcurrent ?? Math.ceil(this.#o.maxConcurrent / 2), this.#o.maxConcurrent),
      queue: Math.min(own?.queue ?? Math.ceil(this.#o.queueLimit / 2), this.#o.queueLimit),
    }
  }

  /** Calls of `team` in flight on this replica. */
  running(team: string): number {
    return this.#running(team)
  }

  #running(team: string): number {
    return this.#teamInFlight.get(team) ?? 0
  }

  #start(team: string, permit: Release): Release {
    this.#inFlight += 1
    this.#teamInFlight.set(team, this.#running(team) + 1)
    let released = false
    return () => {
      if (released) return
      released = true
      permit()
      this.#inFlight -= 1
      const left = this.#running(team) - 1
      if (left > 0) this.#teamInFlight.set(team, left)
      else this.#teamInFlight.delete(team)
      this.#dispatch()
    }
  }

  #enqueue(waiter: Waiter): void {
    let queue = this.#queues.get(waiter.team)
    if (!queue) {
      queue = []
      this.#queues.set(waiter.team, queue)
      this.#ring.push(waiter.team)
      if (this.#ring.length === 1) {
        this.#at = 0
        this.#credit = this.#weight(waiter.team)
      }
    }
    queue.push(waiter)
    this.#queued += 1
  }

  #remove(waiter: Waiter): void {
    waiter.gone = true
    waiter.detach()
    const queue = this.#queues.get(waiter.team)
    const i = queue?.indexOf(waiter) ?? -1
    if (!queue || i === -1) return
    queue.splice(i, 1)
    this.#queued -= 1
    if (queue.length === 0) this.#dropTeam(waiter.team)
  }

  #dropTeam(team: string): void {
    this.#queues.delete(team)
    const i = this.#ring.indexOf(team)
    this.#ring.splice(i, 1)
    if (i < this.#at) this.#at -= 1
    else if (i === this.#at) this.#nextTurn(false)
  }

  /** The turn passes to the next team in the ring (`advance`), or to the one now at #at. */
  #nextTurn(advance: boolean): void {
    if (this.#ring.length === 0) {
      this.#at = 0
      return
    }
    this.#at = ((advance ? this.#at + 1 : this.#at) % this.#ring.length + this.#ring.length) % this.#ring.length
    this.#credit = this.#weight(this.#ring[this.#at] as string)
  }

  #dispatch(): void {
    if (this.#taking) {
      this.#again = true
      return
    }
    // Permits never throw (Redis failures fall back to this replica's cap); a bug must not stall the queue silently.
    this.#serve().catch((err: Error) => this.#o.log.warn({ err: { message: err.message }, credential: this.credential }, 'the platform call queue stopped serving'))
  }

  /** Takes permits for queued calls in turn order until none is free, every waiting team is at its cap, or the queue is empty. */
  async #serve(): Promise<void> {
    this.#taking = true
    try {
      do {
        this.#again = false
        // Teams whose cap across replicas is reached this round: the free permits are the other teams'.
        const full = new Set<string>()
        while (this.#queued > 0 && !this.#isPaused(this.#now())) {
          const turn = { at: this.#at, credit: this.#credit }
          const team = this.#nextEligible(full)
          if (team === null) break
          const waiter = (this.#queues.get(team) as Waiter[])[0] as Waiter
          const taking = this.#permits.take(team, this.limitsOf(team).maxConcurrent)
          // Counted on this replica, a permit is had at once: the queue moves without a tick.
          const taken = taking instanceof Promise ? await taking : taking
          if ('full' in taken) {
            this.#retryLater()
            if (taken.full === 'credential') {
              // No permit for anyone: the turn stays where it was, not with a team passed over for being at its cap.
              this.#at = Math.min(turn.at, Math.max(0, this.#ring.length - 1))
              this.#credit = turn.credit
              break
            }
            full.add(team)
            continue
          }
          // Its time ran out, its callers hung up, or a pause began while the permit was taken.
          if (waiter.gone || this.#isPaused(this.#now())) {
            taken.release()
            continue
          }
          this.#remove(waiter)
          if (this.#ring[this.#at] === team && this.#queues.has(team)) {
            this.#credit -= 1
            if (this.#credit <= 0) this.#nextTurn(true)
          }
          waiter.resolve(this.#start(team, taken.release))
        }
      } while (this.#again)
    } finally {
      this.#taking = false
    }
  }

  /** Queued calls refused a permit ask again after the permits' retry interval, if a release or a notice does not come first. */
  #retryLater(): void {
    const ms = this.#permits.retryMs
    if (ms === null || this.#retryTimer !== null) return
    this.#retryTimer = this.#timers.set(() => {
      this.#retryTimer = null
      this.wake()
    }, ms)
  }

  /** The team whose turn it is, passing over teams at their cap (their turn waits); null: all are. */
  #nextEligible(full: ReadonlySet<string>): string | null {
    for (let tried = 0; tried < this.#ring.length; tried++) {
      const team = this.#ring[this.#at] as string
      if (!full.has(team) && this.#running(team) < this.limitsOf(team).maxConcurrent) return team
      this.#nextTurn(true)
    }
    return null
  }

  #weight(team: string): number {
    return Math.max(1, this.#o.weightOf?.(team) ?? 1)
  }
}

/** A retry-after header as milliseconds from `now`: delta-seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now: number): number | null {
  if (value === undefined) return null
  const text = value.trim()
  if (/^\d+$/.test(text)) return Number(text) * 1000
  // An HTTP date names its weekday and month; Date.parse would take "-3" for a year.
  if (!/[A-Za-z]/.test(text)) return null
  const at = Date.parse(text)
  return Number.isNaN(at) ? null : Math.max(0, at - now)
}
