import { Random } from './random.js'
import { simulate, type Scenario, type Trace } from './simulate.js'
import { checkGuarantees, type Verdict } from './checks.js'
import { newGovernor } from './new-governor.js'
import type { TeamPlan } from './teams.js'

/**
 * Seeded shapes of the benchmarks the sweep does not draw (bench/scenarios/scale.mjs,
 * two-teams.mjs): a platform on Node's timers (its calls of one cost end on the same
 * millisecond, a few ms of jitter), and a gateway whose event loop reads its answers one
 * after another, 1 ms each, waking late where its core is busy (gateway-loop.ts), so that
 * answers that come together are ends, not evidence (answer-timing.ts). Each seed draws,
 * from a stream of its own (the sweep's and the capacity family's draws stay as they are),
 * one of:
 * - **crowded** (the scale bench, one replica): no queue, each call `costMs` (50 to 300 ms)
 *   while `knee` (12 to 32) are in flight and 20 % to 50 % of its cost more for each call
 *   past the knee as it starts (the bench's 40 ms on 100 ms), 429 at once past 1.5 to 2.2
 *   times the knee (the bench's 48 on 24), callers 1.5 to 2.5 times that (the bench's 100);
 *   jitter up to 5 ms; the gateway's loop its own (it wakes at once), or busy from its start
 *   (its wakes late by 15 % to 50 % of a call's cost on average: the bench's fifty replicas
 *   on one loop, where no answer is timed).
 * - **views-fresh** (the two-teams bench's views-year-long row on a fresh gateway): the
 *   sandbox's 16 workers with a queue half the time, else 12 to 24; a week's report of 100
 *   to 150 ms and a year's 30 to 40 times that, every call of a report one cost to the
 *   millisecond (the sandbox's) and up to 1 ms of jitter; 1.5 times the workers of
 *   year-long callers from the start, and 5 s later a dashboard that asks half the
 *   workers' worth of week reports at once, waits for all of them and asks its next view
 *   10 to 30 ms later; the gateway's loop waits 2 to 6 ms on average for its core (a
 *   machine with other work), so a view's answers, ending together, are read in one wake
 *   and, where a wake came later than a tenth of a week's report, none is timed.
 */
export interface BenchShape {
  seed: number
  kind: 'crowded' | 'views-fresh'
  scenario: Scenario
  /** views-fresh: the dashboard alone, its throughput the newcomer's target is judged against. */
  alone?: Scenario
}

/** Each seed's draws come from STREAM + seed: no other family's seed draws them. */
const STREAM = 0x51_0000
const CROWDED_MS = 30_000
const VIEWS_MS = 90_000
/** A crowded platform's throughput is judged from here on (SETTLE_MS: the limit has learned the platform by then). */
const JUDGED_FROM_MS = 10_000
/** When the dashboard comes (the two-teams bench's fresh order: the year's callers reach the gateway first), and how long after it its throughput is judged (the checks' ARRIVAL_WINDOW_MS). */
const ARRIVED_MS = 5_000
const NEWCOMER_WINDOW_MS = 30_000

const none = { slowness: [], stalls: [], outages: [], shedding: [], storeStalls: [], replicas: 1 } satisfies Partial<Scenario>

export function benchShape(seed: number): BenchShape {
  const r = new Random(STREAM + seed)
  if (r.chance(0.5)) {
    const knee = r.int(12, 32)
    const costMs = Math.round(r.logUniform(50, 300))
    const slopeMs = Math.round(costMs * r.uniform(0.2, 0.5))
    const refuseAbove = Math.round(knee * r.uniform(1.5, 2.2))
    const callers = Math.round(refuseAbove * r.uniform(1.5, 2.5))
    const jitterMs = r.uniform(0, 5)
    const lateMs = r.chance(0.5) ? costMs * r.uniform(0.15, 0.5) : 0
    const team: TeamPlan = { name: 'A', weight: 1, behaviour: { kind: 'callers', callers, reports: [{ name: 'report', costMs }], thinkMs: [0, 0] }, replicas: [0], from: 0, until: CROWDED_MS }
    const scenario: Scenario = { ...none, seed, durationMs: CROWDED_MS, workers: refuseAbove, spread: 0, capacity: { knee, slopeMs, refuseAbove }, timers: { jitterMs, tickMs: 1 }, gatewayLate: [[0, lateMs]], teams: [team] }
    return { seed, kind: 'crowded', scenario }
  }
  const workers = r.chance(0.5) ? 16 : r.int(12, 24)
  const week = { name: 'week', costMs: Math.round(r.uniform(100, 150)) }
  const year = { name: 'year', costMs: Math.round(week.costMs * r.uniform(30, 40)) }
  const jitterMs = r.uniform(0, 1)
  const lateMs = r.uniform(2, 6)
  const views: TeamPlan = { name: 'B', weight: 1, behaviour: { kind: 'dashboard', users: 1, fanOut: Math.floor(workers / 2), reports: [week], thinkMs: [10, 30] }, replicas: [0], from: ARRIVED_MS, until: VIEWS_MS }
  const years: TeamPlan = { name: 'A', weight: 1, behaviour: { kind: 'callers', callers: Math.round(1.5 * workers), reports: [year], thinkMs: [0, 0] }, replicas: [0], from: 0, until: VIEWS_MS }
  const scenario: Scenario = { ...none, seed, durationMs: VIEWS_MS, workers, spread: 0, timers: { jitterMs, tickMs: 1 }, gatewayLate: [[0, lateMs]], teams: [views, years] }
  return { seed, kind: 'views-fresh', scenario, alone: { ...scenario, teams: [views] } }
}

