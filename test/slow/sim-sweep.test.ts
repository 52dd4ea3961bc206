import { describe, expect, it } from 'vitest'
import { sweep } from '../sim/sweep.js'

// 2,000 more seeded scenarios than npm test's (seeds 201 to 2200): the same checks.

const FIRST = 201
const RUNS = 2_000

describe('the governor on random platforms (slow)', () => {
  it(`keeps every guarantee over ${RUNS} more seeded scenarios`, async () => {
    const seeds = Array.from({ length: RUNS }, (_, i) => FIRST + i)
    const failed = await sweep(seeds, 'npx vitest run test/sim/sweep.test.ts')
    expect(failed, `${failed.length} of ${RUNS} seeds failed\n${failed.join('\n')}`).toEqual([])
  }, 1_800_000)
})
