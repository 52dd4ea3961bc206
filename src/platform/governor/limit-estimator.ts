/**
 * The concurrency limit learned from the platform's own answers: Envoy's adaptive
 * concurrency gradient controller over per-class latency, smoothed as Netflix's
 * Gradient2Limit is, with a hard multiplicative cut on overload answers. Pure logic:
 * no I/O, no timers; time is passed in. Decision record: docs/decisions/adaptive-limit.md.
 *
 * Each window (DEFAULT_WINDOW_MS) closes with
 *
 *     r        = FLOOR_PERCENTILE over the window's answers of latency / floor(its latency class)
 *     gradient = clamp(LATENCY_BUFFER / r, MIN_GRADIENT, MAX_GRADIENT)
 *     target   = gradient × limit + (r ≤ LATENCY_BUFFER ? headroom(limit) : 0)
 *     limit   += SMOOTHING × (target − limit)
 *
 * or, when two teams or more (OVERLOAD_MIN_TEAMS) draw overload answers (502/503/504,
 * timeouts, slow 5xx) on OVERLOAD_MIN_SHARE of their calls, limit × OVERLOAD_FACTOR.
 *
 * - The gradient, the 25 % buffer over the floor and the √limit headroom are Envoy's
 *   (gradient_controller.cc; envoyproxy/envoy#9038: the buffer absorbs normal variance).
 * - The clamp to [0.5, 1] (growth comes from the headroom alone), the smoothing and the
 *   rule that a window that did not use the limit does not grow it (in flight below half
 *   the limit, "app limited") are Gradient2Limit.java's (Netflix/concurrency-limits); a
 *   gateway idle at night does not ratchet the limit to the ceiling.
 * - Headroom only within the buffer: past it the platform queues our calls already.
 *   Calls started before the limit last changed measure the old one (envoyproxy/envoy#11579).
 *
 * Where it differs from both, and why:
 * - The floor is learned passively from live answers, never by pinning concurrency
 *   (Envoy pins 1-3 calls while it re-measures and its docs warn of 503s then;
 *   envoyproxy/envoy#9007, #8337): latency-floors.ts keeps a percentile of each class's
 *   answers per bucket, the lowest over the last buckets, raised only by answers of calls
 *   started at no more calls in flight than it was measured at (no creep under load, as
 *   in envoyproxy/envoy#11579); a class without one compares its answers with nothing.
 * - Latency is compared like with like, and each team with its own: an answer is divided
 *   by the floor of its latency class, which its caller names (`klass`: the team, and the
 *   work the platform does: the report's route, range and splits, reports/work-class.ts),
 *   so a year of data, ten times slower, is not a loaded platform, and no team's answers
 *   set another team's floor.
 * - Reactions are charged to whoever caused them. A platform that queues our calls delays
 *   every team's by the same wait: with two teams or more answering, the window is judged
 *   by the delay every one of them saw (the smallest of their median delays past their
 *   floors) over the smallest of their floors, so one team's slow reports do not lower
 *   the limit for the others; teams whose calls answer within a window vote, when any
 *   answer, as a long call that found a worker says nothing of calls queued since. Overload
 *   answers (502/503/504, connection errors, timeouts after twice their class's floor, and a
 *   500 no faster than its floor) cut the limit only when they come from two teams or
 *   more, counted over each window whatever the latency window does; otherwise the team
 *   drawing them is braked on this replica (its calls in flight here halved, then doubled
 *   each window its answers come back clean), and the others keep the platform. A fast
 *   500 is the report's own failure, not load, and a timeout sooner says nothing (the
 *   call waited for a seat until little of its deadline was left). A 429 is answered by a pause of whoever drew it (pauses.ts); the
 *   platform pausing the credential cuts the limit (`overload()`).
 * - Whether a window used the limit comes from `record` (calls in flight when each call
 *   started) and from `note` (a call waited for a free seat): a call waiting for anything
 *   else (a lease across replicas) does not count.
 * - The highest limit the platform carried at its floor is remembered over a fault of
 *   any length: it ages only in windows at the floor, so after a slowdown or an outage the
 *   limit doubles back to it within seconds.
 * - A fresh start grows each round trip, not each window (TCP's slow start is clocked by
 *   acknowledgements): while calls wait for a seat, a window is judged as soon as it has
 *   the answers of calls started at the limit in force. The start-up ends at the first
 *   window judged with no call waiting for a seat, past the buffer, at an answer that says
 *   the platform is loaded, at a cut or at a limit adopted from another replica; a gateway
 *   in service grows once a window. Round trips move the limit short calls probe with,
 *   never the level long calls follow.
 * - After the limit fell, it does not fall again for latency while more calls are in
 *   flight than the limit in force: those started under the one before (a long call holds
 *   its worker for seconds), and answers queued behind them say nothing of the new one.
 *   The calls counted are the replica's own (`note`): with several replicas, each holding
 *   a share, the wait seldom holds and the limit falls as before.
 */

