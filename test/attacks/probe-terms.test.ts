import { describe, expect, it } from 'vitest'
import type { SandboxRequestRecord } from '../../src/sandbox/sandbox.js'
import { fakeClock, type FakeClock, onRealTimers } from '../helpers/clock.js'
import { KEYS, PRYING_KEY, PRYING_TEAMS_YAML as YAML, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useSandbox } from '../helpers/fixtures.js'

// The probe call (platform.probe) tells a refused token from a refused call. It is the
// gateway's own call, on its own terms: a team that calls a route the platform answers
// 401 must not make it run at will, nor turn its 429 into a pause of every team's calls.

/** A route behind another guard: it answers 401 whatever the token. */
const GUARDED = '/api/v1/report/creatives/get'
const PROBE = '/api/v1/campaign/get'
const REPORT = '/api/v1/report/campaigns/get?advertiserId=102&dateFrom=2026-01-01&dateTo=2026-01-07'
const UNAUTHENTICATED = { kind: 'status', status: 401, body: { message: 'Unauthenticated.' } } as const
const THROTTLED = { kind: 'status', status: 429, headers: { 'retry-after': '30' }, body: { message: 'Too Many Attempts.' } } as const

const isProbe = (r: SandboxRequestRecord) => String(r.headers['x-request-id']).startsWith('token-probe-')

const sandbox = useSandbox()
const gateways = useGateways()

async function gateway(clock?: FakeClock): Promise<TestGateway> {
  const gw = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }, YAML), clock ? { clock: onRealTimers(clock.now) } : {})
  sandbox.clearRequests()
  return gw
}

/** Team prying's call of the guarded route: a day of its own, so that no two calls coalesce. */
function pry(gw: TestGateway, day: number) {
  const d = `2026-01-${String(day).padStart(2, '0')}`
  return gw.proxy.inject({ method: 'GET', url: `${GUARDED}?advertiserId=101&dateFrom=${d}&dateTo=${d}`, headers: { 'x-api-key': PRYING_KEY } })
}

describe('the probe call on the gateway\'s terms', () => {
  it('a 429 on the probe pauses the probe\'s route, not the credential: other teams are served', async () => {
    const gw = await gateway()
    sandbox.setRouteFailure(GUARDED, UNAUTHENTICATED)
    sandbox.setRouteFailure(PROBE, THROTTLED)
    const res = await pry(gw, 1)
    expect(res.statusCode).toBe(502)
    expect(res.json()).toMatchObject({ code: 'GW_PLATFORM_REFUSED' })
    expect(sandbox.countRequests(isProbe)).toBe(1)
    expect(gw.governors.paused('default')).toBe(false)
    expect(gw.governors.paused('default', PROBE)).toBe(true)
    expect((await gw.proxy.inject({ method: 'GET', url: REPORT, headers: { 'x-api-key': KEYS.all } })).statusCode).toBe(200)
  })

  it('never probes while its route is paused, however often a team calls a 401 route', async () => {
    const clock = fakeClock()
    const gw = await gateway(clock)
    sandbox.setRouteFailure(GUARDED, UNAUTHENTICATED)
    sandbox.setRouteFailure(PROBE, THROTTLED)
    for (let day = 1; day <= 8; day++) {
      expect((await pry(gw, day)).json()).toMatchObject({ code: 'GW_PLATFORM_REFUSED' })
      clock.advance(6_000)
    }
    expect(sandbox.countRequests(isProbe)).toBe(1)
    expect(gw.governors.paused('default')).toBe(false)
  })

  it('remembers a route that answers 401 to a good token: its further 401s cost no probe', async () => {
    const clock = fakeClock()
    const gw = await gateway(clock)
    sandbox.setRouteFailure(GUARDED, UNAUTHENTICATED)
    for (let day = 1; day <= 8; day++) {
      expect((await pry(gw, day)).json()).toMatchObject({ code: 'GW_PLATFORM_REFUSED' })
      clock.advance(6_000)
    }
    expect(sandbox.countRequests((r) => r.path === GUARDED)).toBe(8)
    expect(sandbox.countRequests(isProbe)).toBe(1)
    // Another route's 401 is news: it is probed.
    sandbox.setRouteFailure('/api/v1/report/adPlacementPositions/get', UNAUTHENTICATED)
    const other = await gw.proxy.inject({ method: 'GET', url: '/api/v1/report/adPlacementPositions/get?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-07', headers: { 'x-api-key': PRYING_KEY } })
    expect(other.json()).toMatchObject({ code: 'GW_PLATFORM_REFUSED' })
    expect(sandbox.countRequests(isProbe)).toBe(2)
  })
})
