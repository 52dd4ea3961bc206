import { simulate } from './simulate.js'
import { describeScenario, randomScenario } from './scenario.js'
import { checkGuarantees } from './checks.js'
import { newGovernor } from './new-governor.js'

/**
 * Runs the scenarios of `seeds` and checks every guarantee on each; returns one paragraph
 * per failing seed (its scenario, what failed, and the command that replays it). With
 * `print`, every check of every seed is printed.
 */
export async function sweep(seeds: number[], replay: string, print = false): Promise<string[]> {
  const failed: string[] = []
  for (const seed of seeds) {
    const scenario = randomScenario(seed)
    let lines: string[]
    try {
      const verdicts = checkGuarantees(await simulate(scenario, newGovernor))
      if (print) console.log(describeScenario(scenario) + '\n' + verdicts.map((v) => `${v.ok ? 'ok  ' : 'FAIL'} ${v.guarantee}${v.detail ? `: ${v.detail}` : ''}`).join('\n'))
      lines = verdicts.filter((v) => !v.ok).map((v) => `${v.guarantee}: ${v.detail}`)
    } catch (err) {
      lines = [`the run failed: ${(err as Error).message}`]
    }
    if (lines.length > 0) failed.push(`${describeScenario(scenario)}\n  ${lines.join('\n  ')}\n  replay: SIM_SEED=${seed} ${replay}`)
  }
  return failed
}
