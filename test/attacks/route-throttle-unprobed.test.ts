import { describe, expect, it } from 'vitest'
import { KEYS, SANDBOX_TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import { call, itLoggedNoSecret, reportMisses, useAttackGateway } from './attack-gateway.js'

// Without the start probe (`platform.probe: null`, or a token from a password login, which
// the probe does not check), the first count the gateway reads may be a route's own
// limiter's (Laravel's `throttle:2,10` on the report route inside the api group): nothing
// read before tells it from the token's count. Its refusal says nothing of the token's
// other routes, which the platform serves.

const REPORT = '/api/v1/report/campaigns/get'
const LIST = '/api/v1/campaign/get'
const sg = useAttackGateway({ yaml: `${SANDBOX_TEAMS_YAML}platform:\n  probe: null\n` })
const miss = reportMisses(sg)

describe("a route's own limiter read before any other count (no start probe)", () => {
  it('refuses that route alone: its 429 holds back no call of another route, of any team', async () => {
    sg.sandbox.setThrottle({ refuse: true })
    sg.sandbox.setRouteThrottle(REPORT, { limit: 2, windowMs: 600_000 })
    for (const status of [200, 200, 429]) expect((await miss(KEYS.all)).status).toBe(status)
    sg.sandbox.clearRequests()
    const list = await call(sg, 'POST', LIST, { key: KEYS.growth, json: { userId: 102 } })
    expect(list.status, JSON.stringify(list.json)).toBe(200)
    expect((await call(sg, 'POST', LIST, { key: KEYS.all, json: { userId: 101 } })).status).toBe(200)
    expect(sg.callerRequests().map((r) => r.path)).toEqual([LIST, LIST])
    // The throttled route is held for every team until its window ends: the platform refuses it to every team.
    const report = await miss(KEYS.growth)
    expect(report.status).toBe(503)
    expect(report.json).toMatchObject({ code: 'GW_OVERLOADED', message: expect.stringContaining(`on route ${REPORT}`) })
    expect(sg.gw.governors.countOf('default')?.enforced).toBe(false)
  })
})

itLoggedNoSecret(sg)
