import { systemClock, type Clock, type Timer } from '../clock.js'

/** The length of one bucket of a replica's history. */
export const BUCKET_MS = 10_000
/** Buckets kept: the last hour. */
export const BUCKETS = 360
/** How often the gauges (calls in flight and waiting, the limit and its floor) are read: a bucket keeps its last reading. */
export const SAMPLE_MS = 1000
/** Teams whose 429s and errors are kept; a team past them is counted under OTHER_TEAMS. */
export const MAX_TEAMS = 200
export const OTHER_TEAMS = '(other teams)'

// Platform latency per bucket as a histogram: bin i counts latencies up to 2^(i/4) ms
// (bin 0: up to 1 ms, the last bin: everything longer). A quantile read from it is
// the bound of its bin, within 19 % of the latency, and never above the bucket's longest.
const BINS_PER_DOUBLING = 4
export const LATENCY_BINS = 72

/** One credential's gauges, as its governor and learned limit say at one moment. */
export interface GaugeReading {
  credential: string
  inFlight: number
  waiting: number
  /** The limit of calls in flight in force. */
  limit: number
  /** The latency floor the learned limit compares answers with; null: none (yet, or a fixed limit). */
  floorMs: number | null
}

/** Series of one credential's gauges, one value per bucket (null: no reading in that bucket). */
export interface CredentialSeries {
  credential: string
  inFlight: (number | null)[]
  waiting: (number | null)[]
  limit: (number | null)[]
  latencyFloorMs: (number | null)[]
}

/** One team's answers with status 429 and 5xx per bucket. */
export interface TeamSeries {
  team: string
  tooManyRequests: (number | null)[]
  errors: (number | null)[]
}

/**
 * The last hour of one replica, oldest bucket first. Each series has BUCKETS values;
 * null in a bucket the replica did not see (before it started, or while it was stopped).
 */
export interface HistoryView {
  bucketSeconds: number
  /** Epoch ms of the oldest bucket's start: bucket i starts `i × bucketSeconds` s later. */
  start: number
  requests: (number | null)[]
  statuses: { '2xx': (number | null)[]; '3xx': (number | null)[]; '4xx': (number | null)[]; '5xx': (number | null)[] }
  /** Report reads answered (status below 400) and, of these, the ones answered by the cache. */
  reportReads: (number | null)[]
  hits: (number | null)[]
  platformCalls: (number | null)[]
  latencyP50Ms: (number | null)[]
  latencyP99Ms: (number | null)[]
  credentials: CredentialSeries[]
  teams: TeamSeries[]
}

interface Gauges {
  inFlight: Float64Array
  waiting: Float64Array
  limit: Float64Array
  floorMs: Float64Array
}

interface TeamCounts {
  tooMany: Uint32Array
  errors: Uint32Array
  /** The last bucket with a count: a team without one for an hour is dropped. */
  last: number
}

export interface HistoryOptions {
  clock?: Clock
  bucketMs?: number
  buckets?: number
}

/**
 * A replica's last hour in buckets of BUCKET_MS, in a ring of fixed size: memory does not
 * grow with traffic or time. Counting a request or a platform call is a few increments of
 * typed arrays, without allocation; a bucket's slot is cleared when time reaches it again.
 * The gauges are read every SAMPLE_MS (watch), so a bucket holds its values near its end.
 */
export class History {
  readonly #clock: Clock
  readonly #bucketMs: number
  readonly #size: number
  /** The bucket number (epoch ms / bucketMs) each slot holds; -1: none. */
  readonly #stamps: Float64Array
  #current = -1
  #slot = 0
  readonly #requests: Uint32Array
  readonly #statuses: Uint32Array[]
  readonly #reportReads: Uint32Array
  readonly #hits: Uint32Array
  readonly #calls: Uint32Array
  readonly #timed: Uint32Array
  readonly #longest: Float64Array
  /** LATENCY_BINS counts per slot. */
  readonly #latency: Uint32Array
  readonly #gauges = new Map<string, Gauges>()
  readonly #teams = new Map<string, TeamCounts>()
  #read: (() => GaugeReading[]) | null = null
  #timer: Timer | null = null

