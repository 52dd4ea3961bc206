import { describe, expect, it } from 'vitest'
import { COUNT_WINDOW_MS } from '../../src/platform/pauses/count-shares.js'
import { CredentialCounts, MAX_ROUTE_LIMITERS, type Sends } from '../../src/platform/pauses/credential-counts.js'
import { fakeClock } from '../helpers/clock.js'

// The token's count and each route's own limiter, each shared out by weight (credential-counts.ts).

const REPORT = '/api/v1/report/campaigns/get'
const LIST = '/api/v1/campaign/get'
const OTHER = '/api/v1/creative-set/get'

function setUp() {
  const clock = fakeClock(1_800_000_000_000)
  const counts = new CredentialCounts({ weightOf: () => 1, clock, sync: () => null })
  /** The platform's answer to `sends` on `route`: `limit` calls a window, `remaining` left; a refusal where nothing is left and `refused`. */
  const answer = (sends: Sends, route: string, limit: number, remaining: number, status = 200) =>
    counts.told(sends, route, status, { limit, remaining, refusal: status === 429 }, status === 429 ? 30_000 : null)
  /** The token's count of 60 named on the answers of two routes, as the start probe's and a first call's: it is the token's. */
  const named = () => {
    answer(counts.pass(LIST), LIST, 60, 59)
    answer(counts.pass(OTHER), OTHER, 60, 58)
  }
  return { clock, counts, answer, named }
}

