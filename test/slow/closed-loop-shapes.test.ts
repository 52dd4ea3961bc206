import { describe, expect, it } from 'vitest'
import { closedLoopMiss, closedLoopShape } from '../sim/closed-loop-shapes.js'

// Closed loops of one kind below the workers, 200 seeded shapes (test/sim/closed-loop-shapes.ts):
// *work-conserving* from the start's end on. The seeds that miss, each on 2 to 4 replicas, none
// by a cut: the limit grows from the start's level too slowly or not at all (26: 22 to 24 on
// 47 workers, 35 callers, from 16 s to the end), as at loads of the limit alone every guess at
// or above it gives the same own times and a closed loop's fixed phases fit those below as well,
// so no room is shown; 20 idles a worker at the ceiling, 64, in 2.4 % of samples
// (docs/decisions/governor-model.md, "The prior widens a spread, never narrows one").
const KNOWN_MISSES = [20, 26, 78, 95, 104, 162, 179]

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
