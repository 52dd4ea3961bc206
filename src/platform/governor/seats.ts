import { DeadlineError, OverloadedError } from '../../errors.js'
import { FairQueue, type Priority, type Queued } from './fair-queue.js'
import { fairShares, owedSeats } from './shares.js'
import { LocalSeats, type LeaseShares, type LocalTeam, type SeatLease } from './seat-lease.js'
import type { WorkEstimates } from './work-estimates.js'
import type { Answer } from './knee-estimator.js'
import { GATEWAY_TEAM } from '../gateway-team.js'
import { LONGEST_TIMER_MS, systemClock, type Clock, type Timer } from '../../clock.js'

/** A team that asked within this long is active: its share is owed to it while it does not use it. */
export const LINGER_MS = 5_000
/** A seat owed to another team is lent only to a call expected to end within this long. */
export const LENDING_HORIZON_MS = 500
/** A call is charged at least this (ms): calls that end at once still take turns by weight. */
const MIN_CHARGE_MS = 1
/** A deadline passed at this many times the call's expected time says the platform is overloaded; sooner, it says nothing. */
export const OVERLOAD_TIMEOUTS = 2
/** A call running this many times its expected time (a second at least) is overdue: with no answer since, the platform is silent. */
export const OVERDUE = 3
const NONE: ReadonlyMap<string, number> = new Map()

export type RefusalReason = 'queue_full' | 'team_queue_full' | 'displaced' | 'queue_timeout' | 'paused' | 'deadline'
export type { Priority } from './fair-queue.js'

/** What ended a call: the platform's answer (its status and retry-after, after `latencyMs` to its headers), none (a deadline, a connection error), or the gateway's own stop. */
export type SeatOutcome = { kind: 'answer'; status: number; latencyMs: number; retryAfter?: string } | { kind: 'none'; latencyMs: number; timedOut: boolean } | { kind: 'dropped' }

/**
 * A call's seat: the platform's time. It goes back with the call's outcome (`end`): at
 * the answer, the platform is done with the call (an answer still being read holds
 * buffer room, not a seat); with no answer, the platform works on, and the seat is held
 * until the call's expected end there.
 */
export interface Seat {
  readonly team: string
  /** Calls of the credential in flight once it had its seat, itself included, on every replica. */
  readonly load: number
  end(outcome: SeatOutcome): void
}

export interface SeatRequest {
  team: string
  /** The work the call asks (reports/work-class.ts): how long it holds its seat is estimated by it. */
  workClass: string
  priority?: Priority
  /** Epoch ms: the call is not sent when it cannot end before. */
  deadline: number
  signal?: AbortSignal
  /** A refresh ahead's urgency now (larger first). */
  urgency?: () => number
}

/** A background call (a refresh, a warm-up) got no seat in time, was displaced, or met a pause: dropped, no caller waited for it. */
export class NoIdleSeatError extends Error {
  constructor(credential: string) {
    super(`no platform seat of credential ${credential} for a background call in time`)
  }
}

export interface SeatsOptions {
  credential: string
  /** The ceiling of the limit in force (platform.maxConcurrent). */
  maxConcurrent: number
  /** The limit in force at start. */
  limit: number
  queueLimit: number
  queueTimeoutMs: number
  work: WorkEstimates
  weightOf?: (team: string) => number
  limitsOf?: (team: string) => { maxConcurrent?: number | null; queue?: number | null } | undefined
  /** Until when (epoch ms) the platform pauses the whole credential; 0: it does not. */
  pausedUntil?: () => number
  seats?: SeatLease
  clock?: Clock
  onRefused?: (reason: RefusalReason) => void
  /** Every call's start and end, for the limit rule. */
  onStarted?: (kind: string, load: number) => number
  onEnded?: (answer: Answer) => void
  /** A call waited because every seat of the limit was taken. */
  onWaited?: () => void
}

export interface TeamLimits {
  maxConcurrent: number | null
  queue: number | null
}

interface Waiter extends Queued {
  workClass: string
  expiresAt: number
  timer: Timer | null
  resolve(seat: Seat): void
  reject(err: Error): void
  detach(): void
}

interface TeamSeats {
  held: number
  seatMs: number
  /** Its calls in flight: when each started, when it is overdue (Infinity once answered: its seat is held for its reader), and whether it was short. */
  running: Set<{ at: number; dueAt: number; short: boolean }>
  /** Its virtual finish tag: seat-time charged over its weight. */
  tag: number
  lastAsked: number
  /** The most it held and waited for at once since `peakAt`, a linger ago at most. */
  peak: number
  peakAt: number
}

