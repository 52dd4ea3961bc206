import { Random } from './random.js'
import { simulate, type Scenario } from './simulate.js'
import { newGovernor } from './new-governor.js'

/**
 * Seeded shapes of the capacity bench's start on one replica (bench/scenarios/capacity.mjs): no
 * queue, each call `costMs` (50 to 300 ms) while `knee` (8 to 24) are in flight and 20 % to 50 %
 * of its cost more for each call past the knee as it starts, 429 at once to a call that finds
 * `refuseAbove` in flight (30 % to 100 % past the knee, 2 calls at least: the bench's 20 on 12),
 * callers 3 to 6 times that (the bench's 120); a platform on timers (up to 3 ms of jitter), and a
 * gateway whose loop wakes 0.5 ms to a tenth of a call late on average (gateway-loop.ts: the
 * bench's replica serves its callers on the loop that reads its answers, so most answers are
 * timed and some are not). Each seed's draws come from a stream of its own.
 */
export interface StartShape { seed: number; knee: number; costMs: number; slopeMs: number; refuseAbove: number; callers: number; lateMs: number; scenario: Scenario }

const STREAM = 0x52_0000
export const START_SHAPE_MS = 20_000
/** The start is over by then on every shape (a doubling a DECIDE at most, from 8 to 64). */
export const START_MS = 5_000

export function startShape(seed: number): StartShape {
  const r = new Random(STREAM + seed)
  const knee = r.int(8, 24)
  const costMs = Math.round(r.logUniform(50, 300))
  const slopeMs = Math.round(costMs * r.uniform(0.2, 0.5))
  const refuseAbove = knee + Math.max(2, Math.round(knee * r.uniform(0.3, 1)))
  const callers = Math.round(refuseAbove * r.uniform(3, 6))
  const jitterMs = r.uniform(0, 3)
  const lateMs = r.uniform(0.5, 0.1 * costMs)
  const scenario: Scenario = {
    seed, durationMs: START_SHAPE_MS, workers: refuseAbove, spread: r.uniform(0, 0.1), slowness: [], stalls: [], outages: [], shedding: [], storeStalls: [], replicas: 1,
    capacity: { knee, slopeMs, refuseAbove }, timers: { jitterMs, tickMs: 1 }, gatewayLate: [[0, lateMs]],
    teams: [{ name: 'A', weight: 1, behaviour: { kind: 'callers', callers, reports: [{ name: 'report', costMs }], thinkMs: [0, 0] }, replicas: [0], from: 0, until: START_SHAPE_MS }],
  }
  return { seed, knee, costMs, slopeMs, refuseAbove, callers, lateMs, scenario }
}

/**
 * Whether the start passed the platform's refusal on `shape` (null: it did not): the limit above
 * `refuseAbove` within START_MS and calls answered 429 then, as many as 1 % of the run's calls
 * (the bench's target for the whole run); what it says of the start.
 */
export async function startPastRefusal(shape: StartShape): Promise<string | null> {
  const trace = await simulate(shape.scenario, newGovernor)
  const inStart = (at: number) => at - trace.start < START_MS
  const top = Math.max(...trace.samples.filter((x) => inStart(x.at)).map((x) => x.limit))
  const sent = trace.records.filter((c) => c.status !== null)
  const refused = sent.filter((c) => c.status === 429 && inStart(c.ended)).length
  if (top <= shape.refuseAbove || refused < 0.01 * sent.length) return null
  return `seed ${shape.seed} (knee ${shape.knee}, ${shape.costMs} ms, ${shape.slopeMs} ms a call past it, 429 from ${shape.refuseAbove}, ${shape.callers} callers, the loop late ${shape.lateMs.toFixed(1)} ms): the start's limit ${top}, ${refused} of ${sent.length} calls answered 429 in its first ${START_MS / 1000} s`
}
