import { OverloadedError } from '../../errors.js'
import { FairQueue, type Priority, type Queued } from './fair-queue.js'
import { seatShares, type TeamDemand } from './seat-shares.js'
import { LocalSeats, type SeatLease } from './seat-lease.js'
import { GATEWAY_TEAM } from '../gateway-team.js'
import type { LongCallLimits } from './long-calls.js'
import type { CallClass, GovernorOptions, RefusalReason, TeamLimits } from './governor-options.js'
import { LONGEST_TIMER_MS, systemClock, type Clock, type Timer } from '../../clock.js'

/** Gives a seat back; calling it again does nothing. */
export type Release = () => void

/** A seat: `release` gives it back; `inFlight` counts the credential's calls in flight once it was had, on every replica; `teamInFlight` its team's here. */
export interface Slot {
  release: Release
  inFlight: number
  teamInFlight?: number
}
export type { Priority } from './fair-queue.js'
export type { CallClass, GovernorOptions, RefusalReason, TeamLimits } from './governor-options.js'

/** A background call (a refresh, a warm-up) got no seat in time, was displaced by a caller's, or met a pause: dropped, no caller waited for it. */
export class NoIdleSlotError extends Error {
  constructor(credential: string) {
    super(`no platform slot of credential ${credential} for a background call in time`)
  }
}

interface Waiter extends Queued {
  expectedMs?: number
  expiresAt: number
  timer: Timer | null
  resolve(slot: Slot): void
  reject(err: Error): void
  detach(): void
}

/** What one team holds and has held of the platform's seats on this replica. */
interface TeamSeats {
  inFlight: number
  /** Seat-milliseconds of its calls that ended. */
  seatMs: number
  /** Its calls in flight: when each started, the seat-time it was charged then, whether it is long. */
  started: Set<{ at: number; charged: number; long: boolean }>
  /** Whether its last call to end was long: what its callers on their way back ask next. */
  lastLong?: boolean
  /** Its virtual finish tag: the seat-time it was charged, over its weight. */
  tag: number
  /** How long its calls hold a seat, smoothed (ms): what a call is charged when it starts. */
  estimateMs: number
  /** Seats it gave back with nothing waiting, kept for it until `returnBy` (epoch ms). */
  returning: number
  returnBy: number
  /** The limit in force when it came: while none of its calls has ended, its calls of a kind without a floor start only below it. */
  probeCap: number
}

/**
 * A seat a team below its share gives back with nothing waiting is kept for it this long
 * (ms): a caller that sends its next request as soon as it has its answer comes back
 * within it. Given to a team past its share meanwhile, the seat would be that team's
 * until one of its calls ends: a year-long report's time.
 */
export const RETURN_GRACE_MS = 50

/** A call is charged at least this (ms): calls that end at once still take turns by weight. */
const MIN_CHARGE_MS = 1
/** How much of each call's seat-time moves a team's estimate. */
const ESTIMATE_GAIN = 0.2

/**
 * The platform calls of one credential on one replica. A call holds a seat for as long as
 * it runs; at most the seats this replica may fill (the limit in force, or its share of it
 * across replicas: seat-lease.ts) are in flight, and the others wait in a fair queue. A
 * seat that frees goes to the waiting team below its share (max-min by weight over what
 * each uses and waits for: seat-shares.ts) charged the least seat-time for its weight, to
 * its most pressing call (fair-queue.ts). Seat-time is charged as in Kubernetes API
 * Priority and Fairness: a call is charged its team's usual seat-time when it starts
 * (start-time fair queueing's tag: Goyal, Vin and Cheng, SIGCOMM 1996), corrected to what
 * it held when it ends; a team that starts waiting again saved no credit meanwhile. A team
 * alone takes every seat; once another waits, the team past its share starts nothing new,
 * and the seats it borrowed come back as its calls end. A team's ceiling (maxConcurrent,
 * or a brake) counts every call of the team; a team of long calls starts one only within
 * the long calls' limit (long-calls.ts). While the platform pauses the credential, nothing
 * starts, and a call whose wait could not end in time is refused at once.
 */