/** The scale bench's own platform (bench/scale-host.mjs, one replica): knee 24, 100 ms a call and 40 ms more for each past it, 429 past 48, 100 callers, jitter 2 ms, the loop late `lateMs` on average from its start. */
export function scaleBenchShape(seed: number, lateMs: number): BenchShape {
  const team: TeamPlan = { name: 'A', weight: 1, behaviour: { kind: 'callers', callers: 100, reports: [{ name: 'report', costMs: 100 }], thinkMs: [0, 0] }, replicas: [0], from: 0, until: CROWDED_MS }
  const scenario: Scenario = { ...none, seed, durationMs: CROWDED_MS, workers: 48, spread: 0, capacity: { knee: 24, slopeMs: 40, refuseAbove: 48 }, timers: { jitterMs: 2, tickMs: 1 }, gatewayLate: [[0, lateMs]], teams: [team] }
  return { seed, kind: 'crowded', scenario }
}

/** One line that says what a shape is. */
export function describeBenchShape(s: BenchShape): string {
  const { scenario: x } = s
  const late = `the loop late ${(x.gatewayLate?.[0]?.[1] ?? 0).toFixed(0)} ms, jitter ${(x.timers?.jitterMs ?? 0).toFixed(1)} ms`
  if (s.kind === 'crowded') {
    const c = x.capacity!
    const b = x.teams[0]!.behaviour
    return `seed ${s.seed} crowded: knee ${c.knee}, ${b.reports[0]!.costMs} ms, ${c.slopeMs} ms a call past it, 429 from ${c.refuseAbove}, ${b.kind === 'callers' ? b.callers : 0} callers, ${late}`
  }
  const [views, years] = x.teams as [TeamPlan, TeamPlan]
  const v = views.behaviour
  return `seed ${s.seed} views-fresh: ${x.workers} workers, week ${v.reports[0]!.costMs} ms, year ${years.behaviour.reports[0]!.costMs} ms, ${years.behaviour.kind === 'callers' ? years.behaviour.callers : 0} year callers, a dashboard of ${v.kind === 'dashboard' ? v.fanOut : 0} from ${ARRIVED_MS / 1000} s, ${late}`
}

/** What the platform of a crowded shape has no queue for: its "workers" are its refusal, and its knee is what the benches' targets judge. */
const QUEUE_GUARANTEES = ['work-conserving', 'at capacity, no standing queue']

/**
 * What broke on `shape` (none: it holds): every guarantee of the checks (on a crowded
 * platform, those of a platform with a queue aside), and the benches' own targets. Crowded:
 * **refusals**, under 1 % of the calls answered 429 (the capacity and scale benches'
 * target: the start does not double past the platform's refusal on answers it cannot
 * time); **throughput**, from JUDGED_FROM_MS answers a second at least half the knee's
 * (`knee` calls at a time, each its cost: a queue's verdict read from calls that end in
 * order puts the knee no lower than the workers' worth of the answers a level gave; the
 * scale bench's limit of 3 on a knee of 24 gave an eighth). Views-fresh: **the newcomer**,
 * the dashboard keeps 80 % of its throughput alone over NEWCOMER_WINDOW_MS after it came
 * (the two-teams bench's target for that row).
 */
export async function benchMisses(shape: BenchShape): Promise<Verdict[]> {
  const trace = await simulate(shape.scenario, newGovernor)
  const broken = checkGuarantees(trace).filter((v) => !v.ok && !(shape.kind === 'crowded' && QUEUE_GUARANTEES.includes(v.guarantee)))
  if (shape.kind === 'crowded') {
    const c = shape.scenario.capacity!
    const costMs = shape.scenario.teams[0]!.behaviour.reports[0]!.costMs
    const sent = trace.records.filter((x) => x.status !== null)
    const refused = sent.filter((x) => x.status === 429).length / Math.max(1, sent.length)
    if (refused >= 0.01) broken.push({ guarantee: 'refusals', ok: false, margin: null, detail: `${(100 * refused).toFixed(1)} % of ${sent.length} calls answered 429, the highest limit ${Math.max(...trace.samples.map((x) => x.limit))}` })
    const perSecond = answered(trace, 'A', JUDGED_FROM_MS, CROWDED_MS)
    const knee = (1000 * c.knee) / costMs
    const lowest = Math.min(...trace.samples.filter((x) => x.at - trace.start >= JUDGED_FROM_MS).map((x) => x.limit))
    if (perSecond < 0.5 * knee) broken.push({ guarantee: 'throughput', ok: false, margin: null, detail: `${perSecond.toFixed(1)} answers a second from ${JUDGED_FROM_MS / 1000} s, the knee's ${knee.toFixed(1)}; the limit ${lowest} at least` })
    return broken
  }
  const window: [number, number] = [ARRIVED_MS, ARRIVED_MS + NEWCOMER_WINDOW_MS]
  const alone = answered(await simulate(shape.alone!, newGovernor), 'B', ...window)
  const beside = answered(trace, 'B', ...window)
  if (beside < 0.8 * alone) broken.push({ guarantee: 'the newcomer', ok: false, margin: null, detail: `the dashboard ${(100 * (beside / alone)).toFixed(0)} % of itself alone over its first ${NEWCOMER_WINDOW_MS / 1000} s (${beside.toFixed(1)} answers a second, ${alone.toFixed(1)} alone)` })
  return broken
}

/** Answers a second `team` had from `from` to `to` ms. */
function answered(trace: Trace, team: string, from: number, to: number): number {
  const n = trace.records.filter((c) => c.team === team && c.result === 'ok' && c.status === 200 && c.ended - trace.start >= from && c.ended - trace.start < to).length
  return n / ((to - from) / 1000)
}