/**
 * The seats of one credential on one replica: the dispatch rule of docs/governor.md. A
 * call holds a seat from its start to its answer (a call cut by its deadline, to its
 * expected end: the platform works on). When a seat is free, the waiting team below its
 * share (shares.ts; alone, by a whole seat: a share's fraction is an odd seat) with the
 * least seat-time for its weight goes first (start-time fair queueing over seat × time,
 * as Kubernetes API Priority and Fairness charges); past its share, the team charged
 * least (alone) or holding the fewest seats for its weight on every replica (across
 * replicas) borrows a free seat if its call is expected to end within the lending
 * horizon, or if no other active team is owed that seat (alone, owed seats held by
 * borrowers' short calls are kept). Within a team, a caller's call goes first, then
 * refreshes ahead, stale refreshes, warm-ups.
 */
export class CredentialSeats {
  readonly credential: string
  readonly #o: SeatsOptions
  readonly #clock: Clock
  readonly #lease: SeatLease
  #limit: number
  #inFlight = 0
  readonly #teams = new Map<string, TeamSeats>()
  readonly #queue = new FairQueue<Waiter>()
  #seq = 0
  #virtual = 0
  #lingerTimer: Timer | null = null

  constructor(opts: SeatsOptions) {
    this.credential = opts.credential
    this.#o = opts
    this.#clock = opts.clock ?? systemClock
    this.#lease = opts.seats ?? new LocalSeats(Infinity)
    this.#limit = clamp(opts.limit, opts.maxConcurrent)
    this.#lease.onGrown(() => this.wake())
  }

  get limit(): number {
    return this.#limit
  }

