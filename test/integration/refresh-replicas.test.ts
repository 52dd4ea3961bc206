import { describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH, teamsYamlWith, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { distinctReport, proxyGet } from '../helpers/gateway-calls.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// A forced refresh's new copy replaces the old one everywhere (docs/contract.md, "Reports"):
// replica B, holding the old copy in memory, takes the new one from Redis when replica A
// announces it on the bus, and, when B's subscriber was away as it was announced (a
// reconnect), as its subscriber is back. Before, B served its old copy, figures the
// platform had since changed, until that copy's freshness ended (24 h for a settled
// report). Two gateway instances in this process stand for two replicas, on one real
// redis-server.

const ADMIN_TOKEN = 'refresh-admin-token-0123456789abcdef0'
const GATEWAY_SECRET = 'refresh-gateway-secret-0123456789ab'
// The figures the platform answers after they changed: any JSON object is a report.
const CHANGED = { data: [{ date: '2025-01-03', impressions: 7, clicks: 1 }] }
// Every forced refresh goes to the platform, however young the copy.
const YAML = teamsYamlWith({ cache: { refreshMinAge: '0s' } })

const redisCheck = redisAvailability()
if (redisCheck.notice) console.warn(redisCheck.notice)

describe.skipIf(!redisCheck.available)('a forced refresh across replicas (Redis)', () => {
  const sandbox = useSandbox()
  const { server: redis, client } = useRedis()
  const gateways = useGateways()

  const replica = (): Promise<TestGateway> =>
    gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN, REDIS_URL: redis.url, GATEWAY_SECRET }, YAML))

  /** Replicas A and B, each holding in memory a copy of a settled report (fresh for 24 h), A's fill. */
  const bothHolding = async (n: number) => {
    const a = await replica()
    const b = await replica()
    const report = distinctReport(n)
    expect((await proxyGet(a, report)).headers['x-cache']).toBe('MISS')
    const held = await proxyGet(b, report)
    expect(held.headers['x-cache']).toBe('HIT')
    return { a, b, report, old: held.headers.etag }
  }

  /** A forced refresh on `gw` (team `all` has `refresh: true`), answered with the platform's changed figures. */
  const refreshChanged = async (gw: TestGateway, report: string) => {
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'status', status: 200, body: CHANGED, times: 1 })
    const fresh = await gw.proxy.inject({ method: 'GET', url: report, headers: { 'x-api-key': KEYS.all, 'cache-control': 'no-cache' } })
    expect(fresh.headers['x-cache']).toBe('REFRESH')
    expect(fresh.json()).toEqual(CHANGED)
    return fresh.headers.etag
  }

  it("reaches the other replica's memory on the bus", async () => {
    const { a, b, report, old } = await bothHolding(1)
    const etag = await refreshChanged(a, report)
    expect(etag).not.toBe(old)
    await waitFor("replica B to answer the refresh's copy", async () => (await proxyGet(b, report)).headers.etag === etag)
    expect((await proxyGet(b, report)).json()).toEqual(CHANGED)
  })

  it('reaches a replica whose subscriber was away as it was announced, as the subscriber is back', async () => {
    const { a, b, report } = await bothHolding(2)
    // Both subscribers gone: they connect again after their reconnect delay (100 ms at the
    // first try), after the refresh below is announced.
    await client.client('KILL', 'TYPE', 'pubsub')
    const etag = await refreshChanged(a, report)
    await waitFor("replica B to answer the refresh's copy", async () => (await proxyGet(b, report)).headers.etag === etag)
    const served = await proxyGet(b, report)
    expect(served.headers['x-cache']).toBe('HIT')
    expect(served.json()).toEqual(CHANGED)
  })
})
