import type { Logger } from 'pino'
import { OverloadedError } from '../../errors.js'
import { FairQueue, type Priority, type Queued } from './fair-queue.js'
import { type Granted, MemoryPermits, type Permits, type Taken } from './permits.js'
import { LONGEST_TIMER_MS, systemClock, type Clock, type Timer } from '../../clock.js'

export type { Release } from './permits.js'

/** A slot: `release` gives it back; `inFlight` counts the credential's calls in flight once it was had, on every replica. */
export type Slot = Granted
export type { Priority } from './fair-queue.js'

export type RefusalReason = 'queue_full' | 'team_queue_full' | 'displaced' | 'queue_timeout' | 'paused'

/** A team's own ceilings on its credential (teams[].maxConcurrent, queue); null: none. */
export interface TeamLimits {
  maxConcurrent: number | null
  queue: number | null
}

export interface GovernorOptions {
  credential: string
  /** The ceiling of the limit in force (platform.maxConcurrent). */
  maxConcurrent: number
  /** The limit in force at start; the learned limit moves it (setLimit). Default maxConcurrent. */
  limit?: number
  /** Calls waiting for a slot; one more displaces a call with less claim to its place, or is refused. */
  queueLimit: number
  /** Longest wait for a slot. */
  queueTimeoutMs: number
  /** A team's share of the slots, relative to the others' (default 1). */
  weightOf?: (team: string) => number
  /** A team's own ceilings, as an operator set them; none by default. */
  limitsOf?: (team: string) => { maxConcurrent?: number | null; queue?: number | null } | undefined
  log: Pick<Logger, 'info' | 'warn'>
  clock?: Clock
  /** A call refused with GW_OVERLOADED. */
  onRefused?: (reason: RefusalReason) => void
  /** A pause began on this replica. */
  onPaused?: () => void
  /** Who may start a call: default counted on this replica. */
  permits?: Permits
}

/** How a call waits: its priority, and for a refresh ahead how urgent it is now. */
export interface CallClass {
  priority?: Priority
  urgency?: () => number
}

/**
 * A background call (a refresh, a warm-up) got no slot before its time was up, was
 * displaced by a caller's call, or met a pause: it is dropped, no caller waited for it.
 */
export class NoIdleSlotError extends Error {
  constructor(credential: string) {
    super(`no platform slot of credential ${credential} for a background call in time`)
  }
}

interface Waiter extends Queued {
  /** Left the queue (its time is up, or its callers hung up) while a permit was being taken for it. */
  gone: boolean
  expiresAt: number
  timer: Timer | null
  resolve(slot: Slot): void
  reject(err: Error): void
  detach(): void
}

// A 429 without retry-after: 1 s, doubling on each further 429, at most 60 s.
const FIRST_PAUSE_MS = 1000
const LONGEST_BACKOFF_MS = 60_000
// A retry-after the gateway will honour; a longer one (a misconfigured proxy, a date far
// ahead) would take every team down for that long on one answer.
const LONGEST_PAUSE_MS = 15 * 60_000

/**
 * The platform calls of one credential on one replica. A call starts with a permit
 * (permits.ts: counted on this replica, or leased across replicas in Redis) while fewer
 * than the limit in force are in flight; the others wait in a fair queue (fair-queue.ts:
 * priorities, max-min shares by weight, push-out), so a team alone uses every slot and a
 * team that arrives gets the next slot that frees. While the platform has throttled the
 * credential (a 429), nothing starts; a call whose wait could not end in time is refused
 * at once. Permits are taken one at a time, in queue order; a call refused one waits for
 * a release here, a peer's notice (wake) or the permits' retry interval.
 */