describe('CredentialCounts', () => {
  it("shares a route's own limit out by weight once the platform refused past it: the team past its share is refused on that route alone", () => {
    const { clock, counts, answer, named } = setUp()
    // The token's count read first (the start probe, a first call), then the route's own limiter of 4, spent and refused.
    named()
    for (let left = 3; left >= 0; left--) expect(answer(counts.pass(REPORT), REPORT, 4, left)).toBe(true)
    expect(answer(counts.pass(REPORT), REPORT, 4, 0, 429)).toBe(true)
    expect(counts.routeView(REPORT)).toMatchObject({ limit: 4, enforced: true })
    expect(counts.token.view().enforced).toBe(false)
    // Held until the window the platform refused in ends: that route alone.
    expect(counts.refusing('a', REPORT)).toMatchObject({ route: REPORT })
    expect(counts.refusing('a', LIST)).toBeNull()
    clock.advance(60_000)
    // A new window of 4: teams a and b ask, a share of 2 each.
    expect(counts.refusing('b', REPORT)).toBeNull()
    let left = 4
    const sent = (team: string): boolean => {
      const a = counts.admit(team, REPORT)
      if (a.kind === 'sent') answer(a, REPORT, 4, --left)
      return a.kind === 'sent'
    }
    expect(sent('a')).toBe(true)
    expect(sent('a')).toBe(true)
    const refused = counts.admit('a', REPORT)
    expect(refused).toMatchObject({ kind: 'refused', route: REPORT })
    expect(sent('b')).toBe(true)
    expect(sent('b')).toBe(true)
    // Team a's other routes are the token's count's alone.
    expect(counts.admit('a', LIST).kind).toBe('sent')
  })

  it("leaves the token's count unsent where the route's limiter refuses a call", () => {
    const { clock, counts, answer, named } = setUp()
    named()
    answer(counts.pass(REPORT), REPORT, 1, 0)
    answer(counts.pass(REPORT), REPORT, 1, 0, 429)
    clock.advance(60_000)
    // The token's count is shared out too: a team's calls refused on the route are not counted in it.
    answer(counts.pass(LIST), LIST, 60, 0, 429)
    clock.advance(60_000)
    const first = counts.admit('a', REPORT)
    expect(first.kind).toBe('sent')
    answer(first as Sends, REPORT, 1, 0)
    expect(counts.token.view().teams).toEqual([expect.objectContaining({ team: 'a', sent: 1 })])
    // Team b asks: team a's share of the route's 1 is a half, and what is left covers none past it.
    expect(counts.refusing('b', REPORT)).toBeNull()
    expect(counts.admit('a', REPORT)).toMatchObject({ kind: 'refused', route: REPORT })
    expect(counts.token.view().teams.find((t) => t.team === 'a')?.sent).toBe(1)
  })

  it("takes a refusal of a limit no other route's answer named for that route's own: it holds that route alone", () => {
    const { counts, answer } = setUp()
    // No start probe: the first count read is the report route's own limiter's.
    answer(counts.pass(REPORT), REPORT, 2, 1)
    answer(counts.pass(REPORT), REPORT, 2, 0)
    expect(answer(counts.pass(REPORT), REPORT, 2, 0, 429)).toBe(true)
    expect(counts.token.view()).toMatchObject({ limit: 2, enforced: false })
    expect(counts.routeView(REPORT)).toMatchObject({ limit: 2, enforced: true })
    expect(counts.refusing('a', LIST)).toBeNull()
    expect(counts.refusing('a', REPORT)).toMatchObject({ route: REPORT })
    // Two other routes name the token's count: it is the token's, and the report route's limit is its own still.
    answer(counts.pass(LIST), LIST, 60, 59)
    expect(answer(counts.pass(OTHER), OTHER, 60, 58)).toBe(false)
    expect(counts.routeView(LIST)).toBeNull()
    expect(counts.routeView(REPORT)).toMatchObject({ limit: 2, enforced: true })
  })

  it("takes a limit named on two routes for the token's count: a route's limiter read with it goes, and its next refusal holds every route", () => {
    const { clock, counts, answer } = setUp()
    // The token's count read on one route alone, and refused there: that route's, for now.
    answer(counts.pass(REPORT), REPORT, 10, 0)
    expect(answer(counts.pass(REPORT), REPORT, 10, 0, 429)).toBe(true)
    expect(counts.routeView(REPORT)).toMatchObject({ limit: 10, enforced: true })
    clock.advance(60_000)
    // Another route names the same limit: it is the token's count.
    expect(answer(counts.pass(LIST), LIST, 10, 9)).toBe(false)
    expect(counts.routeView(REPORT)).toBeNull()
    expect(answer(counts.pass(REPORT), REPORT, 10, 0, 429)).toBe(false)
    expect(counts.token.view().enforced).toBe(true)
    expect(counts.refusing('a', LIST)).toMatchObject({ route: null })
  })

  it("reads a count the platform lowered: a smaller limit named on two routes, the count on none for the count's window", () => {
    const { clock, counts, answer, named } = setUp()
    named()
    clock.advance(COUNT_WINDOW_MS)
    answer(counts.pass(LIST), LIST, 10, 9)
    expect(answer(counts.pass(OTHER), OTHER, 10, 8)).toBe(false)
    expect(counts.token.view().limit).toBe(10)
    expect(counts.routeView(LIST)).toBeNull()
    // Its refusal is the token's: every route is held until its window ends.
    expect(answer(counts.pass(REPORT), REPORT, 10, 0, 429)).toBe(false)
    expect(counts.token.view().enforced).toBe(true)
    expect(counts.refusing('a', REPORT)).toMatchObject({ route: null })
  })

  it.each([
    ['the count named within its window', (c: ReturnType<typeof setUp>) => { c.clock.advance(COUNT_WINDOW_MS - 1000); c.answer(c.counts.pass(REPORT), REPORT, 60, 40); c.clock.advance(1000) }],
    ['a larger limit than it named since the count', (c: ReturnType<typeof setUp>) => { c.clock.advance(COUNT_WINDOW_MS); c.answer(c.counts.pass(REPORT), REPORT, 30, 20) }],
  ])('keeps the count where a smaller limit is named on two routes, and %s', (_, between) => {
    const c = setUp()
    c.named()
    between(c)
    c.answer(c.counts.pass(LIST), LIST, 10, 9)
    expect(c.answer(c.counts.pass(OTHER), OTHER, 10, 8)).toBe(true)
    expect(c.counts.token.view().limit).toBe(60)
  })

  it("tells apart no more than MAX_ROUTE_LIMITERS routes: a further route's own limit is the pauses' alone", () => {
    const { counts, answer, named } = setUp()
    named()
    for (let i = 0; i < MAX_ROUTE_LIMITERS + 1; i++) expect(answer(counts.pass(`/api/v1/r${i}/get`), `/api/v1/r${i}/get`, 4, 3)).toBe(true)
    expect(counts.routeView(`/api/v1/r${MAX_ROUTE_LIMITERS - 1}/get`)).not.toBeNull()
    expect(counts.routeView(`/api/v1/r${MAX_ROUTE_LIMITERS}/get`)).toBeNull()
  })

  it('takes two routes for one limiter where one is refused with count left as it read it, until the second the other was refused: one count of both, shared out among the teams of either', () => {
    const { clock, counts, answer, named } = setUp()
    named()
    // One count of 4 for both routes: 1 call on REPORT, 3 on OTHER_REPORT, then both refused.
    const OTHER_REPORT = '/api/v1/report/adPlacementPositions/get'
    answer(counts.pass(REPORT), REPORT, 4, 3)
    for (let left = 2; left >= 0; left--) answer(counts.pass(OTHER_REPORT), OTHER_REPORT, 4, left)
    answer(counts.pass(OTHER_REPORT), OTHER_REPORT, 4, 0, 429)
    // REPORT read 3 left: its refusal says the count was spent by calls it did not count.
    answer(counts.pass(REPORT), REPORT, 4, 0, 429)
    clock.advance(60_000)
    // The token's count named again (else a smaller limit named on two routes for its window is the count lowered).
    named()
    // A new window of 4: team a asks on REPORT, team b on OTHER_REPORT, a share of 2 each of the one count.
    let left = 4
    const sent = (team: string, route: string): boolean => {
      const a = counts.admit(team, route)
      if (a.kind === 'sent') answer(a, route, 4, --left)
      return a.kind === 'sent'
    }
    expect(counts.refusing('a', REPORT)).toBeNull()
    expect(counts.refusing('b', OTHER_REPORT)).toBeNull()
    expect(sent('b', OTHER_REPORT)).toBe(true)
    expect(sent('b', OTHER_REPORT)).toBe(true)
    expect(counts.admit('b', OTHER_REPORT)).toMatchObject({ kind: 'refused' })
    expect(sent('a', REPORT)).toBe(true)
    expect(sent('a', REPORT)).toBe(true)
  })

  it('keeps two routes of limiters of their own apart though refused in one second: each was refused with nothing left as it read it', () => {
    const { clock, counts, answer, named } = setUp()
    named()
    const OTHER_REPORT = '/api/v1/report/adPlacementPositions/get'
    // A dashboard reading both routes at once: each window begun in the same second, each spent by its own calls.
    for (let left = 3; left >= 0; left--) {
      answer(counts.pass(REPORT), REPORT, 4, left)
      answer(counts.pass(OTHER_REPORT), OTHER_REPORT, 4, left)
    }
    answer(counts.pass(REPORT), REPORT, 4, 0, 429)
    answer(counts.pass(OTHER_REPORT), OTHER_REPORT, 4, 0, 429)
    clock.advance(60_000)
    named()
    // A new window: team a alone on each route is kept each route's whole 4.
    for (const route of [REPORT, OTHER_REPORT]) {
      let left = 4
      for (let i = 0; i < 4; i++) {
        const a = counts.admit('a', route)
        expect(a.kind, `${route} ${i}`).toBe('sent')
        if (a.kind === 'sent') answer(a, route, 4, --left)
      }
    }
  })

  it('reads a joined route\'s answers to calls sent before the join as calls counted from their answer: the limiter it joined goes on reading its own', () => {
    const { clock, counts, answer, named } = setUp()
    named()
    const OTHER_REPORT = '/api/v1/report/adPlacementPositions/get'
    // One count of 10: six calls on REPORT, one more sent and not yet answered, then four on OTHER_REPORT spend it.
    for (let left = 9; left >= 4; left--) answer(counts.pass(REPORT), REPORT, 10, left)
    const late = counts.pass(REPORT)
    for (let left = 3; left >= 0; left--) answer(counts.pass(OTHER_REPORT), OTHER_REPORT, 10, left)
    answer(counts.pass(OTHER_REPORT), OTHER_REPORT, 10, 0, 429)
    // REPORT read count left: refused, it joins OTHER_REPORT's limiter; then the call sent before is answered.
    answer(counts.pass(REPORT), REPORT, 10, 0, 429)
    answer(late, REPORT, 10, 0, 429)
    clock.advance(60_000)
    named()
    // A new window: the joined limiter reads its own answers on either route.
    const a = counts.admit('a', OTHER_REPORT)
    expect(a.kind).toBe('sent')
    if (a.kind === 'sent') answer(a, OTHER_REPORT, 10, 9)
    expect(counts.routeView(REPORT)).toMatchObject({ left: 9 })
    expect(counts.routeView(OTHER_REPORT)).toMatchObject({ left: 9 })
  })
})