export class CallGovernor {
  readonly credential: string
  readonly #o: GovernorOptions
  readonly #clock: Clock
  #limit: number
  #inFlight = 0
  readonly #teams = new Map<string, TeamSeats>()
  readonly #brakes = new Map<string, number>()
  readonly #queue = new FairQueue<Waiter>()
  #seq = 0
  readonly #seats: SeatLease
  readonly #shares = { weight: (team: string) => this.#weight(team) }
  // Start-time fair queueing's virtual time: the start tag of the last call served.
  #virtual = 0
  // Wakes the queue when seats kept for a returning team are free to take.
  #returnTimer: Timer | null = null
  // The seats in force at the last look, and before the last cut while its overhang runs.
  #lastCapacity = 0
  #beforeCut = 0
  // Whether a call waited for a seat (not for anything else) since the last look: the limit was used.
  #starved = false
  // The calls in flight a long call may start at (long-calls.ts): none held back until the learned limit says.
  #long: LongCallLimits = { beside: Infinity, alone: Infinity }

  constructor(opts: GovernorOptions) {
    this.credential = opts.credential
    this.#o = opts
    this.#clock = opts.clock ?? systemClock
    this.#limit = clampLimit(opts.limit ?? opts.maxConcurrent, opts.maxConcurrent)
    this.#seats = opts.seats ?? new LocalSeats(Infinity)
    this.#seats.onGrown(() => this.wake())
  }

  /** Seats this replica holds across replicas (a lease), or the calls it has in flight. */
  get permitsHeld(): number {
    return this.#seats.held ?? this.#inFlight
  }

  /** The most calls in flight at once now: the learned limit, or the fixed cap. */
  get limit(): number {
    return this.#limit
  }

