import { describe, expect, it } from 'vitest'
import { COUNT_WINDOW_MS, CountShares, platformCount, type CountAdmission } from '../../src/platform/pauses/count-shares.js'
import { fakeClock } from '../helpers/clock.js'

// The platform's count of the credential's calls, shared out by weight (docs/governor.md, "The platform's count, shared out").

function counts(weights: Record<string, number> = {}) {
  const clock = fakeClock(1_800_000_000_000)
  const shares = new CountShares({ weightOf: (team) => weights[team] ?? 1, clock })
  /** Sends `n` calls of `team`, each answered as a platform of `limit` calls a window answers, `left` of them before; the admissions. */
  const send = (team: string, n: number, limit: number, left: { n: number }): CountAdmission[] =>
    Array.from({ length: n }, () => {
      const a = shares.admit(team)
      // As Laravel's throttle answers: a call past the count is refused, and not counted.
      if (a.kind === 'sent' && left.n === 0) shares.told(a, 429, { limit, remaining: 0, refusal: true }, null)
      else if (a.kind === 'sent') shares.told(a, 200, { limit, remaining: --left.n, refusal: false }, null)
      return a
    })
  /** The platform refuses past its count: a 429 with nothing left, as Laravel's throttle answers it. */
  const enforce = (limit: number, retryAfterMs: number | null = 30_000) => {
    shares.told(shares.pass(), 429, { limit, remaining: 0, refusal: true }, retryAfterMs)
  }
  /** The platform has refused past its count of `limit`, a window ago: `left` of it now (what send() lowers). */
  const begin = (limit: number, left = limit) => {
    enforce(limit)
    clock.advance(COUNT_WINDOW_MS)
    return { n: left }
  }
  return { clock, shares, send, enforce, begin }
}

const sentOf = (admissions: CountAdmission[]) => admissions.filter((a) => a.kind === 'sent').length

describe('platformCount: the count an answer carries', () => {
  it.each([
    [{ 'x-ratelimit-limit': '60', 'x-ratelimit-remaining': '59' }, { limit: 60, remaining: 59, refusal: false }],
    [{ 'x-ratelimit-limit': ' 60 ', 'x-ratelimit-remaining': '0' }, { limit: 60, remaining: 0, refusal: false }],
    [{ 'x-ratelimit-limit': '60', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '1800000060' }, { limit: 60, remaining: 0, refusal: true }],
    [{ 'x-ratelimit-limit': '60' }, null],
    [{ 'x-ratelimit-limit': '0', 'x-ratelimit-remaining': '0' }, null],
    [{ 'x-ratelimit-limit': '60', 'x-ratelimit-remaining': '61' }, null],
    [{ 'x-ratelimit-limit': '6e1', 'x-ratelimit-remaining': '1' }, null],
    [{ 'x-ratelimit-limit': '60', 'x-ratelimit-remaining': '-1' }, null],
    [{ 'x-ratelimit-limit': ['60', '60'], 'x-ratelimit-remaining': '1' }, null],
    [{}, null],
  ])('%j → %j', (headers, count) => {
    expect(platformCount(headers)).toEqual(count)
  })
})

