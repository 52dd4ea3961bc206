import { describe, expect, it } from 'vitest'
import { askLedCopies, fewestCopies, fewestCopiesOf, timedCopies } from './refresh-ahead-oracle.js'

const F = 5000

describe('the fewest copies that serve known asks', () => {
  // Three clumps of asks, a freshness apart and more: a copy each when all are fresh, one fewer for each clump left stale.
  const times = [0, 1000, 2000, 6000, 6500, 12_000]

  it('lands each copy at the first ask the copy before cannot serve fresh', () => {
    expect(fewestCopies(times, F, 0, 0)).toEqual([3])
  })

  it('leaves stale the asks that spare the most copies', () => {
    // One stale answer spares the lone last ask's copy; two spare no more; three spare the middle clump's too.
    expect(fewestCopies(times, F, 0, 4)).toEqual([3, 2, 2, 1, 1])
  })

  it('serves fresh from the copy already there until it expires', () => {
    expect(fewestCopies(times, F, 2500, 2)).toEqual([2, 1, 1])
  })

  it("places the stale answers among reports where they spare copies", () => {
    // Dense asks: a stale answer there spares no copy; the lone asks' report gives them up.
    const dense = Array.from({ length: 40 }, (_, i) => i * 500)
    expect(fewestCopiesOf([dense, times], F, [0, 0], 0)).toEqual(4 + 3)
    expect(fewestCopiesOf([dense, times], F, [0, 0], 1)).toEqual(4 + 2)
    expect(fewestCopiesOf([dense, times], F, [0, 0], 3)).toEqual(4 + 1)
  })
})

describe('caches that do not know the latency', () => {
  const asks = [1000, 3000, 5200, 6000, 9000, 11_000]

  it('knowing the asks, start the call a lead before the first ask the copy cannot serve fresh', () => {
    // The copy there landed at 0; the ask at 5200 calls from 4700, landing at 5500: 5200 stale, 6000 fresh; 11000 is past 5500 + F.
    expect(askLedCopies(asks, F, F, 500, () => 800, 0)).toEqual({ copies: 2, stale: 2 })
    expect(askLedCopies(asks, F, F, 1000, () => 800, 0)).toEqual({ copies: 2, stale: 0 })
  })

  it('knowing neither, call a lead before each copy expires, until the asks end', () => {
    // Copies land at 0, 4800 (called at 4000), 9600 (at 8800): none past freshness.
    expect(timedCopies(asks, F, 0, 1000, () => 800, 0, 12_000)).toEqual({ copies: 2, stale: 0 })
    // A lead shorter than the latency: each copy lands 300 ms after the one before expired.
    expect(timedCopies(asks, F, 0, 500, () => 800, 0, 12_000)).toEqual({ copies: 2, stale: 1 })
  })
})
