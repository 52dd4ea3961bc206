/**
 * The limit rule (docs/governor.md, "The limit rule"): the seats in force follow the
 * platform's knee, the most calls it serves at once, learned by Little's law. A window
 * takes the calls started in it and waits for their ends; then
 *
 *   queued = calls in flight × the delay past their floors every team saw / latency
 *   knee   = the workers W at which the loads the calls started at queue that many
 *
 * A queue delays every team's calls by the same wait (the platform takes them in
 * order); a team's own slow reports delay only its own. Latency alone cannot tell a
 * slower platform from a queue; the response to a change of load can. So:
 *
 * - a probe: while calls wait for a seat, the limit goes a step past the knee for a
 *   window (at a fresh start it doubles until the first queue): room shows as no queue,
 *   a queue shows the knee;
 * - a test: a window at the knee whose queue is sure cuts the limit to the knee it
 *   shows; if the delay goes with the cut, it was a queue, and the knee is what was
 *   served; if it stays, the platform is slower: the floors move up to the latency now,
 *   and the knee is as it was;
 * - a fault (overload answers from every answering team or from two teams, the
 *   platform's silence, a credential pause): the limit in force halves, the knee stays,
 *   and the first window without one brings the limit back to the knee.
 *
 * The floors (each kind's latency with a free worker) are measured first at the
 * minimum limit and then in every window without a queue. Pure logic: time is passed in.
 */

/** A window takes the calls started over this long at least... */
export const WINDOW_MS = 1000
/** ...and this many at least; */
export const MIN_CALLS = 8
/** it is judged once its calls ended and its queue is known within this many calls (one standard error), */
export const QUEUE_PRECISION = 0.5
/** or after this long with FEW_CALLS. */
export const MAX_SPAN_MS = 10_000
export const FEW_CALLS = 4
/** A queue counts when it is this many calls at least and SURE standard errors (a cut costs workers); none, when it is below by ROOM standard errors (a step too far shows as a queue at the knee). */
export const QUEUE_MIN = 1
export const SURE = 3
export const ROOM = 2
/** Between probes in service: windows judged at the knee while calls wait for a seat. */
export const PROBE_EVERY = 2
/** How far past the knee a probe in service goes first: this share of it, one call at least. */
export const PROBE_SHARE = 1 / 16
/** How far a floor may drift unseen between two windows, as a share of it: its uncertainty grows by this each window (a Kalman filter's process noise), so answers of long ago weigh less than new ones. */
export const FLOOR_DRIFT = 0.005
/** The first window, at the minimum limit, runs until each kind's floor is known within this share of it (one standard error), or MAX_SPAN_MS. */
export const FLOOR_PRECISION = 0.05
/** The most calls in flight a window saw without a queue, and the fewest it saw a queue at, bound the knee for this long. */
export const BOUNDS_MS = 60_000
/** A team draws overload when this share of its answers in a second, one at least, say the platform is overloaded. */
export const OVERLOAD_SHARE = 0.05
/** A call overdue (seats.ts) and no answer for this many times the usual gap between answers (a second at least): the platform is silent, a fault. */
export const SILENCE_GAPS = 10
/** How much each gap between answers moves the usual gap. */
export const GAP_GAIN = 0.1
/** Kinds whose floors are kept; past this many the least recently seen goes. */
export const MAX_FLOORS = 512

/** What the estimator learns from one call's end. */
export interface Answer {
  /** When the call started and when it ended (epoch ms). */
  startedAt: number
  at: number
  team: string
  /** The call's kind: its team and its work; each has a floor of its own. */
  kind: string
  /** Calls of the credential in flight when it started, itself included, on every replica. */
  load: number
  /** The window it started in (what `started` returned). */
  window: number
  /** ok: the platform worked on it and answered; overload: 502/503/504, no connection, or a deadline passed at twice its expected time; other: anything that says nothing of load. */
  outcome: 'ok' | 'overload' | 'other'
}

export type Phase = 'floors' | 'probe' | 'cruise' | 'test' | 'fault'