import { LatencyFloors } from './latency-floors.js'
import { windowRatio, type Observation } from './window-ratio.js'
import { ProvenLevel, platformLoad, type LongCallLimits, type ShortAnswer } from './long-calls.js'

/** How often the limit is recomputed. */
export const DEFAULT_WINDOW_MS = 1000
/** The window's latency may exceed the floor by 25 % before the limit shrinks (Envoy's buffer). */
export const LATENCY_BUFFER = 1.25
/** The gradient's clamp: one window at most halves the limit, and grows it by its headroom alone (Gradient2Limit's). */
export const MIN_GRADIENT = 0.5
export const MAX_GRADIENT = 1
/** Answers (ok, started under the limit in force) a window needs before its latency moves the limit. */
export const MIN_WINDOW_SAMPLES = 8
/**
 * Each window moves the limit this share of the way to the gradient's target, as
 * Gradient2Limit's smoothing (0.2 there) does: a knee is found without swinging past it.
 */
export const SMOOTHING = 0.3
/** The hard cut on overload answers, at most once per window, never below the minimum. */
export const OVERLOAD_FACTOR = 0.5
/** A team draws overload when its overload answers make this share of its calls in a window; */
export const OVERLOAD_MIN_SHARE = 0.05
/** the limit is cut for the credential when this many teams draw it at once; */
export const OVERLOAD_MIN_TEAMS = 2
/** a team drawing it alone is braked when its overload answers are this many at least, */
export const OVERLOAD_MIN_ANSWERS = 2
/** and this share of its calls: a platform's scattered errors brake nobody, a team whose reports fail is held back. */
export const BRAKE_MIN_SHARE = 0.25
/**
 * A call cut by its deadline is evidence of load when it had at least this many times its
 * class's floor at the platform: one that waited for a seat until little of its deadline
 * was left says nothing of the platform (a queue drained after an outage would otherwise
 * keep braking the team whose calls waited longest).
 */
export const TIMEOUT_MIN_FLOORS = 2
/** A braked team's calls in flight: halved on overload, doubled each window without (as the limit grows back after a fault). */
export const BRAKE_GROWTH = 2
/** A window used the limit when a call waited for a seat or this share of the limit was in flight at once. */
export const USED_FRACTION = 0.5
/** Answers kept per window for its latency ratio; past this many the rest only count. */
export const MAX_WINDOW_SAMPLES = 10_000
/** For how many windows at the floor below it the highest limit carried there is remembered: growth back to it is fast. */
export const CUT_MEMORY_WINDOWS = 30
/** For how many windows after a knee the limit grows no further than the highest carried at the floor. */
export const PROBE_HOLD_WINDOWS = 15
/** A window with fewer than MIN_WINDOW_SAMPLES answers stays open at most this many windows. */
export const MAX_WINDOW_SPAN = 5
/** Suggested bounds for the governor's settings. */
export const DEFAULT_MIN_LIMIT = 2
export const DEFAULT_MAX_LIMIT = 64

/**
 * Room to grow while latency stays near its floor: without it the limit would stay
 * where it is when the ratio is 1. Envoy's value, √limit (not configurable there either).
 */
export function headroom(limit: number): number {
  return Math.sqrt(limit)
}

/**
 * 'throttled': a 429; 'failed': a 502, 503 or 504 or a connection error; 'timeout': the
 * call's deadline passed before an answer, overload only when the call ran at least
 * TIMEOUT_MIN_FLOORS times its class's floor; 'error': another 5xx, overload only when it
 * is no faster than its class's floor.
 */
export type CallOutcome = 'ok' | 'throttled' | 'failed' | 'timeout' | 'error'

