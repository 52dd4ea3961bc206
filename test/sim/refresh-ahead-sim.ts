import { ASKS_DECAY, BUDGET_EVERY_MS, REFRESH_AHEAD_ASKS, REFRESH_AHEAD_BUDGET, budgetAsks, demandOf, expectedAsks, leadLatency, learnLatency, ownAsks, priorOf, refreshAheadStart, refreshLead, rescheduledStart, type ClassLatency } from '../../src/reports/refresh-ahead.js'
import { FairQueue, type Priority, type Queued } from '../../src/platform/governor/fair-queue.js'
import { Random } from './random.js'

/**
 * Refresh ahead on a simulated clock (docs/refresh-ahead.md): seeded Poisson asks of
 * Zipf-popular reports, a platform of log-normal latency, replayed against a cache that
 * refreshes ahead by the model (reports/refresh-ahead.ts, the rules of ReportCache: a
 * fresh copy's ask counts and may schedule the refresh; an expired copy is served stale
 * while one refresh runs; no copy waits for one call) and against a stale-while-revalidate
 * cache, nginx's `use_stale updating` + `background_update`, the same cache with refresh
 * ahead off; on request, against nginx itself, that policy on nginx's clock of whole seconds
 * (`nginxFreshUntil`). Each cache's calls and stale answers are told apart by cause
 * (`Causes`). Time is the event queue's: a run of minutes takes milliseconds.
 */

export interface Shape {
  reports: number
  /** Asks a second, over all reports. */
  rate: number
  zipf: number
  freshMs: number
  /** The platform's median latency (ms) and its log-normal spread (σ). */
  latencyMs: number
  spread: number
  seed: number
}

/** A shape drawn from `seed`: the ranges of the benchmark's dashboard family. */
export function drawShape(seed: number): Shape {
  const r = new Random(seed)
  return {
    reports: r.int(50, 500),
    // 10 to 100 users, each asking 3 reports every 2 s or so.
    rate: r.logUniform(15, 150),
    zipf: r.uniform(0.8, 1.3),
    freshMs: Math.round(r.logUniform(2000, 60_000)),
    latencyMs: Math.round(r.logUniform(50, 2000)),
    spread: r.uniform(0.1, 0.5),
    seed,
  }
}

/**
 * Another team's burst: for a third of the run, from `fromMs`, the gateway's calls wait
 * before they reach the platform (a seat held by the other team's calls, with chance
 * `seatChance`, for an exponential time of mean `seatMs`; a CPU turn, up to `turnMs`). The
 * wait is the gateway's, not the platform's: the call lands later, and the class's latency
 * learns it (as `ReportCache` learns the wait for a seat), the platform's time the same.
 * A seat freed for the dashboard goes to its most pressing waiting call, in the governor's
 * order (platform/governor/fair-queue.ts): a caller's miss (or a call a caller joined) first,
 * then the refreshes ahead by urgency, then a stale read's refresh; a refresh ahead waits
 * behind the team's own callers' calls.
 */
export interface Burst {
  fromMs: number
  toMs: number
  seatChance: number
  seatMs: number
  turnMs: number
}

/**
 * A burst for `shape`, drawn from its seed, for a third of the run, inside its counted part:
 * waits of the size trace 8's burst made (docs/benchmarks.md). The share of calls that wait
 * for a seat is what the other team's burst holds of the capacity, any share a real burst
 * gives: 5 to 80 %. Trace 8's burst made 6 to 17 % of the dashboard's calls wait, and there a
 * wait is rare enough that the class's deviation decays between two, so a timer set before
 * the last wait was learned starts late (rule 2: the start read again at each ask). Under
 * 5 % the waits land fewer calls past the lead than the platform's own tail does (about
 * 0.4 to 2.6 % of answers fall past mean + 4 mean deviations without a wait); over 80 % a
 * wait is the latency itself, learned as the platform's spread is.
 */