  /** The seats this replica may fill now: the limit, or its share of it across replicas. */
  get capacity(): number {
    return Math.min(this.#limit, this.#seats.size(this.#limit))
  }

  /** A new limit in force (the learned one), within 1..maxConcurrent; a higher one starts queued calls. */
  setLimit(limit: number): void {
    const next = clampLimit(limit, this.#o.maxConcurrent)
    const raised = next > this.#limit
    this.#limit = next
    this.#demandChanged()
    if (raised) this.wake()
  }

  /** Per-team brakes: a team drawing the platform's errors is held to this many calls in flight (on top of its own ceiling); one absent has none. */
  setBrakes(brakes: ReadonlyMap<string, number>): void {
    const next = new Map([...brakes].map(([team, cap]) => [team, Math.max(1, Math.floor(cap))]))
    const loosened = [...this.#brakes].some(([team, cap]) => (next.get(team) ?? Infinity) > cap)
    const changed = loosened || next.size !== this.#brakes.size || [...next].some(([team, cap]) => this.#brakes.get(team) !== cap)
    this.#brakes.clear()
    for (const [team, cap] of next) this.#brakes.set(team, cap)
    // What a braked team asks of the lease follows its brake.
    if (changed) this.#demandChanged()
    if (loosened) this.wake()
  }

  /** The calls in flight (on every replica) a long call may start at, beside short calls and alone; a higher one starts queued calls. */
  setLongCallLimits(limits: LongCallLimits): void {
    const raised = limits.beside > this.#long.beside || limits.alone > this.#long.alone
    this.#long = { ...limits }
    if (raised) this.wake()
  }

  /** The calls in flight a long call may start at now: beside short calls while any hold, wait for or come back for a seat here. */
  get longCallLimit(): number {
    return this.#shortCalls() === null ? this.#long.alone : this.#long.beside
  }

  /** The brake on `team`, or null. */
  brakeOf(team: string): number | null {
    return this.#brakes.get(team) ?? null
  }

  /** Callers' calls waiting per team. */
  waiting(): Map<string, number> {
    return this.#queue.waitingByTeam()
  }

  /** A seat may have come free (a wider lease, a brake let go, the credential's pause ended): queued calls try again. */
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
    const until = this.#o.pausedUntil?.() ?? 0
    return until > this.#clock.now() ? until : 0
  }

  /** Whether a call waited for a seat since the last look (then cleared): a window that used the limit. */
  takeStarved(): boolean {
    const starved = this.#starved || (this.#queue.size > 0 && this.#inFlight >= this.capacity && this.pausedUntil === 0 && this.#seats.saturated())
    this.#starved = false
    return starved
  }

  /** Seat-seconds `team` has held on this replica, its calls still running included: what fairness is measured in. */
  seatSeconds(team: string): number {
    const seats = this.#teams.get(team)
    if (!seats) return 0
    const now = this.#clock.now()
    let running = 0
    for (const call of seats.started) running += now - call.at
    return (seats.seatMs + running) / 1000
  }

  /**
   * A seat for one call of `team`. Waits no longer than queueTimeout nor past `deadline`
   * (epoch ms): GW_OVERLOADED then (NoIdleSlotError for background work), as when the queue
   * is full. Rejects with the signal's reason when it aborts, and the call leaves the queue.
   */
  acquire(team: string, signal?: AbortSignal, deadline = Infinity, how: CallClass = {}): Promise<Slot> {
    if (signal?.aborted) return Promise.reject(signal.reason as Error)
    const priority = how.priority ?? 'caller'
    const now = this.#clock.now()
    const limits = this.limitsOf(team)
    const expiresAt = Math.min(now + this.#o.queueTimeoutMs, deadline)
    if (this.pausedUntil > expiresAt) return Promise.reject(this.#refuse('paused', this.#pauseText(), priority))
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
        ...(how.expectedMs === undefined ? {} : { expectedMs: how.expectedMs }),
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
      // A team that starts waiting again saved no credit while it did not.
      if (!this.#queue.waitingTeams().has(team)) {
        const seats = this.#seatsOf(team)
        seats.tag = Math.max(seats.tag, this.#virtual)
      }
      this.#queue.push(waiter)
      this.#dispatch()
      if (this.#queue.has(waiter)) this.#demandChanged()
    })
  }

  /** The credential's pause began (or grew): calls that would still be waiting when their time is up are told so now. */
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
   * Whether a team other than `team` waits for a seat that none is free for, below its
   * share, while `team` holds more than its own share: a seat `team` holds for a caller
   * that stopped reading is wanted.
   */
  othersWaitFor(team: string): boolean {
    if (this.#queue.size === 0 || this.#inFlight < this.capacity) return false
    const shares = this.#sharesNow()
    if (this.#held(team) <= (shares.get(team) ?? 0)) return false
    return [...this.#queue.waitingTeams()].some((t) => t !== team && this.#held(t) < (shares.get(t) ?? 0))
  }

  #pauseText(): string {
    return `credential ${this.credential} is paused by the platform for ${Math.ceil((this.pausedUntil - this.#clock.now()) / 1000)} s`
  }

  /** GW_OVERLOADED with a retry-after for a caller's call; a background call is dropped quietly. */
  #refuse(reason: RefusalReason, text: string, priority: Priority): Error {
    this.#o.onRefused?.(reason)
    if (priority === 'ahead' || priority === 'swr') return new NoIdleSlotError(this.credential)
    const waitMs = this.pausedUntil - this.#clock.now()
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

  /** Seats kept for `team`'s callers on their way back (RETURN_GRACE_MS after a call ended), on this replica. */
  seatsKept(team: string): number {
    return this.#returning(team)
  }

  /** Calls of `team` in flight on this replica, every priority. */
  running(team: string): number {
    return this.#held(team)
  }

  #held(team: string): number {
    return this.#teams.get(team)?.inFlight ?? 0
  }

  /**
   * The most calls of `team` in flight here: its own ceiling (teams[].maxConcurrent, on the
   * credential: across replicas its part of it as the lease says) and its brake, the
   * lower; null: none. A brake is this replica's (its learned limit saw the team's
   * failures here) and holds the team's calls here only.
   */
  #capOf(team: string): number | null {
    const own = this.limitsOf(team).maxConcurrent
    const part = own === null ? undefined : this.#seats.targets()?.get(team)
    const ceiling = own === null || part === undefined ? own : Math.min(own, Math.round(part))
    const brake = this.#brakes.get(team) ?? null
    if (ceiling === null) return brake
    return brake === null ? ceiling : Math.min(ceiling, brake)
  }

  /**
   * At its ceiling or brake; or the credential's calls in flight, with seats kept for short
   * callers on their way back, are at the limit in force when it came while how long its
   * calls hold a seat is unknown, or at the long calls' limit while its calls are long.
   */
  #atCeiling(team: string): boolean {
    const cap = this.#capOf(team)
    if (cap !== null && this.#held(team) >= cap) return true
    const unknown = this.#unknownLength(team)
    if (!unknown && !this.#isLong(team)) return false
    const short = this.#shortCalls()
    const held = this.#inFlight + this.#seats.elsewhere() + (short ?? 0)
    if (unknown) return held >= this.#seatsOf(team).probeCap
    return held >= (short === null ? this.#long.alone : this.#long.beside)
  }

  /**
   * None of `team`'s calls has ended and its next one is of a kind without a floor: how long
   * it holds a seat is unknown. It probes with the seats the limit had when the team came;
   * seats the limit grows meanwhile go to calls whose length is known (a year-long report
   * started in one holds it for the report's length), until its first call ends.
   */
  #unknownLength(team: string): boolean {
    return this.#o.longCallMs !== undefined && (this.#teams.get(team)?.seatMs ?? 0) === 0 && this.#queue.pressing(team)?.expectedMs === undefined
  }

  /** Whether `team`'s next call holds a seat longer than longCallMs: by its kind's floor when known, else its team's seat-time; with none waiting, its last call. */
  #isLong(team: string): boolean {
    const seats = this.#teams.get(team)
    const head = this.#queue.pressing(team)
    return head === null && seats?.lastLong !== undefined ? seats.lastLong : this.#lengthy(head?.expectedMs ?? seats?.estimateMs)
  }

  #lengthy(ms: number | undefined): boolean {
    return ms !== undefined && this.#o.longCallMs !== undefined && ms > this.#o.longCallMs
  }

  /**
   * The seats kept for short calls: those of short callers on their way back, and those
   * short calls wait for within their teams' shares (they start first, whatever a long
   * team's turn); null when no short call holds, waits for or comes back for a seat here.
   */
  #shortCalls(): number | null {
    const back = [...this.#teams.keys()].reduce((sum, team) => sum + (this.#isLong(team) ? 0 : this.#returning(team)), 0)
    const holding = [...this.#teams.values()].some((seats) => [...seats.started].some((call) => !call.long))
    const waiting = [...this.#queue.waitingTeams()].filter((team) => !this.#isLong(team))
    if (!holding && back === 0 && waiting.length === 0) return null
    // A team whose calls' length is unknown probes with seats of its own (#atCeiling): none are kept for it.
    const known = waiting.filter((team) => !this.#unknownLength(team))
    if (known.length === 0) return back
    const shares = this.#sharesNow()
    return back + known.reduce((sum, team) => sum + Math.min(this.#queue.count(team), Math.max(0, Math.ceil(shares.get(team) ?? 0) - this.#held(team))), 0)
  }

  /** What each team holds and waits for on this replica (and the seats it is about to come back for), within its ceiling. */
  #demands(): TeamDemand[] {
    const waiting = this.#queue.countByTeam()
    const teams: TeamDemand[] = []
    for (const team of new Set([...waiting.keys(), ...this.#teams.keys()])) {
      const held = this.#held(team)
      const brake = this.#brakes.get(team) ?? Infinity
      // A braked team wants no more seats here than its brake lets it fill.
      const demand = Math.min(held + (waiting.get(team) ?? 0) + this.#returning(team), Math.max(held, brake))
      if (demand === 0) continue
      teams.push({ team, weight: this.#weight(team), demand, cap: this.limitsOf(team).maxConcurrent, held })
    }
    return teams
  }

  /**
   * Seats `team` gave back with nothing waiting within RETURN_GRACE_MS: its callers are on
   * their way back. Those of them already waiting count as waiting, the others still as
   * on their way (one caller back first does not give the others' seats away).
   */
  #returning(team: string): number {
    const seats = this.#teams.get(team)
    if (!seats || this.#clock.now() >= seats.returnBy) return 0
    return Math.max(0, seats.returning - this.#queue.count(team))
  }

  /** Each team's share of this replica's seats now, by what it holds and waits for. */
  #sharesNow(): Map<string, number> {
    const shares = seatShares(this.capacity, this.#demands())
    // Across replicas, a team's share here is what the lease gives it, where it says.
    const targets = this.#seats.targets()
    if (targets) for (const [team, target] of targets) if (shares.has(team)) shares.set(team, target)
    return shares
  }

  /** Every team's demand, for a lease across replicas to ask by. */
  #demandChanged(): void {
    this.#seats.demand({ limit: this.#limit, inFlight: this.#inFlight, waiting: this.#queue.size, teams: this.#demands() })
  }

  #seatsOf(team: string): TeamSeats {
    let seats = this.#teams.get(team)
    if (!seats) this.#teams.set(team, (seats = { inFlight: 0, seatMs: 0, started: new Set(), tag: this.#virtual, estimateMs: MIN_CHARGE_MS, returning: 0, returnBy: 0, probeCap: this.#limit }))
    return seats
  }

  #start(waiter: Pick<Waiter, 'team' | 'priority' | 'expectedMs'>): Slot {
    const { team } = waiter
    const weight = this.#weight(team)
    this.#inFlight += 1
    const seats = this.#seatsOf(team)
    seats.inFlight += 1
    // A caller on its way back takes the seat kept for it.
    if (seats.returning > 0) seats.returning -= 1
    // Charged its team's usual seat-time now; what it really held when it ends.
    const start = Math.max(seats.tag, this.#virtual)
    seats.tag = start + seats.estimateMs / weight
    this.#virtual = start
    const call = { at: this.#clock.now(), charged: seats.estimateMs, long: this.#lengthy(waiter.expectedMs ?? seats.estimateMs) }
    seats.started.add(call)
    let released = false
    const release = () => {
      if (released) return
      released = true
      this.#inFlight -= 1
      const held = Math.max(MIN_CHARGE_MS, this.#clock.now() - call.at)
      seats.inFlight -= 1
      // A team's first call to end says how long its calls hold a seat; later ones move that.
      seats.estimateMs = seats.seatMs === 0 ? held : seats.estimateMs + ESTIMATE_GAIN * (held - seats.estimateMs)
      seats.seatMs += held
      seats.tag += (held - call.charged) / weight
      seats.started.delete(call)
      seats.lastLong = call.long
      // A team's caller comes back for its next call; the gateway's own calls and background work do not.
      if (waiter.priority === 'caller' && team !== GATEWAY_TEAM && this.#queue.count(team) === 0) {
        const now = this.#clock.now()
        seats.returning = (now < seats.returnBy ? seats.returning : 0) + 1
        seats.returnBy = now + RETURN_GRACE_MS
      }
      this.#dispatch()
      this.#demandChanged()
    }
    return { release, inFlight: this.#inFlight + this.#seats.elsewhere(), teamInFlight: seats.inFlight }
  }

  #remove(waiter: Waiter): void {
    waiter.detach()
    if (this.#queue.remove(waiter)) this.#demandChanged()
  }

  /**
   * Starts queued calls while seats are free and the credential is not paused: each time
   * the most pressing call of the team with the best claim (below its share, fewest seats
   * for its weight). A team past its share starts nothing while another waits below
   * its own; a team alone takes every free seat.
   */
  #dispatch(): void {
    let started = false
    const capacity = this.capacity
    // The seats in force before a cut, while teams that borrowed under them hold more than their shares.
    if (capacity < this.#lastCapacity && this.#inFlight > capacity) this.#beforeCut = Math.max(this.#beforeCut, this.#lastCapacity)
    this.#lastCapacity = capacity
    while (this.#queue.size > 0 && this.pausedUntil === 0) {
      const full = this.#inFlight >= this.capacity
      const waiter = full ? this.#underShare() : this.#next()
      if (waiter === null) {
        if (full) {
          this.#starved ||= this.#seats.saturated()
          this.#reclaim()
        }
        break
      }
      this.#queue.remove(waiter)
      waiter.detach()
      started = true
      waiter.resolve(this.#start(waiter))
    }
    if (started) this.#demandChanged()
  }

  /** The next call to start: null when every waiting team is at its ceiling. */
  #next(): Waiter | null {
    const waiting = [...this.#queue.waitingTeams()].filter((team) => !this.#atCeiling(team))
    // Long calls held for short calls on their way back start once those seats are let go.
    if (waiting.length === 0) return this.#wakeAt(this.#backBy(() => true))
    const shares = this.#sharesNow()
    const below = waiting.filter((team) => this.#held(team) < (shares.get(team) ?? 0))
    if (below.length === 0) {
      // A team below its share whose callers are on their way back keeps its seat a moment.
      const back = this.#backBy((team) => this.#held(team) < (shares.get(team) ?? 0))
      if (back > 0) return this.#wakeAt(back)
    }
    const pool = below.length > 0 ? below : waiting
    let best: string | null = null
    let bestTag = Infinity
    let bestSeq = Infinity
    for (const team of pool) {
      const tag = Math.max(this.#seatsOf(team).tag, this.#virtual)
      const seq = this.#queue.pressing(team)?.seq ?? Infinity
      if (tag < bestTag || (tag === bestTag && seq < bestSeq)) [best, bestTag, bestSeq] = [team, tag, seq]
    }
    return best === null ? null : this.#queue.pressing(best)
  }

  /** When the last seat kept for a returning caller of a team that `which` picks is let go (epoch ms); 0: none is kept. */
  #backBy(which: (team: string) => boolean): number {
    return Math.max(0, ...[...this.#teams].map(([team, seats]) => (this.#returning(team) > 0 && which(team) ? seats.returnBy : 0)))
  }

  /** Null, and the queue woken at `at` (epoch ms; 0: not), when seats kept for returning callers are let go. */
  #wakeAt(at: number): null {
    if (at > 0 && this.#returnTimer === null) {
      this.#returnTimer = this.#timer(() => {
        this.#returnTimer = null
        this.wake()
      }, at - this.#clock.now())
    }
    return null
  }

  /**
   * Every seat in use after a cut (the limit fell, or a lease shrank): the most pressing
   * call of a team below its share, if the seats the other teams hold past theirs cover
   * it. The cut is so taken from the teams that borrowed, as their calls end, not from the
   * team whose short calls end first; the calls in flight stay within the seats in force
   * before the cut.
   */
  #underShare(): Waiter | null {
    if (this.#inFlight >= this.#beforeCut) return null
    const shares = this.#sharesNow()
    let excess = 0
    for (const [team, seats] of this.#teams) excess += Math.max(0, seats.inFlight - Math.ceil(shares.get(team) ?? 0))
    if (excess === 0) this.#beforeCut = 0
    if (this.#inFlight + 1 - excess > this.capacity) return null
    let best: Waiter | null = null
    for (const team of this.#queue.waitingTeams()) {
      if (this.#held(team) + 1 > (shares.get(team) ?? 0) || this.#atCeiling(team)) continue
      const pick = this.#queue.pressing(team)
      if (pick && (best === null || Math.max(this.#seatsOf(team).tag, this.#virtual) < Math.max(this.#seatsOf(best.team).tag, this.#virtual))) best = pick
    }
    return best
  }

  /** A team below its share waits for a seat none is free for: a seat held for a caller that stopped reading may come back. */
  #reclaim(): void {
    if (!this.#o.reclaim) return
    const shares = this.#sharesNow()
    for (const team of this.#queue.waitingTeams()) {
      if (this.#held(team) >= (shares.get(team) ?? 0) || this.#atCeiling(team)) continue
      if (this.#o.reclaim(team, (holder) => holder !== team && this.#held(holder) > (shares.get(holder) ?? 0))) return
    }
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
