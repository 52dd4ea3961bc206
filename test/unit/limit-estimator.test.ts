import { describe, expect, it } from 'vitest'
import {
  type CallOutcome,
  type CallSample,
  DEFAULT_WINDOW_MS,
  LimitEstimator,
  type LimitUpdate,
} from '../../src/platform/governor/limit-estimator.js'
import { nextFloor } from '../../src/platform/governor/latency-floors.js'
import { seededRandom } from '../../scripts/soak-targets.mjs'

// A closed-loop simulation of callers, the governor's queue and a platform whose
// latency depends on the calls in flight. Time is simulated: no timers, no clock.


interface Call {
  caller: number
  team: string
  route: string
  klass: string
}

interface Answer {
  latencyMs: number
  outcome: CallOutcome
}

/** The platform: an answer for a call started with `inFlight` calls in flight (itself included). */
type Platform = (inFlight: number, call: Call, random: () => number) => Answer

interface Caller {
  team: string
  /** The call this caller makes next (its n-th). */
  call: (n: number) => { route: string; klass: string }
  /** Pause between an answer and the next call. */
  thinkMs?: number
}

interface Run {
  limits: { at: number; limit: number }[]
  floors: { at: number; floorMs: number | null }[]
  updates: (LimitUpdate & { at: number })[]
  calls: number
  throttled: number
  failed: number
  peakInFlight: number
}

const TICK_MS = 100

/** The simulated clock's start; a phase that follows another starts at its end (`startAt`). */
const SIM_START = 1_750_000_000_000

function simulate(opts: { estimator: LimitEstimator; callers: Caller[]; platform: Platform; durationMs: number; seed?: number; startAt?: number }): Run {
  const { estimator, callers, platform, durationMs } = opts
  const random = seededRandom(opts.seed ?? 1)
  const t0 = opts.startAt ?? SIM_START
  // Events: a call arrives, an answer comes back, the governor ticks.
  type Happening = { kind: 'arrive'; caller: number } | { kind: 'done'; call: Call; started: number; inFlight: number; answer: Answer } | { kind: 'tick' }
  type Event = { at: number; seq: number } & Happening
  const events: Event[] = []
  let seq = 0
  const push = (event: { at: number } & Happening): void => {
    const e = { ...event, seq: seq++ } as Event
    let i = events.length
    while (i > 0 && ((events[i - 1] as Event).at > e.at || ((events[i - 1] as Event).at === e.at && (events[i - 1] as Event).seq > e.seq))) i--
    events.splice(i, 0, e)
  }
  const queue: Call[] = []
  const made = callers.map(() => 0)
  let inFlight = 0
  const run: Run = { limits: [], floors: [], updates: [], calls: 0, throttled: 0, failed: 0, peakInFlight: 0 }

  const start = (call: Call, now: number): void => {
    inFlight++
    run.peakInFlight = Math.max(run.peakInFlight, inFlight)
    estimator.note({ at: now, inFlight, starved: queue.length > 0 })
    const answer = platform(inFlight, call, random)
    push({ at: now + answer.latencyMs, kind: 'done', call, started: now, inFlight, answer })
  }
  const drain = (now: number): void => {
    while (queue.length > 0 && inFlight < estimator.limit) start(queue.shift() as Call, now)
  }

  callers.forEach((_, caller) => push({ at: t0 + random() * 100, kind: 'arrive', caller }))
  for (let at = t0; at <= t0 + durationMs; at += TICK_MS) push({ at, kind: 'tick' })

  while (events.length > 0) {
    const event = events.shift() as Event
    const now = event.at
    if (now > t0 + durationMs) break
    if (event.kind === 'arrive') {
      const spec = callers[event.caller] as Caller
      const n = made[event.caller] ?? 0
      made[event.caller] = n + 1
      const call = { caller: event.caller, team: spec.team, ...spec.call(n) }
      if (inFlight < estimator.limit) start(call, now)
      else {
        queue.push(call)
        estimator.note({ at: now, inFlight, starved: true })
      }
    } else if (event.kind === 'done') {
      inFlight--
      const { call, answer } = event
      run.calls++
      if (answer.outcome === 'throttled') run.throttled++
      if (answer.outcome === 'failed') run.failed++
      estimator.record({ at: now, latencyMs: answer.latencyMs, klass: call.klass, route: call.route, team: call.team, inFlight: event.inFlight, outcome: answer.outcome })
      drain(now)
      push({ at: now + ((callers[call.caller] as Caller).thinkMs ?? 0), kind: 'arrive', caller: call.caller })
    } else {
      const update = estimator.tick(now)
      if (update) run.updates.push({ ...update, at: now - t0 })
      run.limits.push({ at: now - t0, limit: estimator.limit })
      run.floors.push({ at: now - t0, floorMs: estimator.floorMs })
      drain(now)
    }
  }
  return run
}

