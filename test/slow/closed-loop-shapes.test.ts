import { describe, it } from 'vitest'
import { expectKnownMisses } from '../sim/family.js'
import { closedLoopMiss, closedLoopShape } from '../sim/closed-loop-shapes.js'

// Closed loops of one kind below the workers, 200 seeded shapes (test/sim/closed-loop-shapes.ts):
// *work-conserving* from the start's end on. No queue ever forms at the platform, yet 6 seeds
// idle workers while calls wait (docs/governor.md, "What the simulator still finds"): 48, 49,
// 61, 142 and 195 cut by a queue verdict (a guess of a tenth of the load fits the loop's fixed
// phases with own times a tenth of the latency, and the prior's pull narrows the wide spread
// that guess leaves: 195, 8 callers on 9 workers, the limit 3); 20 at the ceiling, 64 (3.5 %).
// Held from the start's end on 2 to 4 replicas before the learner was kept through its start:
// 26, 64, 78, 95, 104, 162, 179 (docs/decisions/governor-model.md, "The learner kept through
// its start"). A prior that only widens holds the cut ones and costs the capacity bench's
// family ("Closed loops of one kind below the workers, two fixes tried").
const KNOWN_MISSES = [20, 48, 49, 61, 142, 195]

describe('closed loops of one kind below the workers, 200 seeded shapes', () => {
  it('keeps a worker busy for every call waiting on every seed but the known misses, and those still miss', async () => {
    await expectKnownMisses(200, KNOWN_MISSES, (seed) => closedLoopMiss(closedLoopShape(seed)))
  }, 900_000)
})
