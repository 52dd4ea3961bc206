import { describe, expect, it } from 'vitest'
import { randomScenario } from './scenario.js'
import { simulate } from './simulate.js'
import { newGovernor } from './new-governor.js'
import { checkGuarantees } from './checks.js'

// The probe seat again on one replica (docs/governor.md, "Cruise"): a queue there is the
// verdict of a call that took it. Seed 1186's shape: 27 workers, 9 from 33 s to 60 s, the
// callers' calls at 4 to 9 in flight; from 65 s the seat came back every 11 s and the lean of
// the answers of calls below it took it at the next decision, the limit 9 on 27 workers.
describe('the probe seat again', () => {
  it('stays until a call that took it answers: a pool that grew is not held at the knee by the calls below the seat', async () => {
    const trace = await simulate(randomScenario(1186), newGovernor)
    const verdict = checkGuarantees(trace).find((v) => v.guarantee === 'work-conserving')
    expect(verdict?.ok, verdict?.detail).toBe(true)
  })
})
