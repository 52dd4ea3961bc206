/**
 * The limit rule (docs/governor.md, "The limit rule"): the seats in force follow the
 * platform's knee, the most calls it serves at once. The platform takes calls in order:
 * a call started with more calls in flight than it has workers waits for a worker, and
 * that wait is the same for every kind of call; a platform that gets slower stretches
 * every kind in proportion, and neighbouring windows share its pace. So the rule never
 * learns a latency of its own: it compares **windows** at two limits next to each other.
 *
 *   wait   = the latency a window's calls had past those of the window it is compared
 *            with, kind by kind (each kind against itself, weighed by its precision)
 *   queued = calls in flight × wait / latency            (Little's law)
 *
 * - start: from `min`, the limit goes to `initial`, then doubles each window that shows
 *   no queue against the one before, until one does: the knee is what that window served;
 * - probe: at the knee, while calls wait for a seat, a window a step past it between two
 *   at it: no wait against both, the knee takes the step (and the next step doubles);
 * - test: now and then a window a step below the knee between two at it: the knee's
 *   windows waited against both, the knee falls to what they served;
 * - a comparison that cannot tell takes longer windows; one that finds nothing to change
 *   comes back later and later (QUIET_MAX_MS at most): a probe's queue costs little;
 * - fault: overload answers from every answering team or from two teams in a second, the
 *   platform's silence, a credential pause: the limit halves, the knee stays, and a
 *   second without a fault, once a call sent at the cut limit answered, restores it.
 *
 * Pure logic: time is passed in.
 */

/** A window takes the calls started over this long at least... */
export const WINDOW_MS = 1000
/** ...and this many at least; it is judged once they all ended (or after MAX_WAIT_MS, with those that did). */
export const MIN_CALLS = 8
export const MAX_WAIT_MS = 60_000
/** At a fresh start, a doubling that cannot tell takes up to this many windows, then goes by what they show. */
export const START_WINDOWS = 3
/** A wait counts when it is this many calls queued at least (Little's law) and SURE standard errors; none, when below it by ROOM standard errors. */
export const QUEUE_CALLS = 0.5
export const SURE = 3
export const ROOM = 2
/**
 * A probe that changed nothing comes back after twice as long as before, from QUIET_MIN_MS
 * to PROBE_QUIET_MAX_MS (a probe queues a step for a window); a test, from TEST_QUIET_MIN_MS
 * to TEST_QUIET_MAX_MS (a test leaves a step idle for a window).
 */
export const QUIET_MIN_MS = 2_000
export const PROBE_QUIET_MAX_MS = 30_000
export const TEST_QUIET_MIN_MS = 10_000
export const TEST_QUIET_MAX_MS = 60_000
/** The probes (or tests) at one level add up over this long at most: a platform that drifts makes older windows unlike newer ones. */
export const EVIDENCE_MS = 30_000
/** A step past or below the knee: this share of it, one call at least. */
export const STEP_SHARE = 1 / 16
export const MAX_STEP_SHARE = 1 / 10
/** A team draws overload when this share of its answers in a second, one at least, say the platform is overloaded. */
export const OVERLOAD_SHARE = 0.05
/** A call overdue (seats.ts) and no answer for this many times the usual gap between answers (a second at least): the platform is silent, a fault. */
export const SILENCE_GAPS = 10
/** How much each gap between answers moves the usual gap. */
export const GAP_GAIN = 0.1
/** The spread of a call's latency within its kind (a share of its mean) assumed before a window measured one. */
const PRIOR_SPREAD = 0.3

/** What the estimator learns from one call's end. */
export interface Answer {
  /** When the call started and when it ended (epoch ms). */
  startedAt: number
  at: number
  team: string
  /** The call's kind: its team and its work. */
  kind: string
  /** Calls of the credential in flight when it started, itself included, on every replica. */
  load: number
  /** The window it started in (what `started` returned). */
  window: number
  /** ok: the platform worked on it and answered; overload: 502/503/504, no connection, or a deadline passed at twice its expected time; other: anything that says nothing of load. */
  outcome: 'ok' | 'overload' | 'other'
}

export type Phase = 'start' | 'cruise' | 'probe' | 'test' | 'fault'