/** A call's latency class as the gateway names it: its team, then the work (route and range). */
const klassOf = (team: string, route: string, days = 30): string => `${team}\n${route}|r${Math.ceil(Math.log2(days + 1))}`

const ROUTES = ['/api/v1/report/campaigns/get', '/api/v1/report/ads/get', '/api/v1/campaign/list', '/api/v1/ad/list', '/api/v1/report/sites/get', '/api/v1/advertiser/get']

/** `count` callers of `teams` teams, each cycling over the routes (a month of data each). */
function callers(count: number, opts: { teams?: string[]; routes?: string[]; thinkMs?: number } = {}): Caller[] {
  const teams = opts.teams ?? ['a', 'b', 'c']
  const routes = opts.routes ?? ROUTES
  return Array.from({ length: count }, (_, i) => ({
    team: teams[i % teams.length] as string,
    thinkMs: opts.thinkMs,
    call: (n: number) => {
      const route = routes[(i + n) % routes.length] as string
      return { route, klass: klassOf(teams[i % teams.length] as string, route) }
    },
  }))
}

/** Latency `baseMs` up to `knee` calls in flight, `slopeMs` more per call beyond, 429 past `throttleAbove`. */
function capacity(opts: { knee: number; baseMs?: number; slopeMs?: number; throttleAbove?: number; noise?: number }): Platform {
  const { knee, baseMs = 100, slopeMs = 40, throttleAbove = Infinity, noise = 0.02 } = opts
  return (inFlight, _call, random) => {
    if (inFlight > throttleAbove) return { latencyMs: 5, outcome: 'throttled' }
    const ms = baseMs + slopeMs * Math.max(0, inFlight - knee)
    return { latencyMs: ms * (1 + noise * (2 * random() - 1)), outcome: 'ok' }
  }
}

/** Flat latency with noise: uniform ±`spread`, or lognormal of sigma `spread`. */
function flat(baseMs: number, noise: { kind: 'uniform' | 'lognormal'; spread: number }): Platform {
  return (_inFlight, _call, random) => {
    if (noise.kind === 'uniform') return { latencyMs: baseMs * (1 + noise.spread * (2 * random() - 1)), outcome: 'ok' }
    // Box-Muller: a standard normal from two uniforms.
    const z = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random())
    return { latencyMs: baseMs * Math.exp(noise.spread * z), outcome: 'ok' }
  }
}

const estimator = (initial = 8, max = 64, min = 2): LimitEstimator => new LimitEstimator({ initial, min, max, windowMs: DEFAULT_WINDOW_MS })

const limitsFrom = (run: Run, fromMs: number, toMs = Infinity): number[] => run.limits.filter((l) => l.at >= fromMs && l.at <= toMs).map((l) => l.limit)
/** When the limit first reached `atLeast`. */
const reached = (run: Run, atLeast: number): number | undefined => run.limits.find((l) => l.limit >= atLeast)?.at
const range = (values: number[]): [number, number] => [Math.min(...values), Math.max(...values)]

