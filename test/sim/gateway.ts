import { MemoryLeaseStore } from '../helpers/memory-lease-store.js'
import type { FailMode, SimPlatform } from './platform.js'
import type { SimClock } from './sim-clock.js'
import type { Timer } from '../../src/clock.js'
import type { LoopTime } from '../../src/platform/governor/answer-timing.js'
import type { GatewayLoop } from './gateway-loop.js'
import type { Pauses } from '../../src/platform/pauses/pauses.js'
import type { ReplicaPause } from './replica-pause.js'

/** What a call tells the governor when it ends: the platform's answer, or none (its deadline, a connection error). */
export type SimOutcome = { status: number; latencyMs: number; retryAfter?: string; count?: { limit: number; remaining: number; refusal: boolean } } | { status: null; latencyMs: number; timedOut: boolean }

export interface SimSeat {
  /** The call's outcome; `readMs`: its caller reads the answer this long after it came (one that stopped reading). */
  end(outcome: SimOutcome, readMs?: number): void
}

export type SimPriority = 'caller' | 'ahead' | 'swr' | 'warm'

export interface SeatAsk {
  team: string
  /** The report's kind: what the governor estimates its cost by. */
  workClass: string
  priority: SimPriority
  /** Epoch ms: the call's whole budget ends then. */
  deadline: number
  /** Aborts when the caller hangs up (while the call waits for a seat). */
  signal: AbortSignal
}

/** One replica's governor of the credential, as the simulator drives it. */
export interface GovernorUnderTest {
  seat(ask: SeatAsk): Promise<SimSeat>
  /** The limit in force, a probe seat lent to short calls only aside (the seats the shares are of). */
  readonly limit: number
  /** Seats held here (calls in flight, and calls cut by their deadline until their expected end). */
  readonly inFlight: number
  /** Calls waiting for a seat here. */
  readonly waiting: number
  /** Calls waiting for a seat here, per team. */
  waitingByTeam(): ReadonlyMap<string, number>
  /** Seat-seconds charged to `team` here, calls in flight included. */
  seatSeconds(team: string): number
  /** What the model holds back here: the seats owed to other active teams, and whether every waiting call is held back by that alone (each longer than the lending horizon), or by a ceiling or a pause. */
  heldBack(): { owed: number; longOnly: boolean }
  stop(): void
}

export interface GovernorContext {
  clock: SimClock
  replica: string
  /** The lease store every replica shares (null: one replica alone). */
  store: MemoryLeaseStore | null
  /** Each team's weight (teams[].weight). */
  weights: ReadonlyMap<string, number>
  /** The replica's event loop as its loop-probe reads it (gateway-loop.ts); none: a gateway that handles every answer as it comes, each timed. */
  loop?: () => LoopTime
  /** How late that loop wakes now on average (answer-timing.ts processLateness), with `loop`. */
  loopLate?: () => number
  /** Every replica's pauses of the platform's 429s, each told the others' at once (as pause-sharing.ts tells them through Redis). */
  pauses: Set<Pauses>
}

export type GovernorFactory = (ctx: GovernorContext) => GovernorUnderTest

export interface CallRecord {
  team: string
  replica: number
  workClass: string
  priority: SimPriority
  asked: number
  /** When it had its seat (null: refused, or its caller left first). */
  seated: number | null
  ended: number
  /** 'ok' (any status the platform answered), 'refused' (the governor said no), 'timeout' (its deadline), 'gone' (its caller hung up while it waited), 'failed' (no connection). */
  result: 'ok' | 'refused' | 'timeout' | 'gone' | 'failed'
  status: number | null
  refusal?: string
  /** Seats held on every replica as it took its own (itself included), and the highest limit in force then. */
  heldAtSeat?: number
  limitAtSeat?: number
  /** The replicas whose lease, as the store last granted it, held no seat as it took its own. */
  unleasedAtSeat?: number
}

export interface CallOptions {
  team: string
  workClass: string
  costMs: number
  fail: FailMode
  /** Its own factor on its cost at the platform (platform.ts); none: the platform draws it. */
  costFactor?: number
  priority?: SimPriority
  /** The call's whole budget (platform.timeout: 30 s). */
  deadlineMs?: number
  /** The caller hangs up this long after asking (a call already sent goes on, as a report fill does). */
  hangUpMs?: number
  /** The caller reads its answer this long after it came (a caller that stopped reading): the seat is held until then unless the governor wants it. */
  holdMs?: number
}

export const DEFAULT_DEADLINE_MS = 30_000

/**
 * A caller's signal as the governor reads it (`aborted`, `reason`, its 'abort' listeners,
 * called at once in order, as an AbortSignal's are), without an EventTarget's cost: a run
 * makes one per call.
 */