/** Why the limit moved. */
export type Move = 'probe' | 'grew' | 'knee' | 'test' | 'slower' | 'queue' | 'fault' | 'restored' | 'adopted'

export interface Step {
  limit: number
  knee: number
  move: Move
}

/** What a judged window measured. */
export interface Measured {
  /** Calls in flight when its calls started (mean). */
  load: number
  /** Their mean latency (ms). */
  latency: number
  /** The delay past their floors every team saw (ms). */
  delay: number
  /** Calls queued at the platform on average, and that figure's standard error (the floors' own included). */
  queued: number
  se: number
  /** The workers that make that queue from the loads its calls started at: the knee the window shows. */
  served: number
}

interface Floor {
  ms: number
  /** The variance of its own estimate (ms²): of a window's mean, as the moving average carries it. */
  variance: number
  /** Answers it was learned from. */
  answers: number
}

interface Latencies {
  n: number
  sum: number
  sum2: number
}


interface Window {
  serial: number
  start: number
  /** When it stopped taking calls (null: it takes them), and when it may stop next. */
  closedAt: number | null
  closeAt: number
  started: number
  ended: number
  ok: number
  /** Calls in flight when its calls started: summed, the most, and how many started at each. */
  load: number
  peak: number
  loads: Map<number, number>
  /** The most calls in flight when one of its answered calls started. */
  answeredPeak: number
  /** The floors of its calls that have one, summed, and how many (their service time), and the longest. */
  service: number
  floored: number
  longest: number
  /** Its answers' latency, summed. */
  ms: number
  /** Its answers' latency, and their delay past their floors, per kind. */
  kinds: Map<string, Latencies>
  delays: Map<string, Latencies>
  waited: boolean
}

/** What the window before a test measured, and what the limit was doing. */
interface Tested extends Measured {
  loads: Map<number, number>
  limit: number
  probing: boolean
  startup: boolean
}

export interface KneeOptions {
  initial: number
  min: number
  max: number
}

export class KneeEstimator {
  readonly #min: number
  readonly #max: number
  readonly #initial: number
  #knee: number
  #limit: number
  #phase: Phase = 'floors'
  #startup = true
  #step = 1
  #sinceProbe = 0
  #before: Tested | null = null
  #lastCut = -Infinity
  #lastAnswer = -Infinity
  // The usual time between two answers (ms), smoothed.
  #gapMs = WINDOW_MS
  // Each team's answers and overload answers over the second under way.
  #second: { start: number; teams: Map<string, { answers: number; overloads: number }> } = { start: -Infinity, teams: new Map() }
  readonly #floors = new Map<string, Floor>()
  #window: Window | null = null
  #serial = 0
  // The most calls in flight a recent window saw without a queue, and the fewest one saw a queue at.
  #room = { load: 0, at: -Infinity }
  #now = -Infinity
  #queueAt = { load: Infinity, at: -Infinity }
  /** What the last judged window measured, and in which phase. */
  measured: (Measured & { phase: Phase; waited: boolean }) | null = null

  constructor(opts: KneeOptions) {
    const { initial, min, max } = opts
    if (!Number.isInteger(min) || min < 1) throw new RangeError(`KneeEstimator: min must be an integer ≥ 1 (got ${min})`)
    if (!Number.isInteger(max) || max < min) throw new RangeError(`KneeEstimator: max must be an integer ≥ min ${min} (got ${max})`)
    this.#min = min
    this.#max = max
    this.#initial = this.#clamp(initial)
    this.#knee = min
    this.#limit = min
  }

  /** The seats in force. */
  get limit(): number {
    return this.#limit
  }

  /** The platform's knee as learned: the most calls it serves at once. The seats past it are a probe's: the teams' shares are of the knee. */
  get knee(): number {
    return this.#knee
  }

  get phase(): Phase {
    return this.#phase
  }

