import { beforeAll, describe, expect, it } from 'vitest'
import { testConfig } from '../helpers/build-gateway.js'
import { useGateway, useSandbox } from '../helpers/fixtures.js'

// A platform call sent to the admin listener (a WARM_URL, a client's baseUrl or a curl
// given ADMIN_PORT, 8081, for PORT, 8080) is told where such calls go, with or without an
// admin token: it was the bare `not found` of a path no route serves.
const sandbox = useSandbox()
const ADMIN_TOKEN = 'listener-mixups-admin-token-0123'
const gw = useGateway(() => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN, PORT: '18999' }))
// The start's token probe is the gateway's own call.
beforeAll(() => sandbox.clearRequests())

describe('the admin listener, asked a call of the proxy listener', () => {
  it.each(['/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-07', '/api/v1/campaign/get', '/api/v1/jobs/abc'])('%s: 404 saying the proxy listener serves it, and its port', async (url) => {
    for (const headers of [{}, { authorization: `Bearer ${ADMIN_TOKEN}` }]) {
      const res = await gw.admin.inject({ method: 'GET', url, headers })
      expect(res.statusCode).toBe(404)
      expect(res.json()).toEqual({
        statusCode: 404,
        code: 'GW_NOT_FOUND',
        error: 'Not Found',
        message: 'not found: this is the admin listener (/admin/*, /console, /metrics, /healthz, /readyz, /docs); calls under /api/ are served by the proxy listener, port 18999',
      })
    }
    expect(sandbox.requests).toHaveLength(0)
  })

  it('keeps the bare not found for any other path', async () => {
    const res = await gw.admin.inject({ method: 'GET', url: '/nothing/here' })
    expect(res.statusCode).toBe(404)
    expect(res.json().message).toBe('not found')
  })
})

describe('the admin listener, with the proxy listener on a port of its own choosing (PORT=0)', () => {
  // The port named is the one the proxy listener is bound to, not the setting's 0 (or its default).
  const bound = useGateway(() => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), PORT: '0' }), { listen: true })
  it('names the port the proxy listener took', async () => {
    const res = await bound.admin.inject({ method: 'GET', url: '/api/v1/campaign/get' })
    expect(res.statusCode).toBe(404)
    expect(res.json().message).toMatch(new RegExp(`calls under /api/ are served by the proxy listener, port ${bound.port as number}$`))
  })
})

// An admin call sent to the proxy listener (the console's address typed with PORT, 8080, for
// ADMIN_PORT, 8081, or `curl $GW/admin/status`) is told where such calls go, with or without
// a token; the admin listener's port itself is not named to the proxy's callers.
describe('the proxy listener, asked a call of the admin listener', () => {
  const proxyPathMessage =
    'not found: this is the proxy listener (/api/v1/*, /openapi.json, /healthz, /readyz); /admin/*, /console, /metrics and /docs are served by the admin listener (ADMIN_HOST:ADMIN_PORT, 127.0.0.1:8081 unless set)'
  it.each(['/admin/status', '/admin', '/admin/token?x=1', '/console', '/console/console.js', '/metrics', '/docs', '/docs/json'])('%s: 404 saying the admin listener serves it', async (url) => {
    for (const headers of [{}, { authorization: `Bearer ${ADMIN_TOKEN}` }]) {
      const res = await gw.proxy.inject({ method: 'GET', url, headers })
      expect(res.statusCode).toBe(404)
      expect(res.headers['cache-control']).toBe('no-store')
      expect(res.json()).toEqual({ statusCode: 404, code: 'GW_NOT_FOUND', error: 'Not Found', message: proxyPathMessage })
    }
    expect(sandbox.requests).toHaveLength(0)
  })

  it('says what it serves for any other path outside /api/v1/ (test/integration/unknown-path-words.test.ts)', async () => {
    for (const url of ['/', '/nothing/here', '/administration', '/metricsx', '/api/v2/x']) {
      const res = await gw.proxy.inject({ method: 'GET', url })
      expect(res.statusCode, url).toBe(404)
      expect(res.json().message, url).toMatch(/^not found: this is the proxy listener \(\/api\/v1\/\*, \/openapi\.json, \/healthz, \/readyz\): a platform call's path begins/)
    }
  })
})
