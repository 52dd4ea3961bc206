import { describe, expect, it } from 'vitest'
import { KEYS } from '../helpers/sandbox-gateway.js'
import { waitFor } from '../helpers/wait.js'
import { call, itLoggedNoSecret, useAttackGateway, type Answer } from './attack-gateway.js'

// Two routes behind one Laravel limiter (a plain `throttle:4,10` on each, which Laravel keys
// by the token's user alone, or one named limiter `throttle:reports` on both) are one count
// of both routes' calls. The gateway shares a route's own limit out among the teams asking on
// that route (route-throttle-shares.test.ts): team `all` reading one route alone is kept the
// whole of that route's limit, team `growth` reading the other alone the whole of the other's,
// and the platform's one count refused whoever called next once `all` had spent it. The
// gateway now takes two routes for one limiter where one is refused with count left as its
// limiter read it, until the second the other was refused (credential-counts.ts).

const A = '/api/v1/report/campaigns/get'
const B = '/api/v1/report/adPlacementPositions/get'
const LIMIT = 4
/** The sandbox's throttle time while it stands still (null: the wall clock's). */
let still: number | null = null
const sg = useAttackGateway({ sandbox: { throttleClock: () => still ?? Date.now() } })

/** Reads of `path`, each of a report of its own (every read reaches the platform), as the team of the key given. */
function misses(path: string): (key: string) => Promise<Answer> {
  let day = 0
  return (key) => {
    const d = ++day
    return call(sg, 'GET', `${path}?advertiserId=101&byDate=1&dateFrom=2025-01-01&dateTo=2025-${String(1 + Math.floor(d / 28)).padStart(2, '0')}-${String(1 + (d % 28)).padStart(2, '0')}`, { key })
  }
}

describe('two routes behind one limiter of the platform', () => {
  it("leave a team its share of that one count: a team draining it on one route is refused by the gateway, the other team's read on the other route served", async () => {
    const onA = misses(A)
    const onB = misses(B)
    sg.sandbox.setThrottle({ refuse: true })
    // The platform shows that it refuses past the limiter: a window of one second, spent on both routes. Its time
    // stands still until the other route is refused: every call below falls in that window, however long a loaded
    // machine takes over them.
    still = Date.now()
    for (const path of [A, B]) sg.sandbox.setRouteThrottle(path, { limit: LIMIT, windowMs: 1000, limiter: 'reports' })
    expect((await onB(KEYS.growth)).status).toBe(200)
    for (let i = 0; i <= LIMIT; i++) if ((await onA(KEYS.all)).status !== 200) break
    // The other route refused in the same window, its own word having said 3 were left: one count of both.
    expect((await onB(KEYS.growth)).status).toBe(429)
    // From here the window ends a second after it began, on the wall clock as on the gateway's.
    still = null
    await waitFor("route A's limit to be shared out", () => sg.gw.governors.countOf('default', A)?.enforced === true)
    await waitFor("team all's pause to end", () => sg.gw.governors.pausesOf('default').length === 0)
    await waitFor("route A's hold to end", () => (sg.gw.governors.countOf('default', A)?.heldUntil ?? 0) <= Date.now())
    // A window longer than the test: every call below is counted in it.
    for (const path of [A, B]) sg.sandbox.setRouteThrottle(path, { limit: LIMIT, windowMs: 600_000, limiter: 'reports' })
    sg.sandbox.clearRequests()
    expect((await onB(KEYS.growth)).status).toBe(200)
    for (let i = 0; i < LIMIT; i++) if ((await onA(KEYS.all)).status !== 200) break
    // Team growth's second read of the window, within its share of 2 of the one count, is served by the platform.
    const second = await onB(KEYS.growth)
    expect(second.json.code).toBeUndefined()
    expect(second.status).toBe(200)
  })
})

itLoggedNoSecret(sg)
