import { describe, expect, it } from 'vitest'
import { compareRank, loginBasis, rankAbove, type Ranked } from '../../src/platform/tokens/token-order.js'

// The order of a credential's tokens across replicas (src/platform/tokens/token-order.ts):
// a change someone made ranks by when it was made; a login the gateway makes itself
// ranks just above the token it replaced.

/** A change someone made at `at` (an operator's rotation, a configured token). */
const change = (at: number): Ranked => ({ basis: at, version: at })
/** A login made at `at`, replacing `replaced` (null: none). */
const login = (at: number, replaced: Ranked | null): Ranked => ({ basis: loginBasis(replaced), version: Math.max(at, (replaced?.version ?? 0) + 1) })
/** The one that ends up stored: each write taken when it ranks above what is there. */
const settle = (...writes: Ranked[]): Ranked => writes.reduce((stored, w) => (compareRank(w, stored) > 0 ? w : stored))

describe('the rank of a token across replicas', () => {
  it('changes someone made: the newest wins; the same millisecond is a tie (the stored one stays)', () => {
    expect(compareRank(change(200), change(100))).toBeGreaterThan(0)
    expect(compareRank(change(100), change(200))).toBeLessThan(0)
    expect(compareRank(change(100), change(100))).toBe(0)
  })

  it('a login ranks above the token it replaced, whoever set that one', () => {
    const rotated = change(100)
    expect(compareRank(login(150, rotated), rotated)).toBeGreaterThan(0)
    const first = login(50, null)
    const renewed = login(90, first)
    expect(compareRank(renewed, first)).toBeGreaterThan(0)
    // Even from a replica whose clock is behind: its version passes the replaced one's.
    expect(compareRank(login(10, rotated), rotated)).toBeGreaterThan(0)
  })

  it("a login made for a token that was already replaced never undoes an operator's rotation, whatever its version", () => {
    const first = login(10, null)
    const rotated = change(100)
    // A replica that still held `first` (refused, or about to expire) logs in later, even an hour later by its clock.
    const late = login(100 + 3_600_000, first)
    expect(compareRank(late, rotated)).toBeLessThan(0)
    expect(settle(first, rotated, late)).toBe(rotated)
    expect(settle(first, late, rotated)).toBe(rotated)
  })

  it('a login at start with nothing to replace ranks below any stored token', () => {
    expect(compareRank(login(500, null), change(100))).toBeLessThan(0)
    expect(compareRank(login(500, null), login(100, null))).toBeGreaterThan(0)
  })

  it('an operator rotating on top of a login wins over it; a replay of the rotated-over token does not come back', () => {
    const first = login(10, null)
    const renewed = login(50, first)
    const rotated = change(100)
    expect(settle(first, renewed, rotated)).toBe(rotated)
    expect(compareRank(renewed, rotated)).toBeLessThan(0)
    // Then the rotated token fails and a replica replaces it: that login wins, and the old rotation replayed does not.
    const afterRefusal = login(200, rotated)
    expect(settle(rotated, afterRefusal, rotated)).toBe(afterRefusal)
  })

  it('two logins racing to replace the same token settle on one, whichever order their writes come in', () => {
    const first = change(100)
    const x = login(150, first)
    const y = login(160, first)
    expect(settle(first, x, y)).toBe(y)
    expect(settle(first, y, x)).toBe(y)
  })

  it('is a total order: no three tokens outrank each other in a circle', () => {
    const first = login(10, null)
    const tokens = [first, change(100), login(300, first), change(50), login(120, change(100)), change(300)]
    for (const a of tokens) {
      for (const b of tokens) {
        for (const c of tokens) {
          if (compareRank(a, b) > 0 && compareRank(b, c) > 0) expect(compareRank(a, c)).toBeGreaterThan(0)
        }
        expect(Math.sign(compareRank(a, b)) === -Math.sign(compareRank(b, a))).toBe(true)
      }
    }
  })

  it('a token ranked anew above another ranks above it, as a change made then, whatever the clocks', () => {
    const start = change(500)
    expect(rankAbove(start, 400)).toEqual({ basis: 501, version: 501 })
    expect(rankAbove(start, 900)).toEqual({ basis: 900, version: 900 })
    expect(compareRank(rankAbove(start, 400), start)).toBeGreaterThan(0)
    const relogin = login(700, change(600))
    expect(compareRank(rankAbove(relogin, 0), relogin)).toBeGreaterThan(0)
  })
})