  constructor(opts: HistoryOptions = {}) {
    this.#clock = opts.clock ?? systemClock
    this.#bucketMs = opts.bucketMs ?? BUCKET_MS
    this.#size = opts.buckets ?? BUCKETS
    const n = this.#size
    this.#stamps = new Float64Array(n).fill(-1)
    this.#requests = new Uint32Array(n)
    this.#statuses = [new Uint32Array(n), new Uint32Array(n), new Uint32Array(n), new Uint32Array(n)]
    this.#reportReads = new Uint32Array(n)
    this.#hits = new Uint32Array(n)
    this.#calls = new Uint32Array(n)
    this.#timed = new Uint32Array(n)
    this.#longest = new Float64Array(n)
    this.#latency = new Uint32Array(n * LATENCY_BINS)
  }

  /** One answered request at `at` (epoch ms): its status, its team, whether it was a report read and a cache hit. */
  request(status: number, team: string | null, reportRead: boolean, hit: boolean, at: number = this.#clock.now()): void {
    const slot = this.#slotAt(at)
    if (slot < 0) return
    this.#requests[slot]! += 1
    const statusClass = ((status / 100) | 0) - 2
    if (statusClass >= 0 && statusClass < 4) this.#statuses[statusClass]![slot]! += 1
    if (reportRead && status < 400) {
      this.#reportReads[slot]! += 1
      if (hit) this.#hits[slot]! += 1
    }
    if (team !== null && (status === 429 || status >= 500)) {
      const counts = this.#team(team)
      if (status === 429) counts.tooMany[slot]! += 1
      else counts.errors[slot]! += 1
      counts.last = this.#current
    }
  }

