import { describe, expect, it } from 'vitest'
import { failuresOf } from './refresh-ahead-checks.js'

// The refresh-ahead model's guarantees (docs/refresh-ahead.md) on seeded random trace
// shapes, on the simulator's clock: the model's own functions deciding, against a
// stale-while-revalidate cache (nginx's use_stale updating) on the same asks. SIM_RUNS sets
// how many seeds (from SIM_FIRST; seeds 51 to 100 run in test:slow,
// test/slow/refresh-ahead-shapes.test.ts); SIM_SEED replays one.

const runs = Number(process.env.SIM_RUNS ?? 50)
const first = Number(process.env.SIM_FIRST ?? 1)
const only = process.env.SIM_SEED === undefined ? null : Number(process.env.SIM_SEED)
const seeds = only === null ? Array.from({ length: runs }, (_, i) => first + i) : [only]

describe('refresh ahead on random dashboard traces', () => {
  it(only === null ? `keeps popular reports fresh at the model's price, alone and beside another team's burst, over ${runs} seeded trace shapes` : `keeps every guarantee in trace shape ${only}`, () => {
    const failures = failuresOf(seeds, only !== null)
    expect(failures, failures.join('\n')).toEqual([])
  }, 120_000)

  // Long seat waits for half the calls or more: the callers' calls seated first answer fast, the
  // refreshes ahead after them slowly; a lead read from all the class's calls reads those waits
  // as spread and starts the refreshes early, 1.21 and 1.26 times the calls of a
  // stale-while-revalidate cache (docs/decisions/refresh-ahead-model.md, 2026-11-29).
  it.skipIf(only !== null)("keeps the price where a refresh ahead waits for a seat behind its team's callers' calls", () => {
    const failures = failuresOf([276, 500])
    expect(failures, failures.join('\n')).toEqual([])
  })
})