export function drawBurst(shape: Shape, span: Span = { freshnesses: FRESHNESSES, warmup: WARMUP_FRESHNESSES }): Burst {
  const r = new Random(shape.seed ^ 0xb0257)
  const counted = (span.freshnesses - span.warmup) * shape.freshMs
  const lengthMs = (span.freshnesses * shape.freshMs) / 3
  const fromMs = span.warmup * shape.freshMs + r.uniform(0, counted - lengthMs)
  return { fromMs, toMs: fromMs + lengthMs, seatChance: r.uniform(0.05, 0.8), seatMs: shape.latencyMs * r.logUniform(0.5, 3), turnMs: r.uniform(5, 50) }
}

/**
 * Why a cache made its counted platform calls: a refresh ahead whose copy was asked after the
 * copy it replaced expired (`aheadUsed`) or not (`aheadWasted`: a call for nobody), a stale
 * read's refresh (`swr`), a caller's miss with no copy yet (`first`) or one too old to serve
 * (`expired`).
 */
export interface CallCauses {
  aheadUsed: number
  aheadWasted: number
  swr: number
  first: number
  expired: number
}

/**
 * Why each answer past freshness was, per report, by the copy it was served from: no refresh
 * ahead set for it because nobody asked it while fresh (`unasked`: the asks its own fill
 * answered aside), because at its last ask while fresh its report read under K (`underK`) or
 * under the budget's threshold (`underThreshold`); a refresh ahead set that landed after the
 * copy expired (`late`); or a cache that does not refresh ahead (`none`).
 */
export type StaleCause = 'unasked' | 'underK' | 'underThreshold' | 'late' | 'none'
export const STALE_CAUSES: readonly StaleCause[] = ['unasked', 'underK', 'underThreshold', 'late', 'none']

/** What one cache made of the asks after the warm-up: per report, answers and stale answers; platform calls in all. */
export interface Tally {
  answers: number[]
  stale: number[]
  calls: number
  /** The counted calls per report, and in all by cause. */
  reportCalls: number[]
  callCauses: CallCauses
  /** The stale answers per report by cause. */
  staleCauses: Record<StaleCause, number[]>
  /** The same answers while a burst lasts (none: all 0). */
  burstAnswers: number[]
  burstStale: number[]
  /** Per report, the asks that waited for a platform call (a MISS: the platform's latency, not a copy's). */
  missed: number[]
  /** Of them, those that found a copy past its stale window: nobody asked it through its freshness and its stale window. */
  lapsed: number[]
}

export interface Run {
  shape: Shape
  ahead: Tally
  swr: Tally
  /** nginx's proxy_cache on the same asks (`simulate`'s `nginx` option): stale-while-revalidate on its clock of whole seconds. */
  nginx?: Tally
  /** Each report's ask rate times the freshness: the asks in one freshness it is drawn with. */
  asksPerFresh: number[]
  /** The lead the model set a refresh with last, ms. */
  leadMs: number
}

/** How many freshnesses a run lasts, and how many of them are not counted (the caches fill). */
export const FRESHNESSES = 24
export const WARMUP_FRESHNESSES = 4

class Heap<T extends { at: number; seq: number }> {
  readonly #items: T[] = []
  get size(): number {
    return this.#items.length
  }
  /** The first item, left in place (the heap is not empty). */
  peek(): T {
    return this.#items[0]!
  }
  push(x: T): void {
    const a = this.#items
    a.push(x)
    for (let i = a.length - 1; i > 0; ) {
      const p = (i - 1) >> 1
      if (!before(a[i]!, a[p]!)) break
      ;[a[i], a[p]] = [a[p]!, a[i]!]
      i = p
    }
  }
  pop(): T {
    const a = this.#items
    const top = a[0]!
    const last = a.pop()!
    if (a.length > 0) {
      a[0] = last
      for (let i = 0; ; ) {
        const [l, r] = [2 * i + 1, 2 * i + 2]
        let m = i
        if (l < a.length && before(a[l]!, a[m]!)) m = l
        if (r < a.length && before(a[r]!, a[m]!)) m = r
        if (m === i) break
        ;[a[i], a[m]] = [a[m]!, a[i]!]
        i = m
      }
    }
    return top
  }
}
const before = (x: { at: number; seq: number }, y: { at: number; seq: number }): boolean => x.at < y.at || (x.at === y.at && x.seq < y.seq)