  /** One platform call sent, which took `latencyMs` to its answer's headers or to its failure (null: not timed). */
  platformCall(latencyMs: number | null, at: number = this.#clock.now()): void {
    const slot = this.#slotAt(at)
    if (slot < 0) return
    this.#calls[slot]! += 1
    if (latencyMs === null || !(latencyMs >= 0)) return
    this.#timed[slot]! += 1
    if (latencyMs > this.#longest[slot]!) this.#longest[slot] = latencyMs
    this.#latency[slot * LATENCY_BINS + binOf(latencyMs)]! += 1
  }

  /** The gauges at `at`: each credential's reading replaces the one its bucket held. */
  sample(readings: readonly GaugeReading[], at: number = this.#clock.now()): void {
    const slot = this.#slotAt(at)
    if (slot < 0) return
    for (const r of readings) {
      const g = this.#gaugesOf(r.credential)
      g.inFlight[slot] = r.inFlight
      g.waiting[slot] = r.waiting
      g.limit[slot] = r.limit
      g.floorMs[slot] = r.floorMs ?? Number.NaN
    }
  }

  /** Reads the gauges with `read` now and every SAMPLE_MS, until stop(). */
  watch(read: () => GaugeReading[], everyMs = SAMPLE_MS): void {
    this.stop()
    this.#read = read
    this.sampleNow()
    this.#timer = this.#clock.setInterval(() => this.sampleNow(), everyMs).unref()
  }

  /** One reading of the gauges watch() was given (none before it). */
  sampleNow(): void {
    if (this.#read) this.sample(this.#read())
  }

  stop(): void {
    this.#clock.clearInterval(this.#timer)
    this.#timer = null
  }

  /** The last hour as seen at `now`, oldest bucket first. */
  view(now: number = this.#clock.now()): HistoryView {
    const newest = Math.floor(now / this.#bucketMs)
    const oldest = newest - this.#size + 1
    const slots: number[] = []
    for (let b = oldest; b <= newest; b++) {
      const slot = b % this.#size
      slots.push(this.#stamps[slot] === b ? slot : -1)
    }
    return this.#viewOf(oldest, slots, (t) => newest - t.last < this.#size)
  }

  /**
   * Bucket number `bucket` (epoch ms / bucketMs) alone, as a view of one bucket: what a
   * replica writes to Redis as each bucket closes (hourOf builds an hour of them), with
   * only the teams that have a count in it; null when the ring does not hold it.
   */
  bucket(bucket: number): HistoryView | null {
    const slot = bucket % this.#size
    if (bucket < 0 || this.#stamps[slot] !== bucket) return null
    return this.#viewOf(bucket, [slot], (t) => t.tooMany[slot]! + t.errors[slot]! > 0)
  }

  /** The buckets `slots` (-1: none) from bucket number `first` on, with the teams `kept` chooses. */
  #viewOf(first: number, slots: number[], kept: (t: TeamCounts) => boolean): HistoryView {
    const count = (values: Uint32Array) => slots.map((s) => (s < 0 ? null : values[s]!))
    const gauge = (values: Float64Array) => slots.map((s) => (s < 0 || Number.isNaN(values[s]) ? null : values[s]!))
    const [s2, s3, s4, s5] = this.#statuses as [Uint32Array, Uint32Array, Uint32Array, Uint32Array]
    return {
      bucketSeconds: this.#bucketMs / 1000,
      start: first * this.#bucketMs,
      requests: count(this.#requests),
      statuses: { '2xx': count(s2), '3xx': count(s3), '4xx': count(s4), '5xx': count(s5) },
      reportReads: count(this.#reportReads),
      hits: count(this.#hits),
      platformCalls: count(this.#calls),
      latencyP50Ms: slots.map((s) => (s < 0 ? null : this.#quantile(s, 0.5))),
      latencyP99Ms: slots.map((s) => (s < 0 ? null : this.#quantile(s, 0.99))),
      credentials: [...this.#gauges].map(([credential, g]) => ({
        credential,
        inFlight: gauge(g.inFlight),
        waiting: gauge(g.waiting),
        limit: gauge(g.limit),
        latencyFloorMs: gauge(g.floorMs).map((v) => (v === null ? null : round(v))),
      })),
      teams: [...this.#teams]
        .filter(([, t]) => kept(t))
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([team, t]) => ({ team, tooManyRequests: count(t.tooMany), errors: count(t.errors) })),
    }
  }

  /** The slot of the bucket of `at`, cleared when the bucket is new; -1 for a bucket older than the ring. */
  #slotAt(at: number): number {
    const bucket = Math.floor(at / this.#bucketMs)
    if (bucket === this.#current) return this.#slot
    if (bucket > this.#current) {
      this.#enter(bucket)
      return this.#slot
    }
    // A reading taken a moment before the bucket turned, counted after it did.
    if (this.#current - bucket >= this.#size) return -1
    const slot = bucket % this.#size
    return this.#stamps[slot] === bucket ? slot : -1
  }

  #enter(bucket: number): void {
    const slot = bucket % this.#size
    this.#current = bucket
    this.#slot = slot
    this.#stamps[slot] = bucket
    this.#requests[slot] = 0
    for (const s of this.#statuses) s[slot] = 0
    this.#reportReads[slot] = 0
    this.#hits[slot] = 0
    this.#calls[slot] = 0
    this.#timed[slot] = 0
    this.#longest[slot] = 0
    this.#latency.fill(0, slot * LATENCY_BINS, (slot + 1) * LATENCY_BINS)
    for (const g of this.#gauges.values()) {
      g.inFlight[slot] = Number.NaN
      g.waiting[slot] = Number.NaN
      g.limit[slot] = Number.NaN
      g.floorMs[slot] = Number.NaN
    }
    for (const [team, t] of this.#teams) {
      if (bucket - t.last >= this.#size) this.#teams.delete(team)
      else {
        t.tooMany[slot] = 0
        t.errors[slot] = 0
      }
    }
  }

  #team(team: string): TeamCounts {
    const known = this.#teams.get(team)
    if (known) return known
    const name = this.#teams.size < MAX_TEAMS - 1 ? team : OTHER_TEAMS
    let counts = this.#teams.get(name)
    if (!counts) {
      counts = { tooMany: new Uint32Array(this.#size), errors: new Uint32Array(this.#size), last: this.#current }
      this.#teams.set(name, counts)
    }
    return counts
  }

  #gaugesOf(credential: string): Gauges {
    let g = this.#gauges.get(credential)
    if (!g) {
      const nan = () => new Float64Array(this.#size).fill(Number.NaN)
      g = { inFlight: nan(), waiting: nan(), limit: nan(), floorMs: nan() }
      this.#gauges.set(credential, g)
    }
    return g
  }

  /** The latency below which a share `q` of the slot's timed calls fall (the bound of its bin), or null without one. */
  #quantile(slot: number, q: number): number | null {
    const n = this.#timed[slot]!
    if (n === 0) return null
    const rank = Math.max(1, Math.ceil(q * n))
    const base = slot * LATENCY_BINS
    let seen = 0
    for (let bin = 0; bin < LATENCY_BINS; bin++) {
      seen += this.#latency[base + bin]!
      if (seen >= rank) return round(Math.min(binBound(bin), this.#longest[slot]!))
    }
    return round(this.#longest[slot]!)
  }
}

/** An hour nothing is known of, as seen at `now`: every series null (a replica that vanished before its hour was ever written). */
export function emptyHistory(now: number, bucketMs = BUCKET_MS, buckets = BUCKETS): HistoryView {
  const none = (): null[] => new Array<null>(buckets).fill(null)
  const newest = Math.floor(now / bucketMs)
  return {
    bucketSeconds: bucketMs / 1000,
    start: (newest - buckets + 1) * bucketMs,
    requests: none(),
    statuses: { '2xx': none(), '3xx': none(), '4xx': none(), '5xx': none() },
    reportReads: none(),
    hits: none(),
    platformCalls: none(),
    latencyP50Ms: none(),
    latencyP99Ms: none(),
    credentials: [],
    teams: [],
  }
}

/** The series of a replica's hour, and of each credential in it, that hourOf copies bucket by bucket. */
const HOUR_SERIES = ['requests', 'reportReads', 'hits', 'platformCalls', 'latencyP50Ms', 'latencyP99Ms'] as const
const CREDENTIAL_SERIES = ['inFlight', 'waiting', 'limit', 'latencyFloorMs'] as const

/**
 * An hour as seen at `now` built from views of one bucket each (History.bucket), as a
 * replica wrote them to Redis: each in its place, null where none was written (before the
 * replica started, after it died, or a bucket older than the hour). A team or credential
 * is 0 or null where a bucket was written without it: a team there had no count, a
 * credential no reading.
 */
export function hourOf(buckets: readonly HistoryView[], now: number, bucketMs = BUCKET_MS, size = BUCKETS): HistoryView {
  const hour = emptyHistory(now, bucketMs, size)
  const placed: [number, HistoryView][] = []
  for (const b of buckets) {
    const i = (b.start - hour.start) / bucketMs
    if (Number.isInteger(i) && i >= 0 && i < size) placed.push([i, b])
  }
  const copy = (into: (number | null)[], from: readonly (number | null)[] | undefined, i: number): void => {
    const v = from?.[0]
    if (typeof v === 'number') into[i] = v
  }
  const teams = new Map<string, TeamSeries>()
  const credentials = new Map<string, CredentialSeries>()
  const none = (): null[] => new Array<null>(size).fill(null)
  for (const [i, b] of placed) {
    for (const series of HOUR_SERIES) copy(hour[series], b[series], i)
    for (const status of ['2xx', '3xx', '4xx', '5xx'] as const) copy(hour.statuses[status], b.statuses?.[status], i)
    for (const c of Array.isArray(b.credentials) ? b.credentials : []) {
      if (typeof c?.credential !== 'string') continue
      let series = credentials.get(c.credential)
      if (!series) credentials.set(c.credential, (series = { credential: c.credential, inFlight: none(), waiting: none(), limit: none(), latencyFloorMs: none() }))
      for (const reading of CREDENTIAL_SERIES) copy(series[reading], c[reading], i)
    }
    for (const t of Array.isArray(b.teams) ? b.teams : []) {
      if (typeof t?.team !== 'string') continue
      let series = teams.get(t.team)
      if (!series) teams.set(t.team, (series = { team: t.team, tooManyRequests: none(), errors: none() }))
      copy(series.tooManyRequests, t.tooManyRequests, i)
      copy(series.errors, t.errors, i)
    }
  }
  // A team without a count in a bucket that was written had none there: 0, not unknown.
  for (const series of teams.values()) {
    for (const [i] of placed) {
      series.tooManyRequests[i] ??= 0
      series.errors[i] ??= 0
    }
  }
  hour.credentials = [...credentials.values()]
  hour.teams = [...teams.values()].sort((a, b) => a.team.localeCompare(b.team))
  return hour
}

/** The histogram bin of a latency: the first whose bound is at least `ms`. */
export function binOf(ms: number): number {
  if (!(ms > 1)) return 0
  const bin = Math.ceil(Math.log2(ms) * BINS_PER_DOUBLING)
  return bin < LATENCY_BINS ? bin : LATENCY_BINS - 1
}

/** The longest latency bin `bin` counts (the last bin: any). */
export function binBound(bin: number): number {
  return bin >= LATENCY_BINS - 1 ? Number.POSITIVE_INFINITY : 2 ** (bin / BINS_PER_DOUBLING)
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10
}
