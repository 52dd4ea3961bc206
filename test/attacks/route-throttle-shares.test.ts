import { describe, expect, it } from 'vitest'
import { KEYS } from '../helpers/sandbox-gateway.js'
import { waitFor } from '../helpers/wait.js'
import { ADMIN_TOKEN, call, itLoggedNoSecret, reportMisses, useAttackGateway } from './attack-gateway.js'

// A route throttled on its own (Laravel's `throttle:4,10` on the report route inside the api
// group) counts every team's calls of that route in one window, as the token's count counts
// every route's: once one team has drained it, the platform refuses that route to every
// team. Teams `all` and `growth` (weight 1 each) both read reports; `all` reads one miss
// after another, `growth` two reports a window, within its half of the route's limit.

const REPORT = '/api/v1/report/campaigns/get'
const LIMIT = 4
/** The sandbox's throttle time while it stands still (null: the wall clock's). */
let still: number | null = null
const sg = useAttackGateway({ sandbox: { throttleClock: () => still ?? Date.now() } })
const miss = reportMisses(sg)

describe("one team draining a route's own limit", () => {
  it("leaves another team its share of that route's limit: the drainer is refused by the gateway, the other team served", async () => {
    sg.sandbox.setThrottle({ refuse: true })
    // The platform shows that it refuses past the route's own limit: a window of one second, spent by team all. Its
    // time stands still until it refuses: every call below falls in that window, however long a loaded machine takes
    // over them.
    still = Date.now()
    sg.sandbox.setRouteThrottle(REPORT, { limit: LIMIT, windowMs: 1000 })
    for (let i = 0; i <= LIMIT; i++) if ((await miss(KEYS.all)).status !== 200) break
    // From here the window ends a second after it began, on the wall clock as on the gateway's.
    still = null
    await waitFor("the route's limit to be shared out", () => sg.gw.governors.countOf('default', REPORT)?.enforced === true)
    await waitFor("team all's pause to end", () => sg.gw.governors.pausesOf('default').length === 0)
    await waitFor("the route's hold to end", () => (sg.gw.governors.countOf('default', REPORT)?.heldUntil ?? 0) <= Date.now())
    // A window longer than the test: every call below is counted in it.
    sg.sandbox.setRouteThrottle(REPORT, { limit: LIMIT, windowMs: 600_000 })
    sg.sandbox.clearRequests()
    expect((await miss(KEYS.growth)).status).toBe(200)
    const seen: number[] = []
    for (let i = 0; i < LIMIT; i++) {
      const answer = await miss(KEYS.all)
      seen.push(answer.status)
      if (answer.status !== 200) {
        expect(answer.json).toMatchObject({ code: 'GW_OVERLOADED', message: expect.stringContaining(`team all has used its share of the platform's call count for credential default on route ${REPORT}`) })
        break
      }
    }
    // Team all is refused by the gateway before the platform refuses anyone.
    expect(seen.at(-1)).toBe(503)
    // Team growth's second read of the window, within its share of 2, is served by the platform.
    expect((await miss(KEYS.growth)).status).toBe(200)
    // Every other route is the token's count's alone: team all reads another route.
    expect((await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.all, json: { userId: 101 } })).status).toBe(200)
    expect(sg.sandbox.requests.filter((r) => r.path === REPORT).length).toBeLessThanOrEqual(LIMIT)
    // As the admin listener shows it: the route's own limit shared out, the token's count not.
    const status = (await sg.gw.admin.inject({ method: 'GET', url: '/admin/status', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()
    expect(status.governors[0].count).toMatchObject({ limit: 60, enforced: false, routes: expect.arrayContaining([expect.objectContaining({ route: REPORT, limit: LIMIT, enforced: true })]) })
  })
})

itLoggedNoSecret(sg)
