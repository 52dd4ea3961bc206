import { simulate } from './simulate.js'
import { describeScenario, randomScenario } from './scenario.js'
import { checkGuarantees } from './checks.js'
import { newGovernor } from './new-governor.js'
import { marginsOf, type GuaranteeMargins } from './margins.js'

/** One seed the sweep ran that broke a guarantee. */
export interface SeedFailure {
  seed: number
  /** The guarantees broken (the checks' names; 'the run' when it threw). */
  guarantees: string[]
  /** Its scenario, what failed, and the command that replays it. */
  text: string
}

/**
 * Runs the scenarios of `seeds` and checks every guarantee on each; returns the failing
 * seeds. With `print`, every check of every seed is printed; `margins` is told each seed's
 * margins (margins.ts).
 */
export async function sweep(seeds: number[], replay: string, print = false, margins?: (seed: number, of: GuaranteeMargins) => void): Promise<SeedFailure[]> {
  const failed: SeedFailure[] = []
  for (const seed of seeds) {
    const scenario = randomScenario(seed)
    let broken: { guarantee: string; detail: string }[]
    try {
      const verdicts = checkGuarantees(await simulate(scenario, newGovernor))
      const astray = verdicts.filter((v) => v.margin !== null && v.ok !== v.margin <= 1)
      if (astray.length > 0) throw new Error(`a verdict whose margin says otherwise: ${astray.map((v) => `${v.guarantee} ${v.ok ? 'ok' : 'broken'}, margin ${v.margin}`).join('; ')}`)
      margins?.(seed, marginsOf(verdicts))
      if (print) console.log(describeScenario(scenario) + '\n' + verdicts.map((v) => `${v.ok ? 'ok  ' : 'FAIL'} ${v.guarantee}${v.detail ? `: ${v.detail}` : ''}`).join('\n'))
      broken = verdicts.filter((v) => !v.ok).map((v) => ({ guarantee: v.guarantee, detail: v.detail ?? '' }))
    } catch (err) {
      broken = [{ guarantee: 'the run', detail: `failed: ${(err as Error).message}` }]
    }
    if (broken.length > 0) {
      const lines = broken.map((b) => `${b.guarantee}: ${b.detail}`)
      failed.push({ seed, guarantees: broken.map((b) => b.guarantee), text: `${describeScenario(scenario)}\n  ${lines.join('\n  ')}\n  replay: SIM_SEED=${seed} ${replay}` })
    }
  }
  return failed
}

/**
 * What a sweep's failures say against the seeds known to fail (`known`: seed → the
 * guarantees it breaks): every failure of a seed not known, or of a guarantee not listed
 * for it, and every known seed that now keeps its guarantees (to be taken off the list).
 * Empty when the sweep holds as recorded.
 */
export function unexpected(seeds: number[], failed: SeedFailure[], known: ReadonlyMap<number, readonly string[]>): string[] {
  const bySeed = new Map(failed.map((f) => [f.seed, f]))
  const out: string[] = []
  for (const seed of seeds) {
    const f = bySeed.get(seed)
    const listed = known.get(seed)
    if (f === undefined) {
      if (listed !== undefined) out.push(`seed ${seed} keeps every guarantee now: take it off the known failures`)
      continue
    }
    const other = f.guarantees.filter((g) => listed === undefined || !listed.includes(g))
    if (other.length > 0) out.push(f.text)
  }
  return out
}

/** known-failures.ts as it reads with `failed` as the seeds known to fail. */
export function knownFailuresSource(failed: SeedFailure[]): string {
  const rows = failed.map((f) => `  [${f.seed}, [${f.guarantees.map((g) => `'${g}'`).join(', ')}]],`)
  return `// Seeds on which the governor breaks a guarantee of docs/governor.md today: each an open
// defect (issue 51), replayed with SIM_SEED=<seed> npx vitest run test/sim/sweep.test.ts.
// Written by SIM_RECORD=1 SIM_RUNS=2200 npx vitest run test/sim/sweep.test.ts; a fix takes
// seeds off it, and nothing is added to it but by a change that says why.
export const KNOWN_FAILURES: ReadonlyMap<number, readonly string[]> = new Map<number, readonly string[]>([
${rows.join('\n')}
])
`
}
