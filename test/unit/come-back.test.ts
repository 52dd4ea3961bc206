import { describe, expect, it } from 'vitest'
import { comeBackSec, type CallAhead } from '../../src/platform/governor/seat.js'

// A refusal's retry-after (docs/governor.md, "A refusal's retry-after"): the seat-time left of
// the calls ahead of a newcomer over the seats, whole seconds rounded up, 1 to the bound.

const MAX_MS = 60_000
const waiting = (...ms: (number | null)[]): CallAhead[] => ms.map((m) => ({ ms: m, ranMs: 0 }))

describe('comeBackSec', () => {
  it('is the seat-time of the calls waiting over the seats, rounded up to whole seconds', () => {
    expect(comeBackSec(waiting(2_500), 1, MAX_MS)).toBe(3)
    expect(comeBackSec(waiting(2_500, 2_500, 2_500), 1, MAX_MS)).toBe(8)
    // Four calls of 2 s over four seats: one round of 2 s.
    expect(comeBackSec(waiting(2_000, 2_000, 2_000, 2_000), 4, MAX_MS)).toBe(2)
    expect(comeBackSec(waiting(1_000, 3_000), 2, MAX_MS)).toBe(2)
  })

  it('counts of a call in flight what its kind leaves of it, none below nothing', () => {
    // The repro's seat: a call of 2.5 s in flight for 0.1 s and one waiting (4.9 s), then the same call at 1 s with none waiting (1.5 s).
    expect(comeBackSec([{ ms: 2_500, ranMs: 100 }, { ms: 2_500, ranMs: 0 }], 1, MAX_MS)).toBe(5)
    expect(comeBackSec([{ ms: 2_500, ranMs: 1_000 }], 1, MAX_MS)).toBe(2)
    // Overdue: it leaves nothing the estimate knows of; the call waiting still counts.
    expect(comeBackSec([{ ms: 2_500, ranMs: 9_000 }, { ms: 2_500, ranMs: 0 }], 1, MAX_MS)).toBe(3)
  })

  it('counts a call of a kind never answered as the mean of those known', () => {
    expect(comeBackSec(waiting(2_000, null, 4_000), 1, MAX_MS)).toBe(9)
    expect(comeBackSec(waiting(null, null, 3_000), 2, MAX_MS)).toBe(5)
    expect(comeBackSec([{ ms: null, ranMs: 1_000 }, { ms: 2_500, ranMs: 0 }], 1, MAX_MS)).toBe(4)
  })

  it('is 1 s where nothing tells the pace: no call ahead, none of a known kind, or less than a second left', () => {
    expect(comeBackSec([], 1, MAX_MS)).toBe(1)
    expect(comeBackSec(waiting(null, null), 1, MAX_MS)).toBe(1)
    expect(comeBackSec(waiting(100, 200), 2, MAX_MS)).toBe(1)
  })

  it('is never more than the bound (rounded up to whole seconds), and takes at least one seat', () => {
    expect(comeBackSec(waiting(...Array<number>(200).fill(4_500)), 2, MAX_MS)).toBe(60)
    expect(comeBackSec(waiting(9_000), 1, 1_500)).toBe(2)
    expect(comeBackSec(waiting(2_500), 0, MAX_MS)).toBe(3)
  })
})