class CallerSignal {
  aborted = false
  reason: unknown = undefined
  #listeners: (() => void)[] = []

  addEventListener(_type: 'abort', fn: () => void): void {
    this.#listeners.push(fn)
  }

  removeEventListener(_type: 'abort', fn: () => void): void {
    const i = this.#listeners.indexOf(fn)
    if (i !== -1) this.#listeners.splice(i, 1)
  }

  abort(reason: Error): void {
    if (this.aborted) return
    this.aborted = true
    this.reason = reason
    const listeners = this.#listeners
    this.#listeners = []
    for (const fn of listeners) fn()
  }

  asSignal(): AbortSignal {
    return this as unknown as AbortSignal
  }
}

/**
 * The gateway's side of a call, as the platform client makes it: a seat, the call, the
 * outcome to the governor, the seat back. A call cut by its deadline leaves the platform
 * working on it.
 */
export class SimGateway {
  readonly #clock: SimClock
  readonly #platform: SimPlatform
  readonly replicas: GovernorUnderTest[]
  readonly store: MemoryLeaseStore | null
  readonly records: CallRecord[] = []

  /** Each replica's event loop, where the gateway is starved of its core (gateway-loop.ts); empty: every answer handled as it comes. */
  readonly #loops: readonly GatewayLoop[]
  /** Each replica's pause (replica-pause.ts), where its machine is paused in the run. */
  readonly #machinePauses: readonly (ReplicaPause | undefined)[]

  constructor(clock: SimClock, platform: SimPlatform, factory: GovernorFactory, replicas: number, weights: ReadonlyMap<string, number>, loops: readonly GatewayLoop[] = [], machinePauses: readonly (ReplicaPause | undefined)[] = []) {
    this.#clock = clock
    this.#platform = platform
    this.#loops = loops
    this.#machinePauses = machinePauses
    // Redis an instant away (a millisecond per command), as in one data centre.
    this.store = replicas > 1 ? new MemoryLeaseStore(clock, 1) : null
    const pauses = new Set<Pauses>()
    this.replicas = Array.from({ length: replicas }, (_, i) => {
      const loop = loops[i]
      const paused = machinePauses[i]
      return factory({ clock: paused?.clock ?? clock, replica: `r${i}`, store: this.store, weights, pauses, ...(loop ? { loop: () => loop.time(), loopLate: () => loop.lateMean() } : paused?.loop ? { loop: paused.loop } : {}) })
    })
  }

  /** The replicas (by index) with calls waiting and none in flight. */
  stopped(): number[] {
    return this.replicas.flatMap((r, i) => (r.waiting > 0 && r.inFlight === 0 ? [i] : []))
  }

  /** Seats held on every replica. */
  get inFlight(): number {
    return this.replicas.reduce((sum, r) => sum + r.inFlight, 0)
  }

  /** The highest limit in force on any replica. */
  get limit(): number {
    return Math.max(...this.replicas.map((r) => r.limit))
  }

  /** The highest limit in force on a replica with calls in flight or waiting (none: on any): one no call reaches holds the limit it last knew, in force for no call. */
  get servingLimit(): number {
    const serving = this.replicas.filter((r) => r.inFlight + r.waiting > 0)
    return serving.length === 0 ? this.limit : Math.max(...serving.map((r) => r.limit))
  }

  get waiting(): number {
    return this.replicas.reduce((sum, r) => sum + r.waiting, 0)
  }

  /**
   * Whether `idle` workers while calls wait are the model's: every waiting call is long,
   * and the idle workers are seats owed to teams that asked within the linger, on
   * whichever replica holds them; or they are not the rule's: freed by answers a starved
   * gateway has not handled yet.
   */
  idleAllowed(idle: number): boolean {
    // A worker freed by an answer the loop has not handled yet is the gateway's own lateness
    // (gateway-loop.ts): its seat ends when the answer is handled, whatever the rule.
    idle -= this.#loops.reduce((sum, loop) => sum + loop.unhandled, 0)
    // No worker idle: nothing to allow (the seats owed are never fewer than none).
    if (idle <= 0) return true
    let owed = 0
    for (const r of this.replicas) {
      const held = r.heldBack()
      // A replica whose waiting calls include a short one lends its owed seats to it.
      if (r.waiting === 0 || held.longOnly) owed += held.owed
    }
    return idle <= owed + 1e-9
  }

  waitingByTeam(): Map<string, number> {
    const out = new Map<string, number>()
    for (const r of this.replicas) for (const [team, n] of r.waitingByTeam()) out.set(team, (out.get(team) ?? 0) + n)
    return out
  }