export class CallGovernor {
  readonly credential: string
  readonly #o: GovernorOptions
  readonly #clock: Clock
  #limit: number
  #inFlight = 0
  // Callers' calls in flight per team: the shares the queue is fair by.
  readonly #teamInFlight = new Map<string, number>()
  readonly #queue = new FairQueue<Waiter>()
  #seq = 0
  #pausedUntil = 0
  #resumeTimer: Timer | null = null
  #strikes = 0
  // The team whose call began the pause under way ('(gateway)' for the probe call, or a peer's team).
  #pausedBy = ''
  readonly #permits: Permits
  // A permit is being taken (one at a time, in queue order); #again: look again after it.
  #taking = false
  #again = false
  #retryTimer: Timer | null = null
  readonly #shares = { weight: (team: string) => this.#weight(team) }

  constructor(opts: GovernorOptions) {
    this.credential = opts.credential
    this.#o = opts
    this.#clock = opts.clock ?? systemClock
    this.#limit = clampLimit(opts.limit ?? opts.maxConcurrent, opts.maxConcurrent)
    this.#permits = opts.permits ?? new MemoryPermits()
  }

  /** Permits this replica holds. */
  get permitsHeld(): number {
    return this.#permits.held
  }

  /** The most calls in flight at once now: the learned limit, or the fixed cap. */
  get limit(): number {
    return this.#limit
  }

