import { describe, expect, it } from 'vitest'
import { simulate, type Scenario } from '../sim/simulate.js'
import { newGovernor } from '../sim/new-governor.js'

// The scale bench's platform (bench/scenarios/scale.mjs) on many replicas in the simulator,
// where each replica times its answers exactly (the bench host runs its replicas on one
// event loop, and they learn from almost none: docs/decisions/governor-model.md, "Fifty
// replicas in one process"): 100 ms a call up to 24 calls in flight, 40 ms more for each
// call past them, 429 at once to a call that finds 48; every cost alike (the stand-in's);
// two callers a replica in a closed loop, a team's calls spread over the replicas in turn.
// Judged as the capacity family is (test/sim/capacity-shapes.ts), from 10 s: the limit
// within 20 % of the knee in 80 % of samples, under 1 % of calls 429.

const [KNEE, COST_MS, SLOPE_MS, REFUSE_ABOVE, MS, FROM_MS] = [24, 100, 40, 48, 60_000, 10_000]

async function misses(replicas: number, seed: number): Promise<string[]> {
  const scenario: Scenario = {
    seed, durationMs: MS, workers: REFUSE_ABOVE, spread: 0, slowness: [], stalls: [], outages: [], shedding: [], replicas, storeStalls: [],
    teams: [{ name: 'A', weight: 1, behaviour: { kind: 'callers', callers: 2 * replicas, reports: [{ name: 'report', costMs: COST_MS }], thinkMs: [0, 0] }, replicas: Array.from({ length: replicas }, (_, i) => i), from: 0, until: MS }],
    capacity: { knee: KNEE, slopeMs: SLOPE_MS, refuseAbove: REFUSE_ABOVE },
  }
  const trace = await simulate(scenario, newGovernor)
  const judged = trace.samples.filter((x) => x.at - trace.start >= FROM_MS)
  const out = judged.filter((x) => x.limit < 0.8 * KNEE || x.limit > 1.2 * KNEE)
  const sent = trace.records.filter((c) => c.status !== null && c.ended - trace.start >= FROM_MS)
  const refused = sent.filter((c) => c.status === 429).length / sent.length
  const limits = judged.map((x) => x.limit).sort((a, b) => a - b)
  const what = `${replicas} replicas, seed ${seed}`
  return [
    ...(out.length > 0.2 * judged.length ? [`${what}: the limit out of the band in ${out.length} of ${judged.length} samples (median ${limits[limits.length >> 1]}, ${limits[0]} to ${limits.at(-1)})`] : []),
    ...(refused >= 0.01 ? [`${what}: ${(100 * refused).toFixed(1)} % of ${sent.length} calls answered 429`] : []),
  ]
}

describe('the scale bench\'s platform on many replicas of two callers each', () => {
  it('on 25 replicas: the limit learns the knee', async () => {
    expect([...(await misses(25, 1)), ...(await misses(25, 2))]).toEqual([])
  }, 120_000)

  // Held since a replica that holds no seat renews at once as a call comes where seats are
  // free (seeds 1 and 2: the limit 20 to 29 and 23 to 27 from p10 to p90, 8,709 and 9,280
  // calls sent from 10 s); renewing MIN_RENEW after its last answer, it was 6 to 44 and 6 to
  // 38 (median 21 and 14, 5,090 and 5,480 calls), how is not traced. The miss before, from
  // about 44 replicas of two callers, was the knee grown past 24 on room shown, with 429s past
  // 48 (docs/decisions/governor-model.md, "Fifty replicas in one process", "Fifty replicas
  // traced", and session 145's "A replica holding no seat renews at once where seats are free, kept").
  it('on 50 replicas: the limit learns the knee', async () => {
    expect([...(await misses(50, 1)), ...(await misses(50, 2))]).toEqual([])
  }, 120_000)
})
