import { describe, expect, it } from 'vitest'
import { KEYS } from '../helpers/sandbox-gateway.js'
import { call, direct, itLoggedNoSecret, newCampaign, REPORT_DATES, useAttackGateway } from './attack-gateway.js'

// A route throttled on its own (Laravel's `->middleware('throttle:2,10')` inside the api
// group) refuses past its own limit with Laravel's headers: its own x-ratelimit-limit,
// x-ratelimit-remaining: 0, retry-after and x-ratelimit-reset, the very headers the token's
// count (`throttle:api`) refuses with. The platform then refuses that route alone; every
// other route of the token is served. The writer team (101) draws the route's refusal; the
// other teams' calls on other routes must still reach the platform.

const CREATE = '/api/v1/campaign/banner/create'
const sg = useAttackGateway()

function throttleCreate(): void {
  sg.sandbox.setThrottle({ refuse: true })
  sg.sandbox.setRouteThrottle(CREATE, { limit: 2, windowMs: 600_000 })
}

describe('a route throttled on its own (the sandbox models it)', () => {
  it('refuses past its own limit with its own count, and the token\'s other routes are served', async () => {
    throttleCreate()
    const body = JSON.stringify(newCampaign(101))
    const json = { 'content-type': 'application/json' }
    const seen: string[] = []
    for (let i = 0; i < 3; i++) {
      const headers = { authorization: `Bearer ${sg.sandbox.issueToken()}`, ...json }
      const res = await fetch(`${sg.sandbox.url}${CREATE}`, { method: 'POST', headers, body })
      seen.push(`${res.status} ${res.headers.get('x-ratelimit-limit')}/${res.headers.get('x-ratelimit-remaining')} ${res.headers.get('x-ratelimit-reset') === null ? '' : 'reset'}`.trim())
    }
    expect(seen).toEqual(['201 2/1', '201 2/0', '429 2/0 reset'])
    expect((await direct(sg, 'POST', '/api/v1/campaign/get', { body: '{"userId":102}', headers: json })).status).toBe(200)
  })
})

describe("one team's refusal by a route's own throttle", () => {
  it("holds back no other team's call on another route: each reaches the platform", async () => {
    throttleCreate()
    for (const status of [201, 201, 429]) expect((await call(sg, 'POST', CREATE, { key: KEYS.writer, json: newCampaign(101) })).status).toBe(status)
    sg.sandbox.clearRequests()
    const list = await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.growth, json: { userId: 102 } })
    expect(list.status).toBe(200)
    const report = await call(sg, 'GET', `/api/v1/report/campaigns/get?advertiserId=102&${REPORT_DATES}`, { key: KEYS.all })
    expect(report.status).toBe(200)
    // The writer's own calls of other routes too.
    expect((await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.writer, json: { userId: 101 } })).status).toBe(200)
    expect(sg.callerRequests().map((r) => r.path)).toEqual(['/api/v1/campaign/get', '/api/v1/report/campaigns/get', '/api/v1/campaign/get'])
  })
})

itLoggedNoSecret(sg)