type Event = { at: number; seq: number } & ({ kind: 'ask'; report: number } | { kind: 'land'; report: number; startedAt: number; priority: Priority } | { kind: 'due'; report: number; watch: Watch } | { kind: 'seat' })

/** The dashboard's team: every call of the simulation is its. */
const TEAM = 'dashboard'

/** A call waiting for a seat: its report, when it was made, and how long it takes once seated (a CPU turn and the platform's time). */
interface SeatWaiter extends Queued {
  report: number
  startedAt: number
  restMs: number
}

interface Watch {
  fetchedAt: number
  freshUntil: number
  asks: number
  filled: number
  priorAsks: number
  priorMs: number
  /** When its refresh ahead is due (null: none scheduled). */
  dueAt: number | null
  /** The latencies learned (`latencyVersion`) when its start was last read. */
  leadRead: number
  running: boolean
  /** Why its last ask set no refresh (null: it set one, or none was read). */
  declined: 'underK' | 'underThreshold' | null
}

interface Copy {
  fetchedAt: number
  /** Until when the cache serves it as fresh: its data's freshness on the gateway's clock, to a whole second past it on nginx's. */
  freshUntil: number
  /** A refresh ahead's copy: whether the call counted, from when an ask of it is one the copy before could not serve fresh, and whether one came. */
  ahead?: { counted: boolean; neededFrom: number; used: boolean }
}

/**
 * How the cache replaying keeps time: `exact`, the gateway's (a copy fresh for F from its
 * landing, served stale for F more while one refresh runs); `nginx`, proxy_cache's with
 * `use_stale updating` and `background_update` (`nginxFreshUntil`; stale served for as long
 * as the copy is kept, minutes, while one background update runs).
 */
type Clock = 'exact' | 'nginx'

/**
 * Until when nginx serves a copy that landed at `landedMs` fresh, with `proxy_cache_valid`
 * F: it sets the copy's `valid_sec` to the landing's whole second plus F and counts it
 * expired once the whole second now is past that, so a copy is fresh for F to F + 1 s,
 * F + 0.5 s on average (docs/benchmarks.md, "The calls by cause"); `secondMs`: where in the
 * run's clock nginx's seconds begin.
 */
export function nginxFreshUntil(landedMs: number, freshMs: number, secondMs = 0): number {
  return Math.floor((landedMs - secondMs + freshMs) / 1000) * 1000 + 1000 + secondMs
}

/**
 * The model's rule: a fixed K (`minAsks`), or a budget of extra calls (`budget`, with `minAsks`
 * its floor); `decay`: how much of the asks' history each copy carries on; `knownLatency`: the
 * class's latency the lead and the budget read once a call was answered, in place of the one
 * learned (the platform's own, to measure what the learned estimate's noise costs).
 */
export interface Rule {
  minAsks?: number
  budget?: number
  decay?: number
  knownLatency?: ClassLatency
}

/** The model's rule: K, the budget and the asks' history (reports/refresh-ahead.ts). */
export const MODEL: Rule = { minAsks: REFRESH_AHEAD_ASKS, budget: REFRESH_AHEAD_BUDGET, decay: ASKS_DECAY }

