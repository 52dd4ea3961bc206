import { describe, expect, it } from 'vitest'
import { capacityMisses, capacityShape } from '../sim/capacity-shapes.js'

// The capacity bench's platform on one replica over 40 seeded shapes (test/sim/capacity-shapes.ts):
// the limit and the calls at the platform within 20 % of the knee from 30 s on, under 1 % of
// calls 429. The seeds that miss, and why (docs/decisions/governor-model.md, "The likelihood's
// moves on the limit in force"): calls of 702 ms to 2 s (5, 9, 37, 40), where the limit sits
// 2 to 7 seats past the knee with no level below it measured, and room shown moves K up a
// seat every few seconds, each level giving only a few % less than the one below it (5: 31
// to 49 on a knee of 29; 40: 34 to 40 on 27; 37: 25 to 30 on 23; 9: 14 on 11 for 3 s); 7, a
// knee of 4, where the band is the knee alone and the probe seat is out of it; 2 and 13,
// knees of 22 to 31 whose calls are 14 % to 27 % slower a call past them, where the
// likelihood showed no room at the level whose answers a second fell, so no fall is read
// there, and the limit reaches 27 to 40 for a second or more.
const KNOWN_MISSES = [2, 5, 7, 9, 13, 37, 40]

describe('the capacity bench\'s platform on one replica, 40 seeded shapes', () => {
  it('holds the bench\'s targets on every seed but the known misses, and those still miss', async () => {
    const missed: number[] = []
    const seen: string[] = []
    for (let seed = 1; seed <= 40; seed++) {
      const misses = await capacityMisses(capacityShape(seed))
      if (misses.length > 0) missed.push(seed)
      if (misses.length > 0 && !KNOWN_MISSES.includes(seed)) seen.push(...misses)
    }
    expect(seen, seen.join('\n')).toEqual([])
    expect(missed).toEqual(KNOWN_MISSES)
  }, 300_000)
})

// The same 40 shapes on three replicas, where the limit dips to read the fall (docs/governor.md,
// "Cruise"): 15 hold (14 before the dip two FALLs down where room and a queue at the limit
// alone move the limit between K + 1 and K + 2, 12 while a fall above K held the probe seat
// back, 4 before the dip; 16 before the start read its refusals, 23 then holding by its path:
// docs/decisions/governor-model.md, "The start's limit back to what the platform took").
// The misses are not traced one by one: calls of 356 ms
// to 2 s, knees of 4, and short calls (20 to 230 ms) whose limit sits a few seats out of the
// band, or whose start's doubling past the refusal draws more than 1 % of calls 429.
const HOLD_ON_THREE = [3, 12, 14, 15, 16, 17, 19, 20, 21, 22, 26, 29, 30, 31, 36]

describe('the capacity bench\'s platform on three replicas, 40 seeded shapes', () => {
  it('holds the bench\'s targets on the seeds that hold, and misses on the others', async () => {
    const held: number[] = []
    for (let seed = 1; seed <= 40; seed++) if ((await capacityMisses(capacityShape(seed), 3)).length === 0) held.push(seed)
    expect(held).toEqual(HOLD_ON_THREE)
  }, 300_000)
})
