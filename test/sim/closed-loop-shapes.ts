import { Random } from './random.js'
import { simulate, type Scenario } from './simulate.js'
import { newGovernor } from './new-governor.js'

/**
 * Seeded closed loops of one kind below the workers: N callers (2 to W − 1) each asking
 * again as its answer comes, every call of one report of 300 ms to 8 s (as likely 300 ms
 * to 1.5 s as 1.5 to 8 s), spread σ 0.05 to 0.3, on W workers (6 to 64), on one replica
 * or (half the seeds) 2 to 4. No queue ever forms at the platform: every call has a
 * worker. The callers' ends fall at about the same places in each call's flight, call
 * after call, which fits a guess of W below the load as well (docs/governor.md, "Why the
 * prior only widens").
 */
export interface ClosedLoopShape {
  seed: number
  workers: number
  callers: number
  costMs: number
  spread: number
  replicas: number
}

export const CLOSED_LOOP_MS = 90_000

export function closedLoopShape(seed: number): ClosedLoopShape {
  const r = new Random(seed * 7919)
  const workers = r.int(6, 64)
  const callers = r.int(2, workers - 1)
  const costMs = Math.round(r.logUniform(300, 8_000))
  const spread = r.uniform(0.05, 0.3)
  const replicas = r.chance(0.5) ? r.int(2, 4) : 1
  return { seed, workers, callers, costMs, spread, replicas }
}

/**
 * What *work-conserving* finds on `shape`, judged from 10 s and three calls' cost on (the
 * start's doubling): samples with a worker idle while a call waits for a seat, past what
 * the model allows (gateway.ts `idleAllowed`), at most 2 %; null where it holds.
 */
export async function closedLoopMiss(shape: ClosedLoopShape): Promise<string | null> {
  const { seed, workers, callers, costMs, spread, replicas } = shape
  const all = Array.from({ length: replicas }, (_, i) => i)
  const scenario: Scenario = {
    seed, durationMs: CLOSED_LOOP_MS, workers, spread, slowness: [], stalls: [], outages: [], shedding: [], replicas, storeStalls: [],
    teams: [{ name: 'A', weight: 1, behaviour: { kind: 'callers', callers, reports: [{ name: 'report', costMs }], thinkMs: [0, 0] }, replicas: all, from: 0, until: CLOSED_LOOP_MS }],
  }
  const trace = await simulate(scenario, newGovernor)
  const judged = trace.samples.filter((x) => x.at - trace.start >= 10_000 + 3 * costMs)
  const idle = judged.filter((x) => x.waiting > 0 && x.busy < x.workers && !x.idleAllowed)
  const share = idle.length / judged.length
  if (share <= 0.02) return null
  const lowest = Math.min(...judged.map((x) => x.limit))
  return `seed ${seed} (${workers} workers, ${callers} callers of ${costMs} ms, σ ${spread.toFixed(2)}, ${replicas} replica(s)): a worker idle while calls waited in ${(100 * share).toFixed(1)} % of samples, the limit ${lowest} at its lowest`
}
