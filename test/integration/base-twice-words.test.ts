import { beforeAll, describe, expect, it } from 'vitest'
import { KEYS, testConfig } from '../helpers/build-gateway.js'
import { useGateway, useSandbox } from '../helpers/fixtures.js'

// A base URL written with the platform's /api/v1 (GW=http://gw:8080/api/v1, a generated
// client's baseUrl) puts every call under /api/v1/api/v1/…, which no platform route is. It is
// told so, for every team and without a key, and sent nowhere: a scoped team's was 403 asking
// for the route to be listed in ownership.accountRoutes, an unrestricted team's the platform's 404.
const sandbox = useSandbox()
const gw = useGateway(() => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }))
beforeAll(() => sandbox.clearRequests())

const SLASH =
  "not found: the path begins // (an empty segment: a base URL ending in / with the call's path after it): write the base URL without its trailing /"
const TWICE =
  "not found: the path begins /api/v1/api/, the gateway's /api/v1 twice (a base URL given with /api/v1, which every call's path begins with): give the gateway's origin alone, http://host:port"

describe('a call whose path repeats /api/v1', () => {
  it.each(['/api/v1/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-05-01&dateTo=2026-05-02', '/api/v1/api/v1/campaign/get', '/api/v1/API/v1/campaign/get'])('%s: 404 saying so, sent nowhere', async (url) => {
    for (const headers of [{ 'x-api-key': KEYS.growth }, { 'x-api-key': KEYS.all }, {}]) {
      const res = await gw.proxy.inject({ method: 'GET', url, headers })
      expect(res.statusCode).toBe(404)
      expect(res.json()).toEqual({ statusCode: 404, code: 'GW_NOT_FOUND', error: 'Not Found', message: TWICE })
    }
    expect(sandbox.requests).toHaveLength(0)
  })
})

// A base URL ending in / (GW=http://gw:8080/, then $GW/api/v1/…) puts every call under
// //api/v1/…, outside /api/v1/: told so, where it was a bare `not found`.
describe('a call whose path begins //api/v1/', () => {
  it.each(['//api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-05-01&dateTo=2026-05-02', '///api/v1/campaign/get'])('%s: 404 saying so, sent nowhere', async (url) => {
    for (const headers of [{ 'x-api-key': KEYS.growth }, {}]) {
      const res = await gw.proxy.inject({ method: 'GET', url, headers })
      expect(res.statusCode).toBe(404)
      expect(res.json()).toEqual({ statusCode: 404, code: 'GW_NOT_FOUND', error: 'Not Found', message: SLASH })
    }
    expect(sandbox.requests).toHaveLength(0)
  })
})

// The admin listener alike: ADMIN=http://127.0.0.1:8081/ then $ADMIN/admin/status.
describe('an admin call whose path begins //', () => {
  it.each(['//admin/status', '//metrics', '//console', '///readyz'])('%s: 404 saying so', async (url) => {
    const res = await gw.admin.inject({ method: 'GET', url })
    expect(res.statusCode).toBe(404)
    expect(res.json()).toEqual({ statusCode: 404, code: 'GW_NOT_FOUND', error: 'Not Found', message: SLASH })
  })

  it('keeps the bare not found for another path after //', async () => {
    for (const url of ['//nothing', '//api/v1/campaign/get/x']) expect((await gw.admin.inject({ method: 'GET', url })).json().message, url).toBe('not found')
  })
})
