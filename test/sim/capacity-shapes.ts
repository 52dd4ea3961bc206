import { Random } from './random.js'
import { simulate, type Scenario } from './simulate.js'
import { newGovernor } from './new-governor.js'

/**
 * Seeded platforms of the capacity bench's kind (platform.ts, `capacity`), on one replica or more: no
 * queue, each call its report's cost while `knee` calls are in flight and `slopeMs` more for
 * each call past the knee as it starts, 429 at once to a call that finds `refuseAbove` in
 * flight; 120 callers of one report, 60 s. The knee 4 to 40; the cost 20 ms to 2 s (as
 * likely 20 to 200 ms as 200 ms to 2 s); each call past the knee costs every call 3 to 8
 * calls' own time over the knee's calls (slopeMs = 3 to 8 × cost / knee: answers a second
 * most at the knee, the bench's 4.8); refuseAbove 30 % to 100 % past the knee, 2 calls at
 * least; each call's cost spread up to 0.2 (log).
 */
export interface CapacityShape {
  seed: number
  knee: number
  costMs: number
  slopeMs: number
  refuseAbove: number
  spread: number
}

export const CAPACITY_MS = 60_000
/** The guarantee is judged from here on (the bench's 30 s). */
export const CAPACITY_JUDGED_FROM_MS = 30_000

export function capacityShape(seed: number): CapacityShape {
  const r = new Random(seed)
  const knee = r.int(4, 40)
  const costMs = Math.round(r.logUniform(20, 2_000))
  const slopeMs = Math.round((r.uniform(3, 8) * costMs) / knee)
  const refuseAbove = knee + Math.max(2, Math.round(knee * r.uniform(0.3, 1)))
  return { seed, knee, costMs, slopeMs, refuseAbove, spread: r.uniform(0, 0.2) }
}

/**
 * What broke of the bench's targets on `shape` over `replicas` (none: it holds), its callers
 * on every replica: the limit and the calls at
 * the platform within 20 % of the knee in every sample from 30 s, and under 1 % of the calls
 * answered from then 429.
 */
export async function capacityMisses(shape: CapacityShape, replicas = 1): Promise<string[]> {
  const { seed, knee, costMs, slopeMs, refuseAbove, spread } = shape
  const scenario: Scenario = {
    seed, durationMs: CAPACITY_MS, workers: refuseAbove, spread, slowness: [], stalls: [], outages: [], shedding: [], replicas, storeStalls: [],
    teams: [{ name: 'A', weight: 1, behaviour: { kind: 'callers', callers: 120, reports: [{ name: 'report', costMs }], thinkMs: [0, 0] }, replicas: Array.from({ length: replicas }, (_, i) => i), from: 0, until: CAPACITY_MS }],
    capacity: { knee, slopeMs, refuseAbove },
  }
  const trace = await simulate(scenario, newGovernor)
  const judged = (at: number) => at - trace.start >= CAPACITY_JUDGED_FROM_MS
  const [low, high] = [0.8 * knee, 1.2 * knee]
  const out = trace.samples.filter((x) => judged(x.at) && (x.limit < low || x.limit > high || x.busy < low || x.busy > high))
  const sent = trace.records.filter((c) => c.status !== null && judged(c.ended))
  const refused = sent.filter((c) => c.status === 429).length / sent.length
  const what = `seed ${seed} (knee ${knee}, ${costMs} ms, ${slopeMs} ms a call past it, 429 from ${refuseAbove})`
  return [
    ...(out.length > 0 ? [`${what}: out of ${low.toFixed(1)} to ${high.toFixed(1)} in ${out.length} samples, the first at ${((out[0]!.at - trace.start) / 1000).toFixed(1)} s: limit ${out[0]!.limit}, at the platform ${out[0]!.busy}`] : []),
    ...(refused >= 0.01 ? [`${what}: ${(100 * refused).toFixed(1)} % of ${sent.length} calls answered 429`] : []),
  ]
}