/** One cache's replay of `asks` (time, report), refreshing ahead or not. */
function replay(shape: Shape, asks: Array<[number, number]>, refreshAhead: boolean, latency: Random, warmupMs: number, endMs: number, rule: Rule, burst: Burst | undefined, clock: Clock = 'exact'): { tally: Tally; leadMs: number } {
  const zeros = () => new Array<number>(shape.reports).fill(0)
  const staleCauses = Object.fromEntries(STALE_CAUSES.map((c) => [c, zeros()])) as Record<StaleCause, number[]>
  const tally: Tally = { answers: zeros(), stale: zeros(), calls: 0, reportCalls: zeros(), callCauses: { aheadUsed: 0, aheadWasted: 0, swr: 0, first: 0, expired: 0 }, staleCauses, burstAnswers: zeros(), burstStale: zeros(), missed: zeros(), lapsed: zeros() }
  // The run starts at a point of nginx's second drawn from the seed, as a benchmark's replay does.
  const secondMs = new Random(shape.seed ^ 0xc10c).uniform(0, 1000)
  // How long past its freshness an expired copy is served stale while one refresh runs: the gateway's staleWhileRevalidate (F), nginx's as long as it keeps the copy.
  const staleMs = clock === 'nginx' ? Infinity : shape.freshMs
  const waits = new Random(shape.seed ^ 0x3a17)
  const copies: Array<Copy | null> = new Array<Copy | null>(shape.reports).fill(null)
  const flights = new Set<number>()
  const watches = new Map<number, Watch>()
  const waiting = new Array<number>(shape.reports).fill(0)
  let classLatency: ClassLatency | undefined
  let aheadLatency: ClassLatency | undefined
  // The latency the lead and the budget read: the refreshes' own, else the class's (leadLatency), or the rule's known one.
  const readLatency = (): ClassLatency | undefined => (classLatency && rule.knownLatency) ?? leadLatency(aheadLatency, classLatency)
  // ReportCache.#latencyVersion: a scheduled refresh's start is read again once a latency was learned since.
  let latencyVersion = 0
  let leadMs = 0
  let seq = 0
  let now = 0
  const seats = new FairQueue<SeatWaiter>()
  const events = new Heap<Event>()
  const counted = (t: number) => t >= warmupMs
  // A call is counted while the asks last: the refreshes scheduled for copies asked before the end start after it, for nobody.
  const countedCall = (t: number) => counted(t) && t < endMs
  const inBurst = (t: number) => burst !== undefined && t >= burst.fromMs && t < burst.toMs
  // ReportCache.#urgency: asks a second since the copy was fetched, more the sooner it expires.
  const urgency = (report: number) => (): number => {
    const w = watches.get(report)
    if (w === undefined) return 0
    const rate = w.asks / Math.max(1, (now - w.fetchedAt) / 1000)
    return rate / (1 + Math.max(0, (w.freshUntil - now) / 1000))
  }
  // The call waits for a seat (a seat's wait drawn, 0: none) then a CPU turn: the seat freed at the drawn time goes to the most pressing waiting call.
  const call = (report: number, t: number, priority: Priority) => {
    flights.add(report)
    if (countedCall(t)) {
      tally.calls += 1
      tally.reportCalls[report]! += 1
      if (priority === 'swr') tally.callCauses.swr += 1
      if (priority === 'caller') tally.callCauses[copies[report] ? 'expired' : 'first'] += 1
    }
    const seatMs = inBurst(t) && waits.chance(burst!.seatChance) ? -Math.log(1 - waits.next()) * burst!.seatMs : 0
    const turnMs = inBurst(t) ? waits.uniform(0, burst!.turnMs) : 0
    const restMs = turnMs + shape.latencyMs * latency.spread(shape.spread)
    if (seatMs === 0) {
      events.push({ at: t + restMs, seq: seq++, kind: 'land', report, startedAt: t, priority })
      return
    }
    seats.push({ team: TEAM, priority, seq: seq++, report, startedAt: t, restMs, ...(priority === 'ahead' ? { urgency: urgency(report) } : {}) })
    events.push({ at: t + seatMs, seq: seq++, kind: 'seat' })
  }
  // A caller's miss joins the call of its report under way: a call still waiting for a seat waits at the caller's priority (CallerGroup).
  const joined = (report: number) => {
    const w = seats.all().find((x) => x.report === report)
    if (w === undefined || w.priority === 'caller') return
    seats.remove(w)
    seats.push({ team: TEAM, priority: 'caller', seq: w.seq, report, startedAt: w.startedAt, restMs: w.restMs })
  }
  // Why an answer from `copy` at `t` is past freshness (the copy's watch: its last ask's reading).
  const staleCause = (report: number, copy: Copy): StaleCause => {
    if (!refreshAhead) return 'none'
    const w = watches.get(report)
    if (w === undefined || w.fetchedAt !== copy.fetchedAt || w.asks === w.filled) return 'unasked'
    if (w.running) return 'late'
    return w.declined ?? 'underK'
  }
  const answered = (report: number, t: number, copy: Copy) => {
    const stale = t >= copy.fetchedAt + shape.freshMs
    if (copy.ahead && t >= copy.ahead.neededFrom) copy.ahead.used = true
    if (!counted(t)) return
    tally.answers[report]! += 1
    if (stale) {
      tally.stale[report]! += 1
      tally.staleCauses[staleCause(report, copy)][report]! += 1
    }
    if (!inBurst(t)) return
    tally.burstAnswers[report]! += 1
    if (stale) tally.burstStale[report]! += 1
  }
  // A refresh ahead's copy, replaced or left at the end: a counted call, used or for nobody.
  const settled = (copy: Copy) => {
    if (copy.ahead?.counted) tally.callCauses[copy.ahead.used ? 'aheadUsed' : 'aheadWasted'] += 1
  }
  // ReportCache.#asked: an ask of a fresh copy counts, and may start or schedule the refresh.
  const asked = (report: number, copy: Copy, t: number, filled = false) => {
    if (!refreshAhead || t >= copy.freshUntil) return
    let w = watches.get(report)
    if (!w || w.fetchedAt !== copy.fetchedAt) {
      const prior = priorOf(w, copy.fetchedAt, rule.decay)
      w = { fetchedAt: copy.fetchedAt, freshUntil: copy.freshUntil, asks: 0, filled: 0, ...prior, dueAt: null, leadRead: -1, running: false, declined: null }
      watches.set(report, w)
    }
    w.asks += 1
    if (filled) w.filled += 1
    if (w.running || (w.dueAt !== null && w.leadRead === latencyVersion)) return
    const freshMs = copy.freshUntil - copy.fetchedAt
    const asks = expectedAsks(ownAsks(w), t - copy.fetchedAt, freshMs)
    const minAsks = w.dueAt === null ? minAsksAt(t) : 0
    // Under K now, under K at any later start: no lead to price (ReportCache.#asked: under the budget's fewest).
    if (w.dueAt === null && asks < (rule.minAsks ?? REFRESH_AHEAD_ASKS)) {
      w.declined = 'underK'
      return
    }
    w.leadRead = latencyVersion
    const lead = refreshLead(readLatency(), freshMs, asks)
    // A scheduled refresh's start is read again with its lead now (ReportCache.#asked).
    let start: number | null
    if (w.dueAt === null) {
      start = refreshAheadStart(copy, w, lead, t, minAsks)
      w.declined = start !== null ? null : refreshAheadStart(copy, w, lead, t, rule.minAsks ?? REFRESH_AHEAD_ASKS) === null ? 'underK' : 'underThreshold'
    } else start = rescheduledStart(copy, w.dueAt, lead)
    if (start === null) return
    leadMs = lead
    w.dueAt = Math.max(t, start)
    events.push({ at: w.dueAt, seq: seq++, kind: 'due', report, watch: w })
  }
  let threshold = { at: -Infinity, asks: 0 }
  const minAsksAt = (t: number): number => {
    if (rule.budget === undefined) return rule.minAsks ?? REFRESH_AHEAD_ASKS
    if (t - threshold.at >= BUDGET_EVERY_MS) {
      const demands = [...watches.values()].map((w) => demandOf(w, w, readLatency(), t))
      threshold = { at: t, asks: budgetAsks(demands, rule.budget, rule.minAsks) }
    }
    return threshold.asks
  }
  let next = 0
  for (;;) {
    const ask = asks[next]
    if (ask !== undefined && (events.size === 0 || ask[0] <= events.peek().at)) {
      next += 1
      const [t, report] = ask
      const copy = copies[report]
      if (copy && t < copy.freshUntil) {
        answered(report, t, copy)
        asked(report, copy, t)
      } else if (copy && t < copy.freshUntil + staleMs) {
        // Served stale, one refresh behind it.
        answered(report, t, copy)
        if (!flights.has(report)) call(report, t, 'swr')
      } else {
        if (counted(t)) {
          tally.missed[report]! += 1
          if (copy) tally.lapsed[report]! += 1
        }
        waiting[report]! += 1
        if (!flights.has(report)) call(report, t, 'caller')
        else joined(report)
      }
      continue
    }
    if (events.size === 0) break
    const e = events.pop()
    now = e.at
    if (e.kind === 'seat') {
      const w = seats.pressing(TEAM)!
      seats.remove(w)
      events.push({ at: e.at + w.restMs, seq: seq++, kind: 'land', report: w.report, startedAt: w.startedAt, priority: w.priority })
    } else if (e.kind === 'land') {
      flights.delete(e.report)
      classLatency = learnLatency(classLatency, e.at - e.startedAt)
      // ReportCache.#called: a refresh ahead's answer teaches its refreshes' latency too.
      if (e.priority === 'ahead') aheadLatency = learnLatency(aheadLatency, e.at - e.startedAt)
      latencyVersion += 1
      const before = copies[e.report]
      if (before) settled(before)
      const copy: Copy = { fetchedAt: e.at, freshUntil: clock === 'nginx' ? nginxFreshUntil(e.at, shape.freshMs, secondMs) : e.at + shape.freshMs }
      if (e.priority === 'ahead') copy.ahead = { counted: countedCall(e.startedAt), neededFrom: before ? before.fetchedAt + shape.freshMs : e.at, used: false }
      copies[e.report] = copy
      // The callers that waited for it are answered with it, each an ask of the copy its fill answered.
      for (; waiting[e.report]! > 0; waiting[e.report]! -= 1) {
        answered(e.report, e.at, copy)
        asked(e.report, copy, e.at, true)
      }
    } else if (e.kind === 'due') {
      // A due event the refresh was moved from, or one already run, is not this watch's timer.
      if (e.watch.dueAt !== e.at) continue
      e.watch.dueAt = null
      if (watches.get(e.report) !== e.watch || flights.has(e.report)) continue
      e.watch.running = true
      call(e.report, e.at, 'ahead')
    }
  }
  for (const copy of copies) if (copy) settled(copy)
  return { tally, leadMs }
}

