import { beforeAll, describe, expect, it } from 'vitest'
import { KEYS, testConfig } from '../helpers/build-gateway.js'
import { useGateway, useSandbox } from '../helpers/fixtures.js'
import { rawHttp, rawRequest, SANDBOX_TEAMS_YAML } from '../helpers/sandbox-gateway.js'

// Contract, "Errors": a path outside /api/v1/ on the proxy listener is 404 GW_NOT_FOUND saying
// what the listener serves, whatever the method, with a key or none: a curl that left out
// /api/v1 (`$GW/report/campaigns/get`), wrote it in capitals (`/API/V1/…`, which no platform
// route matches either), asked `/api/v2/`, or a base URL behind an ingress whose path prefix
// is not stripped (`/reports/api/v1/…`). It was a bare `not found`, which told a new user
// nothing of what to write. The answer never repeats the path, and is the same for the token
// request's path (`/oauth/token`) as for any other: it tells nothing of the platform. A path
// whose /api/v1 prefix is spelled with escapes (`/%61pi/v1/…`), which the router decodes into
// the proxy's route and the target check (access/request-target.ts) refuses, says the same:
// it was a bare `not found` from that check.

const sandbox = useSandbox()
const gw = useGateway(() => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }, SANDBOX_TEAMS_YAML), { listen: true })
beforeAll(() => sandbox.clearRequests())

const SERVED = "not found: this is the proxy listener (/api/v1/*, /openapi.json, /healthz, /readyz): a platform call's path begins /api/v1/, in lower case (/api/v1/report/campaigns/get)"

describe('a path outside /api/v1/ on the proxy listener', () => {
  it.each([
    '/',
    '/report/campaigns/get?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-07',
    '/API/V1/report/campaigns/get?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-07',
    '/api/v2/campaign/get',
    '/api',
    '/api/v1',
    '/reports/api/v1/campaign/get',
    '/oauth/token',
    '/openapi.json/',
    '/%61pi/v1/campaign/get',
    '/a%70i/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-07',
    '/api/%76%31/campaign/get',
  ])('%s is 404 saying what the listener serves, with a key or none, and reaches no platform', async (target) => {
    for (const key of [KEYS.all, null]) {
      const res = await rawRequest(gw.port as number, rawHttp('GET', target, { key }), 3000)
      expect(res.status).toBe(404)
      expect(res.headers['cache-control']).toBe('no-store')
      expect(JSON.parse(res.text.slice(res.text.indexOf('{')))).toEqual({ statusCode: 404, code: 'GW_NOT_FOUND', error: 'Not Found', message: SERVED })
      // What the caller wrote is not repeated.
      expect(res.text).not.toMatch(/v2|oauth|reports\/|API\/V1|%/)
    }
    expect(sandbox.requests).toHaveLength(0)
  })

  // FOO is no method Node's parser knows: refused before any route, in the same words.
  it.each(['POST', 'DELETE', 'TRACE', 'OPTIONS', 'PROPFIND', 'FOO'])('%s there says the same', async (method) => {
    const res = await rawRequest(gw.port as number, rawHttp(method, '/campaign/get', { key: KEYS.all }), 3000)
    expect([res.status, JSON.parse(res.text.slice(res.text.indexOf('{'))).message]).toEqual([404, SERVED])
    expect(sandbox.requests).toHaveLength(0)
  })
})