export interface CallSample {
  /** Epoch ms when the answer came (the call started at `at - latencyMs`). */
  at: number
  latencyMs: number
  /** The call's latency class: its team and the work it asks of the platform (its caller names it). */
  klass: string
  /** `routeTemplate` of the call. */
  route: string
  team: string
  /** Calls in flight on the credential when this one started, itself included, on every replica. */
  inFlight: number
  /** The team's calls in flight when this one started, itself included (on this replica). */
  teamInFlight?: number
  outcome: CallOutcome
}

export interface LoadPeak {
  at: number
  /** Calls in flight on the credential. */
  inFlight: number
  /** A call waited for a free seat (not for anything else). */
  starved: boolean
}

/**
 * - overload: overload answers of several teams (or `overload()`) cut the limit
 * - latency: the window's latency shrank it
 * - growth: latency near the floor in a window that used the limit grew it
 * - app-limited: latency would grow it, but the window did not use the limit
 * - few-samples: too few answers to judge latency
 */
export type LimitReason = 'overload' | 'latency' | 'growth' | 'app-limited' | 'few-samples'

export interface LimitUpdate {
  limit: number
  changed: boolean
  reason: LimitReason
}

export interface LimitEstimatorOptions {
  initial: number
  min: number
  max: number
  windowMs?: number
}

/** One team's calls in a window: how many, how many drew overload (and of those, how many are evidence of load), its most in flight at once. */
interface TeamWindow {
  calls: number
  overloads: number
  /** Overloads that say the platform is loaded (a 500 no faster than a known floor; not one of a class without one). */
  loaded: number
  peak: number
}

/** An answer of a window, with the calls in flight when its call started (for the platform's queue: long-calls.ts). */
interface Answer extends Observation {
  inFlight: number
  teamInFlight: number
}

/**
 * The learned limit of one credential on one replica. Feed it every answer
 * (`record`), the governor's load (`note`), and call `tick` often (every 100 ms or so):
 * it closes a window once `windowMs` has passed.
 */
export class LimitEstimator {
  readonly #min: number
  readonly #max: number
  readonly #windowMs: number
  #estimate: number
  readonly #floors: LatencyFloors

  #windowStart: number | null = null
  /**
   * When the teams' window opened: overload answers are counted per team over windowMs,
   * whatever the latency window does (open for more answers, opened again by an adopted
   * limit), so that a brake is set and let go a step each window.
   */
  #teamsStart: number | null = null
  /** When the limit last changed: calls started before measure the old one. */
  #changedAt = -Infinity
  /** When the limit was last cut: overload answers of calls started before are already answered for. */
  #cutAt = -Infinity
  /** The highest limit the platform answered at its floor, and the windows at the floor since, below it: growth back to it is fast. */
  #goodHigh = 0
  #goodAge = 0
  /** The limit of the last window judged at the floor: a latency cut of a higher one found the knee between them. */
  #lastGood = 0
  /** When latency was last past the buffer: a knee is known for CUT_MEMORY_WINDOWS windows (a cut for overload answers says nothing of one). */
  #kneeAt = -Infinity
  /** Until when growth stops at the highest limit carried at the floor (a knee was found: PROBE_HOLD_WINDOWS). */
  #probeHeldUntil = -Infinity
  /** Until when the long calls' level does not rise: it fell to what the platform served with calls queued (PROBE_HOLD_WINDOWS). */
  #levelHeldUntil = -Infinity
  #observations: Answer[] = []
  readonly #teams = new Map<string, TeamWindow>()
  #peak = 0
  /** The governor's calls in flight at its last look (`note`). */
  #inFlight = 0
  /** The last window lowered the limit: calls past it were started under the one before. */
  #lowered = false
  #starved = false
  /** Teams drawing overload alone, and the calls in flight each is held to. */
  readonly #brakes = new Map<string, number>()
  /** The calls in flight the platform carried at its floor: how far long calls follow the limit (long-calls.ts). */
  readonly #proven: ProvenLevel
  /** A fresh start: windows are judged each round trip while calls wait for a seat (ends for good, see the header). */
  #startup = true

