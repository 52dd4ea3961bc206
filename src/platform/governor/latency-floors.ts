/**
 * The latency floors the learned limit judges answers by, one per latency class (the
 * caller names it: the team and the work the platform does). A class's floor is a
 * percentile (FLOOR_PERCENTILE) of its answers per FLOOR_BUCKET_MS bucket, the lowest over
 * the last FLOOR_BUCKETS buckets: one lucky answer does not set it
 * (Netflix/concurrency-limits#37), and a platform that got faster lowers it at once. A
 * bucket of fewer than FLOOR_MIN_ANSWERS, or of fewer than FLOOR_MIN_SHARE of the answers
 * of its class's busiest bucket, sets no floor: a burst of cheap answers beside the
 * class's usual traffic is no floor for minutes. A floor rises only on the answers of
 * calls that started at no more calls in flight (on the credential, every replica's)
 * than the floor it replaces was measured at (or at the minimum limit): answers slowed by
 * our own load never raise it, so it does not creep up under sustained load (the creep of
 * envoyproxy/envoy#11579). Pure logic: time is passed in.
 */

/** A class's floor is kept per bucket of this length... */
export const FLOOR_BUCKET_MS = 30_000
/** ...over this many buckets (a sliding window of three minutes). */
export const FLOOR_BUCKETS = 6
/** The percentile of a bucket's answers taken as its floor. */
export const FLOOR_PERCENTILE = 0.5
/** A bucket sets a floor only with this many answers (a percentile of fewer is noise)... */
export const FLOOR_MIN_ANSWERS = 5
/** ...and at least this share of the answers of its class's busiest live bucket: a burst is not the platform's floor. */
export const FLOOR_MIN_SHARE = 0.25
/** A higher floor needs this many answers at the load the current one was measured at. */
export const FLOOR_RISE_ANSWERS = 8
/** Latency classes held; past this many the least recently seen is forgotten. */
export const MAX_CLASSES = 512
// Latencies are binned on a log scale, 16 bins per doubling (4.4 % wide), so a bucket's
// percentile costs a few map entries whatever the number of answers.
const BINS_PER_OCTAVE = 16

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

export class LatencyFloors {
  readonly #classes = new Map<string, LatencyClass>()
  readonly #minLoad: number
  readonly #maxLoad: number
  #busiestMs: number | null = null

  /** `minLoad`, `maxLoad`: the limit's bounds (loads are counted within them). */
  constructor(minLoad: number, maxLoad: number) {
    this.#minLoad = minLoad
    this.#maxLoad = maxLoad
  }

  /** The floor of the busiest class (ms), as of the last refresh; null before any. */
  get busiestMs(): number | null {
    return this.#busiestMs
  }

  /** The floor of class `klass` (ms), or null while it has none. */
  of(klass: string): number | null {
    return this.#classes.get(klass)?.floor?.ms ?? null
  }

  /** One answer of a call of class `sample.klass` (a call that started with `sample.inFlight` in flight). */
  learn(sample: { klass: string; at: number; latencyMs: number; inFlight: number }): void {
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
    const load = Math.max(1, Math.min(this.#maxLoad, Math.round(sample.inFlight)))
    let bins = bucket.cells.get(load)
    if (!bins) bucket.cells.set(load, (bins = new Map()))
    bins.set(bin, (bins.get(bin) ?? 0) + 1)
    bucket.count++
    klass.count++
  }

  /** Drops expired buckets, moves each class's floor, and picks the busiest class's for `busiestMs`. */
  refresh(now: number): void {
    const oldestLive = Math.floor(now / FLOOR_BUCKET_MS) - FLOOR_BUCKETS + 1
    let busiest = 0
    this.#busiestMs = null
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
      const most = Math.max(...klass.buckets.map((b) => b.count))
      for (const bucket of klass.buckets) {
        // A burst (a bucket of few answers beside the class's usual traffic) is not the platform's floor.
        if (bucket.count < Math.max(FLOOR_MIN_ANSWERS, FLOOR_MIN_SHARE * most)) continue
        summarize(bucket)
        if (lowest === null || bucket.floorMs < lowest.ms) lowest = { ms: bucket.floorMs, inFlight: bucket.inFlight }
      }
      if (lowest === null) continue
      const current = klass.floor
      const rise = current !== null && lowest.ms > current.ms ? floorAtLoad(klass.buckets, Math.max(current.inFlight, this.#minLoad)) : null
      klass.floor = nextFloor(current, lowest, rise)
      if (klass.count > busiest) {
        busiest = klass.count
        this.#busiestMs = klass.floor.ms
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

/** The FLOOR_PERCENTILE of the answers in `buckets` that started at `maxLoad` calls in flight or fewer; null with fewer than FLOOR_RISE_ANSWERS. */
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
  if (count < FLOOR_RISE_ANSWERS) return null
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
