import { describe, expect, it } from 'vitest'
import { closedLoopMiss, closedLoopShape } from '../sim/closed-loop-shapes.js'

// Closed loops of one kind below the workers, 200 seeded shapes (test/sim/closed-loop-shapes.ts):
// *work-conserving* from the start's end on. No queue ever forms at the platform, yet 12 seeds
// idle workers while calls wait (docs/governor.md, "What the simulator still finds"):
// - cut by a queue verdict (49, 142, 195 on one replica; 61, 64 on 2 and 4): a guess of a
//   tenth of the load fits the loop's fixed phases with own times a tenth of the latency, and
//   the prior's pull narrows the wide spread that guess leaves (seed 195: 8 callers on 9
//   workers, the limit 3);
// - held from the start's end on 2 to 4 replicas (26, 78, 95, 104, 162, 179; 20 at the ceiling):
//   a replica that takes over as the learner in the start takes the record's limit in cruise,
//   where a closed loop at the limit shows no room (26: 22 to 24 of 47 workers, 35 callers).
// Each has a fix that holds the family and costs the capacity bench's family
// (docs/decisions/governor-model.md, "Closed loops of one kind below the workers, two fixes tried").
const KNOWN_MISSES = [20, 26, 49, 61, 64, 78, 95, 104, 142, 162, 179, 195]

describe('closed loops of one kind below the workers, 200 seeded shapes', () => {
  it('keeps a worker busy for every call waiting on every seed but the known misses, and those still miss', async () => {
    const missed: number[] = []
    const seen: string[] = []
    for (let seed = 1; seed <= 200; seed++) {
      const miss = await closedLoopMiss(closedLoopShape(seed))
      if (miss !== null) missed.push(seed)
      if (miss !== null && !KNOWN_MISSES.includes(seed)) seen.push(miss)
    }
    expect(seen, seen.join('\n')).toEqual([])
    expect(missed).toEqual(KNOWN_MISSES)
  }, 900_000)
})