  constructor(opts: LimitEstimatorOptions) {
    const { initial, min, max } = opts
    const windowMs = opts.windowMs ?? DEFAULT_WINDOW_MS
    if (!Number.isInteger(min) || min < 1) throw new RangeError(`LimitEstimator: min must be an integer ≥ 1 (got ${min})`)
    if (!Number.isInteger(max) || max < min) throw new RangeError(`LimitEstimator: max must be an integer ≥ min ${min} (got ${max})`)
    if (!Number.isFinite(initial)) throw new RangeError(`LimitEstimator: initial must be a number (got ${initial})`)
    if (!(windowMs > 0)) throw new RangeError(`LimitEstimator: windowMs must be > 0 (got ${windowMs})`)
    this.#min = min
    this.#max = max
    this.#windowMs = windowMs
    this.#estimate = this.#clamp(initial)
    this.#floors = new LatencyFloors(min, max)
    this.#proven = new ProvenLevel(this.limit)
  }

  /** The limit in force: an integer in [min, max]. */
  get limit(): number {
    return Math.max(this.#min, Math.min(this.#max, Math.floor(this.#estimate)))
  }

  /** The latency floor of the busiest latency class (ms), as of the last window; null before any answer. */
  get floorMs(): number | null {
    return this.#floors.busiestMs
  }

  /** The latency floor of class `klass` (ms): how long its calls take unloaded; null while it has none. */
  floorOf(klass: string): number | null {
    return this.#floors.of(klass)
  }

  /** The calls in flight a long call may start at, beside short calls and alone (long-calls.ts). */
  get longCallLimits(): LongCallLimits {
    return this.#proven.limits(this.limit)
  }

  /** Teams drawing overload on their own, and the calls in flight each is held to (whole, at least 1). */
  get brakes(): ReadonlyMap<string, number> {
    return new Map([...this.#brakes].map(([team, cap]) => [team, Math.max(1, Math.floor(cap))]))
  }

  /** One answer (or failure) of a platform call. */
  record(sample: CallSample): void {
    const start = sample.at - sample.latencyMs
    this.#peak = Math.max(this.#peak, sample.inFlight)
    const overload = this.#isOverload(sample)
    // An answer that says the platform is loaded ends the start-up, as a loss ends TCP's slow start.
    if (overload === 'load') this.#startup = false
    if (start >= this.#cutAt) {
      let team = this.#teams.get(sample.team)
      if (!team) this.#teams.set(sample.team, (team = { calls: 0, overloads: 0, loaded: 0, peak: 0 }))
      team.calls++
      team.peak = Math.max(team.peak, sample.teamInFlight ?? 1)
      if (overload !== 'no') team.overloads++
      if (overload === 'load') team.loaded++
    }
    if (sample.outcome !== 'ok') return
    // Overload answers come fast (429) or at a deadline (timeout): neither is the platform's latency.
    this.#floors.learn(sample)
    if (start >= this.#changedAt && this.#observations.length < MAX_WINDOW_SAMPLES) {
      this.#observations.push({ klass: sample.klass, team: sample.team, route: sample.route, latencyMs: sample.latencyMs, inFlight: sample.inFlight, teamInFlight: sample.teamInFlight ?? 1 })
    }
  }

  /**
   * The governor's load at an instant. Optional: `record` already sees the calls in
   * flight at each call's start; `note` adds that a call waited for a free seat, so that
   * the window counts as using the limit.
   */
  note(peak: LoadPeak): void {
    this.#peak = Math.max(this.#peak, peak.inFlight)
    this.#inFlight = peak.inFlight
    this.#starved ||= peak.starved
  }

  /** Whether the window has run `windowMs` (or is a round trip at a fresh start) and has the answers to be judged: `tick` would close it now. */
  ready(now: number): boolean {
    return this.#windowStart !== null && (now - this.#windowStart >= this.#windowMs || this.#roundTrip()) && this.#enough(this.limit)
  }

  /** At a fresh start, a window is judged as its round trip's answers come while calls wait for a seat. */
  #roundTrip(): boolean {
    return this.#startup && this.#starved
  }

  /** A low limit gives few answers a window: it is judged on two per call slot (at least 4), so a limit cut to 2 by a fault is not held there waiting for answers it cannot get. */
  #enough(limit: number): boolean {
    return this.#observations.length >= Math.min(MIN_WINDOW_SAMPLES, Math.max(4, 2 * limit))
  }

  /** Closes the window once `windowMs` has passed since it opened (at a fresh start, once its round trip's answers came); null while it is open. */
  tick(now: number): LimitUpdate | null {
    const cut = this.#closeTeams(now)
    if (cut !== null) {
      this.#openWindow(now)
      return cut
    }
    if (this.#windowStart === null) {
      this.#windowStart = now
      return null
    }
    const early = now - this.#windowStart < this.#windowMs
    if (early && !(this.#roundTrip() && this.#enough(this.limit))) return null
    this.#floors.refresh(now)
    const update = this.#decide(now, this.limit, early)
    // Too few answers to judge (a low limit, a quiet hour): the window stays open and
    // gathers more, up to MAX_WINDOW_SPAN windows, rather than judging nothing each time.
    if (update.reason === 'few-samples' && now - this.#windowStart < MAX_WINDOW_SPAN * this.#windowMs) return update
    this.#openWindow(now)
    return update
  }

  #openWindow(now: number): void {
    this.#windowStart = now
    this.#observations = []
    this.#peak = 0
    this.#starved = false
  }

  /**
   * Closes the teams' window once windowMs has passed: overload answers of two teams or
   * more cut the limit (at most once a window; the cut is returned), a team drawing them
   * alone is braked, and a braked team without them is let go a step.
   */
  #closeTeams(now: number): LimitUpdate | null {
    if (this.#teamsStart === null) {
      this.#teamsStart = now
      return null
    }
    if (now - this.#teamsStart < this.#windowMs) return null
    this.#teamsStart = now
    const before = this.limit
    const overloaded = this.#overloadedTeams()
    const cut = this.#overloadedTeams(true).length >= OVERLOAD_MIN_TEAMS && now - this.#cutAt >= this.#windowMs
    if (cut) this.#cut(now)
    else this.#brake(overloaded.length < OVERLOAD_MIN_TEAMS ? overloaded : [])
    this.#teams.clear()
    return cut ? { limit: this.limit, changed: this.limit !== before, reason: 'overload' } : null
  }

  /**
   * Takes a limit learned elsewhere (another replica), clamped to [min, max]. A new limit
   * opens a new window: the answers gathered so far were given at the old one, and say
   * nothing of the new (many replicas, each with a few answers a second, would otherwise
   * judge the limit in force by answers seconds old).
   */
  adopt(limit: number): number {
    if (!Number.isFinite(limit)) return this.limit
    const before = this.limit
    this.#estimate = this.#clamp(limit)
    if (this.limit !== before) {
      this.#observations = []
      this.#windowStart = null
      this.#startup = false
    }
    return this.limit
  }

  /**
   * A hard cut from outside (the platform paused the credential): × OVERLOAD_FACTOR,
   * at most once per window. Null when a cut already fell within the last window.
   */
  overload(now: number): LimitUpdate | null {
    if (now - this.#cutAt < this.#windowMs) return null
    const before = this.limit
    this.#cut(now)
    // What the window gathered so far measured the limit just cut.
    this.#observations = []
    this.#teams.clear()
    return { limit: this.limit, changed: this.limit !== before, reason: 'overload' }
  }

  /**
   * Whether an answer is overload, and whether it says the platform is loaded: a 502/503/
   * 504 or a connection error is ('load'), and so is a timeout after TIMEOUT_MIN_FLOORS
   * times its class's floor (or of a class without one); a timeout sooner is not ('no');
   * another 5xx that took at least its class's floor is load, one of a class without a
   * floor (it never answers otherwise) is its team's trouble alone ('team'), and a faster
   * one is the report's own failure, not load ('no'). A 429 is the platform's word on
   * whoever drew it: pauses.ts answers it, scoped, and a credential pause cuts the limit
   * (`overload()`).
   */
  #isOverload(sample: CallSample): 'load' | 'team' | 'no' {
    if (sample.outcome === 'ok' || sample.outcome === 'throttled') return 'no'
    if (sample.outcome === 'failed') return 'load'
    const floor = this.#floors.of(sample.klass)
    if (sample.outcome === 'timeout') return floor === null || sample.latencyMs >= TIMEOUT_MIN_FLOORS * floor ? 'load' : 'no'
    if (floor === null) return 'team'
    return sample.latencyMs >= floor ? 'load' : 'no'
  }

  /**
   * Keeps the highest limit that windows at the floor used, with answers within the
   * buffer: a limit the platform carried, not one it was slowed or overloaded by. It is
   * forgotten after CUT_MEMORY_WINDOWS windows at the floor below it; windows of a fault
   * (past the buffer, overloaded) do not age it.
   */
  #remember(limit: number): void {
    if (limit >= this.#goodHigh) {
      this.#goodHigh = limit
      this.#goodAge = 0
    } else if (++this.#goodAge > CUT_MEMORY_WINDOWS) {
      this.#goodHigh = limit
      this.#goodAge = 0
    }
  }

  /** Teams whose overload answers (`loaded`: those that say the platform is loaded) make OVERLOAD_MIN_SHARE of their calls in the window (one at least). */
  #overloadedTeams(loaded = false): string[] {
    const out: string[] = []
    for (const [team, w] of this.#teams) {
      if ((loaded ? w.loaded : w.overloads) >= Math.max(1, Math.ceil(OVERLOAD_MIN_SHARE * w.calls))) out.push(team)
    }
    return out
  }

  /**
   * A team drawing overload alone (OVERLOAD_MIN_ANSWERS and BRAKE_MIN_SHARE of its calls
   * at least) is held to half its calls in flight; a braked team without doubles back, let
   * go at the limit.
   */
  #brake(overloaded: readonly string[]): void {
    const braking = overloaded.filter((team) => {
      const w = this.#teams.get(team)
      return w !== undefined && w.overloads >= Math.max(OVERLOAD_MIN_ANSWERS, BRAKE_MIN_SHARE * w.calls)
    })
    for (const team of braking) {
      const peak = this.#teams.get(team)?.peak ?? 1
      this.#brakes.set(team, Math.max(1, Math.floor(Math.min(this.#brakes.get(team) ?? Infinity, peak) * OVERLOAD_FACTOR)))
    }
    for (const [team, cap] of this.#brakes) {
      if (braking.includes(team)) continue
      const next = Math.max(cap + 1, cap * BRAKE_GROWTH)
      if (next >= this.limit) this.#brakes.delete(team)
      else this.#brakes.set(team, next)
    }
  }

