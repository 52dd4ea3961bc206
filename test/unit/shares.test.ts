import { describe, expect, it } from 'vitest'
import { fairShares, owedSeats, type TeamLoad } from '../../src/platform/governor/shares.js'

// The teams' shares of a credential's seats (docs/governor.md, "Words": share, nominal share, owed seats).

/** A team as the shares see it: weight 1, no ceiling, nothing held or waited for unless said. */
function team(name: string, t: Partial<TeamLoad> = {}): TeamLoad {
  return { team: name, weight: 1, held: 0, waiting: 0, cap: null, peak: 0, ...t }
}

const sum = (m: ReadonlyMap<string, number>) => [...m.values()].reduce((a, b) => a + b, 0)

/** The water-filling alone: each team wants its peak (nothing held or waiting, no ceiling). */
const waterFill = (seats: number, wants: { team: string; weight: number; want: number }[]) => fairShares(seats, wants.map((w) => team(w.team, { weight: w.weight, peak: w.want })))

describe('the water-filling (fairShares over what each team wants)', () => {
  it('gives each team its weighted part when all want more than that', () => {
    const shares = waterFill(8, [
      { team: 'a', weight: 1, want: Infinity },
      { team: 'b', weight: 3, want: Infinity },
    ])
    expect(shares).toEqual(new Map([['a', 2], ['b', 6]]))
  })

  it('gives a team that wants less than its part what it wants, and the rest to the others by weight', () => {
    const shares = waterFill(10, [
      { team: 'small', weight: 1, want: 1 },
      { team: 'a', weight: 1, want: Infinity },
      { team: 'b', weight: 2, want: Infinity },
    ])
    expect(shares.get('small')).toBe(1)
    expect(shares.get('a')).toBeCloseTo(3)
    expect(shares.get('b')).toBeCloseTo(6)
    expect(sum(shares)).toBeCloseTo(10)
  })

  it('fills in rounds: a team filled in a later round still gets what it wants, max-min fair', () => {
    // 12 seats over 4 teams: 3 each, but c wants 2 (1 left to the others: 3⅓ each), then b wants 3.2.
    const shares = waterFill(12, [
      { team: 'a', weight: 1, want: Infinity },
      { team: 'b', weight: 1, want: 3.2 },
      { team: 'c', weight: 1, want: 2 },
      { team: 'd', weight: 1, want: Infinity },
    ])
    expect(shares.get('c')).toBe(2)
    expect(shares.get('b')).toBe(3.2)
    expect(shares.get('a')).toBeCloseTo(3.4)
    expect(shares.get('d')).toBeCloseTo(3.4)
    expect(sum(shares)).toBeCloseTo(12)
  })

  it('leaves seats unshared when every team wants less than there are, and never shares more than there are', () => {
    const shares = waterFill(10, [
      { team: 'a', weight: 1, want: 2 },
      { team: 'b', weight: 5, want: 3 },
    ])
    expect(shares).toEqual(new Map([['a', 2], ['b', 3]]))
    expect(sum(waterFill(3, [{ team: 'a', weight: 1, want: 5 }, { team: 'b', weight: 1, want: 5 }]))).toBeCloseTo(3)
  })

  it('gives nothing to a team that wants nothing, and nothing of no seats', () => {
    expect(waterFill(4, [{ team: 'a', weight: 1, want: 0 }, { team: 'b', weight: 1, want: Infinity }])).toEqual(new Map([['a', 0], ['b', 4]]))
    expect(waterFill(-2, [{ team: 'a', weight: 1, want: Infinity }])).toEqual(new Map([['a', 0]]))
    expect(waterFill(4, [])).toEqual(new Map())
  })
})

describe('fairShares', () => {
  it('shares the seats among the active teams by weight, each within its ceiling, what a ceiling leaves going to the others', () => {
    const busy = { waiting: 20 }
    const shares = fairShares(12, [team('a', busy), team('b', { weight: 2, ...busy }), team('capped', { weight: 3, cap: 2, ...busy })])
    expect(shares.get('capped')).toBe(2)
    expect(shares.get('a')).toBeCloseTo(10 / 3)
    expect(shares.get('b')).toBeCloseTo(20 / 3)
  })

  it('gives a team that wants less than its nominal share what it wants (what it holds and waits for, or its peak within the linger), and the rest to the others', () => {
    const shares = fairShares(12, [team('small', { held: 1, peak: 3 }), team('big', { held: 6, waiting: 20 })])
    expect(shares).toEqual(new Map([['small', 3], ['big', 9]]))
  })

  it('gives a team at least its nominal share when it wants that much, whatever the others use', () => {
    const busy = fairShares(8, [team('a', { held: 8, waiting: 20 }), team('b', { peak: 6 })])
    expect(busy).toEqual(new Map([['a', 4], ['b', 4]]))
  })

  it('gives a team alone every seat it wants, and nothing to a team that wants none', () => {
    expect(fairShares(5, [team('alone', { held: 1, waiting: 9 })])).toEqual(new Map([['alone', 5]]))
    expect(fairShares(5, [team('idle')])).toEqual(new Map([['idle', 0]]))
  })
})

describe('owedSeats', () => {
  it('owes an active team that waits for nothing as much of its share as it held and waited for within the linger, less what it holds', () => {
    const teams = [team('back', { peak: 3, held: 1 }), team('busy', { held: 1, waiting: 6, peak: 7 })]
    const shares = new Map([['back', 4], ['busy', 4]])
    // back: min(4, 3) - 1 = 2; busy waits: it is owed nothing (it takes what is free).
    expect(owedSeats(shares, teams)).toBe(2)
  })

  it('owes no more than the share, nothing to a team that holds its peak or more, and nothing to a team without a share', () => {
    expect(owedSeats(new Map([['a', 1.5]]), [team('a', { peak: 6 })])).toBe(1.5)
    expect(owedSeats(new Map([['a', 4]]), [team('a', { peak: 2, held: 3 })])).toBe(0)
    expect(owedSeats(new Map(), [team('a', { peak: 2 })])).toBe(0)
  })

  it('owes whole seats of the shares on one replica (a fraction of a seat is no one\'s), a share within 1e-9 of a seat that seat', () => {
    expect(owedSeats(new Map([['a', 1.5]]), [team('a', { peak: 6 })], true)).toBe(1)
    expect(owedSeats(new Map([['a', 2 - 1e-12]]), [team('a', { peak: 6 })], true)).toBe(2)
    expect(owedSeats(new Map([['a', 2.9], ['b', 3]]), [team('a', { peak: 6 }), team('b', { peak: 6, waiting: 1 })], true)).toBe(2)
  })

  it('owes the seats of every lingering team, summed', () => {
    const teams = [team('x', { peak: 1 }), team('y', { peak: 2 }), team('z', { peak: 6, weight: 2 })]
    // Shares of 8 over what each wants: 1, 2, and the 5 left to z.
    expect(owedSeats(fairShares(8, teams), teams)).toBe(1 + 2 + 5)
  })
})