/** How long a run lasts and how much of it is not counted, in freshnesses. */
export interface Span {
  freshnesses: number
  warmup: number
}

/**
 * Runs `shape`: the same asks against both caches, each with its own platform draws from the
 * shape's seed; `rule`: the model's, unless another is measured; `span`: the run's length and
 * warm-up (the benchmark's window: `{ freshnesses: 3.25, warmup: 1 }` on a 20 s freshness).
 */
/** What else `simulate` replays: given asks (time ms, report) in place of the shape's Poisson draws, and nginx's clock beside the two caches. */
export interface Replayed {
  asks?: Array<[number, number]>
  nginx?: boolean
}

export function simulate(shape: Shape, rule: Rule = MODEL, span: Span = { freshnesses: FRESHNESSES, warmup: WARMUP_FRESHNESSES }, burst?: Burst, replayed: Replayed = {}): Run {
  const r = new Random(shape.seed ^ 0x5eed)
  const weights = Array.from({ length: shape.reports }, (_, i) => 1 / (i + 1) ** shape.zipf)
  const total = weights.reduce((x, y) => x + y, 0)
  const cumulative: number[] = []
  let acc = 0
  for (const w of weights) cumulative.push((acc += w / total))
  const pick = (u: number): number => {
    let [lo, hi] = [0, cumulative.length - 1]
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (cumulative[mid]! >= u) hi = mid
      else lo = mid + 1
    }
    return lo
  }
  const endMs = span.freshnesses * shape.freshMs
  const asks: Array<[number, number]> = replayed.asks ?? []
  for (let t = 0; replayed.asks === undefined; ) {
    t += (-Math.log(1 - r.next()) / shape.rate) * 1000
    if (t >= endMs) break
    asks.push([t, pick(r.next())])
  }
  const warmupMs = span.warmup * shape.freshMs
  const ahead = replay(shape, asks, true, new Random(shape.seed ^ 0x1a7), warmupMs, endMs, rule, burst)
  const swr = replay(shape, asks, false, new Random(shape.seed ^ 0x1a7), warmupMs, endMs, rule, burst)
  const nginx = replayed.nginx ? { nginx: replay(shape, asks, false, new Random(shape.seed ^ 0x1a7), warmupMs, endMs, rule, burst, 'nginx').tally } : {}
  return { shape, ahead: ahead.tally, swr: swr.tally, ...nginx, asksPerFresh: weights.map((w) => (w / total) * shape.rate * (shape.freshMs / 1000)), leadMs: ahead.leadMs }
}
