import { describe, expect, it } from 'vitest'
import { simulate } from './simulate.js'
import { describeScenario, randomScenario } from './scenario.js'
import { checkGuarantees } from './checks.js'
import { newGovernor } from './new-governor.js'

// The governor's guarantees (docs/governor.md) on seeded random platforms and teams: the
// real governor on a simulated clock. SIM_RUNS sets how many seeds (from SIM_FIRST);
// SIM_SEED replays one, printing every check.

const runs = Number(process.env.SIM_RUNS ?? 200)
const first = Number(process.env.SIM_FIRST ?? 1)
const only = process.env.SIM_SEED === undefined ? null : Number(process.env.SIM_SEED)

describe('the governor on random platforms', () => {
  it(only === null ? `keeps every guarantee over ${runs} seeded scenarios` : `keeps every guarantee in scenario ${only}`, async () => {
    const seeds = only === null ? Array.from({ length: runs }, (_, i) => first + i) : [only]
    const failed: string[] = []
    for (const seed of seeds) {
      const scenario = randomScenario(seed)
      let lines: string[]
      try {
        const verdicts = checkGuarantees(await simulate(scenario, newGovernor))
        if (only !== null) console.log(describeScenario(scenario) + '\n' + verdicts.map((v) => `${v.ok ? 'ok  ' : 'FAIL'} ${v.guarantee}${v.detail ? `: ${v.detail}` : ''}`).join('\n'))
        lines = verdicts.filter((v) => !v.ok).map((v) => `${v.guarantee}: ${v.detail}`)
      } catch (err) {
        lines = [`the run failed: ${(err as Error).message}`]
      }
      if (lines.length > 0) failed.push(`${describeScenario(scenario)}\n  ${lines.join('\n  ')}\n  replay: SIM_SEED=${seed} npx vitest run test/sim/sweep.test.ts`)
    }
    expect(failed, failed.join('\n')).toEqual([])
  }, 600_000)
})