describe('LimitEstimator on synthetic platforms (closed-loop simulation)', () => {
  it.each([
    ['settles within 20 % of a capacity of 12 calls within 30 s and stays there, with fewer than 1 % of calls throttled', { knee: 12, throttleAbove: 20 }, 9.6, 14.4],
    ['grows from 8 to within 20 % of a capacity of 40 within 30 s and stays there', { knee: 40, throttleAbove: 50 }, 32, 48],
  ])('%s', (_name, platform, least, most) => {
    const run = simulate({ estimator: estimator(8, 64), callers: callers(120), platform: capacity(platform), durationMs: 60_000 })
    const [low, high] = range(limitsFrom(run, 30_000))
    expect(low).toBeGreaterThanOrEqual(least)
    expect(high).toBeLessThanOrEqual(most)
    expect(run.throttled / run.calls).toBeLessThan(0.01)
  })

  it('after a knee, probes past the highest limit carried at the floor once in PROBE_HOLD_WINDOWS windows: the limit spends at most a twentieth of its time past it', () => {
    // Every window past the knee queues calls at the platform; a call that started then may
    // hold its place there for long (a year-long report), so probes are rare once a knee is known.
    const run = simulate({ estimator: estimator(8, 64), callers: callers(120), platform: capacity({ knee: 12, throttleAbove: 20 }), durationMs: 180_000 })
    const settled = limitsFrom(run, 30_000)
    expect(settled.filter((limit) => limit > 13).length / settled.length).toBeLessThanOrEqual(0.05)
    expect(Math.min(...settled)).toBeGreaterThanOrEqual(10)
  })

  it('grows by its whole headroom each window while no knee is known: from 8 to 48 within 10 s on a flat platform', () => {
    const run = simulate({ estimator: estimator(8, 64), callers: callers(120), platform: flat(100, { kind: 'uniform', spread: 0.05 }), durationMs: 20_000 })
    expect(reached(run, 48)).toBeLessThanOrEqual(10_000)
  })

  it('grows back from the minimum on a platform whose answers spread 50 to 200 ms (the chaos soak\'s), with room for every caller', () => {
    const run = simulate({ estimator: estimator(2, 64), callers: callers(60), platform: flat(125, { kind: 'uniform', spread: 0.6 }), durationMs: 30_000 })
    expect(reached(run, 30)).toBeLessThanOrEqual(20_000)
  })

  it.each([
    ['uniform ±20 %', { kind: 'uniform', spread: 0.2 }],
    ['lognormal, sigma 0.2', { kind: 'lognormal', spread: 0.2 }],
  ] as const)('does not overreact to noise (%s) on a flat platform: the 30 callers keep their 30 slots', (_name, noise) => {
    const run = simulate({ estimator: estimator(8, 64), callers: callers(30), platform: flat(100, noise), durationMs: 240_000 })
    const at = reached(run, 30)
    expect(at).toBeDefined()
    expect(at as number).toBeLessThanOrEqual(30_000)
    expect(Math.min(...limitsFrom(run, at as number))).toBeGreaterThanOrEqual(30)
  })

  it('does not cut the limit when one route answers every call 429 and the others are fine', () => {
    const throttledRoute = ROUTES[1] as string
    const platform: Platform = (inFlight, call, random) => (call.route === throttledRoute ? { latencyMs: 5, outcome: 'throttled' } : flat(100, { kind: 'uniform', spread: 0.1 })(inFlight, call, random))
    const run = simulate({ estimator: estimator(32, 64), callers: callers(30), platform, durationMs: 60_000 })
    expect(run.throttled / run.calls).toBeGreaterThan(0.1)
    expect(Math.min(...limitsFrom(run, 0))).toBeGreaterThanOrEqual(32)
    expect(run.updates.some((u) => u.reason === 'overload')).toBe(false)
  })

  it('halves the limit on 5xx and timeouts drawn by several teams, at most once a window, down to the minimum and never below (429s are the pauses\' to answer)', () => {
    const [r1, r2] = [ROUTES[1] as string, ROUTES[2] as string]
    // Every team: 429s on one route (no cut: the pauses answer them), 503s or timeouts on two.
    const platform: Platform = (_inFlight, call, random) => {
      if (call.route === ROUTES[3] && random() < 0.3) return { latencyMs: 5, outcome: 'throttled' }
      if ((call.route === r1 || call.route === r2) && random() < 0.3) return { latencyMs: 50, outcome: 'failed' }
      return { latencyMs: 100, outcome: 'ok' }
    }
    const run = simulate({ estimator: estimator(32, 64, 3), callers: callers(60), platform, durationMs: 30_000 })
    const cuts = run.updates.filter((u) => u.reason === 'overload')
    expect(cuts[0]?.limit).toBe(16)
    expect(cuts[1]?.limit).toBe(8)
    cuts.slice(1).forEach((cut, i) => expect(cut.at - (cuts[i] as { at: number }).at).toBeGreaterThanOrEqual(DEFAULT_WINDOW_MS))
    expect(Math.min(...limitsFrom(run, 0))).toBe(3)
    // Held down near the minimum while the overload lasts (windows without enough errors let it creep up).
    expect(Math.max(...limitsFrom(run, 15_000))).toBeLessThanOrEqual(6)
  })

  it('a night of year-long reports from one team (10× slower, its own class) does not teach the limit to collapse', () => {
    const month = callers(20)
    const year: Caller[] = Array.from({ length: 4 }, () => ({
      team: 'slow',
      call: (n: number) => {
        const route = ROUTES[n % 2] as string
        return { route, klass: klassOf('slow', route, 365) }
      },
    }))
    // The platform's slowness follows what is asked (the year team's reports), not how the estimator classes it.
    const platform: Platform = (inFlight, call, random) => flat(call.team === 'slow' ? 1000 : 100, { kind: 'uniform', spread: 0.1 })(inFlight, call, random)
    // The month callers and the year team together, then the year team alone (a night).
    const estimatorUnderTest = estimator(24, 64)
    const mixed = simulate({ estimator: estimatorUnderTest, callers: [...month, ...year], platform, durationMs: 60_000 })
    const night = simulate({ estimator: estimatorUnderTest, callers: year, platform, durationMs: 300_000, seed: 2, startAt: SIM_START + 60_000 })
    const [nightLow] = range(limitsFrom(night, 0))
    expect(Math.min(...limitsFrom(mixed, 0))).toBeGreaterThanOrEqual(24)
    expect(nightLow).toBeGreaterThanOrEqual(24)
  })

  it('one team whose reports are 3× slower in the same class as everyone else\'s, and most of the answers, does not cut the limit', () => {
    const platform: Platform = (inFlight, call, random) => flat(call.team === 'big' ? 300 : 100, { kind: 'uniform', spread: 0.1 })(inFlight, call, random)
    // 45 callers at 300 ms and 10 at 100 ms: the big team gives 60 % of the answers.
    const run = simulate({ estimator: estimator(55, 64), callers: [...callers(45, { teams: ['big'] }), ...callers(10, { teams: ['a', 'b'] })], platform, durationMs: 60_000 })
    expect(Math.min(...limitsFrom(run, 0))).toBeGreaterThanOrEqual(55)
  })

  it('one route turning 3× slower, even the route most calls go to, does not cut the limit', () => {
    const main = ROUTES[0] as string
    const mostlyMain: Caller[] = Array.from({ length: 40 }, (_, i) => ({
      team: ['a', 'b', 'c'][i % 3] as string,
      call: (n: number) => {
        const route = (i + n) % 7 === 0 ? (ROUTES[1 + ((i + n) % 5)] as string) : main
        return { route, klass: klassOf(['a', 'b', 'c'][i % 3] as string, route) }
      },
    }))
    let slow = false
    const platform: Platform = (inFlight, call, random) => flat(slow && call.route === main ? 300 : 100, { kind: 'uniform', spread: 0.1 })(inFlight, call, random)
    const est = estimator(40, 64)
    simulate({ estimator: est, callers: mostlyMain, platform, durationMs: 30_000 })
    slow = true
    const run = simulate({ estimator: est, callers: mostlyMain, platform, durationMs: 60_000, seed: 3, startAt: SIM_START + 30_000 })
    expect(Math.min(...limitsFrom(run, 0))).toBeGreaterThanOrEqual(40)
  })

  it('an idle night does not grow the limit past what was used', () => {
    const quiet = simulate({ estimator: estimator(8, 64), callers: callers(3), platform: flat(100, { kind: 'uniform', spread: 0.1 }), durationMs: 600_000 })
    expect(Math.max(...limitsFrom(quiet, 0))).toBe(8)
    const light = simulate({ estimator: estimator(8, 64), callers: callers(5), platform: flat(100, { kind: 'uniform', spread: 0.1 }), durationMs: 600_000 })
    expect(Math.max(...limitsFrom(light, 0))).toBeLessThanOrEqual(2 * light.peakInFlight + 2)
  })

  it('keeps the latency floor within 15 % of the unloaded latency through 10 minutes of load at the knee', () => {
    const run = simulate({ estimator: estimator(8, 64), callers: callers(120), platform: capacity({ knee: 12, throttleAbove: 20 }), durationMs: 600_000 })
    const floors = run.floors.filter((f) => f.at >= DEFAULT_WINDOW_MS).map((f) => f.floorMs as number)
    const [low, high] = range(floors)
    expect(low).toBeGreaterThanOrEqual(85)
    expect(high).toBeLessThanOrEqual(115)
    const [limitLow, limitHigh] = range(limitsFrom(run, 30_000))
    expect(limitLow).toBeGreaterThanOrEqual(9.6)
    expect(limitHigh).toBeLessThanOrEqual(14.4)
  })
})