  seatSeconds(team: string): number {
    return this.replicas.reduce((sum, r) => sum + r.seatSeconds(team), 0)
  }

  async call(replica: number, opts: CallOptions): Promise<CallRecord> {
    const pause = this.#machinePauses[replica]
    // A paused replica takes a call when it runs again (spending no turn where none is paused:
    // a run without pauses takes the turns it took before them).
    const clock = pause?.clock ?? this.#clock
    const asked = clock.now()
    const deadline = asked + (opts.deadlineMs ?? DEFAULT_DEADLINE_MS)
    if (pause?.paused()) await pause.awake()
    const record: CallRecord = { team: opts.team, replica, workClass: opts.workClass, priority: opts.priority ?? 'caller', asked, seated: null, ended: asked, result: 'ok', status: null }
    this.records.push(record)
    const waitEnds = new CallerSignal()
    const timers = [clock.setTimeout(() => waitEnds.abort(new Error('timeout')), deadline - clock.now())]
    if (opts.hangUpMs !== undefined) timers.push(clock.setTimeout(() => waitEnds.abort(new Error('gone')), asked + opts.hangUpMs - clock.now()))
    const governor = this.replicas[replica] as GovernorUnderTest
    let seat: SimSeat
    try {
      seat = await governor.seat({ team: opts.team, workClass: opts.workClass, priority: record.priority, deadline, signal: waitEnds.asSignal() })
    } catch (err) {
      timers.forEach((t) => clock.clearTimeout(t))
      record.ended = clock.now()
      const message = (err as Error).message
      record.result = waitEnds.aborted ? (message === 'gone' ? 'gone' : 'timeout') : 'refused'
      if (record.result === 'refused') record.refusal = (err as { code?: string }).code ?? message
      return record
    }
    timers.forEach((t) => clock.clearTimeout(t))
    if (pause?.paused()) await pause.awake()
    record.seated = clock.now()
    record.heldAtSeat = this.inFlight
    record.limitAtSeat = this.limit
    if (this.store !== null) record.unleasedAtSeat = this.replicas.length - this.store.leasing
    const sent = clock.now()
    const sentOn = pause?.monotonic() ?? sent
    const loop = this.#loops[replica]
    const came = this.#platform.send({ team: opts.team, route: opts.workClass, costMs: opts.costMs, fail: opts.fail, ...(opts.costFactor === undefined ? {} : { costFactor: opts.costFactor }) })
    // The answer as the gateway has it: once its loop handled it.
    const answer = loop ? loop.handled(came) : came
    const cut = this.#nullAfter(deadline - clock.now())
    const got = await Promise.race([answer, cut.promise])
    cut.clear()
    if (pause?.paused()) await pause.awake()
    record.ended = clock.now()
    // As the platform client times it, on the monotonic reading.
    const latencyMs = (pause?.monotonic() ?? clock.now()) - sentOn
    if (got === null) {
      record.result = 'timeout'
      // The caller has its timeout; the platform works on, and its answer is still awaited
      // for another platform.timeout (platform-client.ts): the seat ends when the
      // platform's work does.
      const watch = this.#nullAfter(DEFAULT_DEADLINE_MS)
      void Promise.race([answer, watch.promise]).then(async (late) => {
        watch.clear()
        if (pause?.paused()) await pause.awake()
        const lateMs = (pause?.monotonic() ?? clock.now()) - sentOn
        if (late === null || late.status === 0) seat.end({ status: null, latencyMs: lateMs, timedOut: true })
        else seat.end({ status: late.status, latencyMs: lateMs, ...(late.count ? { count: late.count } : {}) })
      })
      return record
    }
    if (got.status === 0) {
      record.result = 'failed'
      seat.end({ status: null, latencyMs, timedOut: false })
      return record
    }
    record.status = got.status
    seat.end({ status: got.status, latencyMs, ...(got.retryAfter === undefined ? {} : { retryAfter: got.retryAfter }), ...(got.count ? { count: got.count } : {}) }, opts.holdMs)
    return record
  }

  /**
   * A promise of null `ms` from now, and what clears its timer once the race it is in is
   * decided: a timer that fires for nothing still costs the clock a turn.
   */
  #nullAfter(ms: number): { promise: Promise<null>; clear(): void } {
    let timer: Timer | null = null
    const promise = new Promise<null>((resolve) => (timer = this.#clock.setTimeout(() => resolve(null), ms)))
    return { promise, clear: () => this.#clock.clearTimeout(timer) }
  }

  stop(): void {
    for (const r of this.replicas) r.stop()
    for (const loop of this.#loops) loop.stop()
  }
}
