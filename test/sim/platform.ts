import type { Random } from './random.js'
import type { SimClock } from './sim-clock.js'
import type { Timer } from '../../src/clock.js'

/** A span of simulated time (epoch ms), [from, to). */
export interface Span {
  from: number
  to: number
}

/**
 * What the simulated platform is: workers with a FIFO queue behind them (a PHP-FPM pool),
 * each call costing its report's base cost times the platform's slowness at the time it
 * reaches a worker times a log-normal spread; and its faults.
 */
export interface PlatformShape {
  workers: number
  /** Log-spread of one call's cost around its report's (0: every call of a report costs the same). */
  spread: number
  /** How much slower than its base the platform is at `t` (1: as measured; 3: three times slower). */
  slowness: (t: number) => number
  /** Nothing starts and nothing ends (SIGSTOP): calls in service finish that much later. */
  stalls: Span[]
  /** The platform is down: calls in service and queued fail, new ones are refused at once. */
  outages: Span[]
  /** A front that sheds load: a call arriving then is answered 503 at once with probability `p`, without a worker. */
  shedding: (Span & { p: number })[]
  /** Answers lost on the way back (a connection dropped silently): a call ending then is worked whole, and its answer never comes, with probability `p`. */
  losing?: (Span & { p: number })[]
  /**
   * The pool resized for a while (another tenant's work takes workers, or the pool is scaled
   * down or up): `workers` serve in the span, and the calls in service past them run to
   * their ends (a PHP worker is not preempted).
   */
  resized?: (Span & { workers: number })[]
  /**
   * A platform whose calls slow as more run at once (the capacity bench's stand-in): every
   * call starts at once, its cost `slopeMs` more for each call in flight past `knee` as it
   * arrives, and one that finds `refuseAbove` in flight is answered 429 at once; `workers`
   * is then `refuseAbove`. None: workers with a FIFO queue.
   */
  capacity?: { knee: number; slopeMs: number; refuseAbove: number }
  /** A Laravel throttle in force over a span: past its `limit` calls in a window, a call of its key is answered 429 at once. */
  throttle?: ThrottleShape
  /**
   * A platform on timers (the benches' stand-ins and sandbox, in Node): each call up to
   * `jitterMs` more (uniform), and its end on the next whole `tickMs` (a timer fires in its
   * loop's batch, never early), so that calls of one cost started together end together.
   * None: ends at their cost, to the fraction of a millisecond.
   */
  timers?: { jitterMs: number; tickMs: number }
}

/**
 * Laravel's throttle middleware (`throttle:N,M`) in force from `from` to `to`: `limit`
 * calls per `windowMs` per key, the key the credential (the user Laravel throttles by is
 * our one credential) or one team's calls on one route (a route's own limiter, keyed by
 * what the team's calls carry). Calls past the limit are answered 429 with retry-after
 * the seconds to the window's end.
 */
export interface ThrottleShape extends Span {
  limit: number
  windowMs: number
  /** The one team and route throttled; none: every call of the credential. */
  only?: { team: string; route: string }
}

/** How a team's call fails at the platform, whatever the load: its report answers 500 after its work, or its route 429 at once. */
export type FailMode = 'none' | 'error' | 'throttled'

export interface SentCall {
  team: string
  /** The report's kind: the route a route's limiter keys by. */
  route: string
  /** The report's base cost (ms). */
  costMs: number
  fail: FailMode
  /** The call's own factor on its cost, in place of the platform's draw of the spread (teams.ts, `Asks`: the twins'). */
  costFactor?: number
}

/** What the gateway sees of a call: its status (0: no connection) when the answer comes. */
export interface PlatformAnswer {
  status: number
  retryAfter?: string
  /** The credential's throttle count as Laravel writes it on every answer (`x-ratelimit-limit`, `x-ratelimit-remaining`): none but where the credential is throttled. */
  count?: { limit: number; remaining: number; refusal: boolean }
}

interface Job {
  call: SentCall
  arrived: number
  started: number | null
  endsAt: number
  timer: ReturnType<SimClock['setTimeout']> | null
  resolve: (a: PlatformAnswer) => void
}

/** One sample of the platform every SAMPLE_MS. */
export interface PlatformSample {
  at: number
  busy: number
  queued: number
  /** The workers serving then. */
  workers: number
}

