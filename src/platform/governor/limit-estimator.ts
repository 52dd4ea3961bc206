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
 * or, when its overload answers (429, 5xx, timeouts) come from OVERLOAD_MIN_ROUTES
 * routes or more and make OVERLOAD_MIN_SHARE of its calls, limit × OVERLOAD_FACTOR.
 *
 * - The gradient, the 25 % buffer over the floor and the √limit headroom are Envoy's
 *   (docs "Adaptive Concurrency", gradient_controller.cc; envoyproxy/envoy#9038: without
 *   the buffer the controller overreacts to normal variance, a p50 of 25 ms over a 20 ms
 *   floor must not cut the limit by 20 %).
 * - The clamp to [0.5, 1] (growth comes from the headroom alone), the smoothing and the
 *   rule that a window that did not use the limit does not grow it (in flight below half
 *   the limit, "app limited") are Gradient2Limit.java's (Netflix/concurrency-limits); a
 *   gateway idle at night does not ratchet the limit to the ceiling.
 * - Headroom only while latency is within the buffer: past it the platform queues our
 *   calls already, and headroom added there would hold the limit past the knee (at a
 *   platform 40 % slower per call beyond its knee, Envoy's always-on headroom settles two
 *   calls past it).
 * - Evidence from calls that started before the limit last changed is set aside: it
 *   measures the old limit (envoyproxy/envoy#11579 fixed the same skew in its minRTT).
 *
 * Where it differs from both, and why:
 * - The floor is learned passively from live answers, never by pinning concurrency
 *   (Envoy pins 1-3 calls while it re-measures and its docs warn of 503s then;
 *   envoyproxy/envoy#9007, #8337). A class's floor is a low percentile
 *   (FLOOR_PERCENTILE) of its answers per FLOOR_BUCKET_MS bucket, the lowest over the
 *   last FLOOR_BUCKETS buckets: one lucky answer does not set it
 *   (Netflix/concurrency-limits#37), and a platform that got faster lowers it at once.
 *   It rises only on the answers of calls that started at no more calls in flight (on
 *   the credential, every replica's) than the floor it replaces was measured at (or at
 *   the minimum limit): answers slowed by our own load never raise it, so it does not
 *   creep up under sustained load (the creep of envoyproxy/envoy#11579).
 *   A platform that got slower for good drives the limit down until the floor is
 *   re-measured at the load it was measured at, then regrows.
 * - Latency is compared like with like: each answer is divided by the floor of its own
 *   latency class (route template and date-range bucket, `latencyClass`), so a year of
 *   data, ten times slower, is not a loaded platform.
 * - One team or one route cannot teach the limit to collapse: the window's ratio is the
 *   lowest of the ratio over all answers, without the slowest team's and without the
 *   slowest route's; an overload cut needs overload answers on
 *   two routes at least, as the credential pause does. Overload on one route is
 *   evidence about that route (its caller pauses it).
 * - Whether a window used the limit comes from `record` (calls in flight when each call
 *   started) and from `note` (calls queued): a window in which callers waited for a
 *   slot used the limit whatever the count in flight.
 */
import { routeTemplate } from './throttle-pauses.js'

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
/** Overload answers (429, 5xx, timeouts) that cut the limit: this share of the window's calls... */
export const OVERLOAD_MIN_SHARE = 0.05
/** ...and at least this many... */
export const OVERLOAD_MIN_ANSWERS = 2
/** ...on at least this many distinct routes. */
export const OVERLOAD_MIN_ROUTES = 2
/** A window used the limit when calls queued or this share of the limit was in flight at once. */
export const USED_FRACTION = 0.5
/** A class's floor is kept per bucket of this length... */
export const FLOOR_BUCKET_MS = 30_000
/** ...over this many buckets (a sliding window of three minutes). */
export const FLOOR_BUCKETS = 6
/** The percentile of a bucket's answers taken as its floor. */
export const FLOOR_PERCENTILE = 0.5
/** Latency classes held; past this many the least recently seen is forgotten. */
export const MAX_CLASSES = 512
/** Answers kept per window for its latency ratio; past this many the rest only count. */
export const MAX_WINDOW_SAMPLES = 10_000
/** How many windows the highest limit is remembered: growth back to it, once latency is at its floor again, is fast. */
export const CUT_MEMORY_WINDOWS = 30
/** A window with fewer than MIN_WINDOW_SAMPLES answers stays open at most this many windows. */
export const MAX_WINDOW_SPAN = 5
/** Suggested bounds for the governor's settings. */
export const DEFAULT_MIN_LIMIT = 2
export const DEFAULT_MAX_LIMIT = 64

// Latencies are binned on a log scale, 16 bins per doubling (4.4 % wide), so a bucket's
// percentile costs a few map entries whatever the number of answers.
const BINS_PER_OCTAVE = 16
const DAY_MS = 86_400_000

/**
 * Room to grow while latency stays near its floor: without it the limit would stay
 * where it is when the ratio is 1. Envoy's value, √limit (not configurable there either).
 */
export function headroom(limit: number): number {
  return Math.sqrt(limit)
}

/**
 * The latency class of a call: its route template, plus `|rN` with N = ⌈log2(days + 1)⌉
 * for the number of days its query's `dateFrom`..`dateTo` covers (both included), so a
 * report over a year is compared with reports over a year. No bucket when either date is
 * missing, not a calendar date `YYYY-MM-DD`, or the range runs backwards.
 */
export function latencyClass(url: string): string {
  const route = routeTemplate(url)
  const target = url.split('#', 1)[0] ?? ''
  const q = target.indexOf('?')
  if (q < 0) return route
  const query = new URLSearchParams(target.slice(q + 1))
  const from = calendarDay(query.get('dateFrom'))
  const to = calendarDay(query.get('dateTo'))
  if (from === null || to === null || to < from) return route
  return `${route}|r${Math.ceil(Math.log2(to - from + 2))}`
}

/** Days since 1970-01-01 of a real calendar date `YYYY-MM-DD`, or null. */
function calendarDay(text: string | null): number | null {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text ?? '')
  if (!match) return null
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])]
  const at = new Date(0)
  at.setUTCFullYear(year, month - 1, day)
  if (at.getUTCFullYear() !== year || at.getUTCMonth() !== month - 1 || at.getUTCDate() !== day) return null
  return Math.round(at.getTime() / DAY_MS)
}

