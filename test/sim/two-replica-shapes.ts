import { Random } from './random.js'
import type { Scenario } from './simulate.js'

/** Callers on both replicas and a dashboard on r0, on 8 to 24 workers (spread 0.2), for `durationMs`. */
export function twoReplicas(seed: number, durationMs = 60_000): Scenario {
  const r = new Random(0xc10c + seed)
  const workers = r.int(8, 24)
  const costMs = Math.round(r.logUniform(40, 250))
  return {
    seed, durationMs, workers, spread: 0.2, slowness: [], stalls: [], outages: [], shedding: [], storeStalls: [], replicas: 2,
    teams: [
      { name: 'callers', weight: 1, behaviour: { kind: 'callers', callers: 2 * workers, reports: [{ name: 'k0', costMs }, { name: 'k1', costMs: 4 * costMs }], thinkMs: [0, 50] }, replicas: [0, 1], from: 0, until: durationMs },
      { name: 'dashboard', weight: 1, behaviour: { kind: 'dashboard', users: r.int(2, 4), fanOut: r.int(2, 4), reports: [{ name: 'k2', costMs: Math.round(1.5 * costMs) }], thinkMs: [500, 2000] }, replicas: [0], from: 0, until: durationMs },
    ],
  }
}