  /** The floor of the kind learned from the most answers (ms): the platform's latency with a free worker, for the operators; null before any. */
  get floorMs(): number | null {
    let best: Floor | null = null
    for (const f of this.#floors.values()) if (best === null || f.answers > best.answers) best = f
    return best?.ms ?? null
  }

  /** The floor of `kind` (ms): its latency with a free worker; null while unknown. */
  floorOf(kind: string): number | null {
    return this.#floors.get(kind)?.ms ?? null
  }

  /** A call of `kind` started with `load` calls in flight, itself included, on every replica; returns the window its end belongs to (0: none). */
  started(kind: string, load: number): number {
    const w = this.#window
    if (w === null || w.closedAt !== null) return 0
    w.started++
    w.load += load
    w.peak = Math.max(w.peak, load)
    w.loads.set(load, (w.loads.get(load) ?? 0) + 1)
    const floor = this.#floors.get(kind)
    if (floor !== undefined) {
      w.service += floor.ms
      w.floored++
      w.longest = Math.max(w.longest, floor.ms)
    }
    return w.serial
  }

  /** A call waited with every seat of the limit taken or owed: the window used the limit. */
  waited(): void {
    if (this.#window) this.#window.waited = true
  }

  ended(a: Answer): void {
    this.#countSecond(a)
    if (a.outcome !== 'overload') this.#seen(a.at)
    const w = this.#window
    if (w === null || a.window !== w.serial) return
    w.ended++
    if (a.outcome !== 'ok') return
    const ms = a.at - a.startedAt
    w.ok++
    w.ms += ms
    w.answeredPeak = Math.max(w.answeredPeak, a.load)
    add(w.kinds, a.kind, ms)
    const floor = this.#floors.get(a.kind)
    if (floor !== undefined) add(w.delays, a.kind, ms - floor.ms)
  }

  /** Another replica's limit and knee (the shared record): taken as they are; a new window opens (what this one gathered was another limit's). */
  adopt(limit: number, knee: number, now: number): Step | null {
    const l = this.#clamp(limit)
    const k = this.#clamp(knee)
    this.#open(now)
    if (l === this.#limit && k === this.#knee) return null
    this.#limit = l
    this.#knee = k
    this.#phase = l < k ? 'fault' : 'cruise'
    this.#startup = false
    return { limit: l, knee: k, move: 'adopted' }
  }

  /** The platform paused the whole credential: a fault. */
  pause(now: number): Step | null {
    return this.#fault(now)
  }

  /**
   * Watches for faults, closes and judges the window when it is ready; null while nothing
   * moves. `overdueSince`: since when a call in flight has been overdue (running past
   * OVERDUE times its expected time: seats.ts), or null; with no answer for SILENCE_GAPS
   * usual gaps between answers, the platform is silent (stalled), a fault. A queue delays
   * calls but keeps the answers coming.
   */
  tick(now: number, overdueSince: number | null): Step | null {
    this.#now = now
    if (this.#window === null) {
      this.#open(now)
      return null
    }
    if (now - this.#second.start >= WINDOW_MS) {
      const overloaded = this.#overloaded()
      this.#second = { start: now, teams: new Map() }
      if (overloaded) {
        if (process.env.DEBUG_KNEE) console.log('fault: overload', [...this.#second.teams])
        return this.#fault(now)
      }
    }
    if (overdueSince !== null && now - this.#lastAnswer > Math.max(WINDOW_MS, SILENCE_GAPS * this.#gapMs) && now - this.#lastCut >= WINDOW_MS) {
      if (process.env.DEBUG_KNEE) console.log('fault: silence since', overdueSince, 'last answer', this.#lastAnswer)
      return this.#fault(now)
    }
    const w = this.#window
    const span = now - w.start
    // A window waits for its calls' ends, up to MAX_SPAN_MS or three of its longest calls:
    // the calls a queue delays most answer last, and a window judged on its first answers
    // would not see them.
    const late = span >= Math.max(MAX_SPAN_MS, 3 * w.longest)
    // A window takes calls for WINDOW_MS (the first, at the minimum limit, for FEW_CALLS):
    // a burst's calls are in one window, not its first few.
    const least = this.#phase === 'floors' ? FEW_CALLS : Math.min(MIN_CALLS, Math.max(FEW_CALLS, 2 * this.#limit))
    if (w.closedAt === null) {
      if ((w.started >= least && (this.#phase === 'floors' || now >= w.closeAt)) || (late && w.started >= FEW_CALLS)) w.closedAt = now
      else return null
    }
    const done = w.ended >= w.started
    if (!done && !late) return null
    if (this.#phase === 'floors' ? w.ok === 0 || [...w.kinds.values()].some((k) => !precise(k)) : w.ok < least) {
      // Too few answers yet: the window takes more calls (the floors' until MAX_SPAN_MS; a
      // window of few calls starts again).
      if (late) this.#open(now)
      else this.#reopen(w, now)
      if (!late || this.#phase !== 'floors' || w.ok === 0) return null
    }
    const q = this.#queue(w)
    // A queue, or its absence, must be known: else the window takes more calls.
    if (this.#phase !== 'floors' && verdictOf(q) === 'unknown' && !late) {
      this.#reopen(w, now)
      return null
    }
    const phase = this.#phase
    // At a fresh start, a window that ran its longest without a sure queue counts as none:
    // its floors, from the few answers at the minimum limit, may be all that keeps it
    // unsure, and a queue of less than a call shows at the next probe.
    const sure = verdictOf(q)
    const verdict = sure === 'unknown' && late && this.#startup && q.queued < QUEUE_MIN ? 'none' : sure
    this.#bounds(w, verdict, now)
    const step = this.#judge(w, q, verdict)
    this.measured = { ...q, phase, waited: w.waited }
    this.#open(now)
    return step
  }

  #judge(w: Window, q: Measured, verdict: 'queued' | 'none' | 'unknown'): Step | null {
    const before = this.#limit
    switch (this.#phase) {
      case 'floors':
        this.#learnFloors(w, true)
        this.#phase = 'probe'
        this.#limit = this.#initial
        return this.#moved(before, 'probe')
      case 'fault':
        this.#phase = 'cruise'
        this.#limit = this.#knee
        return this.#moved(before, 'restored')
      case 'probe':
        if (verdict === 'none') this.#learnFloors(w, false)
        if (verdict === 'queued') return this.#test(w, q, before)
        if (verdict === 'none' && w.waited) {
          // Calls waited, and none queued: the platform has room for the most its answered calls met.
          this.#knee = this.#bounded(Math.max(this.#knee, w.answeredPeak))
          // At a fresh start the limit doubles; in service it goes on a step at a time while
          // the calls fill it (room shown only through owed seats is not probed further).
          const onward = this.#startup || w.peak >= this.#limit
          if (onward && this.#limit < this.#max) {
            if (this.#startup) this.#step = this.#knee
            this.#limit = this.#clamp(this.#knee + this.#step)
            return this.#moved(before, 'grew')
          }
        } else {
          // The calls did not use the limit, or the window could not tell: the probe goes on
          // at the same limit, its next window adding to what this one saw.
          return null
        }
        this.#settle()
        return { limit: this.#limit, knee: this.#knee, move: 'knee' }
      case 'cruise':
        if (verdict === 'queued') {
          // A sure queue at the knee: the bound below it that said otherwise is gone.
          if (this.#bounded(q.served) >= this.#limit) this.#room = { load: 0, at: -Infinity }
          return this.#test(w, q, before)
        }
        // At the knee, a window without a sure queue refines the floors (a queue of less than
        // a call may so enter them, never more: the limit grows only on a probe's proof).
        this.#learnFloors(w, false)
        if (w.waited && ++this.#sinceProbe >= PROBE_EVERY && this.#knee < this.#max) {
          this.#sinceProbe = 0
          this.#phase = 'probe'
          this.#limit = this.#clamp(this.#knee + this.#step)
          return this.#moved(before, 'probe')
        }
        return null
      case 'test': {
        const a = this.#before as Tested
        // By Little's law, the calls queued before the cut are those whose wait went with it.
        const gone = a.queued > 0 ? (a.queued * Math.max(0, a.delay - q.delay)) / a.delay : 0
        // A delay that mostly stayed at fewer calls in flight is the platform's own
        // slowness: the floors move up to it, the knee is as it was, and a probe goes on.
        if (q.delay > a.delay / 2) {
          this.#rebaseFloors(w)
          if (a.probing) {
            this.#phase = 'probe'
            this.#startup = a.startup
            this.#limit = a.limit
          } else this.#settle()
          return { limit: this.#limit, knee: this.#knee, move: 'slower' }
        }
        this.#knee = this.#bounded(workersFor(a.loads, gone))
        this.#settle()
        return { limit: this.#limit, knee: this.#knee, move: 'queue' }
      }
    }
  }

  /**
   * A window bounds the knee: from below by the most calls in flight its answered calls
   * met when nothing queued, from above by the most its calls met when a queue surely formed.
   */
  #bounds(w: Window, verdict: 'queued' | 'none' | 'unknown', now: number): void {
    if (this.#phase === 'floors' || verdict === 'unknown') return
    if (verdict === 'none' && (now - this.#room.at > BOUNDS_MS || w.answeredPeak >= this.#room.load)) this.#room = { load: w.answeredPeak, at: now }
    if (verdict === 'queued' && (now - this.#queueAt.at > BOUNDS_MS || w.peak <= this.#queueAt.load)) this.#queueAt = { load: w.peak, at: now }
    // Bounds that cross (the platform changed, or one was noise): the newer stands.
    if (this.#room.load >= this.#queueAt.load) {
      if (this.#room.at >= this.#queueAt.at) this.#queueAt = { load: Infinity, at: -Infinity }
      else this.#room = { load: 0, at: -Infinity }
    }
  }

  /** `n` rounded and within the recent bounds of the knee and the limit's. */
  #bounded(n: number): number {
    const room = this.#now - this.#room.at <= BOUNDS_MS ? this.#room.load : 0
    const queue = this.#now - this.#queueAt.at <= BOUNDS_MS ? this.#queueAt.load : Infinity
    return this.#clamp(Math.min(Math.max(n, room), queue - 1))
  }

  /**
   * A sure queue: the limit falls to the knee the window shows, and the next window tells
   * a queue (its delay goes with the cut) from a slower platform (it stays).
   */
  #test(w: Window, q: Measured, before: number): Step | null {
    const served = this.#bounded(q.served)
    if (served >= this.#limit) {
      this.#settle()
      return this.#moved(before, 'knee')
    }
    this.#before = { ...q, loads: w.loads, limit: this.#limit, probing: this.#phase === 'probe', startup: this.#startup }
    this.#phase = 'test'
    this.#limit = served
    return this.#moved(before, 'test')
  }

  /** The knee is found: the limit is it, and probes go a step past it now and then. */
  #settle(): void {
    this.#startup = false
    this.#step = probeStep(this.#knee)
    this.#phase = 'cruise'
    this.#sinceProbe = 0
    this.#limit = this.#knee
  }

  #moved(before: number, move: Move): Step | null {
    return this.#limit === before ? null : { limit: this.#limit, knee: this.#knee, move }
  }

  /**
   * The limit in force halves, at most once a window; the knee stays, and the limit
   * comes back to it after the fault (at a fresh start, to the limit then in force: no
   * knee is known yet).
   */
  #fault(now: number): Step | null {
    this.#open(now)
    if (now - this.#lastCut < WINDOW_MS || this.#phase === 'floors') return null
    this.#lastCut = now
    const inForce = this.#startup ? this.#limit : Math.min(this.#limit, this.#knee)
    if (this.#startup) this.#knee = Math.max(this.#knee, this.#limit)
    this.#settle()
    this.#limit = Math.max(this.#min, Math.floor(inForce / 2))
    this.#phase = 'fault'
    return { limit: this.#limit, knee: this.#knee, move: 'fault' }
  }

  #countSecond(a: Answer): void {
    const t = this.#second.teams.get(a.team) ?? { answers: 0, overloads: 0 }
    t.answers++
    if (a.outcome === 'overload') t.overloads++
    this.#second.teams.set(a.team, t)
  }

  /** Overload in the second under way from every answering team, or from two teams or more. */
  #overloaded(): boolean {
    let drawing = 0
    for (const t of this.#second.teams.values()) if (t.overloads >= Math.max(1, OVERLOAD_SHARE * t.answers)) drawing++
    return drawing >= 2 || (drawing >= 1 && drawing === this.#second.teams.size)
  }

  /**
   * The window's queue by Little's law: of the calls in flight, the share of their time
   * spent waiting: the delay past their floors over the mean service time (the floors of
   * the calls started) and that delay. The delay weighs each kind's by its precision (its
   * spread, and the uncertainty of its floor): a cheap kind shows a wait as well as a
   * dear one (the platform takes calls in order), and far more surely.
   */
  #queue(w: Window): Measured {
    const load = w.started > 0 ? w.load / w.started : 0
    const latency = w.ok > 0 ? w.ms / w.ok : 0
    const service = w.floored > 0 ? w.service / w.floored : latency
    const best = w.delays.size > 0 ? this.#delayOf(w.delays) : null
    const time = service + Math.max(0, best?.delay ?? 0)
    if (best === null || time <= 0) return { load, latency, delay: 0, queued: 0, se: 0, served: workersFor(w.loads, 0) }
    const queued = (load * best.delay) / time
    return { load, latency, delay: best.delay, queued, se: (load * best.se) / time, served: workersFor(w.loads, queued) }
  }

  /** The delay past the floors of `delays`, each kind weighed by its precision, and that delay's standard error. */
  #delayOf(delays: Map<string, Latencies>): { delay: number; se: number } {
    let weights = 0
    let sum = 0
    for (const [kind, k] of delays) {
      const mean = k.sum / k.n
      const spread = k.n > 1 ? Math.max(0, (k.sum2 - k.n * mean * mean) / (k.n - 1)) : mean * mean
      const f = this.#floors.get(kind) as Floor
      // At a fresh start the floors are being set from the first windows: their own
      // uncertainty, there, would hold every window unsure; a bias of it shows later.
      const variance = Math.max(spread / k.n + (this.#startup ? 0 : f.variance), 1e-6)
      weights += 1 / variance
      sum += mean / variance
    }
    return { delay: sum / weights, se: Math.sqrt(1 / weights) }
  }

  /**
   * Each kind's floor takes the window's latency in, weighed against its own by their
   * uncertainties (a Kalman filter: a floor known from thousands of answers moves little
   * on a few, one of a few answers moves to many), after its uncertainty grew by
   * FLOOR_DRIFT; a kind without one, and every kind at the first window, takes it whole.
   * Called for windows without a sure queue: a queue of less than a call may so enter the
   * floors, never more; the next probe's queue shows over them.
   */
  #learnFloors(w: Window, first: boolean): void {
    for (const [kind, k] of w.kinds) {
      const { mean, variance } = meanOf(k)
      const f = this.#floors.get(kind)
      if (f === undefined || first) {
        this.#setFloor(kind, { ms: mean, variance, answers: k.n })
        continue
      }
      const prior = f.variance + (FLOOR_DRIFT * f.ms) ** 2
      const gain = prior / (prior + variance)
      this.#setFloor(kind, { ms: f.ms + gain * (mean - f.ms), variance: (1 - gain) * prior, answers: f.answers + k.n })
    }
  }

  /** The platform is slower: each kind answered in the window takes its latency now as its floor. */
  #rebaseFloors(w: Window): void {
    for (const [kind, k] of w.kinds) {
      const f = this.#floors.get(kind)
      const { ms, variance } = meanOf(k, f?.variance)
      this.#setFloor(kind, { ms, variance, answers: (f?.answers ?? 0) + k.n })
    }
  }

  #setFloor(kind: string, floor: Floor): void {
    this.#floors.delete(kind)
    if (this.#floors.size >= MAX_FLOORS) this.#floors.delete(this.#floors.keys().next().value as string)
    this.#floors.set(kind, floor)
  }

  #seen(at: number): void {
    if (Number.isFinite(this.#lastAnswer) && at > this.#lastAnswer) this.#gapMs += GAP_GAIN * (at - this.#lastAnswer - this.#gapMs)
    this.#lastAnswer = Math.max(this.#lastAnswer, at)
  }

  /** The window takes calls for another WINDOW_MS. */
  #reopen(w: Window, now: number): void {
    w.closedAt = null
    w.closeAt = now + WINDOW_MS
  }

  #open(now: number): void {
    this.#window = { serial: ++this.#serial, start: now, closedAt: null, closeAt: now + WINDOW_MS, started: 0, ended: 0, ok: 0, load: 0, peak: 0, loads: new Map(), answeredPeak: 0, service: 0, floored: 0, longest: 0, ms: 0, kinds: new Map(), delays: new Map(), waited: false }
  }

  #clamp(n: number): number {
    return Math.max(this.#min, Math.min(this.#max, Math.round(n)))
  }
}

/** The mean of `l` and that mean's variance (ms²); one answer alone: `single`, else its own square (as uncertain as it is long). */
function meanOf(l: Latencies, single?: number): { ms: number; mean: number; variance: number } {
  const mean = l.sum / l.n
  const variance = l.n > 1 ? Math.max(0, (l.sum2 - l.n * mean * mean) / (l.n - 1)) / l.n : (single ?? mean * mean)
  return { ms: mean, mean, variance }
}

/** Whether a kind's answers give its floor within FLOOR_PRECISION. */
function precise(l: Latencies): boolean {
  const { mean, variance } = meanOf(l)
  return l.n > 1 && Math.sqrt(variance) <= FLOOR_PRECISION * mean
}

function add(map: Map<string, Latencies>, key: string, ms: number): void {
  const l = map.get(key) ?? { n: 0, sum: 0, sum2: 0 }
  l.n++
  l.sum += ms
  l.sum2 += ms * ms
  map.set(key, l)
}

/**
 * What a window says of the platform's queue: a queue (QUEUE_MIN calls at least, and SURE
 * standard errors), none (below QUEUE_MIN by ROOM standard errors), or not known.
 */
export function verdictOf(q: Pick<Measured, 'queued' | 'se'>): 'queued' | 'none' | 'unknown' {
  if (q.queued >= QUEUE_MIN && q.queued > SURE * q.se) return 'queued'
  if (q.queued + ROOM * q.se < QUEUE_MIN) return 'none'
  return 'unknown'
}

/**
 * The workers W at which calls that started at the loads in `loads` (calls in flight,
 * each counted once per call) would queue `queued` on average on a platform that takes
 * them in order: the mean of max(0, load − W) equals `queued`. With loads all alike it
 * is load − queued; with loads that come in bursts it is found in their upper tail, where
 * the queue forms. The highest load seen when nothing queued.
 */
export function workersFor(loads: ReadonlyMap<number, number>, queued: number): number {
  const points = [...loads].sort((a, b) => b[0] - a[0])
  const total = points.reduce((sum, [, n]) => sum + n, 0)
  if (total === 0) return 0
  if (queued <= 0) return (points[0] as [number, number])[0]
  // Going down from the highest load, the mean excess grows by (calls at or above) / total per unit.
  let above = 0
  let excess = 0
  for (let i = 0; i < points.length; i++) {
    const [load, n] = points[i] as [number, number]
    above += n
    const next = i + 1 < points.length ? (points[i + 1] as [number, number])[0] : 0
    const more = ((load - next) * above) / total
    if (excess + more >= queued) return load - ((queued - excess) * total) / above
    excess += more
  }
  return 0
}

/** How far past the knee a probe in service goes first. */
export function probeStep(knee: number): number {
  return Math.max(1, Math.round(knee * PROBE_SHARE))
}
