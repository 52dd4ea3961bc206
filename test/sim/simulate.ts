import { SimClock } from './sim-clock.js'
import { Random } from './random.js'
import { SimPlatform, SAMPLE_MS, type PlatformSample, type PlatformShape, type Span, type ThrottleShape } from './platform.js'
import { SimGateway, type CallRecord, type GovernorFactory } from './gateway.js'
import { Asks, runTeam, type TeamPlan } from './teams.js'
import { GatewayLoop } from './gateway-loop.js'
import { ReplicaPause, type PauseShape } from './replica-pause.js'

/** How the platform's slowness moves: through these points (ms from the start, factor), flat before the first and after the last. */
export type Slowness = [number, number][]

/** A whole simulated run: the platform, the replicas, the teams; times in ms from the start. */
export interface Scenario {
  seed: number
  durationMs: number
  workers: number
  spread: number
  slowness: Slowness
  stalls: Span[]
  outages: Span[]
  shedding: (Span & { p: number })[]
  /** Spans in which an answer is lost on its way back with probability `p` (platform.ts): its caller waits to its deadline. */
  losing?: (Span & { p: number })[]
  /** Spans in which the platform's pool has `workers` workers instead of the scenario's (platform.ts). */
  resized?: (Span & { workers: number })[]
  replicas: number
  /** Spans during which the replicas' lease store answers nothing (a stalled Redis). */
  storeStalls: Span[]
  /** A gateway starved of its core: how late its loop wakes for an answer on average (ms), through these points as the machine's load rises and falls (gateway-loop.ts); none: every answer handled as it comes. */
  gatewayLate?: Slowness
  /** A platform whose calls slow as more run at once (platform.ts); `workers` is then its refuseAbove. */
  capacity?: PlatformShape['capacity']
  /** A Laravel throttle in force over a span (platform.ts), its times from the start. */
  throttle?: ThrottleShape
  /** A platform on timers (platform.ts): its jitter and its ends on whole ticks. */
  timers?: PlatformShape['timers']
  /** Replicas whose machine is paused over a span (replica-pause.ts). */
  machinePauses?: PauseShape[]
  teams: TeamPlan[]
}

/** One sample of the gateway and the platform, every SAMPLE_MS. */
export interface Sample extends PlatformSample {
  /** Calls waiting for a seat on every replica. */
  waiting: number
  /** The model lets those calls wait beside a free worker (false when none wait: nothing is judged then). */
  idleAllowed: boolean
  /** The highest limit in force on any replica, and the seats held on all of them. */
  limit: number
  /** The highest limit in force on a replica with calls in flight or waiting: the seats a team's share is of. */
  servingLimit: number
  inFlight: number
  /** Teams with calls waiting. */
  waitingTeams: string[]
  /** The replicas (by index) with calls waiting and none in flight. */
  stopped: number[]
}

export interface Trace {
  scenario: Scenario
  start: number
  samples: Sample[]
  records: CallRecord[]
  /** Worker-ms per team at the platform, and seat-seconds charged per team by the governors. */
  workMs: Map<string, number>
  /** Worker-ms per team per second of the run. */
  workBySecond: Map<string, number[]>
  seatSeconds: Map<string, number>
  /** When the throttle first answered 429, and when the last retry-after it gave ends (ms from the start); null: it never did. */
  throttled: Span | null
}

export const START = 1_800_000_000_000

/** Interpolates the slowness points at `t` ms from the start. */
export function slownessAt(points: Slowness, t: number): number {
  if (points.length === 0) return 1
  const first = points[0] as [number, number]
  if (t <= first[0]) return first[1]
  for (let i = 1; i < points.length; i++) {
    const [t1, k1] = points[i] as [number, number]
    const [t0, k0] = points[i - 1] as [number, number]
    if (t <= t1) return k0 + ((k1 - k0) * (t - t0)) / (t1 - t0)
  }
  return (points.at(-1) as [number, number])[1]
}

/** Runs `scenario` against the governor `factory` makes, on a simulated clock. */
export async function simulate(scenario: Scenario, factory: GovernorFactory): Promise<Trace> {
  // A run refuses and cuts thousands of calls, and no stack of their errors is read: none is taken.
  const stackTraceLimit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  try {
    return await runScenario(scenario, factory)
  } finally {
    Error.stackTraceLimit = stackTraceLimit
  }
}

