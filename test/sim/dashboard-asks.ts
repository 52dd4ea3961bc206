import { drawShapes, makeTrace, popularReports, replaySeconds } from '../../bench/lib/dashboard-trace.mjs'
import type { Shape, Span } from './refresh-ahead-sim.js'

/** How many traces the benchmark's dashboard family draws (bench/scenarios/dashboard-family.mjs). */
const FAMILY_TRACES = 8

/**
 * One trace of the benchmark's dashboard family as the refresh-ahead simulation replays it:
 * the shape, the asks (time ms, report) of the trace the benchmark replays, the run's span
 * (the benchmark's warm-up, then its measured window), and the popular reports (those with
 * half the window's asks), whose answers the freshness target counts.
 */
export interface FamilyTrace {
  shape: Shape
  asks: Array<[number, number]>
  span: Span
  popular: ReadonlySet<number>
}

/**
 * Trace `n` (1 to 8) of the family, its platform's latencies to be drawn from `platformSeed`:
 * the asks are the benchmark's own (bench/lib/dashboard-trace.mjs, the trace's seed), so only
 * the platform's draws differ from one replay to the next.
 */
export function familyTrace(n: number, platformSeed: number): FamilyTrace {
  const drawn = drawShapes(FAMILY_TRACES)[n - 1]
  if (drawn === undefined) throw new RangeError(`the family has ${FAMILY_TRACES} traces (asked for ${n})`)
  const { warmupS, seconds } = replaySeconds(drawn, false)
  const trace = makeTrace(drawn, warmupS + seconds)
  const asks: Array<[number, number]> = trace.flatMap((loads) => loads.flatMap(([at, reports]) => reports.map((r): [number, number] => [at, r])))
  asks.sort((x, y) => x[0] - y[0])
  const freshMs = drawn.ttlS * 1000
  const shape: Shape = { reports: drawn.reports, rate: asks.length / (warmupS + seconds), zipf: drawn.zipf, freshMs, latencyMs: drawn.latencyMs, spread: drawn.spread, seed: platformSeed }
  const span: Span = { freshnesses: (warmupS + seconds) / drawn.ttlS, warmup: warmupS / drawn.ttlS }
  return { shape, asks, span, popular: popularReports(trace, warmupS, warmupS + seconds).popular }
}
