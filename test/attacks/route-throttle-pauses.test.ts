import { describe, expect, it } from 'vitest'
import { KEYS } from '../helpers/sandbox-gateway.js'
import { call, itLoggedNoSecret, newCampaign, useAttackGateway } from './attack-gateway.js'

// Two routes throttled on their own (Laravel's `throttle:N,M` on each, inside the api group),
// each counted per token user: once one team drained a route's limit, the platform refuses it
// to every team, and serves every other route. A 429 naming a smaller x-ratelimit-limit than
// the token's count is such a route's own (the sandbox models it: setRouteThrottle).

const CREATE = '/api/v1/campaign/banner/create'
const LIST = '/api/v1/campaign/get'
const sg = useAttackGateway()

describe("one team's refusals by two routes' own throttles, and another team's by one of them", () => {
  // The writer drains the own limits of two routes (each counted per token user, so each then
  // refuses every team); growth's next call of one of them is refused too, by the gateway
  // (the route's own limit is held until the window the platform refused in ends: the route
  // would draw the platform's 429). The platform still serves every other route: the reports
  // the team `all` reads.
  it('pause those routes, never the credential: a report is still read from the platform', async () => {
    sg.sandbox.setThrottle({ refuse: true })
    sg.sandbox.setRouteThrottle(CREATE, { limit: 2, windowMs: 600_000 })
    sg.sandbox.setRouteThrottle(LIST, { limit: 1, windowMs: 600_000 })
    for (const status of [201, 201, 429]) expect((await call(sg, 'POST', CREATE, { key: KEYS.writer, json: newCampaign(101) })).status).toBe(status)
    for (const status of [200, 429]) expect((await call(sg, 'POST', LIST, { key: KEYS.writer, json: { userId: 101 } })).status).toBe(status)
    const refused = await call(sg, 'POST', LIST, { key: KEYS.growth, json: { userId: 102 } })
    expect(refused.status).toBe(503)
    expect(refused.json).toMatchObject({ code: 'GW_OVERLOADED', message: expect.stringContaining(`on route ${LIST}`) })
    sg.sandbox.clearRequests()
    const report = await call(sg, 'GET', `/api/v1/report/campaigns/get?advertiserId=102&dateFrom=2026-02-01&dateTo=2026-02-07`, { key: KEYS.all })
    expect(report.status).toBe(200)
    expect(sg.callerRequests().map((r) => r.path)).toEqual(['/api/v1/report/campaigns/get'])
    // The throttled route is held for every team: the platform refuses it for every team.
    expect((await call(sg, 'POST', LIST, { key: KEYS.all, json: { userId: 102 } })).status).toBe(503)
  })
})

itLoggedNoSecret(sg)
