import { describe, expect, it } from 'vitest'
import { failuresOf } from '../sim/refresh-ahead-checks.js'

// The refresh-ahead model's guarantees on the trace shapes after `npm test`'s fifty
// (test/sim/refresh-ahead.test.ts runs seeds 1 to 50): seeds 51 to 100. A failing seed
// names the command that replays it.

const SEEDS = Array.from({ length: 50 }, (_, i) => 51 + i)

describe('refresh ahead on random dashboard traces, the next fifty shapes', () => {
  it('keeps popular reports fresh at the model\'s price, alone and beside another team\'s burst, over trace shapes 51 to 100', () => {
    const failures = failuresOf(SEEDS)
    expect(failures, failures.join('\n')).toEqual([])
  }, 240_000)
})