describe('LimitEstimator windows', () => {
  const at0 = 1_750_000_000_000
  const sample = (more: Partial<CallSample> = {}): CallSample => ({ at: at0 + 500, latencyMs: 100, klass: '/r', route: '/r', team: 'a', inFlight: 8, outcome: 'ok', ...more })

  it('closes a window only once windowMs has passed', () => {
    const est = estimator(8)
    expect(est.tick(at0)).toBeNull()
    expect(est.tick(at0 + 999)).toBeNull()
    expect(est.tick(at0 + 1000)).toEqual({ limit: 8, changed: false, reason: 'few-samples' })
    expect(est.floorMs).toBeNull()
  })

  it('adopts a limit learned elsewhere, clamped to [min, max] and whole', () => {
    const est = estimator(8, 64, 2)
    expect(est.adopt(100)).toBe(64)
    expect(est.adopt(0)).toBe(2)
    expect(est.adopt(12.7)).toBe(12)
    expect(est.adopt(Number.NaN)).toBe(12)
  })

  it('cuts on overload() at most once per window, never below the minimum', () => {
    const est = estimator(32, 64, 5)
    expect(est.overload(at0)).toEqual({ limit: 16, changed: true, reason: 'overload' })
    expect(est.overload(at0 + 999)).toBeNull()
    expect(est.overload(at0 + 1000)?.limit).toBe(8)
    expect(est.overload(at0 + 2000)?.limit).toBe(5)
    expect(est.overload(at0 + 3000)).toEqual({ limit: 5, changed: false, reason: 'overload' })
  })

  it('does not cut twice for overload answers of calls that started before the first cut', () => {
    const est = estimator(32)
    est.tick(at0)
    for (let i = 0; i < 10; i++) est.record(sample({ at: at0 + 100 + i, team: i % 2 ? 'a' : 'b', outcome: 'failed', latencyMs: 50 }))
    expect(est.tick(at0 + 1000)).toEqual({ limit: 16, changed: true, reason: 'overload' })
    // Answered after the cut, sent before it (300 ms calls).
    for (let i = 0; i < 10; i++) est.record(sample({ at: at0 + 1100 + i, team: i % 2 ? 'a' : 'b', outcome: 'failed', latencyMs: 300 }))
    expect(est.tick(at0 + 2000)?.reason).not.toBe('overload')
    for (let i = 0; i < 10; i++) est.record(sample({ at: at0 + 2100 + i, team: i % 2 ? 'a' : 'b', outcome: 'failed', latencyMs: 50 }))
    expect(est.tick(at0 + 3000)).toEqual({ limit: 8, changed: true, reason: 'overload' })
  })

  it('cuts the limit for overload answers of two teams, each on 5 % of its calls; a team drawing them alone is braked instead', () => {
    const run = (errors: { team: string; outcome?: CallSample['outcome']; latencyMs?: number }[], oks: Record<string, number>): { reason: string | undefined; brakes: Map<string, number> } => {
      const est = estimator(32)
      est.tick(at0)
      for (const [team, n] of Object.entries(oks)) for (let i = 0; i < n; i++) est.record(sample({ at: at0 + 200 + i, team, inFlight: 32, teamInFlight: 8 }))
      errors.forEach((e, i) => est.record(sample({ at: at0 + 300 + i, team: e.team, outcome: e.outcome ?? 'failed', latencyMs: e.latencyMs ?? 50, teamInFlight: 8 })))
      return { reason: est.tick(at0 + 1000)?.reason, brakes: new Map(est.brakes) }
    }
    expect(run([{ team: 'a' }, { team: 'b' }], { a: 10, b: 10 }).reason).toBe('overload')
    // One team's 503s, however many: that team is held to half its calls in flight, the limit stays.
    const alone = run(Array.from({ length: 50 }, () => ({ team: 'a' })), { a: 10, b: 10 })
    expect(alone.reason).not.toBe('overload')
    expect(alone.brakes).toEqual(new Map([['a', 4]]))
    // Team b: 5 of 105 of its calls is under 5 %; 6 of 106 is over.
    expect(run([{ team: 'a' }, ...Array.from({ length: 5 }, () => ({ team: 'b' }))], { a: 10, b: 100 }).reason).not.toBe('overload')
    expect(run([{ team: 'a' }, ...Array.from({ length: 6 }, () => ({ team: 'b' }))], { a: 10, b: 100 }).reason).toBe('overload')
    // 429s are the pauses' to answer; a 500 faster than its class's floor is the report's own failure.
    expect(run([{ team: 'a', outcome: 'throttled' }, { team: 'b', outcome: 'throttled' }], { a: 10, b: 10 }).reason).not.toBe('overload')
    expect(run([{ team: 'a', outcome: 'error', latencyMs: 5 }, { team: 'b', outcome: 'error', latencyMs: 5 }], { a: 10, b: 10 }).reason).not.toBe('overload')
  })

  it('lets a braked team go step by step once its answers come back clean', () => {
    const est = estimator(32)
    est.tick(at0)
    for (let i = 0; i < 20; i++) est.record(sample({ at: at0 + 100 + i, team: 'a', outcome: 'failed', teamInFlight: 16 }))
    est.tick(at0 + 1000)
    const caps = [est.brakes.get('a')]
    for (let w = 1; w < 8; w++) {
      for (let i = 0; i < 20; i++) est.record(sample({ at: at0 + w * 1000 + 100 + i, team: 'a', inFlight: 32 }))
      est.tick(at0 + (w + 1) * 1000)
      caps.push(est.brakes.get('a'))
    }
    expect(caps[0]).toBe(8)
    expect(caps.slice(1, 3).every((cap, i) => cap !== undefined && cap > (caps[i] as number))).toBe(true)
    expect(caps.at(-1)).toBeUndefined()
  })

  it('takes a timeout for load only when the call had the time its class takes: one started near its deadline brakes nobody', () => {
    const run = (latencyMs: number): Map<string, number> => {
      const est = estimator(32)
      est.tick(at0)
      // A floor of 100 ms for team a's class, then its calls cut by their deadlines after `latencyMs`.
      for (let w = 0; w < 3; w++) {
        for (let i = 0; i < 20; i++) est.record(sample({ at: at0 + w * 1000 + 100 + i, team: 'a', inFlight: 4, teamInFlight: 4 }))
        est.tick(at0 + (w + 1) * 1000)
      }
      for (let i = 0; i < 20; i++) est.record(sample({ at: at0 + 3100 + i, team: 'a', outcome: 'timeout', latencyMs, teamInFlight: 4 }))
      est.tick(at0 + 4000)
      return new Map(est.brakes)
    }
    // Queued until 40 or 150 ms were left of their deadlines: less than twice the class's
    // floor, no evidence the platform was slow.
    expect(run(40)).toEqual(new Map())
    expect(run(150)).toEqual(new Map())
    // Two seconds at the platform without an answer, twenty times the class's floor: load.
    expect(run(2000)).toEqual(new Map([['a', 2]]))
  })

  it('lets a braked team go a step each window, while its few answers leave the latency window open and other replicas change the limit every window', () => {
    // After a platform-wide hang seen by one team alone on this replica: braked to 1, the
    // limit adopted from the other replicas as it grows back, two answers a window.
    const brakes = (adopting: boolean): (number | undefined)[] => {
      const est = estimator(32)
      est.tick(at0)
      for (let i = 0; i < 20; i++) est.record(sample({ at: at0 + 100 + i, team: 'a', outcome: 'failed', teamInFlight: 2 }))
      est.tick(at0 + 1000)
      const caps = [est.brakes.get('a')]
      for (let w = 1; w <= 5; w++) {
        const start = at0 + w * 1000
        if (adopting) est.adopt(w % 2 === 0 ? 16 : 24)
        for (let q = 1; q <= 4; q++) {
          est.record(sample({ at: start + q * 250 - 10, team: 'a', inFlight: 1, teamInFlight: 1 }))
          est.tick(start + q * 250)
        }
        caps.push(est.brakes.get('a'))
      }
      return caps
    }
    for (const adopting of [false, true]) {
      const caps = brakes(adopting)
      expect(caps[0]).toBe(1)
      // Doubled each window (1, 2, 4, 8), let go at the limit.
      expect(caps.slice(0, 4)).toEqual([1, 2, 4, 8])
      expect(caps.at(-1)).toBeUndefined()
    }
  })

  it('judges latency only on 8 answers or more, and one window at most halves the target (clamped gradient)', () => {
    const est = estimator(40)
    est.tick(at0)
    for (let i = 0; i < 20; i++) est.record(sample({ at: at0 + 100 + i, inFlight: 20 }))
    expect(est.tick(at0 + 1000)?.reason).toBe('growth')
    est.adopt(40)
    // The adopted limit opens a new window.
    expect(est.tick(at0 + 2000)).toBeNull()
    // Seven answers ten times slower at twice the load (the floor stays): too few to judge.
    for (let i = 0; i < 7; i++) est.record(sample({ at: at0 + 2100 + i, latencyMs: 1000, inFlight: 40 }))
    expect(est.tick(at0 + 3000)).toEqual({ limit: 40, changed: false, reason: 'few-samples' })
    // Twenty: the gradient 1.25 / 10 is clamped to 0.5, and past the buffer no headroom is
    // added; the limit moves 30 % of the way to 0.5 × 40.
    for (let i = 0; i < 20; i++) est.record(sample({ at: at0 + 3600 + i, latencyMs: 1000, inFlight: 40 }))
    expect(est.tick(at0 + 3700)).toEqual({ limit: Math.floor(40 + 0.3 * (20 - 40)), changed: true, reason: 'latency' })
  })

  it('judges a limit adopted from another replica by the answers given at it: those gathered before are set aside', () => {
    const est = estimator(40)
    est.tick(at0)
    // Answers at the floor with every call in use: evidence to grow 40...
    for (let i = 0; i < 20; i++) est.record(sample({ at: at0 + 100 + i, inFlight: 40 }))
    // ...but another replica's limit of 30 comes first: they say nothing of 30.
    est.adopt(30)
    expect(est.tick(at0 + 1000)).toBeNull()
    expect(est.tick(at0 + 2000)).toEqual({ limit: 30, changed: false, reason: 'few-samples' })
    // Adopting the limit in force again changes nothing: the window goes on.
    for (let i = 0; i < 20; i++) est.record(sample({ at: at0 + 2100 + i, inFlight: 30 }))
    est.adopt(30)
    expect(est.tick(at0 + 2500)).toMatchObject({ changed: true, reason: 'growth' })
  })

  it('sets aside the latency of calls that started before the limit last changed', () => {
    const est = estimator(40)
    est.tick(at0)
    for (let i = 0; i < 20; i++) est.record(sample({ at: at0 + 100 + i, inFlight: 40 }))
    expect(est.tick(at0 + 1000)).toMatchObject({ changed: true, reason: 'growth' })
    // Slow answers of calls sent before that change: they measured the old limit.
    for (let i = 0; i < 20; i++) est.record(sample({ at: at0 + 1500 + i, latencyMs: 1000, inFlight: 40 }))
    expect(est.tick(at0 + 2000)).toMatchObject({ changed: false, reason: 'few-samples' })
  })

  it('learns floors from answers only: fast 429s and timeouts do not lower or raise them', () => {
    const est = estimator(8)
    est.tick(at0)
    for (let i = 0; i < 20; i++) est.record(sample({ at: at0 + 200 + i }))
    for (let i = 0; i < 40; i++) est.record(sample({ at: at0 + 300 + i, latencyMs: 5, outcome: 'throttled' }))
    for (let i = 0; i < 40; i++) est.record(sample({ at: at0 + 400 + i, latencyMs: 30, outcome: 'failed' }))
    est.tick(at0 + 1000)
    expect(est.floorMs).toBeGreaterThan(95)
    expect(est.floorMs).toBeLessThan(105)
  })

  it('refuses options that cannot make a limit', () => {
    expect(() => new LimitEstimator({ initial: 8, min: 0, max: 64 })).toThrow(/min/)
    expect(() => new LimitEstimator({ initial: 8, min: 4, max: 2 })).toThrow(/max/)
    expect(() => new LimitEstimator({ initial: 8, min: 1, max: 64, windowMs: 0 })).toThrow(/windowMs/)
  })
})

describe('nextFloor', () => {
  it.each([
    ['the first floor', null, { ms: 140, inFlight: 13 }, null, { ms: 140, inFlight: 13 }],
    ['a lower floor, whatever the load', { ms: 100, inFlight: 4 }, { ms: 90, inFlight: 30 }, null, { ms: 90, inFlight: 30 }],
    ['a higher floor without answers at the same load: kept', { ms: 100, inFlight: 12 }, { ms: 140, inFlight: 13 }, null, { ms: 100, inFlight: 12 }],
    ['a higher floor, answers at the same load still at the floor: kept', { ms: 100, inFlight: 12 }, { ms: 140, inFlight: 13 }, { ms: 100, inFlight: 12 }, { ms: 100, inFlight: 12 }],
    ['a higher floor measured at the same load: taken', { ms: 100, inFlight: 12 }, { ms: 140, inFlight: 12 }, { ms: 130, inFlight: 12 }, { ms: 130, inFlight: 12 }],
  ] as const)('%s', (_name, current, lowest, atSameLoad, next) => {
    expect(nextFloor(current, lowest, atSameLoad)).toEqual(next)
  })
})