  /** Seats this replica may fill now: the limit, or its lease of it across replicas. */
  get capacity(): number {
    return Math.min(this.#limit, this.#lease.size(this.#limit))
  }

  get inFlight(): number {
    return this.#inFlight
  }

  get queued(): number {
    return this.#queue.size
  }

  /** Seats this replica holds across replicas (a lease), or its calls in flight. */
  get seatsHeld(): number {
    return this.#lease.held ?? this.#inFlight
  }

  get pausedUntil(): number {
    const until = this.#o.pausedUntil?.() ?? 0
    return until > this.#clock.now() ? until : 0
  }

  /** The limit in force (the teams' shares are of it); a higher one starts queued calls. */
  setLimit(limit: number): void {
    const next = clamp(limit, this.#o.maxConcurrent)
    const raised = next > this.#limit
    this.#limit = next
    this.#demandChanged()
    if (raised) this.wake()
  }

  /**
   * Whether calls wait while every seat of the limit is taken or owed to an active team:
   * the limit is in use (a wait for a team's own ceiling, a pause or a lease says nothing
   * of it).
   */
  waitingAtLimit(): boolean {
    if (this.#queue.size === 0 || this.pausedUntil > 0 || !this.#lease.saturated()) return false
    if (![...this.#queue.waitingTeams()].some((team) => !this.#atCeiling(team))) return false
    const { owed, lent } = this.#shares()
    return this.#inFlight + owed + lent >= this.capacity - 1e-9
  }

  /** Since when a call in flight here has been overdue (OVERDUE times its expected time), or null. */
  overdueSince(now = this.#clock.now()): number | null {
    let due = Infinity
    for (const seats of this.#teams.values()) for (const call of seats.running) due = Math.min(due, call.dueAt)
    return due <= now ? due : null
  }

  /** Callers' calls waiting per team. */
  waiting(): Map<string, number> {
    return this.#queue.waitingByTeam()
  }

  /** `team`'s share of this replica's seats now (0 while it is not active). */
  shareOf(team: string): number {
    return this.#shares().targets.get(team) ?? 0
  }

  running(team: string): number {
    return this.#teams.get(team)?.held ?? 0
  }

  /** Seat-seconds charged to `team` on this replica, its calls still running included. */
  seatSeconds(team: string): number {
    const seats = this.#teams.get(team)
    if (!seats) return 0
    const now = this.#clock.now()
    let running = 0
    for (const call of seats.running) running += now - call.at
    return (seats.seatMs + running) / 1000
  }

  /** The team's own ceilings (null: none), within the credential's. */
  limitsOf(team: string): TeamLimits {
    const own = this.#o.limitsOf?.(team)
    return {
      maxConcurrent: own?.maxConcurrent == null ? null : Math.min(own.maxConcurrent, this.#o.maxConcurrent),
      queue: own?.queue == null ? null : Math.min(own.queue, this.#o.queueLimit),
    }
  }

  /** A seat may have come free (a wider lease, the pause ended): queued calls try again. */
  wake(): void {
    if (this.#queue.size > 0) this.#dispatch()
  }

  /**
   * A seat for one call. Refused at once (GW_UPSTREAM_TIMEOUT) when it cannot end before
   * its deadline, else it waits at most queueTimeout, and no longer than its deadline
   * leaves for its expected time (GW_OVERLOADED or GW_UPSTREAM_TIMEOUT then;
   * NoIdleSeatError for background work). Rejects with the signal's reason on abort.
   */
  ask(req: SeatRequest): Promise<Seat> {
    const { team, signal } = req
    if (signal?.aborted) return Promise.reject(signal.reason as Error)
    const priority = req.priority ?? 'caller'
    const now = this.#clock.now()
    this.#teamOf(team).lastAsked = now
    const expected = this.#o.work.neededMs(team, req.workClass, now)
    let sendBy = req.deadline - (expected ?? 0)
    if (sendBy <= now) {
      // Sent all the same now and then, to see whether its kind still needs that long.
      if (!this.#o.work.trial(team, req.workClass, now)) return Promise.reject(this.#refuse('deadline', tooLate(expected, req.deadline - now), priority))
      sendBy = req.deadline
    }
    const expiresAt = Math.min(now + this.#o.queueTimeoutMs, sendBy)
    if (this.pausedUntil > expiresAt) return Promise.reject(this.#refuse('paused', this.#pauseText(), priority))
    const limits = this.limitsOf(team)
    if (priority === 'caller' && limits.queue !== null && limits.queue < this.#o.queueLimit && this.#queue.count(team) >= limits.queue) {
      return Promise.reject(this.#refuse('team_queue_full', `team ${team} has ${limits.queue} platform calls of credential ${this.credential} waiting already`, priority))
    }
    const out = this.#queue.displaced({ team, priority }, this.#o.queueLimit, { weight: (t) => this.#weight(t) })
    if (out === 'refuse') return Promise.reject(this.#refuse('queue_full', `the queue of credential ${this.credential} is full`, priority))
    if (out) {
      this.#remove(out)
      out.reject(this.#refuse('displaced', `the queue of credential ${this.credential} is full: a call of a team with fewer calls waiting took this one's place`, out.priority))
    }
    return new Promise<Seat>((resolve, reject) => {
      const onAbort = () => {
        this.#remove(waiter)
        reject(signal?.reason as Error)
      }
      const waiter: Waiter = {
        team,
        priority,
        seq: this.#seq++,
        workClass: req.workClass,
        ...(req.urgency ? { urgency: req.urgency } : {}),
        expiresAt,
        timer: this.#timer(() => {
          this.#remove(waiter)
          reject(expiresAt === sendBy ? this.#refuse('deadline', tooLate(expected, req.deadline - this.#clock.now()), priority) : this.#refuse('queue_timeout', `no platform seat of credential ${this.credential} within ${expiresAt - now} ms`, priority))
        }, expiresAt - now),
        resolve,
        reject,
        detach: () => {
          this.#clock.clearTimeout(waiter.timer)
          signal?.removeEventListener('abort', onAbort)
        },
      }
      signal?.addEventListener('abort', onAbort, { once: true })
      // A team that starts waiting again saved no credit while it did not.
      if (this.#queue.count(team) === 0 && !this.#queue.waitingTeams().has(team)) {
        const seats = this.#teamOf(team)
        seats.tag = Math.max(seats.tag, this.#virtual)
      }
      this.#queue.push(waiter)
      this.#notePeak(team)
      this.#dispatch()
      if (this.#queue.has(waiter)) {
        if (this.waitingAtLimit()) {
          this.#o.onWaited?.()
          this.#lease.waited()
        }
        this.#demandChanged()
      }
    })
  }

  /** The credential's pause began: calls that would still wait when their time is up are told so now. */
  paused(): void {
    const until = this.pausedUntil
    for (const waiter of this.#queue.all()) {
      if (waiter.expiresAt < until) {
        this.#remove(waiter)
        waiter.reject(this.#refuse('paused', this.#pauseText(), waiter.priority))
      }
    }
  }

  /**
   * What the model holds back from the calls waiting here: the seats owed to other
   * active teams (lent only to calls that end within the lending horizon), and whether
   * every waiting call is held back by that alone (its team past its share, its call
   * longer than the horizon) or by its team's ceiling or a pause.
   */
  heldBack(): { owed: number; longOnly: boolean } {
    const view = this.#shares()
    const owed = Math.max(0, view.owed - this.#covered(view)) + view.lent
    if (this.pausedUntil > 0) return { owed, longOnly: true }
    const now = this.#clock.now()
    const longOnly = [...this.#queue.waitingTeams()].every((team) => {
      if (this.#atCeiling(team)) return true
      const standing = this.#standing(team, view, now)
      return standing.head !== null && !standing.within && !standing.short
    })
    return { owed, longOnly }
  }

  /**
   * A waiting team's call to consider, whether the team is below its share (on every
   * replica; on one, by a whole seat at least: a share's fraction is an odd seat), and
   * whether that call is short: its most pressing call; on one replica, past its share, its
   * most pressing short call if it has one (a long call that may not take an owed seat
   * holds up none of its team's short calls).
   */
  #standing(team: string, view: LeaseShares & { one: boolean }, now: number): { head: Waiter | null; within: boolean; short: boolean; everywhere: number } {
    const everywhere = this.running(team) + (view.heldElsewhere.get(team) ?? 0)
    const share = view.shares.get(team) ?? 0
    const within = view.one ? everywhere + 1 <= share + 1e-9 : everywhere < share
    const isShort = (w: Waiter) => this.#o.work.within(team, w.workClass, LENDING_HORIZON_MS, now)
    const head = this.#queue.pressing(team)
    if (!view.one || within || head === null || isShort(head)) return { head, within, everywhere, short: head !== null && isShort(head) }
    const short = this.#queue.pressing(team, isShort)
    return short === null ? { head, within, everywhere, short: false } : { head: short, within, everywhere, short: true }
  }

  #pauseText(): string {
    return `credential ${this.credential} is paused by the platform for ${Math.ceil((this.pausedUntil - this.#clock.now()) / 1000)} s`
  }

  #refuse(reason: RefusalReason, text: string, priority: Priority): Error {
    this.#o.onRefused?.(reason)
    if (priority !== 'caller') return new NoIdleSeatError(this.credential)
    if (reason === 'deadline') return new DeadlineError(text)
    return Object.assign(new OverloadedError(text), { retryAfterSec: Math.max(1, Math.ceil((this.pausedUntil - this.#clock.now()) / 1000)) })
  }

  #teamOf(team: string): TeamSeats {
    let seats = this.#teams.get(team)
    if (!seats) this.#teams.set(team, (seats = { held: 0, seatMs: 0, running: new Set(), tag: this.#virtual, lastAsked: -Infinity, peak: 0, peakAt: -Infinity }))
    return seats
  }

  /** The active teams here: holding, waiting, or asked within LINGER_MS. */
  #localTeams(): LocalTeam[] {
    const now = this.#clock.now()
    const waiting = this.#queue.countByTeam()
    const out: LocalTeam[] = []
    for (const [team, seats] of this.#teams) {
      // The gateway's own calls (the probe, ownership look-ups) are few: no seat waits for them.
      const lingering = team !== GATEWAY_TEAM && now - seats.lastAsked < LINGER_MS
      const w = waiting.get(team) ?? 0
      if (seats.held === 0 && w === 0 && !lingering) continue
      const peak = now - seats.peakAt <= LINGER_MS ? Math.max(seats.peak, seats.held + w) : seats.held + w
      out.push({ team, weight: this.#weight(team), held: seats.held, waiting: w, cap: this.limitsOf(team).maxConcurrent, lingering, peak })
    }
    return out
  }

  /**
   * Each local team's target here, the seats of this replica owed to teams elsewhere, the
   * local teams, the seats owed to those that wait for nothing, and whether the shares are
   * worked out on this replica alone (`one`).
   */
  #shares(): LeaseShares & { teams: LocalTeam[]; owed: number; one: boolean } {
    const teams = this.#localTeams()
    const across = this.#lease.shares()
    if (across) return { ...across, teams, owed: owedSeats(across.targets, teams), one: false }
    const targets = fairShares(this.capacity, teams)
    // A share's whole seats are owed; its fraction is an odd seat, owed to no one: it goes by seat-time.
    const whole = new Map([...targets].map(([team, n]) => [team, Math.floor(n + 1e-9)]))
    return { targets, lent: 0, shares: targets, heldElsewhere: NONE, teams, owed: owedSeats(whole, teams), one: true }
  }

  #atCeiling(team: string): boolean {
    const cap = this.limitsOf(team).maxConcurrent
    if (cap === null) return false
    const part = this.#lease.shares()?.targets.get(team)
    return this.running(team) >= (part === undefined ? cap : Math.min(cap, Math.max(1, Math.round(part))))
  }

  /** A team's demand (held and waiting) grew: its peak over the linger follows. */
  #notePeak(team: string): void {
    const seats = this.#teamOf(team)
    const now = this.#clock.now()
    const demand = seats.held + this.#queue.waitingOf(team)
    if (demand >= seats.peak || now - seats.peakAt > LINGER_MS) {
      seats.peak = demand
      seats.peakAt = now
    }
  }

  #demandChanged(): void {
    this.#lease.demand({ limit: this.#limit, inFlight: this.#inFlight, waiting: this.#queue.size, teams: this.#localTeams() })
  }

  /** Starts waiting calls while seats are free and the credential is not paused. */
  #dispatch(): void {
    let started = false
    while (this.#queue.size > 0 && this.pausedUntil === 0) {
      const waiter = this.#next(this.capacity - this.#inFlight)
      if (waiter === null) break
      this.#queue.remove(waiter)
      waiter.detach()
      started = true
      waiter.resolve(this.#start(waiter))
    }
    if (started) this.#demandChanged()
  }

  /**
   * The next call to start on `free` seats: the most pressing call of the team below its
   * share with the least seat-time for its weight; else of a team past its share (on one
   * replica, with the least seat-time for its weight: the odd seats go by time; across
   * replicas, holding the fewest seats for its weight on every replica) whose call ends
   * within the lending horizon, or for which a seat is free that no other active team is
   * owed. After the
   * limit fell, the seats that come free go first to the teams below their shares: a cut
   * is taken from the teams that borrowed, as their calls end. Null when none may start
   * (a timer wakes the queue when a linger ends).
   */
  #next(free: number): Waiter | null {
    if (free <= 0) return null
    const view = this.#shares()
    const owed = Math.max(0, view.owed - this.#covered(view)) + view.lent
    const now = this.#clock.now()
    let best: Waiter | null = null
    let bestRank = Infinity
    let bestTag = Infinity
    for (const team of this.#queue.waitingTeams()) {
      if (this.#atCeiling(team)) continue
      const { head, within, short, everywhere } = this.#standing(team, view, now)
      if (head === null) continue
      if (!within && !short && free - owed < 1) continue
      // A whole seat left in its share: by seat-time. Past that, the odd seats and the ones
      // lent: by seat-time on one replica; across replicas, where a team's charges are
      // spread, by the seats it holds everywhere.
      const rank = within ? 0 : view.one ? 1 : 1 + everywhere / this.#weight(team)
      const tag = Math.max(this.#teamOf(team).tag, this.#virtual)
      if (rank < bestRank || (rank === bestRank && (tag < bestTag || (tag === bestTag && head.seq < (best?.seq ?? Infinity))))) {
        best = head
        bestRank = rank
        bestTag = tag
      }
    }
    if (best === null && free > 0) this.#wakeAtLingerEnd()
    return best
  }

  /**
   * The owed seats the short calls of the waiting teams past their shares keep (one
   * replica): their seats come free within the lending horizon and go first to a team
   * below its share, so a long call may take a free seat while they keep what is owed.
   */
  #covered(view: { teams: LocalTeam[]; shares: ReadonlyMap<string, number>; one: boolean }): number {
    if (!view.one) return 0
    let n = 0
    for (const t of view.teams) {
      if (t.waiting === 0 || t.held + 1 <= (view.shares.get(t.team) ?? 0) + 1e-9) continue
      for (const call of this.#teams.get(t.team)?.running ?? []) if (call.short) n += 1
    }
    return n
  }

  /** Seats owed to lingering teams are let go when their linger ends: the queue is woken then. */
  #wakeAtLingerEnd(): void {
    if (this.#lingerTimer !== null) return
    const now = this.#clock.now()
    let at = Infinity
    for (const seats of this.#teams.values()) if (seats.held === 0 && now - seats.lastAsked < LINGER_MS) at = Math.min(at, seats.lastAsked + LINGER_MS)
    if (!Number.isFinite(at)) return
    this.#lingerTimer = this.#timer(() => {
      this.#lingerTimer = null
      this.wake()
    }, at - now)
  }

  #start(waiter: Waiter): Seat {
    const { team, workClass } = waiter
    const weight = this.#weight(team)
    const seats = this.#teamOf(team)
    const startedAt = this.#clock.now()
    this.#inFlight += 1
    seats.held += 1
    const expected = this.#o.work.expectedMs(team, workClass, startedAt)
    const charged = Math.max(MIN_CHARGE_MS, expected ?? MIN_CHARGE_MS)
    const start = Math.max(seats.tag, this.#virtual)
    seats.tag = start + charged / weight
    // The virtual time is the least start tag of the teams waiting: a call started out of
    // tag order (a whole seat of its share, a seat others may not take) does not move it
    // past theirs, nor take the credit of a team that waits.
    let least = start
    if (this.#lease.shares() === null) for (const other of this.#queue.waitingTeams()) if (other !== team && !this.#atCeiling(other)) least = Math.min(least, this.#teamOf(other).tag)
    this.#virtual = Math.max(this.#virtual, least)
    const call = { at: startedAt, dueAt: expected === null ? Infinity : startedAt + Math.max(1000, OVERDUE * expected), short: expected !== null && expected <= LENDING_HORIZON_MS }
    seats.running.add(call)
    const load = this.#inFlight + this.#lease.elsewhere()
    const kind = `${team}\n${workClass}`
    const window = this.#o.onStarted?.(kind, load) ?? 0
    let ended = false
    const free = () => {
      this.#inFlight -= 1
      seats.held -= 1
      const held = Math.max(MIN_CHARGE_MS, this.#clock.now() - startedAt)
      seats.seatMs += held
      seats.tag += (held - charged) / weight
      seats.running.delete(call)
      this.#dispatch()
      this.#demandChanged()
    }
    return {
      team,
      load,
      end: (outcome) => {
        if (ended) return
        ended = true
        call.dueAt = Infinity
        const now = this.#clock.now()
        const at = outcome.kind === 'dropped' ? now : startedAt + outcome.latencyMs
        if (outcome.kind === 'answer') this.#lease.answered()
        const learned = this.#learn(team, workClass, expected, outcome)
        this.#o.onEnded?.({ startedAt, at, team, kind, load, window, outcome: learned })
        // A call cut by its deadline, or whose callers left, goes on at the platform: its
        // seat is held until its expected end there. An answer or a broken connection frees it.
        const goesOn = outcome.kind === 'dropped' || (outcome.kind === 'none' && outcome.timedOut)
        const until = goesOn ? startedAt + (this.#o.work.expectedMs(team, workClass, now) ?? 0) : 0
        if (until > now) this.#timer(free, until - now)
        else free()
      },
    }
  }

  /** What an outcome teaches the work estimates, and what it tells the limit. */
  #learn(team: string, work: string, expected: number | null, outcome: SeatOutcome): Answer['outcome'] {
    if (outcome.kind === 'dropped') return 'other'
    if (outcome.kind === 'none') {
      if (outcome.timedOut) this.#o.work.cut(team, work, outcome.latencyMs, this.#clock.now())
      // A connection error is overload; a deadline passed says so only past OVERLOAD_TIMEOUTS times the kind's expected time (a kind not yet known: nothing).
      if (!outcome.timedOut) return 'overload'
      return expected !== null && outcome.latencyMs >= OVERLOAD_TIMEOUTS * expected ? 'overload' : 'other'
    }
    const { status, latencyMs } = outcome
    if (status === 502 || status === 503 || status === 504) return 'overload'
    if (status === 429 || (status >= 400 && status < 500)) return 'other'
    // An answer, or a report that failed after its work (another 5xx): the platform's time.
    this.#o.work.answered(team, work, latencyMs)
    return 'ok'
  }

  #remove(waiter: Waiter): void {
    waiter.detach()
    if (this.#queue.remove(waiter)) this.#demandChanged()
  }

  #timer(fn: () => void, ms: number): Timer {
    return this.#clock.setTimeout(fn, Math.min(Math.max(0, ms), LONGEST_TIMER_MS)).unref()
  }

  #weight(team: string): number {
    return team === GATEWAY_TEAM ? 1 : Math.max(1, this.#o.weightOf?.(team) ?? 1)
  }
}

function clamp(limit: number, ceiling: number): number {
  return Math.max(1, Math.min(ceiling, Math.floor(limit)))
}

function tooLate(expected: number | null, leftMs: number): string {
  return `calls of its kind take about ${Math.round((expected ?? 0) / 100) / 10} s at the platform and its deadline leaves ${Math.max(0, Math.round(leftMs / 100) / 10)} s`
}