export type CallOutcome = 'ok' | 'throttled' | 'failed'

export interface CallSample {
  /** Epoch ms when the answer came (the call started at `at - latencyMs`). */
  at: number
  latencyMs: number
  /** `latencyClass` of the call. */
  klass: string
  /** `routeTemplate` of the call. */
  route: string
  team: string
  /** Calls in flight on the credential when this one started, itself included, on every replica. */
  inFlight: number
  /** 'throttled': a 429; 'failed': a 5xx, a timeout or a connection error. */
  outcome: CallOutcome
}

export interface LoadPeak {
  at: number
  /** Calls in flight on the credential. */
  inFlight: number
  /** Calls waiting for a slot. */
  queued: number
}

/**
 * - overload: overload answers on several routes (or `overload()`) cut the limit
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

interface Bucket {
  index: number
  count: number
  /** Calls in flight when an answer's call started → its latency bin → answers. */
  cells: Map<number, Map<number, number>>
  /** The summary below holds for this many answers. */
  summarized: number
  floorMs: number
  inFlight: number
}

export interface Floor {
  ms: number
  /** The calls in flight it was measured at: the median over the answers at or under it. */
  inFlight: number
}

interface LatencyClass {
  buckets: Bucket[]
  floor: Floor | null
  /** Answers in its buckets. */
  count: number
}

interface Observation {
  klass: string
  team: string
  route: string
  latencyMs: number
}

/**
 * The learned limit of one credential on one replica. Feed it every answer
 * (`record`), the governor's load when a call starts or queues (`note`), and call
 * `tick` often (every 100 ms or so): it closes a window once `windowMs` has passed.
 */
export class LimitEstimator {
  readonly #min: number
  readonly #max: number
  readonly #windowMs: number
  #estimate: number
  readonly #classes = new Map<string, LatencyClass>()
  #floorMs: number | null = null

