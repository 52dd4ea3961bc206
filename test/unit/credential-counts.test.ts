import { describe, expect, it } from 'vitest'
import { CredentialCounts, MAX_ROUTE_LIMITERS, type Sends } from '../../src/platform/pauses/credential-counts.js'
import { fakeClock } from '../helpers/clock.js'

// The token's count and each route's own limiter, each shared out by weight (credential-counts.ts).

const REPORT = '/api/v1/report/campaigns/get'
const LIST = '/api/v1/campaign/get'

function setUp() {
  const clock = fakeClock(1_800_000_000_000)
  const counts = new CredentialCounts({ weightOf: () => 1, clock, sync: () => null })
  /** The platform's answer to `sends` on `route`: `limit` calls a window, `remaining` left; a refusal where nothing is left and `refused`. */
  const answer = (sends: Sends, route: string, limit: number, remaining: number, status = 200) =>
    counts.told(sends, route, status, { limit, remaining, refusal: status === 429 }, status === 429 ? 30_000 : null)
  return { clock, counts, answer }
}

describe('CredentialCounts', () => {
  it("shares a route's own limit out by weight once the platform refused past it: the team past its share is refused on that route alone", () => {
    const { clock, counts, answer } = setUp()
    // The token's count read first (the start probe), then the route's own limiter of 4, spent and refused.
    answer(counts.pass(LIST), LIST, 60, 59)
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
    const { clock, counts, answer } = setUp()
    answer(counts.pass(LIST), LIST, 60, 59)
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

  it("tells apart no more than MAX_ROUTE_LIMITERS routes: a further route's own limit is the pauses' alone", () => {
    const { counts, answer } = setUp()
    answer(counts.pass(LIST), LIST, 60, 59)
    for (let i = 0; i < MAX_ROUTE_LIMITERS + 1; i++) expect(answer(counts.pass(`/api/v1/r${i}/get`), `/api/v1/r${i}/get`, 4, 3)).toBe(true)
    expect(counts.routeView(`/api/v1/r${MAX_ROUTE_LIMITERS - 1}/get`)).not.toBeNull()
    expect(counts.routeView(`/api/v1/r${MAX_ROUTE_LIMITERS}/get`)).toBeNull()
  })
})
