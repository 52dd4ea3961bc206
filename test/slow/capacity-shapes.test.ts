import { describe, expect, it } from 'vitest'
import { expectKnownMisses } from '../sim/family.js'
import { capacityMisses, capacityShape } from '../sim/capacity-shapes.js'

// The capacity bench's platform on one replica over 40 seeded shapes (test/sim/capacity-shapes.ts):
// the limit and the calls at the platform within 20 % of the knee from 30 s on, under 1 % of
// calls 429. The seeds that miss, and why (docs/decisions/governor-model.md, "The likelihood's
// moves on the limit in force"): calls of 702 ms to 2 s (5, 9, 37, 40), where the limit sits
// 2 to 7 seats past the knee with no level below it measured, and room shown moves K up a
// seat every few seconds, each level giving only a few % less than the one below it (5: 31
// to 49 on a knee of 29; 40: 34 to 40 on 27; 37: 25 to 30 on 23; 9: 14 on 11 for 3 s); 7 and
// 35, knees of 4, where the band is the knee alone and the probe seat is out of it (35 since
// it comes back 10 s after a queue took it: docs/governor.md, "Cruise"); 2, a knee of
// 31 whose calls are 14 % slower a call past it, where the likelihood showed no room at the
// level whose answers a second fell, so no fall is read there, and the limit reaches 40 for a
// second or more (13, alike, holds since the seats past K double from those the limit took).
const KNOWN_MISSES = [2, 5, 7, 9, 35, 37, 40]

describe('the capacity bench\'s platform on one replica, 40 seeded shapes', () => {
  it('holds the bench\'s targets on every seed but the known misses, and those still miss', async () => {
    await expectKnownMisses(40, KNOWN_MISSES, (seed) => capacityMisses(capacityShape(seed)))
  }, 300_000)
})

// The same 40 shapes on three replicas, where the limit dips to read the fall (docs/governor.md,
// "Cruise"): 22 hold since the learner is kept through its start (3, 25, 28, 34, 37 and 38 on,
// its start's refusal and levels its own; 4, 11 and 26 off, 26 a standing limit of 27 on a
// knee of 22 beside 4 % of calls 429: decisions/governor-model.md, "The learner kept through
// its start"); the traces below are of the 19 that held before it. 18 held (15 before the seats past K doubled from those the limit took: 2, 4, 13
// and 27 on, 3 off by one idle sample; 14 before the dip two FALLs down, 12 while a fall above
// K held the probe seat back, 4 before the dip; docs/decisions/governor-model.md, "The
// capacity family on three replicas, traced"). The 22
// misses, each traced, by what takes the limit or the calls out of the band from 30 s on:
// - the start's overshoot never read down (calls of 702 ms to 2 s: 5, 10, 25, 37, 38): the
//   start doubles to 64 or the refusal a DECIDE apart on answers of the level before, a queue
//   verdict takes the limit to 33 (K 32) and no fall is read there: no level below it is
//   measured, and the calls overtake, so it does not dip (10: 33 on a knee of 22 for 50 s);
// - a queue verdict far below the knee, then the doubling back past it (603 ms to 1 s: 9,
//   34, 40; 25 and 5 after the overshoot): the workers' worth bounds it little where calls
//   past the knee take 3 to 8 times as long (9: 5 to 9 on 11 for 22 s);
// - K a seat or more past the band's top, room and a queue at the limit alone moving the
//   limit between K + 1 and K + 2 (322 to 775 ms: 8, 18, 28, 32; 28: 24 to 28 on 19; 11 holds since room at a
//   level that queued needs twice SURE);
// - a dip below the band's low edge, DIP of a limit within a seat of the knee (23: 6 → 4 on 7;
//   33: 22 → 17 on 24);
// - knees of 4, where the probe seat, kept across replicas, is out of the band (7, 35);
// - the limit past the refusal in cruise, its seats turning over 429s that no cruise rule
//   reads (24: 24 on 22, 69 % of calls 429; 39: 9 to 10 on 8, 57 %);
// - a worker idle for one to three samples while the limit is in the band: seats in transit
//   as the lease plan splits the team's share by each replica's queue, which swings (calls of
//   20 to 24 ms: 1, 3, 6; 3: 19 of 30 held at 55 s, 16 seats moving between two replicas).
const HOLD_ON_THREE = [2, 3, 12, 13, 14, 15, 16, 17, 19, 20, 21, 22, 25, 27, 28, 29, 30, 31, 34, 36, 37, 38]

describe('the capacity bench\'s platform on three replicas, 40 seeded shapes', () => {
  it('holds the bench\'s targets on the seeds that hold, and misses on the others', async () => {
    const held: number[] = []
    for (let seed = 1; seed <= 40; seed++) if ((await capacityMisses(capacityShape(seed), 3)).length === 0) held.push(seed)
    expect(held).toEqual(HOLD_ON_THREE)
  }, 300_000)
})
