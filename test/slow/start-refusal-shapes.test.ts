import { describe, it } from 'vitest'
import { expectKnownMisses } from '../sim/family.js'
import { startPastRefusal, startShape } from '../sim/start-refusal-shapes.js'

// The capacity bench's start on one replica over 40 seeded shapes (test/sim/start-refusal-shapes.ts):
// a platform whose calls slow past its knee and that answers 429 past 30 % to 100 % of it,
// a gateway loop a few ms late. The seeds whose start passes the refusal, and why
// (docs/decisions/governor-model.md, "The capacity bench's start past the refusal"): a level
// that still gains (16 on knees of 14 to 19: 1.39 to 2.0 times the level before, read on its
// answers a second) doubles to 32 past a refusal at 21 to 28 (23, 25, 36), and every call
// waiting then is answered 429 before the pause holds its team (42 to 120 calls): nothing
// before the first 429 tells the refusal, and on one replica, where the level left was timed,
// that 429 moves no limit (read there, the limit near the refusal put 9 shapes of the
// capacity family on: docs/governor.md, "Start"); 27 is cruise's, the seats past K doubled
// 12 → 20 past a refusal at 16 at 3.1 s. Read late (11, 29), the first 429 takes the limit
// back to the level the doubling left (16): the first round past the refusal is left (11 and
// 13 calls), under 1 % of the calls now that the limit after the start is the knee (16 and 14
// at 10 s, where a limit walked down a seat a 429 left 12 and 8: 986 and 1,043 calls sent,
// 1,176 and 1,635 now).
const PAST_REFUSAL = [23, 25, 27, 36]

describe('the capacity bench\'s start on one replica, 40 seeded shapes', () => {
  it('passes the platform\'s refusal on the known seeds alone, and still on those', async () => {
    await expectKnownMisses(40, PAST_REFUSAL, (seed) => startPastRefusal(startShape(seed)))
  }, 300_000)
})