export const SAMPLE_MS = 100

/**
 * The platform stand-in of the simulation. A call that reached it runs to its end whatever
 * the gateway does (a PHP worker does not notice that its caller left): `send` returns the
 * answer the gateway may stop waiting for, and the worker stays busy.
 */
export class SimPlatform {
  readonly #clock: SimClock
  readonly #shape: PlatformShape
  readonly #random: Random
  readonly #queue: Job[] = []
  readonly #busy = new Set<Job>()
  #stalledUntil = 0
  /** Worker-milliseconds each team's calls used. */
  readonly workMs = new Map<string, number>()
  readonly samples: PlatformSample[] = []
  /** Calls that reached a worker, per team. */
  readonly served = new Map<string, number>()
  /** Worker-milliseconds per team per second of the run (by when the work was done). */
  readonly workBySecond = new Map<string, number[]>()
  /** The throttle's count and window; null: no throttle. */
  readonly #throttle: FixedWindow | null
  /** When the throttle first answered 429, and when the last retry-after it gave ends (epoch ms); null: it never did. */
  throttled: Span | null = null

  readonly #start: number
  readonly #sampler: Timer

  constructor(clock: SimClock, shape: PlatformShape, random: Random) {
    this.#clock = clock
    this.#start = clock.now()
    this.#shape = shape
    this.#random = random
    this.#throttle = shape.throttle ? new FixedWindow(shape.throttle.limit, shape.throttle.windowMs) : null
    for (const stall of shape.stalls) clock.setTimeout(() => this.#stall(stall), stall.from - clock.now())
    for (const outage of shape.outages) clock.setTimeout(() => this.#down(), outage.from - clock.now())
    for (const r of shape.resized ?? []) for (const at of [r.from, r.to]) clock.setTimeout(() => this.#startNext(), at - clock.now())
    this.#sampler = clock.every(() => this.samples.push({ at: clock.now(), busy: this.#busy.size, queued: this.#queue.length, workers: this.workers }), SAMPLE_MS)
  }

  /** No more samples (the run's time is up: what follows is not judged). */
  stopSampling(): void {
    this.#clock.clearInterval(this.#sampler)
  }

  /** The workers serving now. */
  get workers(): number {
    const now = this.#clock.now()
    return this.#shape.resized?.find((r) => r.from <= now && now < r.to)?.workers ?? this.#shape.workers
  }

  /** Calls at the platform now: in service and queued. */
  get inFlight(): number {
    return this.#busy.size + this.#queue.length
  }

  send(call: SentCall): Promise<PlatformAnswer> {
    const now = this.#clock.now()
    if (within(this.#shape.outages, now)) return this.#after(1, { status: 0 })
    const shed = this.#shape.shedding.find((s) => s.from <= now && now < s.to)
    if (shed && this.#random.chance(shed.p)) return this.#after(5, { status: 503 })
    const throttle = this.#shape.throttle
    let count: PlatformAnswer['count']
    if (throttle && this.#throttle && throttle.from <= now && now < throttle.to && (!throttle.only || (throttle.only.team === call.team && throttle.only.route === call.route))) {
      const retryAfterSec = this.#throttle.hit(now)
      // A throttle of the credential counts every call of the token, and says so on each answer.
      count = throttle.only ? undefined : { limit: this.#throttle.limit, remaining: this.#throttle.remaining, refusal: false }
      if (retryAfterSec !== null) {
        this.throttled = { from: this.throttled?.from ?? now, to: Math.max(this.throttled?.to ?? 0, now + retryAfterSec * 1000) }
        return this.#after(5, { status: 429, retryAfter: String(retryAfterSec), ...(count ? { count: { ...count, refusal: true } } : {}) })
      }
    }
    if (call.fail === 'throttled' || (this.#shape.capacity && this.inFlight >= this.#shape.capacity.refuseAbove)) return this.#after(5, { status: 429, retryAfter: '1' })
    return new Promise((resolve) => {
      this.#queue.push({ call, arrived: now, started: null, endsAt: 0, timer: null, resolve: count ? (a) => resolve(a.status === 0 ? a : { ...a, count }) : resolve })
      this.#startNext()
    })
  }

  #after(ms: number, answer: PlatformAnswer): Promise<PlatformAnswer> {
    return new Promise((resolve) => this.#clock.setTimeout(() => resolve(answer), ms))
  }

  #startNext(): void {
    const now = this.#clock.now()
    if (now < this.#stalledUntil) return
    const workers = this.workers
    while (this.#queue.length > 0 && this.#busy.size < workers) {
      const job = this.#queue.shift() as Job
      job.started = now
      const cost = job.call.costMs * this.#shape.slowness(now) * (job.call.costFactor ?? this.#random.spread(this.#shape.spread)) + this.#crowdedMs()
      this.#busy.add(job)
      this.#finishAt(job, this.#onTimers(now + Math.max(1, cost)))
      this.served.set(job.call.team, (this.served.get(job.call.team) ?? 0) + 1)
    }
  }

  /** When a call due to end at `at` ends on a platform on timers: up to its jitter later, on the next whole tick. */
  #onTimers(at: number): number {
    const t = this.#shape.timers
    return t ? Math.ceil((at + this.#random.uniform(0, t.jitterMs)) / t.tickMs) * t.tickMs : at
  }

  /** What a call starting now costs past its own work on a platform whose calls slow as more run at once. */
  #crowdedMs(): number {
    const c = this.#shape.capacity
    return c ? c.slopeMs * Math.max(0, this.#busy.size + 1 - c.knee) : 0
  }

  #finishAt(job: Job, at: number): void {
    job.endsAt = at
    job.timer = this.#clock.setTimeout(() => this.#finish(job), at - this.#clock.now())
  }

  #finish(job: Job): void {
    this.#busy.delete(job)
    this.#charge(job)
    const now = this.#clock.now()
    const losing = this.#shape.losing?.find((l) => l.from <= now && now < l.to)
    if (!(losing && this.#random.chance(losing.p))) job.resolve({ status: job.call.fail === 'error' ? 500 : 200 })
    this.#startNext()
  }

  #charge(job: Job): void {
    if (job.started === null) return
    const now = this.#clock.now()
    const team = job.call.team
    this.workMs.set(team, (this.workMs.get(team) ?? 0) + now - job.started)
    let seconds = this.workBySecond.get(team)
    if (!seconds) this.workBySecond.set(team, (seconds = []))
    // Spread over the seconds it ran in (a stall included: the worker was held).
    for (let t = job.started; t < now; ) {
      const second = Math.floor((t - this.#start) / 1000)
      const end = Math.min(now, this.#start + (second + 1) * 1000)
      seconds[second] = (seconds[second] ?? 0) + end - t
      t = end
    }
  }

  /** Every call in service ends the stall's length later; nothing starts until it ends. */
  #stall(stall: Span): void {
    const length = stall.to - stall.from
    this.#stalledUntil = stall.to
    for (const job of this.#busy) {
      this.#clock.clearTimeout(job.timer)
      this.#finishAt(job, job.endsAt + length)
    }
    this.#clock.setTimeout(() => this.#startNext(), length)
  }

  /** The platform goes down: every call it holds fails. */
  #down(): void {
    for (const job of [...this.#busy, ...this.#queue]) {
      this.#clock.clearTimeout(job.timer)
      this.#busy.delete(job)
      this.#charge(job)
      job.resolve({ status: 0 })
    }
    this.#queue.length = 0
  }
}

/**
 * Laravel's rate limiter (its RateLimiter as the ThrottleRequests middleware drives it): a
 * window begins at the first call after the last one ended and lasts `windowMs`; the
 * first `limit` calls in it pass, and are counted; a call past them is refused, and not
 * counted, with the whole seconds to the window's end as its retry-after.
 */
export class FixedWindow {
  #endsAt = 0
  #count = 0

  constructor(
    readonly limit: number,
    readonly windowMs: number,
  ) {}

  /** What is left of the window's count (0 once refusing). */
  get remaining(): number {
    return this.limit - this.#count
  }

  /** Null: the call at `now` passes (and is counted); else its retry-after in seconds. */
  hit(now: number): number | null {
    if (now >= this.#endsAt) {
      this.#endsAt = now + this.windowMs
      this.#count = 0
    }
    if (this.#count >= this.limit) return Math.ceil((this.#endsAt - now) / 1000)
    this.#count += 1
    return null
  }
}

export function within(spans: readonly Span[], t: number): boolean {
  return spans.some((s) => s.from <= t && t < s.to)
}