describe('CountShares', () => {
  it("takes a 429 with nothing left but without Laravel's x-ratelimit-reset for another limiter's: the count is not shared out", () => {
    const { shares } = counts()
    shares.told(shares.pass(), 429, { limit: 20, remaining: 0, refusal: false }, 1000)
    expect(shares.view().enforced).toBe(false)
  })

  it("takes a refusal of a smaller limit than the count's, read within its window, for a route's own limiter: nothing is held, the count read on", () => {
    const { shares } = counts()
    shares.told(shares.pass(), 200, { limit: 60, remaining: 59, refusal: false }, null)
    // Laravel's `throttle:2,10` on one route: its answers carry its own count, the stricter, and its refusal Laravel's headers.
    shares.told(shares.pass(), 201, { limit: 2, remaining: 1, refusal: false }, null)
    shares.told(shares.pass(), 429, { limit: 2, remaining: 0, refusal: true }, 600_000)
    expect(shares.view()).toMatchObject({ limit: 60, enforced: false, heldUntil: 0, windowMs: COUNT_WINDOW_MS })
    expect(shares.admit('a').kind).toBe('sent')
    // The count's own answers are read as before: what is left counts every call sent since its word.
    expect(shares.view().left).toBe(56)
  })

  it("lets a route's own refusal read before the count bind nothing once the count's larger limit is read", () => {
    const { shares } = counts()
    shares.told(shares.pass(), 429, { limit: 2, remaining: 0, refusal: true }, 600_000)
    expect(shares.view()).toMatchObject({ limit: 2, enforced: true })
    shares.told(shares.pass(), 200, { limit: 60, remaining: 58, refusal: false }, null)
    expect(shares.view()).toMatchObject({ limit: 60, enforced: false, heldUntil: 0, windowMs: COUNT_WINDOW_MS })
  })

  it('reads no smaller limit as the count while it runs, a counting window later included: a route of its own is no count the platform lowered', () => {
    const { shares, clock } = counts()
    shares.told(shares.pass(), 200, { limit: 60, remaining: 59, refusal: false }, null)
    clock.advance(2 * COUNT_WINDOW_MS)
    shares.told(shares.pass(), 429, { limit: 30, remaining: 0, refusal: true }, 600_000)
    expect(shares.view()).toMatchObject({ limit: 60, enforced: false, heldUntil: 0 })
  })

  it('acts on no count the platform only writes: calls past it go on until the platform refuses one', () => {
    const { send } = counts()
    const left = { n: 20 }
    expect(sentOf(send('a', 50, 20, left))).toBe(50)
  })

  it('once the platform refused past its count, a team alone spends it whole, and past it the platform decides', () => {
    const { shares, send, begin } = counts()
    const left = begin(20)
    expect(sentOf(send('a', 25, 20, left))).toBe(25)
    // Counted a count's worth and one more at most: past it, nothing it is judged by changes.
    expect(shares.view().teams).toEqual([{ team: 'a', sent: 21, sentElsewhere: 0, share: 20 }])
  })

  it('keeps for a team that asked within the window what it is owed of its share: the other team spends the rest, not that', () => {
    const { send, begin } = counts()
    const left = begin(20)
    expect(sentOf(send('b', 1, 20, left))).toBe(1)
    // Shares of 10 each: a may send while what is left covers b's 9 still owed.
    expect(sentOf(send('a', 30, 20, left))).toBe(10)
    expect(sentOf(send('b', 9, 20, left))).toBe(9)
    expect(left.n).toBe(0)
  })

  it('shares the count by weight', () => {
    const { send, begin } = counts({ a: 1, b: 3 })
    const left = begin(40)
    send('b', 1, 40, left)
    expect(sentOf(send('a', 40, 40, left))).toBe(10)
    expect(sentOf(send('b', 29, 40, left))).toBe(29)
    expect(left.n).toBe(0)
  })

  it('lets a team within its share through whatever is left: what it knows of the count may be a window old', () => {
    const { shares, send, begin } = counts()
    // The platform's window began with calls of another replica: 6 left of 20.
    const left = begin(20, 6)
    send('b', 1, 20, left)
    expect(sentOf(send('a', 11, 20, left))).toBe(10)
    expect(shares.view().left).toBe(0)
  })

  it('a refused call waits until its team\'s oldest call counted leaves the window', () => {
    const { shares, send, clock, begin } = counts()
    const left = begin(4)
    send('b', 1, 4, left)
    send('a', 1, 4, left)
    clock.advance(10_000)
    send('a', 1, 4, left)
    const refused = shares.admit('a')
    expect(refused).toEqual({ kind: 'refused', waitMs: COUNT_WINDOW_MS - 10_000 })
    clock.advance(COUNT_WINDOW_MS - 10_000)
    expect(shares.admit('a').kind).toBe('sent')
  })

  it('counts the platform\'s word of the last-sent call answered, less the calls sent since: an older answer coming late says nothing newer', () => {
    const { shares, enforce, clock } = counts()
    enforce(10)
    clock.advance(COUNT_WINDOW_MS)
    const [first, second] = [shares.admit('a'), shares.admit('a')]
    if (first.kind !== 'sent' || second.kind !== 'sent') throw new Error('refused')
    shares.told(second, 200, { limit: 10, remaining: 3, refusal: false }, null)
    shares.told(first, 200, { limit: 10, remaining: 9, refusal: false }, null)
    expect(shares.view().left).toBe(3)
    shares.admit('a')
    expect(shares.view().left).toBe(2)
  })

  it('counts a call it does not hold back among the sends, in no team\'s share', () => {
    const { shares, enforce } = counts()
    enforce(10)
    expect(shares.view()).toMatchObject({ enforced: true, left: 0, teams: [] })
    // A window begun anew: 8 left.
    shares.told(shares.pass(), 200, { limit: 10, remaining: 8, refusal: false }, null)
    shares.pass()
    expect(shares.view()).toMatchObject({ left: 7, teams: [] })
    // Past the count, what is left reads as none.
    for (let i = 0; i < 9; i++) shares.pass()
    expect(shares.view().left).toBe(0)
  })

  it('tells a call asking for a seat whether it would be refused now, without counting it', () => {
    const { send, begin, shares } = counts()
    const left = begin(20)
    send('b', 1, 20, left)
    expect(shares.refusing('a')).toBeNull()
    send('a', 10, 20, left)
    expect(shares.refusing('a')).toBe(COUNT_WINDOW_MS)
    expect(shares.view().teams).toEqual([{ team: 'b', sent: 1, sentElsewhere: 0, share: 10 }, { team: 'a', sent: 10, sentElsewhere: 0, share: 10 }])
    // A team's ask makes it one of the teams the count is shared by.
    expect(shares.refusing('c')).toBeNull()
    expect(shares.view().teams.map((t) => t.share)).toEqual([20 / 3, 20 / 3, 20 / 3])
  })

  it('a call let through but never sent is not counted', () => {
    const { shares, enforce, clock } = counts()
    enforce(10)
    clock.advance(COUNT_WINDOW_MS)
    const a = shares.admit('a')
    if (a.kind !== 'sent') throw new Error('refused')
    shares.unsent('a', a.seq)
    expect(shares.view().teams).toEqual([{ team: 'a', sent: 0, sentElsewhere: 0, share: 10 }])
  })

  it('a 429 that says its window ends later than a minute lengthens the counting window', () => {
    const { shares, enforce } = counts()
    enforce(10, 5 * 60_000)
    expect(shares.view().windowMs).toBe(5 * 60_000)
    enforce(10, 1000)
    expect(shares.view().windowMs).toBe(5 * 60_000)
  })

  it('a team that asked nothing within the window is owed nothing', () => {
    const { send, clock, begin } = counts()
    const left = begin(20)
    send('b', 1, 20, left)
    clock.advance(COUNT_WINDOW_MS)
    left.n = 20
    expect(sentOf(send('a', 20, 20, left))).toBe(20)
  })

  it("reads a window begun anew from the count left rising: the teams' calls before it leave their counts", () => {
    const { shares, send, begin } = counts()
    const left = begin(20)
    send('b', 5, 20, left)
    expect(sentOf(send('a', 20, 20, left))).toBe(10)
    // The platform's window ends: its next answer counts that call the first of a new one.
    left.n = 20
    expect(sentOf(send('b', 1, 20, left))).toBe(1)
    expect(shares.view().teams).toEqual([{ team: 'b', sent: 1, sentElsewhere: 0, share: 10 }, { team: 'a', sent: 0, sentElsewhere: 0, share: 10 }])
    // b asked 5 in the last window: it is kept 7.5 of this one's, and a spends the rest.
    expect(sentOf(send('a', 20, 20, left))).toBe(12)
    expect(sentOf(send('b', 6, 20, left))).toBe(6)
    expect(left.n).toBe(1)
  })

  it('takes a count read longer ago than the window for unknown: its window is over', () => {
    const { shares, send, clock, begin } = counts()
    const left = begin(20)
    send('b', 1, 20, left)
    send('a', 10, 20, left)
    expect(shares.view().left).toBe(9)
    clock.advance(COUNT_WINDOW_MS - 1)
    expect(shares.view().left).toBe(9)
    clock.advance(1)
    expect(shares.view().left).toBeNull()
  })

  it('an answer without a count leaves what is left unknown: the platform decides', () => {
    const { shares, send, begin } = counts()
    const left = begin(20)
    send('b', 1, 20, left)
    send('a', 10, 20, left)
    const a = shares.admit('a')
    expect(a.kind).toBe('refused')
    const b = shares.admit('b')
    if (b.kind !== 'sent') throw new Error('refused')
    shares.told(b, 200, null, null)
    expect(shares.view().left).toBeNull()
    expect(shares.admit('a').kind).toBe('sent')
  })

  it("takes an answer without a count to a call the platform did not serve (a route's 404, routed before its throttle) for no word of the count", () => {
    const { send, begin, shares } = counts()
    const left = begin(20)
    send('b', 1, 20, left)
    send('a', 10, 20, left)
    expect(shares.admit('a').kind).toBe('refused')
    const probe = shares.admit('b')
    if (probe.kind !== 'sent') throw new Error('refused')
    shares.told(probe, 404, null, null)
    expect(shares.view().left).toBe(8)
    expect(shares.admit('a').kind).toBe('refused')
  })

  it("holds every call of the token, within its share or not, until the window the platform refused in ends, as its retry-after says", () => {
    const { send, begin, shares, clock } = counts()
    const left = begin(20)
    send('b', 1, 20, left)
    const a = shares.admit('a')
    if (a.kind !== 'sent') throw new Error('refused')
    shares.told(a, 429, { limit: 20, remaining: 0, refusal: true }, 12_000)
    expect(shares.refusing('b')).toBe(12_000)
    expect(shares.admit('b')).toEqual({ kind: 'refused', waitMs: 12_000 })
    clock.advance(12_000)
    expect(shares.refusing('b')).toBeNull()
    expect(send('b', 1, 20, left).map((x) => x.kind)).toEqual(['sent'])
  })

  it('ends the sharing when the platform serves a second call with nothing left in a window: its count binds nothing', () => {
    const { begin, shares } = counts()
    begin(4)
    const calls = Array.from({ length: 4 }, () => shares.admit('a'))
    calls.forEach((c, i) => {
      if (c.kind !== 'sent') throw new Error('refused')
      shares.told(c, 200, { limit: 4, remaining: Math.max(0, 2 - i), refusal: false }, null)
    })
    expect(shares.view().enforced).toBe(false)
    // Refused past it again, as Laravel refuses: shared out again.
    shares.told(shares.pass(), 429, { limit: 4, remaining: 0, refusal: true }, null)
    expect(shares.view().enforced).toBe(true)
  })

  it("keeps a team what it asked in the last window, its calls refused too, not only what it was let send", () => {
    const { send, begin, shares } = counts()
    const left = begin(40)
    send('b', 1, 40, left)
    // b asks 12 more in this window, as the gateway asks each call before its seat; the pauses refuse 9 of them.
    for (let i = 0; i < 12; i++) shares.refusing('b')
    send('b', 3, 40, left)
    send('a', 20, 40, left)
    // The window ends, b's next call the first of the next: b asked 12 (sent 4), and is kept 18 of it (1.5 × 12); a spends the rest.
    left.n = 40
    send('b', 1, 40, left)
    expect(sentOf(send('a', 40, 40, left))).toBe(40 - 18)
  })
})
