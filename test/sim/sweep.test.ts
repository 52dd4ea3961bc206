import { describe, expect, it } from 'vitest'
import { sweep } from './sweep.js'

// The governor's guarantees (docs/governor.md) on seeded random platforms and teams: the
// real governor on a simulated clock. SIM_RUNS sets how many seeds (from SIM_FIRST);
// SIM_SEED replays one, printing every check. test/slow/sim-sweep.test.ts runs 2,000 more.

const runs = Number(process.env.SIM_RUNS ?? 200)
const first = Number(process.env.SIM_FIRST ?? 1)
const only = process.env.SIM_SEED === undefined ? null : Number(process.env.SIM_SEED)

describe('the governor on random platforms', () => {
  it(only === null ? `keeps every guarantee over ${runs} seeded scenarios` : `keeps every guarantee in scenario ${only}`, async () => {
    const seeds = only === null ? Array.from({ length: runs }, (_, i) => first + i) : [only]
    const failed = await sweep(seeds, 'npx vitest run test/sim/sweep.test.ts', only !== null)
    expect(failed, failed.join('\n')).toEqual([])
  }, 600_000)
})