/** Why the limit moved. */
export type Move = 'probe' | 'grew' | 'knee' | 'test' | 'queue' | 'fault' | 'restored' | 'adopted'

export interface Step {
  limit: number
  knee: number
  move: Move
}

interface Latencies {
  n: number
  sum: number
  sum2: number
}

/** Calls of one or more windows at one limit, as a comparison weighs them. */
interface Pool {
  limit: number
  /** How long its calls were started over (ms), how many, how many answered, and their latency in all and per kind. */
  spanMs: number
  started: number
  ok: number
  ms: number
  kinds: Map<string, Latencies>
  /** Calls in flight when its calls started: summed, the most, and how many started at each. */
  load: number
  peak: number
  loads: Map<number, number>
}

interface Window extends Pool {
  serial: number
  role: 'knee' | 'probe' | 'test' | 'start'
  start: number
  closeAt: number
  /** When it stopped taking calls; null while it takes them. */
  closedAt: number | null
  ended: number
  waited: boolean
}

/** What the probes (or the tests) at one level have shown since `since`: the windows at the knee beside them, and theirs. */
interface Evidence {
  role: 'probe' | 'test'
  knee: number
  level: number
  since: number
  atKnee: Pool
  tried: Pool
  /** The last window at the knee counted in. */
  last: number
}

