import { Random } from './random.js'
import { simulate, type Scenario, type Trace } from './simulate.js'
import { newGovernor } from './new-governor.js'
import type { Report, TeamPlan } from './teams.js'

/**
 * Seeded shapes of the dashboard family's trace 7 (docs/benchmarks.md, "The family now"):
 * a platform far larger than the limit ever goes (200 to 400 workers, the ceiling 64), one
 * or two kinds of report of 300 ms to 2 s whose calls spread by σ 0.2 to 0.4 (so that they
 * overtake one another, on a platform of any size), 8 to 40 callers that think 0 to 0.5 to
 * 2 s between calls, on one replica whose event loop wakes 10 to 100 ms late on average
 * (gateway-loop.ts: a gateway whose core serves other work). The callers never need more
 * seats than they are, below the ceiling: every call that waits for a seat while a worker
 * idles is the limit's, and the limit has no cause to fall below what they ask at once.
 * Each seed's draws come from a stream of its own.
 */
export interface LateStartShape { seed: number; workers: number; reports: Report[]; spread: number; callers: number; thinkMs: [number, number]; lateMs: number; scenario: Scenario }

const STREAM = 0x53_0000
export const LATE_START_MS = 60_000
/** Judged from here on: the start has doubled past the callers by then (8 → 16 → 32 → 64, a DECIDE each at most). */
export const LATE_START_JUDGED_FROM_MS = 10_000

export function lateStartShape(seed: number): LateStartShape {
  const r = new Random(STREAM + seed)
  const workers = r.int(200, 400)
  const kinds = r.int(1, 2)
  const reports: Report[] = Array.from({ length: kinds }, (_, i) => ({ name: `k${i}`, costMs: Math.round(r.logUniform(300, 2_000)) }))
  const spread = r.uniform(0.2, 0.4)
  const callers = r.int(8, 40)
  const thinkMs: [number, number] = [0, r.uniform(500, 2_000)]
  const lateMs = r.logUniform(10, 100)
  const team: TeamPlan = { name: 'A', weight: 1, behaviour: { kind: 'callers', callers, reports, thinkMs }, replicas: [0], from: 0, until: LATE_START_MS }
  const scenario: Scenario = { seed, durationMs: LATE_START_MS, workers, spread, slowness: [], stalls: [], outages: [], shedding: [], storeStalls: [], replicas: 1, gatewayLate: [[0, lateMs]], teams: [team] }
  return { seed, workers, reports, spread, callers, thinkMs, lateMs, scenario }
}

/**
 * What `shape` broke (null: nothing): from LATE_START_JUDGED_FROM_MS on, a worker idle while
 * calls waited for a seat in more than 2 % of the samples (*work-conserving*: one team, no
 * seat owed to another; the callers never need the ceiling).
 */
export async function lateStartMiss(shape: LateStartShape): Promise<string | null> {
  const trace = await simulate(shape.scenario, newGovernor)
  const samples = trace.samples.filter((x) => x.at - trace.start >= LATE_START_JUDGED_FROM_MS)
  const idle = samples.filter((x) => x.waiting > 0 && x.busy < shape.workers).length / Math.max(1, samples.length)
  const lowest = Math.min(...samples.map((x) => x.limit))
  if (idle <= 0.02) return null
  return `${describeLateStartShape(shape)}: calls waited beside idle workers in ${(100 * idle).toFixed(1)} % of the samples from ${LATE_START_JUDGED_FROM_MS / 1000} s, the limit ${lowest} at least (${fell(trace)})`
}

/** Where the limit first fell, and to what. */
function fell(trace: Trace): string {
  let top = 0
  for (const x of trace.samples) {
    if (x.limit < top) return `fell ${top} → ${x.limit} at ${((x.at - trace.start) / 1000).toFixed(1)} s`
    top = Math.max(top, x.limit)
  }
  return `never fell, the highest ${top}`
}

export function describeLateStartShape(s: LateStartShape): string {
  return `seed ${s.seed}: ${s.workers} workers, ${s.reports.map((k) => `${k.costMs} ms`).join(' and ')}, σ ${s.spread.toFixed(2)}, ${s.callers} callers thinking 0 to ${(s.thinkMs[1] / 1000).toFixed(1)} s, the loop late ${s.lateMs.toFixed(0)} ms`
}
