import { describe, expect, it } from 'vitest'
import { KEYS, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useSandbox } from '../helpers/fixtures.js'
import { distinctReport } from '../helpers/gateway-calls.js'
import { CLOSED_PORT } from '../helpers/start-redis.js'

// An SRE's first look while the platform is down (stopped, or answering 5xx): the admin
// listener's /readyz and GET /admin/cluster, which the console's health banner reads, name
// the credential whose platform calls fail, as they name a refused token; and stop naming it
// once the platform answers again. Readiness itself stays 200: every replica shares the platform.

const ADMIN_TOKEN = 'platform-failing-admin-token-0123456789'

const sandbox = useSandbox()
const gateways = useGateways()

const read = (gw: TestGateway, n: number) => gw.proxy.inject({ method: 'GET', url: distinctReport(n), headers: { 'x-api-key': KEYS.all } })

async function degraded(gw: TestGateway): Promise<{ ready: string[]; cluster: string[] }> {
  const ready = await gw.admin.inject({ method: 'GET', url: '/readyz' })
  expect(ready.statusCode).toBe(200)
  const cluster = await gw.admin.inject({ method: 'GET', url: '/admin/cluster', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  expect(cluster.statusCode).toBe(200)
  const self = (cluster.json() as { replicas: { self: boolean; degraded: string[] }[] }).replicas.find((r) => r.self)
  return { ready: (ready.json() as { degraded: string[] }).degraded, cluster: self?.degraded ?? [] }
}

describe('a platform that fails every call is named under degraded', () => {
  it('a stopped platform (nothing listens): platform:<credential> after its calls failed, the proxy listener\'s readiness saying nothing of it', async () => {
    const gw = await gateways.build(testConfig({ PLATFORM_BASE_URL: `http://127.0.0.1:${CLOSED_PORT}`, PLATFORM_TOKEN: 'a-token-of-a-platform-that-is-gone', ADMIN_TOKEN }))
    expect(await degraded(gw)).toEqual({ ready: [], cluster: [] })
    for (let n = 0; n < 3; n++) {
      const failed = await read(gw, n)
      expect(failed.statusCode).toBe(502)
      expect(failed.json()).toMatchObject({ code: 'GW_UPSTREAM' })
    }
    expect(await degraded(gw)).toEqual({ ready: ['platform:default'], cluster: ['platform:default'] })
    const open = await gw.proxy.inject({ method: 'GET', url: '/readyz' })
    expect(open.statusCode).toBe(200)
    expect(open.json()).toEqual({ status: 'ready' })
  })

  it('a platform answering 5xx: named while its latest calls fail, no longer once one is answered', async () => {
    const gw = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN }))
    expect((await read(gw, 10)).statusCode).toBe(200)
    sandbox.setFailure({ kind: 'status', status: 500 })
    expect((await read(gw, 11)).statusCode).toBe(502)
    // One failure among answers is no outage.
    expect((await degraded(gw)).ready).toEqual([])
    expect((await read(gw, 12)).statusCode).toBe(502)
    expect((await read(gw, 13)).statusCode).toBe(502)
    expect(await degraded(gw)).toEqual({ ready: ['platform:default'], cluster: ['platform:default'] })
    sandbox.setFailure({ kind: 'none' })
    expect((await read(gw, 14)).statusCode).toBe(200)
    expect(await degraded(gw)).toEqual({ ready: [], cluster: [] })
  })
})

// GatewayPlatformErrors reads gateway_platform_calls_total: an outage that only proxied
// calls meet (a team that reads no reports) must show there too, beside the report calls.
describe('proxied calls count in gateway_platform_calls_total (call="proxy"), which the platform-errors alert reads', () => {
  const metrics = async (gw: TestGateway) => (await gw.admin.inject({ method: 'GET', url: '/metrics' })).body
  const counted = (text: string, call: string, outcome: string) => Number(new RegExp(`^gateway_platform_calls_total\\{(?=[^}]*call="${call}")(?=[^}]*outcome="${outcome}")[^}]*\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0)
  const proxied = (gw: TestGateway) => gw.proxy.inject({ method: 'POST', url: '/api/v1/campaign/get', headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json' }, payload: '{"userId":101}' })

  it('a stopped platform: each proxied call counted GW_UPSTREAM; a report read counted as a report call', async () => {
    const gw = await gateways.build(testConfig({ PLATFORM_BASE_URL: `http://127.0.0.1:${CLOSED_PORT}`, PLATFORM_TOKEN: 'a-token-of-a-platform-that-is-gone', ADMIN_TOKEN }))
    for (let n = 0; n < 2; n++) expect((await proxied(gw)).statusCode).toBe(502)
    expect((await read(gw, 20)).statusCode).toBe(502)
    const text = await metrics(gw)
    expect([counted(text, 'proxy', 'GW_UPSTREAM'), counted(text, 'report', 'GW_UPSTREAM')]).toEqual([2, 1])
  })

  it('a platform answering 5xx, then answering: the proxied 502s counted GW_UPSTREAM, the answer counted pass', async () => {
    const gw = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN }))
    sandbox.setFailure({ kind: 'status', status: 500 })
    expect((await proxied(gw)).statusCode).toBe(502)
    sandbox.setFailure({ kind: 'none' })
    expect((await proxied(gw)).statusCode).toBe(200)
    const text = await metrics(gw)
    expect([counted(text, 'proxy', 'GW_UPSTREAM'), counted(text, 'proxy', 'pass')]).toEqual([1, 1])
  })
})
