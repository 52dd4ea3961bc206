import { describe, expect, it } from 'vitest'
import { simulate, type Scenario } from '../sim/simulate.js'
import { checkGuarantees } from '../sim/checks.js'
import { describeScenario } from '../sim/scenario.js'
import { newGovernor } from '../sim/new-governor.js'
import { twoReplicas } from '../sim/two-replica-shapes.js'
import type { PauseShape } from '../sim/replica-pause.js'

// A replica's machine paused 10 s (a VM stopped by its host, live-migrated; replica-pause.ts):
// none of its code runs, calls asked of it and answers come to it wait for its end, and its
// monotonic reading stops with it (the governor's clock then stays behind the wall clock by
// the pause: docs/governor.md, "The clock") or runs on (its calls across the pause read that
// much longer, its loop-probe sees the pause as one late wake). Each run is judged beside its
// null control: the same scenario with the same span marked as a fault and nothing paused,
// so that the phases judged are the same. A pause breaks no guarantee its control keeps.

const SEEDS = 8

/** `seed`'s two replicas over 100 s, r0 paused from 30 to 40 s; a null control marks the span on no replica. */
function paused(seed: number, monotonic: PauseShape['monotonic'] | 'null'): Scenario {
  return { ...twoReplicas(seed, 100_000), machinePauses: [{ replica: monotonic === 'null' ? 2 : 0, from: 30_000, to: 40_000, monotonic: monotonic === 'null' ? 'runs' : monotonic }] }
}

const broken = async (scenario: Scenario) => checkGuarantees(await simulate(scenario, newGovernor)).filter((v) => !v.ok)

/** The guarantees `seed`'s null control breaks, run once for both readings. */
const controls = new Map<number, Promise<Set<string>>>()
const brokenByControl = (seed: number) => {
  let control = controls.get(seed)
  if (!control) controls.set(seed, (control = broken(paused(seed, 'null')).then((vs) => new Set(vs.map((v) => v.guarantee)))))
  return control
}

describe("a replica's machine paused 10 s", () => {
  for (const monotonic of ['stops', 'runs'] as const) {
    it(`breaks no guarantee its null control keeps, its monotonic clock ${monotonic === 'stops' ? 'stopped' : 'running'} (seeds 1 to ${SEEDS})`, async () => {
      const added: string[] = []
      for (let seed = 1; seed <= SEEDS; seed++) {
        const kept = await brokenByControl(seed)
        const scenario = paused(seed, monotonic)
        for (const v of await broken(scenario)) if (!kept.has(v.guarantee)) added.push(`${describeScenario(scenario)}: ${v.guarantee}: ${v.detail}`)
      }
      expect(added).toEqual([])
    }, 300_000)
  }
})