  #windowStart: number | null = null
  /** When the limit last changed: calls started before measure the old one. */
  #changedAt = -Infinity
  /** When the limit was last cut: overload answers of calls started before are already answered for. */
  #cutAt = -Infinity
  /** The highest limit the platform answered at its floor in the last windows, and when: growth back to it is fast. */
  #goodHigh = 0
  #goodAt = -Infinity
  /** When latency was last past the buffer: a knee is known for CUT_MEMORY_WINDOWS windows (a cut for overload answers says nothing of one). */
  #kneeAt = -Infinity
  #observations: Observation[] = []
  #calls = 0
  #overloads = 0
  readonly #overloadRoutes = new Set<string>()
  #peak = 0
  #queued = 0

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
  }

  /** The limit in force: an integer in [min, max]. */
  get limit(): number {
    return Math.max(this.#min, Math.min(this.#max, Math.floor(this.#estimate)))
  }

  /** The latency floor of the busiest latency class (ms), as of the last window; null before any answer. */
  get floorMs(): number | null {
    return this.#floorMs
  }

  /** One answer (or failure) of a platform call. */
  record(sample: CallSample): void {
    const start = sample.at - sample.latencyMs
    this.#peak = Math.max(this.#peak, sample.inFlight)
    if (start >= this.#cutAt) {
      this.#calls++
      if (sample.outcome !== 'ok') {
        this.#overloads++
        // Two routes are all the rule asks; the set stays that small.
        if (this.#overloadRoutes.size < OVERLOAD_MIN_ROUTES) this.#overloadRoutes.add(sample.route)
      }
    }
    if (sample.outcome !== 'ok') return
    // Overload answers come fast (429) or at a deadline (timeout): neither is the platform's latency.
    this.#learnFloor(sample)
    if (start >= this.#changedAt && this.#observations.length < MAX_WINDOW_SAMPLES) {
      this.#observations.push({ klass: sample.klass, team: sample.team, route: sample.route, latencyMs: sample.latencyMs })
    }
  }

  /**
   * The governor's load at an instant (a call started or queued). Optional: `record`
   * already sees the calls in flight at each call's start; `note` adds calls that
   * queued, so a window whose callers waited for a slot counts as using the limit.
   */
  note(peak: LoadPeak): void {
    this.#peak = Math.max(this.#peak, peak.inFlight)
    this.#queued = Math.max(this.#queued, peak.queued)
  }

  /** Closes the window once `windowMs` has passed since it opened; null while it is open. */
  tick(now: number): LimitUpdate | null {
    if (this.#windowStart === null) {
      this.#windowStart = now
      return null
    }
    if (now - this.#windowStart < this.#windowMs) return null
    const before = this.limit
    this.#refreshFloors(now)
    const update = this.#decide(now, before)
    // Too few answers to judge (a low limit, a quiet hour): the window stays open and
    // gathers more, up to MAX_WINDOW_SPAN windows, rather than judging nothing each time.
    if (update.reason === 'few-samples' && now - this.#windowStart < MAX_WINDOW_SPAN * this.#windowMs) return update
    this.#windowStart = now
    this.#observations = []
    this.#calls = 0
    this.#overloads = 0
    this.#overloadRoutes.clear()
    this.#peak = 0
    this.#queued = 0
    return update
  }

  /** Takes a limit learned elsewhere (another replica), clamped to [min, max]. */
  adopt(limit: number): number {
    if (Number.isFinite(limit)) this.#estimate = this.#clamp(limit)
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
    this.#calls = 0
    this.#overloads = 0
    this.#overloadRoutes.clear()
    return { limit: this.limit, changed: this.limit !== before, reason: 'overload' }
  }

  /**
   * Keeps the highest limit of the last CUT_MEMORY_WINDOWS windows that used it with
   * answers within the buffer over their floor: a limit the platform carried, not one it
   * was slowed or overloaded by.
   */
  #remember(now: number, limit: number): void {
    if (limit >= this.#goodHigh || now - this.#goodAt > CUT_MEMORY_WINDOWS * this.#windowMs) {
      this.#goodHigh = limit
      this.#goodAt = now
    }
  }

  #decide(now: number, before: number): LimitUpdate {
    const needed = Math.max(OVERLOAD_MIN_ANSWERS, Math.ceil(OVERLOAD_MIN_SHARE * this.#calls))
    if (this.#overloads >= needed && this.#overloadRoutes.size >= OVERLOAD_MIN_ROUTES && now - this.#cutAt >= this.#windowMs) {
      this.#cut(now)
      return { limit: this.limit, changed: this.limit !== before, reason: 'overload' }
    }
    // A low limit gives few answers a window: it is judged on two per call slot (at least 4),
    // so a limit cut to 2 by a fault is not held there waiting for answers it cannot get.
    if (this.#observations.length < Math.min(MIN_WINDOW_SAMPLES, Math.max(4, 2 * before))) return { limit: before, changed: false, reason: 'few-samples' }
    const ratio = this.#windowRatio()
    const atFloor = ratio <= LATENCY_BUFFER
    const gradient = Math.max(MIN_GRADIENT, Math.min(MAX_GRADIENT, LATENCY_BUFFER / ratio))
    // Headroom is room to grow near the floor; past the buffer the platform queues our calls already.
    const target = gradient * this.#estimate + (atFloor ? headroom(this.#estimate) : 0)
    const reason: LimitReason = target >= this.#estimate ? 'growth' : 'latency'
    const used = this.#queued > 0 || this.#peak >= USED_FRACTION * before
    if (reason === 'growth' && !used) return { limit: before, changed: false, reason: 'app-limited' }
    if (atFloor) this.#remember(now, before)
    else this.#kneeAt = now
    // Back towards the highest limit the platform carried in the last windows (it recovered
    // from a fault: latency is back at its floor), the limit doubles each window, as TCP's
    // slow start does up to its threshold: a fault costs seconds, not a slow climb.
    const recovering = reason === 'growth' && atFloor && this.#estimate < this.#goodHigh && now - this.#goodAt <= CUT_MEMORY_WINDOWS * this.#windowMs
    // While no knee is known (latency has not left the buffer lately) and the window held
    // every call the limit allows, growth takes the whole headroom, as TCP's slow start
    // grows until its first loss; otherwise SMOOTHING of it, so the limit probes past a
    // knee by a call or two at most.
    const fast = reason === 'growth' && now - this.#kneeAt > CUT_MEMORY_WINDOWS * this.#windowMs && (this.#queued > 0 || this.#peak >= before)
    const smoothed = this.#estimate + (fast ? 1 : SMOOTHING) * (target - this.#estimate)
    // Growth adds one whole call at least, so a low limit (2, 3) is not held by rounding down.
    const step = reason === 'growth' && target >= this.#estimate + 1 ? Math.max(smoothed, Math.floor(this.#estimate) + 1) : smoothed
    this.#estimate = this.#clamp(recovering ? Math.max(step, Math.min(2 * this.#estimate, this.#goodHigh)) : step)
    const limit = this.limit
    if (limit !== before) this.#changedAt = now
    return { limit, changed: limit !== before, reason }
  }

  #cut(now: number): void {
    this.#estimate = this.#clamp(this.limit * OVERLOAD_FACTOR)
    this.#cutAt = now
    this.#changedAt = now
  }

  #clamp(value: number): number {
    return Math.max(this.#min, Math.min(this.#max, value))
  }

  /**
   * The window's latency over floor: the FLOOR_PERCENTILE of its answers' ratios (the
   * floor's own percentile: like with like, so a platform whose answers spread widely
   * sits at 1 when unloaded), or, when lower, the same without the slowest team's
   * answers, or without the slowest route's. Overload raises everyone's latency; one
   * team's or one route's slowness is about its own calls.
   */
  #windowRatio(): number {
    const ratios = this.#observations.map((o) => o.latencyMs / (this.#classes.get(o.klass)?.floor?.ms ?? o.latencyMs))
    let ratio = percentile(ratios, FLOOR_PERCENTILE)
    for (const key of ['team', 'route'] as const) {
      const groups = new Map<string, number[]>()
      this.#observations.forEach((o, i) => {
        const group = groups.get(o[key])
        if (group) group.push(ratios[i] as number)
        else groups.set(o[key], [ratios[i] as number])
      })
      if (groups.size < 2) continue
      let worst: string | null = null
      let worstMedian = -Infinity
      for (const [name, values] of groups) {
        const m = median(values)
        if (m > worstMedian) [worst, worstMedian] = [name, m]
      }
      const rest = ratios.filter((_, i) => this.#observations[i]?.[key] !== worst)
      if (rest.length >= MIN_WINDOW_SAMPLES) ratio = Math.min(ratio, percentile(rest, FLOOR_PERCENTILE))
    }
    return ratio
  }

  #learnFloor(sample: CallSample): void {
    let klass = this.#classes.get(sample.klass)
    if (klass) {
      // Least recently seen first: re-inserting keeps the map in that order.
      this.#classes.delete(sample.klass)
    } else {
      if (this.#classes.size >= MAX_CLASSES) {
        const oldest = this.#classes.keys().next().value
        if (oldest !== undefined) this.#classes.delete(oldest)
      }
      klass = { buckets: [], floor: null, count: 0 }
    }
    this.#classes.set(sample.klass, klass)
    const index = Math.floor(sample.at / FLOOR_BUCKET_MS)
    let bucket = klass.buckets.find((b) => b.index === index)
    if (!bucket) {
      // An answer older than the live buckets says nothing about the floor now.
      const newest = klass.buckets.at(-1)
      if (newest && index < newest.index - FLOOR_BUCKETS + 1) return
      bucket = { index, count: 0, cells: new Map(), summarized: 0, floorMs: 0, inFlight: 0 }
      klass.buckets.push(bucket)
      klass.buckets.sort((a, b) => a.index - b.index)
    }
    const bin = Math.floor(Math.log2(Math.max(sample.latencyMs, 0.01)) * BINS_PER_OCTAVE)
    const load = Math.max(1, Math.min(this.#max, Math.round(sample.inFlight)))
    let bins = bucket.cells.get(load)
    if (!bins) bucket.cells.set(load, (bins = new Map()))
    bins.set(bin, (bins.get(bin) ?? 0) + 1)
    bucket.count++
    klass.count++
  }

  /** Drops expired buckets, moves each class's floor, and picks the busiest class's for `floorMs`. */
  #refreshFloors(now: number): void {
    const oldestLive = Math.floor(now / FLOOR_BUCKET_MS) - FLOOR_BUCKETS + 1
    let busiest = 0
    this.#floorMs = null
    for (const [name, klass] of this.#classes) {
      while (klass.buckets.length > 0 && (klass.buckets[0] as Bucket).index < oldestLive) {
        klass.count -= (klass.buckets.shift() as Bucket).count
      }
      if (klass.buckets.length === 0) {
        // Unseen for a whole floor window: what it was then says little of now.
        this.#classes.delete(name)
        continue
      }
      let lowest: Floor | null = null
      for (const bucket of klass.buckets) {
        summarize(bucket)
        if (lowest === null || bucket.floorMs < lowest.ms) lowest = { ms: bucket.floorMs, inFlight: bucket.inFlight }
      }
      const current = klass.floor
      const rise = current !== null && (lowest as Floor).ms > current.ms ? floorAtLoad(klass.buckets, Math.max(current.inFlight, this.#min)) : null
      klass.floor = nextFloor(current, lowest as Floor, rise)
      if (klass.count > busiest) {
        busiest = klass.count
        this.#floorMs = klass.floor.ms
      }
    }
  }
}

/**
 * A class's floor given its current one, the lowest of its live buckets, and the floor
 * of its live answers that started at no more calls in flight than the current floor was
 * measured at (or at the minimum limit; null: too few of them): a lower floor at once; a
 * higher one only from those answers, since answers slowed by our own load must not raise
 * the floor they are judged against.
 */
export function nextFloor(current: Floor | null, lowest: Floor, atSameLoad: Floor | null): Floor {
  if (current === null || lowest.ms <= current.ms) return lowest
  return atSameLoad !== null && atSameLoad.ms > current.ms ? { ms: atSameLoad.ms, inFlight: current.inFlight } : current
}

/** The FLOOR_PERCENTILE of the answers in `buckets` that started at `maxLoad` calls in flight or fewer; null with fewer than MIN_WINDOW_SAMPLES. */
function floorAtLoad(buckets: Bucket[], maxLoad: number): Floor | null {
  const bins = new Map<number, number>()
  let count = 0
  for (const bucket of buckets) {
    for (const [load, cell] of bucket.cells) {
      if (load > maxLoad) continue
      for (const [bin, n] of cell) {
        bins.set(bin, (bins.get(bin) ?? 0) + n)
        count += n
      }
    }
  }
  if (count < MIN_WINDOW_SAMPLES) return null
  return { ms: binMs(percentileKey(bins, count)), inFlight: maxLoad }
}

/**
 * A bucket's floor: the FLOOR_PERCENTILE of its latencies, and the median of the calls in
 * flight that its answers at or under that latency started at (the load the floor was
 * measured at, from the same answers).
 */
function summarize(bucket: Bucket): void {
  if (bucket.summarized === bucket.count) return
  const bins = new Map<number, number>()
  for (const cell of bucket.cells.values()) for (const [bin, n] of cell) bins.set(bin, (bins.get(bin) ?? 0) + n)
  const floorBin = percentileKey(bins, bucket.count)
  const loads = new Map<number, number>()
  let under = 0
  for (const [load, cell] of bucket.cells) {
    for (const [bin, n] of cell) {
      if (bin > floorBin) continue
      loads.set(load, (loads.get(load) ?? 0) + n)
      under += n
    }
  }
  bucket.floorMs = binMs(floorBin)
  bucket.inFlight = percentileKey(loads, under, 0.5)
  bucket.summarized = bucket.count
}

/** The latency (ms) in the middle of a bin. */
function binMs(bin: number): number {
  return 2 ** ((bin + 0.5) / BINS_PER_OCTAVE)
}

function percentileKey(counts: Map<number, number>, total: number, percentile = FLOOR_PERCENTILE): number {
  const rank = Math.max(1, Math.ceil(percentile * total))
  const keys = [...counts.keys()].sort((a, b) => a - b)
  let seen = 0
  for (const key of keys) {
    seen += counts.get(key) as number
    if (seen >= rank) return key
  }
  return keys.at(-1) as number
}

/** The value at `p` of `values` (nearest rank). */
function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)] as number
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2
}
