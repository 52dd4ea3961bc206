import { describe, expect, it } from 'vitest'
import { simulate } from './simulate.js'
import { checkGuarantees } from './checks.js'
import { describeScenario } from './scenario.js'
import { steppedGovernor } from './stepped-clock.js'
import { twoReplicas } from './two-replica-shapes.js'

// Two replicas whose clocks disagree by 10 s, either way, from the start (docs/governor.md,
// "The clock"): what they share is dated on the lease store's clock, read at each renewal,
// so the learner weighs the other's calls where they happened and takes the other's shared
// record as of its age. Every guarantee holds as on one clock. A replica's wall clock set
// back or ahead during the run (by hand, an NTP step, a VM resumed and corrected) does not
// move the governor's clock, which runs on the monotonic reading (steady-clock.ts): its own
// calls keep their order and their lengths, and every guarantee holds.

describe('two replicas whose clocks disagree by 10 s', () => {
  for (const [seed, offMs] of [[1, 10_000], [2, -10_000], [3, 10_000], [4, -10_000]] as const) {
    it(`keeps every guarantee, r0's clock ${offMs > 0 ? 'ahead' : 'behind'} (seed ${seed})`, async () => {
      const scenario = twoReplicas(seed)
      const verdicts = checkGuarantees(await simulate(scenario, steppedGovernor(0, offMs, 'r0')))
      expect(verdicts.filter((v) => !v.ok).map((v) => `${describeScenario(scenario)}: ${v.guarantee}: ${v.detail}`)).toEqual([])
    }, 120_000)
  }
})

describe("a replica's wall clock stepped back during the run", () => {
  for (const [seed, stepMs] of [[1, -10_000], [2, -60_000], [5, -10_000]] as const) {
    it(`keeps every guarantee, r0's clock set back ${-stepMs / 1000} s at 25 s (seed ${seed})`, async () => {
      const scenario = twoReplicas(seed)
      const verdicts = checkGuarantees(await simulate(scenario, steppedGovernor(25_000, stepMs, 'r0')))
      expect(verdicts.filter((v) => !v.ok).map((v) => `${describeScenario(scenario)}: ${v.guarantee}: ${v.detail}`)).toEqual([])
    }, 120_000)
  }
})

describe("a replica's wall clock stepped ahead during the run", () => {
  // On the wall clock, calls across the step read that much longer: 7 of seeds 1 to 8 broke
  // no standing queue 10 s ahead (seeds 1 and 6: calls in flight p99 29 and 38 against 17
  // and 25), and seed 3 work-conserving 60 s ahead (2.7 %).
  for (const [seed, stepMs] of [[1, 10_000], [6, 10_000], [3, 60_000]] as const) {
    it(`keeps every guarantee, r0's clock set ahead ${stepMs / 1000} s at 25 s (seed ${seed})`, async () => {
      const scenario = twoReplicas(seed)
      const verdicts = checkGuarantees(await simulate(scenario, steppedGovernor(25_000, stepMs, 'r0')))
      expect(verdicts.filter((v) => !v.ok).map((v) => `${describeScenario(scenario)}: ${v.guarantee}: ${v.detail}`)).toEqual([])
    }, 120_000)
  }
})