  /** A new limit in force (the learned one), within 1..maxConcurrent; a higher one starts queued calls. */
  setLimit(limit: number): void {
    const next = clampLimit(limit, this.#o.maxConcurrent)
    const raised = next > this.#limit
    this.#limit = next
    if (raised) this.wake()
  }

  /** Callers' calls waiting per team. */
  waiting(): Map<string, number> {
    return this.#queue.waitingByTeam()
  }

  /** A permit may have come free elsewhere (another replica's notice): queued calls try again. */
  wake(): void {
    if (this.#queue.size > 0) this.#dispatch()
  }

  get inFlight(): number {
    return this.#inFlight
  }

  get queued(): number {
    return this.#queue.size
  }

  /** Until when (epoch ms) the credential is paused; 0 when it is not. */
  get pausedUntil(): number {
    return this.#pausedUntil > this.#clock.now() ? this.#pausedUntil : 0
  }

  /**
   * A slot for one call of `team`. Waits no longer than queueTimeout nor past
   * `deadline` (epoch ms): GW_OVERLOADED then (NoIdleSlotError for background work), as
   * when the queue is full. Rejects with the signal's reason when it aborts, and the call
   * leaves the queue.
   */
  acquire(team: string, signal?: AbortSignal, deadline = Infinity, how: CallClass = {}): Promise<Slot> {
    if (signal?.aborted) return Promise.reject(signal.reason as Error)
    const priority = how.priority ?? 'caller'
    const now = this.#clock.now()
    const limits = this.limitsOf(team)
    const expiresAt = Math.min(now + this.#o.queueTimeoutMs, deadline)
    if (this.#pausedUntil > expiresAt) return Promise.reject(this.#refuse('paused', this.#pauseText(), priority))
    const startsNow = this.#queue.size === 0 && this.#inFlight < this.#limit && !this.#atCeiling(team, priority) && !this.#isPaused(now)
    if (!startsNow) {
      // One team's burst fills at most the ceiling an operator gave its queue.
      if (priority === 'caller' && limits.queue !== null && limits.queue < this.#o.queueLimit && this.#queue.count(team) >= limits.queue) {
        return Promise.reject(this.#refuse('team_queue_full', `team ${team} has ${limits.queue} platform calls of credential ${this.credential} waiting already`, priority))
      }
      const out = this.#queue.displaced({ team, priority }, this.#o.queueLimit, this.#shares)
      if (out === 'refuse') return Promise.reject(this.#refuse('queue_full', `the queue of credential ${this.credential} is full`, priority))
      if (out) {
        this.#remove(out)
        out.reject(this.#refuse('displaced', `the queue of credential ${this.credential} is full: a call of a team with fewer calls waiting took this one's place`, out.priority))
      }
    }
    return new Promise<Slot>((resolve, reject) => {
      const onAbort = () => {
        this.#remove(waiter)
        reject(signal?.reason as Error)
      }
      const waiter: Waiter = {
        team,
        priority,
        seq: this.#seq++,
        ...(how.urgency ? { urgency: how.urgency } : {}),
        gone: false,
        expiresAt,
        // A signal that aborts at the deadline ends the wait itself, with its own reason
        // (the call's timeout): a timer of ours for the same instant would race it.
        timer: signal && deadline <= now + this.#o.queueTimeoutMs ? null : this.#timer(() => {
          this.#remove(waiter)
          reject(this.#refuse('queue_timeout', `no platform slot of credential ${this.credential} within ${Math.max(0, expiresAt - now)} ms`, priority))
        }, expiresAt - now),
        resolve,
        reject,
        detach: () => {
          this.#clock.clearTimeout(waiter.timer)
          signal?.removeEventListener('abort', onAbort)
        },
      }
      signal?.addEventListener('abort', onAbort, { once: true })
      this.#queue.push(waiter)
      this.#dispatch()
    })
  }

  /**
   * The platform answered 429: no call starts until its retry-after (seconds or an HTTP
   * date) has passed, or, without one, for a pause that doubles with each 429 in a row.
   * Returns how long the pause lasts from now (ms), for the other replicas. `longestMs`
   * caps it (the gateway passes platform.maxPause).
   */
  throttled(retryAfter: string | undefined, team: string, longestMs = LONGEST_PAUSE_MS): number {
    const given = parseRetryAfter(retryAfter, this.#clock.now())
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
    const now = this.#clock.now()
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
    for (const waiter of this.#queue.all()) {
      if (waiter.expiresAt < until) {
        this.#remove(waiter)
        waiter.reject(this.#refuse('paused', this.#pauseText(), waiter.priority))
      }
    }
    if (this.#resumeTimer !== null) this.#clock.clearTimeout(this.#resumeTimer)
    this.#resumeTimer = this.#timer(() => this.#resume(), until - now)
  }

  /** The platform answers again (the probe call, or a peer saw it do so): the pause ends now. */
  resumeNow(source: 'platform' | 'peer'): void {
    if (!this.#isPaused(this.#clock.now())) return
    this.#pausedUntil = 0
    if (this.#resumeTimer !== null) this.#clock.clearTimeout(this.#resumeTimer)
    this.#resume(source)
  }

  #resume(source: 'platform' | 'peer' | 'expired' = 'expired'): void {
    this.#resumeTimer = null
    const now = this.#clock.now()
    if (this.#isPaused(now)) {
      this.#resumeTimer = this.#timer(() => this.#resume(), this.#pausedUntil - now)
      return
    }
    this.#o.log.info({ credential: this.credential, scope: 'credential', team: this.#pausedBy, source, queued: this.#queue.size }, 'platform credential resumed')
    this.#dispatch()
  }

  #isPaused(now: number): boolean {
    return now < this.#pausedUntil
  }

  #pauseText(): string {
    return `credential ${this.credential} is paused by the platform for ${Math.ceil((this.#pausedUntil - this.#clock.now()) / 1000)} s`
  }

  /** GW_OVERLOADED with a retry-after for a caller's call; a background call is dropped quietly. */
  #refuse(reason: RefusalReason, text: string, priority: Priority): Error {
    this.#o.onRefused?.(reason)
    if (priority === 'ahead' || priority === 'swr') return new NoIdleSlotError(this.credential)
    const waitMs = this.#pausedUntil - this.#clock.now()
    return Object.assign(new OverloadedError(text), { retryAfterSec: Math.max(1, Math.ceil(waitMs / 1000)) })
  }

  /** The team's own ceilings as its config gives them (null: none), bounded by the credential's. */
  limitsOf(team: string): TeamLimits {
    const own = this.#o.limitsOf?.(team)
    return {
      maxConcurrent: own?.maxConcurrent == null ? null : Math.min(own.maxConcurrent, this.#o.maxConcurrent),
      queue: own?.queue == null ? null : Math.min(own.queue, this.#o.queueLimit),
    }
  }

  /** Callers' calls of `team` in flight on this replica. */
  running(team: string): number {
    return this.#running(team)
  }

  #running(team: string): number {
    return this.#teamInFlight.get(team) ?? 0
  }

  /** Whether a call of `team` at `priority` waits for its team's own ceiling. */
  #atCeiling(team: string, priority: Priority): boolean {
    if (priority !== 'caller') return false
    const cap = this.limitsOf(team).maxConcurrent
    return cap !== null && this.#running(team) >= cap
  }

  #start(waiter: Pick<Waiter, 'team' | 'priority'>, permit: Granted): Slot {
    const { team, priority } = waiter
    this.#inFlight += 1
    if (priority === 'caller') this.#teamInFlight.set(team, this.#running(team) + 1)
    let released = false
    const release = () => {
      if (released) return
      released = true
      permit.release()
      this.#inFlight -= 1
      if (priority === 'caller') {
        const left = this.#running(team) - 1
        if (left > 0) this.#teamInFlight.set(team, left)
        else this.#teamInFlight.delete(team)
      }
      this.#dispatch()
    }
    return { release, inFlight: permit.inFlight }
  }

  #remove(waiter: Waiter): void {
    waiter.gone = true
    waiter.detach()
    this.#queue.remove(waiter)
  }

  #dispatch(): void {
    if (this.#taking) {
      this.#again = true
      return
    }
    // Permits never throw (Redis failures fall back to this replica's cap); a bug must not stall the queue silently.
    this.#serve().catch((err: Error) => this.#o.log.warn({ err: { message: err.message }, credential: this.credential }, 'the platform call queue stopped serving'))
  }

  /**
   * Takes permits for queued calls in queue order while fewer than the limit are in
   * flight, until none is free, every waiting call's team is at its ceiling or refused
   * one this round, or the queue is empty.
   */
  async #serve(): Promise<void> {
    this.#taking = true
    try {
      do {
        this.#again = false
        // Whose calls wait this round: their team is at its ceiling or was refused a permit
        // (a team of another replica, or the same team's calls there, come first).
        const refused = new Set<string>()
        const skip = (w: Waiter) => refused.has(w.team) || this.#atCeiling(w.team, w.priority)
        while (this.#queue.size > 0 && this.#inFlight < this.#limit && !this.#isPaused(this.#clock.now())) {
          const waiter = this.#queue.next(skip)
          if (waiter === null) break
          const team = waiter.team
          const taking = this.#permits.take({ team, priority: waiter.priority, weight: this.#weight(waiter.team), cap: waiter.priority === 'caller' ? this.limitsOf(waiter.team).maxConcurrent : null, limit: this.#limit })
          // Counted on this replica, a permit is had at once: the queue moves without a tick.
          const taken: Taken = taking instanceof Promise ? await taking : taking
          if ('full' in taken) {
            this.#retryLater()
            // No permit for anyone: the queue waits for a release, a notice or the retry.
            if (taken.full === 'credential') break
            refused.add(team)
            continue
          }
          // Its time ran out, its callers hung up, or a pause began while the permit was taken.
          if (waiter.gone || this.#isPaused(this.#clock.now())) {
            taken.release()
            continue
          }
          this.#remove(waiter)
          this.#queue.started(waiter.team, this.#weight(waiter.team))
          waiter.resolve(this.#start(waiter, taken))
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
    this.#retryTimer = this.#timer(() => {
      this.#retryTimer = null
      this.wake()
    }, ms)
  }

  // Unref'd: a governor's waits never keep the process alive. A queueTimeout of weeks
  // means "very long": a wait is cut to the longest a timer keeps.
  #timer(fn: () => void, ms: number): Timer {
    return this.#clock.setTimeout(fn, Math.min(ms, LONGEST_TIMER_MS)).unref()
  }

  #weight(team: string): number {
    return Math.max(1, this.#o.weightOf?.(team) ?? 1)
  }
}


function clampLimit(limit: number, ceiling: number): number {
  return Math.max(1, Math.min(ceiling, Math.floor(limit)))
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
