import { describe, expect, it } from 'vitest'
import { randomScenario } from './scenario.js'
import { simulate } from './simulate.js'
import { newGovernor } from './new-governor.js'
import { checkGuarantees } from './checks.js'

// The dispatch rule across replicas as on one (docs/governor.md, dispatch rule 2): below the
// share a whole seat below it, past it the tags, a busy team back within RETURN_MS keeping its
// credit. Seed 172's shape: 5 workers, 2 replicas; t0 (weight 2, 8 callers of 37 and 101 ms)
// and two teams of weight 1 (calls of 1,288 and 20 ms) on r0. Each team held its share rounded
// up (t0 3 of 2.4, the others 2 of 1.2), and t0's queue, emptied between its callers' asks,
// gave up its credit each time: 24.4 worker-seconds per weight against 48.0 over 23–53 s.
describe('fair by time across replicas', () => {
  it('gives a team of short calls its weight\'s worker-seconds beside teams of long calls', async () => {
    const trace = await simulate(randomScenario(172), newGovernor)
    const verdict = checkGuarantees(trace).find((v) => v.guarantee === 'fair by time')
    expect(verdict?.ok, verdict?.detail).toBe(true)
  })
})