type Verdict = 'queued' | 'none' | 'unknown'

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
  #phase: Phase = 'start'
  // Steps a probe goes at once (doubling while probes find room), and the standard error of the last comparison (calls).
  #grow = 1
  #se = 0
  #window: Window | null = null
  // The judged windows the next comparison needs: the one at the knee before a probe or test, and the probe or test.
  #before: Window | null = null
  // At a fresh start: the windows at the limit below.
  #below: Pool | null = null
  #tried: Window | null = null
  #evidence: Evidence | null = null
  #startPool: (Pool & { windows: number }) | null = null
  // A fault cut the start short: the doubling goes on after it.
  #starting = false
  #serial = 0
  #probeAt = 0
  #testAt = 0
  #probeQuiet = QUIET_MIN_MS
  #testQuiet = TEST_QUIET_MIN_MS
  #lastCut = -Infinity
  #answeredSinceCut = false
  #lastAnswer = -Infinity
  #gapMs = WINDOW_MS
  #second: { start: number; teams: Map<string, { answers: number; overloads: number }> } = { start: -Infinity, teams: new Map() }
  #latencyMs: number | null = null

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

  /** The platform's knee as learned: the most calls it serves at once. */
  get knee(): number {
    return this.#knee
  }

  get phase(): Phase {
    return this.#phase
  }

  /** The mean latency of the kind answered most in the last window at the knee (ms), for the operators; null before one. */
  get floorMs(): number | null {
    return this.#latencyMs
  }

  /** A call of `kind` started with `load` calls in flight, itself included, on every replica; returns the window its end belongs to (0: none). */
  started(_kind: string, load: number): number {
    const w = this.#window
    if (w === null || w.closedAt !== null) return 0
    w.started++
    w.load += load
    w.peak = Math.max(w.peak, load)
    w.loads.set(load, (w.loads.get(load) ?? 0) + 1)
    return w.serial
  }

  /** Calls waited with every seat of the limit taken or owed: the window used the limit. */
  waited(): void {
    if (this.#window && this.#window.closedAt === null) this.#window.waited = true
  }

  ended(a: Answer): void {
    this.#countSecond(a)
    if (a.outcome !== 'overload') this.#seen(a.at)
    if (a.outcome === 'ok' && a.startedAt >= this.#lastCut) this.#answeredSinceCut = true
    const w = this.#window
    if (w === null || a.window !== w.serial) return
    w.ended++
    if (a.outcome !== 'ok') return
    const ms = a.at - a.startedAt
    w.ok++
    w.ms += ms
    const l = w.kinds.get(a.kind) ?? { n: 0, sum: 0, sum2: 0 }
    l.n++
    l.sum += ms
    l.sum2 += ms * ms
    w.kinds.set(a.kind, l)
  }

  /** Another replica's limit and knee (the shared record): taken as they are, and what this replica measured is another limit's. */
  adopt(limit: number, knee: number, now: number): Step | null {
    const l = this.#clamp(limit)
    const k = this.#clamp(knee)
    this.#before = this.#tried = null
    this.#open(now, 'knee', l)
    if (l === this.#limit && k === this.#knee) return null
    this.#limit = l
    this.#knee = k
    this.#phase = l < k ? 'fault' : 'cruise'
    return { limit: l, knee: k, move: 'adopted' }
  }

  /** The platform paused the whole credential: a fault. */
  pause(now: number): Step | null {
    return this.#fault(now)
  }

  /**
   * Watches for faults, and judges the window once its calls ended; null while nothing
   * moves. `overdueSince`: since when a call in flight has been overdue (seats.ts), or
   * null; with no answer for SILENCE_GAPS usual gaps between answers besides, the
   * platform is silent (stalled): a fault. A queue delays calls but keeps answers coming.
   */
  tick(now: number, overdueSince: number | null): Step | null {
    if (now - this.#second.start >= WINDOW_MS) {
      const overloaded = this.#overloaded()
      this.#second = { start: now, teams: new Map() }
      if (overloaded) return this.#fault(now)
    }
    // A cut starts the silence over; fewer calls in flight answer less often.
    const gap = this.#gapMs * Math.max(1, this.#knee / this.#limit)
    if (overdueSince !== null && now - Math.max(this.#lastAnswer, this.#lastCut) > Math.max(WINDOW_MS, SILENCE_GAPS * gap)) return this.#fault(now)
    if (this.#phase === 'fault') {
      if (now - this.#lastCut < WINDOW_MS || !this.#answeredSinceCut) return null
      return this.#restore(now)
    }
    const w = this.#window
    if (w === null) {
      this.#open(now, 'start', this.#limit)
      return null
    }
    if (w.closedAt === null) {
      if (now < w.closeAt || (w.started < MIN_CALLS && now - w.start < MAX_WAIT_MS)) return null
      w.closedAt = now
      w.spanMs = Math.max(1, now - w.start)
      // Between windows the limit is the knee's (the next one opens when this one is judged).
      if (this.#phase !== 'start' && this.#limit !== this.#knee) return this.#set(this.#knee, this.#phase === 'probe' ? 'knee' : 'restored')
    }
    if (w.ended < w.started && now - w.start < MAX_WAIT_MS) return null
    return this.#judge(w, now)
  }

  #judge(w: Window, now: number): Step | null {
    if (w.role === 'start') return this.#startStep(w, now)
    if (w.role !== 'knee') {
      this.#tried = w
      this.#open(now, 'knee', this.#knee)
      return null
    }
    if (w.kinds.size > 0) this.#latencyMs = mostAnswered(w.kinds)
    const tried = this.#tried
    const before = this.#before
    this.#before = w
    this.#tried = null
    if (tried !== null && before !== null) return this.#compare(before, tried, w, now)
    return this.#next(w, now)
  }

  /** At a fresh start: the limit doubles each window that shows no queue against the one below. */
  #startStep(w: Window, now: number): Step | null {
    const below = this.#below
    if (below === null) {
      this.#below = w
      return this.#openAt(now, 'start', Math.max(this.#initial, 2 * w.limit), 'grew')
    }
    const pool = this.#startPool?.limit === w.limit ? this.#startPool : (this.#startPool = { ...emptyPool(w.limit), windows: 0 })
    pour(pool, w)
    pool.windows++
    const judged = judge(below, pool)
    // Not known yet: another window at this limit, START_WINDOWS at most; then what they show decides.
    if (judged.verdict === 'unknown' && pool.windows < START_WINDOWS) return this.#openAt(now, 'start', w.limit, 'grew')
    const queued = judged.verdict === 'queued'
    this.#startPool = null
    if (!queued && pool.peak >= w.limit && w.limit < this.#max) {
      this.#knee = w.limit
      this.#below = pool
      return this.#openAt(now, 'start', w.limit * 2, 'grew')
    }
    // A queue: the knee is what the windows served; none, below a limit the calls did not fill: the most they met.
    this.#knee = this.#clamp(Math.max(below.limit, queued ? judged.served : pool.peak))
    this.#phase = 'cruise'
    this.#below = null
    this.#se = judged.se
    return this.#openAt(now, 'knee', this.#knee, 'knee')
  }

  /**
   * A probe or test window between two at the knee, with the probes (or tests) at its
   * level since EVIDENCE_MS and the windows at the knee beside them (on both sides: a
   * drift of the platform's pace weighs on both alike). Between two limits the queue
   * grows by nothing below the workers and by a call a call above them: the queue the
   * higher limit added is near 0 (room) or near the step (none). Once its standard error
   * is within half the step (or the evidence is EVIDENCE_MS old) the nearer one decides.
   */
  #compare(before: Window, tried: Window, after: Window, now: number): Step | null {
    const probe = tried.role === 'probe'
    const role = probe ? 'probe' : 'test'
    let ev = this.#evidence
    if (ev === null || ev.role !== role || ev.knee !== this.#knee || ev.level !== tried.limit || now - ev.since > EVIDENCE_MS) {
      ev = this.#evidence = { role, knee: this.#knee, level: tried.limit, since: now, atKnee: emptyPool(this.#knee), tried: emptyPool(tried.limit), last: 0 }
    }
    for (const w of [before, after]) if (w.serial > ev.last) pour(ev.atKnee, w)
    ev.last = after.serial
    pour(ev.tried, tried)
    const [low, high] = probe ? [ev.atKnee, ev.tried] : [ev.tried, ev.atKnee]
    const { queued, se, served } = judge(low, high)
    const step = Math.abs(tried.limit - this.#knee)
    this.#phase = 'cruise'
    if (Number.isFinite(se)) this.#se = se
    if (se > step / 2 && now - ev.since < EVIDENCE_MS) {
      // Not known yet: the same probe (or test) again soon, its evidence adding up.
      if (probe) this.#probeAt = now
      else this.#testAt = now
      return this.#next(after, now)
    }
    this.#evidence = null
    // Nothing to compare (no kind answered at both limits): nothing learned.
    if (!Number.isFinite(se)) return this.#next(after, now)
    const added = queued >= step / 2
    if (probe) {
      if (!added && ev.tried.peak >= tried.limit) {
        this.#knee = this.#clamp(tried.limit)
        this.#probeQuiet = QUIET_MIN_MS
        this.#probeAt = now
        this.#grow *= 2
        return this.#openAt(now, 'knee', this.#knee, 'knee')
      }
      this.#grow = 1
      this.#probeQuiet = Math.min(PROBE_QUIET_MAX_MS, 2 * this.#probeQuiet)
      this.#probeAt = now + this.#probeQuiet
      // The probe queued more than its step: the knee itself may queue, which a test tells.
      if (served < this.#knee - 0.5) this.#testAt = now
      return this.#next(after, now)
    }
    if (added) {
      this.#testQuiet = TEST_QUIET_MIN_MS
      this.#testAt = now + this.#testQuiet
      return this.#cut(Math.max(tried.limit, served), now)
    }
    this.#testQuiet = Math.min(TEST_QUIET_MAX_MS, 2 * this.#testQuiet)
    this.#testAt = now + this.#testQuiet
    return this.#next(after, now)
  }

  /** After a window at the knee: a probe if calls waited for a seat and it is time, else a test if the calls fill the knee and it is time, else another window at the knee. */
  #next(w: Window, now: number): Step | null {
    this.#phase = 'cruise'
    if (w.waited && now >= this.#probeAt && this.#knee < this.#max) {
      this.#phase = 'probe'
      return this.#openAt(now, 'probe', this.#knee + this.#stepFor(this.#grow), 'probe')
    }
    if (now >= this.#testAt && this.#knee > this.#min && w.peak >= this.#knee) {
      this.#phase = 'test'
      return this.#openAt(now, 'test', this.#knee - this.#stepFor(1), 'test')
    }
    return this.#openAt(now, 'knee', this.#knee, 'knee')
  }

  /**
   * How far past or below the knee a probe or test goes: STEP_SHARE of it, or as far as
   * the last comparison's standard error needs to tell a step's queue from none (within
   * MAX_STEP_SHARE of it, two calls at least: calls in flight past the workers by no more);
   * a probe that keeps finding room goes `grow` steps at once.
   */
  #stepFor(grow: number): number {
    const base = Math.max(stepOf(this.#knee), Math.ceil(2 * this.#se))
    return Math.max(1, Math.min(base, Math.max(2, Math.round(this.#knee * MAX_STEP_SHARE))) * grow)
  }

  /** The knee queued: it falls to what its windows served, and a probe follows soon (a cut may go too far). */
  #cut(served: number, now: number): Step | null {
    this.#knee = this.#clamp(served)
    this.#before = null
    this.#probeQuiet = QUIET_MIN_MS
    this.#probeAt = now
    return this.#openAt(now, 'knee', this.#knee, 'queue')
  }

  #openAt(now: number, role: Window['role'], limit: number, move: Move): Step | null {
    const l = this.#clamp(limit)
    this.#open(now, role, l)
    return this.#set(l, move)
  }

  #set(limit: number, move: Move): Step | null {
    if (limit === this.#limit) return null
    this.#limit = limit
    return { limit, knee: this.#knee, move }
  }

  #open(now: number, role: Window['role'], limit: number): void {
    this.#window = { serial: ++this.#serial, limit, role, start: now, closeAt: now + WINDOW_MS, closedAt: null, spanMs: 0, started: 0, ended: 0, load: 0, peak: 0, loads: new Map(), waited: false, kinds: new Map(), ok: 0, ms: 0 }
  }

  /** The fault is over: the limit is the knee again, and a probe may follow soon (the fault may have hidden a change); at a fresh start, the doubling goes on from the knee. */
  #restore(now: number): Step | null {
    this.#before = this.#tried = null
    if (this.#starting) {
      this.#phase = 'start'
      this.#below = null
      return this.#openAt(now, 'start', this.#knee, 'restored')
    }
    this.#phase = 'cruise'
    this.#probeAt = now
    this.#testAt = now + this.#testQuiet
    return this.#openAt(now, 'knee', this.#knee, 'restored')
  }

  /** The limit in force (at most the knee) halves, at most once a second; the knee stays. */
  #fault(now: number): Step | null {
    if (now - this.#lastCut < WINDOW_MS) return null
    this.#lastCut = now
    this.#answeredSinceCut = false
    this.#before = this.#tried = null
    this.#window = null
    this.#starting = this.#phase === 'start' || (this.#phase === 'fault' && this.#starting)
    this.#phase = 'fault'
    return this.#set(Math.max(this.#min, Math.floor(Math.min(this.#limit, this.#knee) / 2)), 'fault')
  }

  /** Counts `a` in the second under way; an overload answer to a call sent before the last cut is the old limit's, already halved for. */
  #countSecond(a: Answer): void {
    const t = this.#second.teams.get(a.team) ?? { answers: 0, overloads: 0 }
    t.answers++
    if (a.outcome === 'overload' && a.startedAt >= this.#lastCut) t.overloads++
    this.#second.teams.set(a.team, t)
  }

  /** Overload in the second under way from every answering team, or from two teams or more. */
  #overloaded(): boolean {
    let drawing = 0
    for (const t of this.#second.teams.values()) if (t.overloads >= Math.max(1, OVERLOAD_SHARE * t.answers)) drawing++
    return drawing >= 2 || (drawing >= 1 && drawing === this.#second.teams.size)
  }

  #seen(at: number): void {
    if (Number.isFinite(this.#lastAnswer) && at > this.#lastAnswer) this.#gapMs += GAP_GAIN * (at - this.#lastAnswer - this.#gapMs)
    this.#lastAnswer = Math.max(this.#lastAnswer, at)
  }

  #clamp(n: number): number {
    return Math.max(this.#min, Math.min(this.#max, Math.round(n)))
  }
}

/**
 * Window `high` (at the higher limit) against `low`: the calls queued in `high` by
 * Little's law (calls started per second × the wait a call had), the wait being the
 * latency past `low`'s of each kind, weighed by its precision (the platform makes every
 * call wait alike, and a cheap kind shows it far more surely than a dear one). The
 * verdict: queued when that is QUEUE_CALLS at least and SURE standard errors, none when
 * below QUEUE_CALLS by ROOM standard errors; and the workers that queue shows.
 */
export function judge(low: Pool, high: Pool): { verdict: Verdict; queued: number; se: number; served: number } {
  const spread2 = spreadOf(low.kinds, high.kinds)
  let weights = 0
  let weighed = 0
  for (const [kind, h] of high.kinds) {
    const l = low.kinds.get(kind)
    if (l === undefined) continue
    const pooled = (l.sum + h.sum) / (l.n + h.n)
    const v = Math.max(spread2 * pooled * pooled * (1 / l.n + 1 / h.n), 1e-6)
    weights += 1 / v
    weighed += (h.sum / h.n - l.sum / l.n) / v
  }
  if (weights === 0 || high.ok === 0) return { verdict: 'unknown', queued: 0, se: Infinity, served: high.limit }
  const perMs = high.started / high.spanMs
  const queued = (perMs * weighed) / weights
  const se = perMs / Math.sqrt(weights)
  const served = workersFor(high.loads, Math.max(0, queued))
  if (process.env.DEBUG_JUDGE) console.log('judge', low.limit, high.limit, 'queued', queued.toFixed(2), 'se', se.toFixed(2), 'served', served.toFixed(1), 'perMs', perMs.toFixed(4), [...high.kinds].map(([k, h]) => { const l = low.kinds.get(k); return `${k.replace('\n', '/')}:${h.n}/${l?.n ?? 0} ${(h.sum / h.n).toFixed(0)}-${l ? (l.sum / l.n).toFixed(0) : '?'}` }).join(' '))
  if (queued >= QUEUE_CALLS && queued > SURE * se) return { verdict: 'queued', queued, se, served }
  if (queued + ROOM * se < QUEUE_CALLS) return { verdict: 'none', queued, se, served }
  return { verdict: 'unknown', queued, se, served }
}

/**
 * The workers W at which calls started at the loads in `loads` (calls in flight, each
 * counted once per call) would queue `queued` on average on a platform that takes them
 * in order: the mean of max(0, load − W) is `queued`. With loads all alike it is load −
 * queued; with loads that come in bursts it is found in their upper tail, where the queue
 * forms. No queue: the highest load.
 */
export function workersFor(loads: ReadonlyMap<number, number>, queued: number): number {
  const points = [...loads].sort((a, b) => b[0] - a[0])
  const total = points.reduce((sum, [, n]) => sum + n, 0)
  if (total === 0) return 0
  if (queued <= 0) return (points[0] as [number, number])[0]
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

/** The spread of every kind's latencies around their own means, as a share of them (squared); PRIOR_SPREAD before two answers of a kind. */
function spreadOf(...windows: ReadonlyMap<string, Latencies>[]): number {
  let ss = 0
  let dof = 0
  for (const m of windows) {
    for (const l of m.values()) {
      const mu = l.sum / l.n
      if (l.n < 2 || mu <= 0) continue
      ss += Math.max(0, l.sum2 - l.n * mu * mu) / (mu * mu)
      dof += l.n - 1
    }
  }
  return dof >= 2 ? ss / dof : PRIOR_SPREAD ** 2
}

function emptyPool(limit: number): Pool {
  return { limit, spanMs: 0, started: 0, ok: 0, ms: 0, kinds: new Map(), load: 0, peak: 0, loads: new Map() }
}

/** Adds the calls of `from` to `into`. */
function pour(into: Pool, from: Pool): void {
  into.spanMs += from.spanMs
  into.started += from.started
  into.ok += from.ok
  into.ms += from.ms
  into.load += from.load
  into.peak = Math.max(into.peak, from.peak)
  for (const [load, n] of from.loads) into.loads.set(load, (into.loads.get(load) ?? 0) + n)
  for (const [kind, l] of from.kinds) {
    const t = into.kinds.get(kind) ?? { n: 0, sum: 0, sum2: 0 }
    t.n += l.n
    t.sum += l.sum
    t.sum2 += l.sum2
    into.kinds.set(kind, t)
  }
}

function mostAnswered(kinds: ReadonlyMap<string, Latencies>): number {
  let best: Latencies | null = null
  for (const l of kinds.values()) if (best === null || l.n > best.n) best = l
  return best === null ? 0 : best.sum / best.n
}

function mean(sum: number, n: number): number {
  return n > 0 ? sum / n : 0
}

/** A step past or below the knee. */
export function stepOf(knee: number): number {
  return Math.max(1, Math.round(knee * STEP_SHARE))
}