  /** `early`: a round trip at a fresh start, judged before the window's time ran. */
  #decide(now: number, before: number, early: boolean): LimitUpdate {
    if (!this.#enough(before)) return { limit: before, changed: false, reason: 'few-samples' }
    const ratio = windowRatio(this.#observations, (o) => this.#floors.of(o.klass) ?? o.latencyMs, this.#windowMs, MIN_WINDOW_SAMPLES)
    const atFloor = ratio <= LATENCY_BUFFER
    const gradient = Math.max(MIN_GRADIENT, Math.min(MAX_GRADIENT, LATENCY_BUFFER / ratio))
    // Headroom is room to grow near the floor; past the buffer the platform queues our calls already.
    const target = gradient * this.#estimate + (atFloor ? headroom(this.#estimate) : 0)
    const reason: LimitReason = target >= this.#estimate ? 'growth' : 'latency'
    const used = this.#starved || this.#peak >= USED_FRACTION * before
    if (reason !== 'growth' || !this.#starved) this.#startup = false
    if (reason === 'growth' && !used) return { limit: before, changed: false, reason: 'app-limited' }
    // A window is evidence of what the platform carries only when most of its answers had a floor to be judged by.
    const judged = this.#observations.filter((o) => this.#floors.of(o.klass) !== null).length >= this.#observations.length / 2
    if (atFloor && judged) {
      this.#remember(before)
      this.#lastGood = before
      this.#proven.atFloor(this.#peak, early || now < this.#probeHeldUntil || now < this.#levelHeldUntil)
    } else if (!atFloor) {
      this.#kneeAt = now
      if (this.#proven.pastBuffer(this.#peak, this.#min)) this.#probeHeldUntil = now + PROBE_HOLD_WINDOWS * this.#windowMs
      // The limit grew past the last one carried at the floor and latency left the buffer:
      // the knee lies between them, and growth back goes no further than the one carried.
      // (A fault slows the platform at a limit it carried a window before: no knee then.)
      if (before > this.#lastGood && this.#lastGood > 0) {
        this.#goodHigh = Math.min(this.#goodHigh, this.#lastGood)
        this.#goodAge = 0
        this.#probeHeldUntil = now + PROBE_HOLD_WINDOWS * this.#windowMs
      }
    }
    // The short answers say how many calls queued at the platform and how many it served:
    // long calls follow no more than it served, and their level waits before it probes again.
    const load = platformLoad(this.#shortAnswers(), MIN_WINDOW_SAMPLES)
    if (load !== null && this.#proven.served(load, this.#min)) this.#levelHeldUntil = now + PROBE_HOLD_WINDOWS * this.#windowMs
    // Back towards the highest limit the platform carried at its floor (it recovered from
    // a fault: latency is back at its floor), the limit doubles each window, as TCP's slow
    // start does up to its threshold: a fault costs seconds, not a slow climb.
    const recovering = reason === 'growth' && atFloor && this.#estimate < this.#goodHigh
    // While no knee is known (latency has not left the buffer lately) and the window held
    // every call the limit allows, growth takes the whole headroom of each window the
    // window spans (held open for long calls' answers), up to doubling, as TCP's slow start
    // grows until its first loss (long calls follow only to the level proven: long-calls.ts);
    // otherwise SMOOTHING of it, so the limit probes past a knee by a call or two at most.
    const fast = reason === 'growth' && now - this.#kneeAt > CUT_MEMORY_WINDOWS * this.#windowMs && (this.#starved || this.#peak >= before)
    const span = Math.max(1, (now - (this.#windowStart ?? now)) / this.#windowMs)
    const smoothed = fast ? Math.min(2 * this.#estimate, this.#estimate + span * (target - this.#estimate)) : this.#estimate + SMOOTHING * (target - this.#estimate)
    // Growth adds one whole call at least, so a low limit (2, 3) is not held by rounding down.
    const step = reason === 'growth' && target >= this.#estimate + 1 ? Math.max(smoothed, Math.floor(this.#estimate) + 1) : smoothed
    // Past the buffer with more calls in flight than the last window at the floor carried,
    // those calls queue at the platform: the cut stops at what was carried (long calls past it
    // keep latency up until they end; a deeper cut idles workers then). Below it, a fault.
    const carried = this.#proven.carried
    const queued = !atFloor && this.#peak > carried ? Math.min(before, carried) : 0
    // After a cut, more calls in flight than the limit in force were started under the one
    // before and have not ended (a long call holds its worker for seconds): the window's
    // answers queued behind them, and a cut now would answer those calls twice. It waits.
    const cutRunning = !atFloor && this.#lowered && this.#inFlight > before ? before : 0
    const next = this.#clamp(Math.max(cutRunning, queued, recovering ? Math.max(step, Math.min(2 * this.#estimate, this.#goodHigh)) : step))
    // Within PROBE_HOLD_WINDOWS of a knee (not of a fault), growth stops at the highest limit carried at the
    // floor: a probe past it queues calls at the platform, and a long call started then holds
    // its worker for its whole length while short calls queue behind it (another team's
    // year-long report against a dashboard's week), so the knee is probed once in that
    // many windows, not every few; growth past it is SMOOTHING's, as fast growth waits for
    // CUT_MEMORY_WINDOWS without a knee.
    const held = reason === 'growth' && now < this.#probeHeldUntil
    this.#estimate = held ? Math.min(next, Math.max(this.#goodHigh, this.#estimate)) : next
    const limit = this.limit
    if (limit !== before) this.#changedAt = now
    this.#lowered = limit < before || (this.#lowered && limit === before)
    return { limit, changed: limit !== before, reason }
  }

  /** The window's answers of classes with a floor shorter than a window: those that say how long calls queue now. */
  #shortAnswers(): ShortAnswer[] {
    const out: ShortAnswer[] = []
    for (const o of this.#observations) {
      const floorMs = this.#floors.of(o.klass)
      if (floorMs !== null && floorMs <= this.#windowMs) out.push({ team: o.team, latencyMs: o.latencyMs, floorMs, inFlight: o.inFlight, teamInFlight: o.teamInFlight })
    }
    return out
  }

  #cut(now: number): void {
    this.#estimate = this.#clamp(this.limit * OVERLOAD_FACTOR)
    this.#startup = false
    this.#cutAt = now
    this.#changedAt = now
  }

  #clamp(value: number): number {
    return Math.max(this.#min, Math.min(this.#max, value))
  }
}