async function runScenario(scenario: Scenario, factory: GovernorFactory): Promise<Trace> {
  const clock = new SimClock(START)
  const random = new Random(scenario.seed)
  const shift = (s: Span) => ({ from: START + s.from, to: START + s.to })
  const shape: PlatformShape = {
    workers: scenario.workers,
    spread: scenario.spread,
    slowness: (t) => slownessAt(scenario.slowness, t - START),
    stalls: scenario.stalls.map(shift),
    outages: scenario.outages.map(shift),
    shedding: scenario.shedding.map((s) => ({ ...shift(s), p: s.p })),
    ...(scenario.losing ? { losing: scenario.losing.map((s) => ({ ...shift(s), p: s.p })) } : {}),
    ...(scenario.resized ? { resized: scenario.resized.map((s) => ({ ...shift(s), workers: s.workers })) } : {}),
    ...(scenario.capacity ? { capacity: scenario.capacity } : {}),
    ...(scenario.throttle ? { throttle: { ...scenario.throttle, ...shift(scenario.throttle) } } : {}),
    ...(scenario.timers ? { timers: scenario.timers } : {}),
  }
  const platform = new SimPlatform(clock, shape, random.fork())
  const teamRandoms = scenario.teams.map(() => random.fork())
  // Teams of one commonAsks key run on streams of one seed, drawn from the first one's own
  // (no other part's draws move), their asks apart from their timing: they ask the same.
  const commonSeeds = new Map<string, number>()
  const teamStreams = (plan: TeamPlan, i: number): [Random, Asks?] => {
    const own = teamRandoms[i] as Random
    if (plan.commonAsks === undefined) return [own]
    let seed = commonSeeds.get(plan.commonAsks)
    if (seed === undefined) commonSeeds.set(plan.commonAsks, (seed = Math.floor(own.next() * 4294967296)))
    const common = new Random(seed)
    return [common, new Asks(common.fork(), scenario.spread)]
  }
  const late = scenario.gatewayLate
  const loops = late?.length ? Array.from({ length: scenario.replicas }, () => new GatewayLoop(clock, random.fork(), (t) => slownessAt(late, t - START))) : []
  const machinePauses = Array.from({ length: scenario.replicas }, (_, i) => {
    const shape = scenario.machinePauses?.find((p) => p.replica === i)
    return shape && new ReplicaPause(clock, shape, START)
  })
  const gateway = new SimGateway(clock, platform, factory, scenario.replicas, new Map(scenario.teams.map((t) => [t.name, t.weight])), loops, machinePauses)
  for (const stall of scenario.storeStalls) clock.setTimeout(() => gateway.store?.stall(START + stall.to), stall.from)
  const samples: Sample[] = []
  // Sampled beside the platform's own samples, after them at the same instant.
  const sampler = clock.every(() => {
    const p = platform.samples.at(-1)
    const waiting = gateway.waiting
    samples.push({ at: clock.now(), busy: p?.busy ?? 0, queued: p?.queued ?? 0, workers: platform.workers, waiting, idleAllowed: waiting > 0 && gateway.idleAllowed(platform.workers - (p?.busy ?? 0)), limit: gateway.limit, servingLimit: gateway.servingLimit, inFlight: gateway.inFlight, waitingTeams: waiting > 0 ? [...gateway.waitingByTeam().keys()] : [], stopped: waiting > 0 ? gateway.stopped() : [] })
  }, SAMPLE_MS)
  let running = scenario.teams.length
  const teams = scenario.teams.map((plan, i) => runTeam({ ...plan, from: START + plan.from, until: START + plan.until }, gateway, clock, ...teamStreams(plan, i)).finally(() => (running -= 1)))
  await clock.run(START + scenario.durationMs)
  clock.clearInterval(sampler)
  platform.stopSampling()
  // Calls still under way end (their deadlines at the latest); nothing new starts.
  await clock.run(START + scenario.durationMs + 60_000)
  // Every call ends: answered, refused or cut by its deadline. One still waiting is a lost call.
  if (running > 0) throw new Error(`${running} team(s) still have a call that never ended, 60 s after the run`)
  await Promise.all(teams)
  gateway.stop()
  const seatSeconds = new Map(scenario.teams.map((t) => [t.name, gateway.seatSeconds(t.name)]))
  const throttled = platform.throttled && { from: platform.throttled.from - START, to: platform.throttled.to - START }
  return { scenario, start: START, samples, records: gateway.records, workMs: platform.workMs, workBySecond: platform.workBySecond, seatSeconds, throttled }
}
