import { describe, expect, it } from 'vitest'
import { KEYS, teamsYamlWith, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'

// The lists the gateway learns who owns a campaign or a creative set from are kept in
// Redis for the other replicas. Whoever may write to Redis (a neighbour on a shared
// instance, a leaked password) must not widen a scoped team's scope by writing a list:
// a list without this gateway's seal, or sealed for another advertiser's key, is read
// as none, and the platform's list is asked.

const { available } = redisAvailability()

const SECRET = 'owner-lists-test-secret-0000000000000000'
const YAML = teamsYamlWith({ ownership: { creativeSets: { check: 'lookup', listPath: '/api/v1/creative-set/get' } } })
// Team `writer` may use advertiser 101 only; these are 102's.
const FOREIGN_CAMPAIGN = 102001
const FOREIGN_SET = 1020011
// A list's Redis key names its credential and the account that credential's token acts for (by digest).
const listKey = (gw: TestGateway, list: '' | 'creative-set-list:', advertiser: number) => `rgw:owners:${list}default:${gw.tokens.get('default').accountDigest}:${advertiser}`

describe.skipIf(!available)('a Redis writer does not widen a scoped team\'s scope through the owner lists', () => {
  const sandbox = useSandbox()
  const { server, client } = useRedis()
  const gateways = useGateways()

  const replica = () => gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: server.url, GATEWAY_SECRET: SECRET }, YAML))

  const asWriter = (gw: TestGateway, method: string, url: string, body?: unknown) =>
    gw.proxy.inject({ method, url, headers: { 'x-api-key': KEYS.writer, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, ...(body === undefined ? {} : { payload: JSON.stringify(body) }) })

  const unverified = async (gw: TestGateway): Promise<number> => {
    const text = (await gw.admin.inject({ method: 'GET', url: '/metrics' })).body
    const line = text.split('\n').find((l) => l.startsWith('gateway_redis_unverified_total{what="owner-list"} '))
    return line === undefined ? -1 : Number(line.split(' ').pop())
  }

  /** A list as the gateway wrote it before lists were sealed: fresh, naming `ids`. */
  const planted = (ids: number[]) => JSON.stringify({ ids, fetchedAt: Date.now() })

  it('a planted campaign list is read as none: a report on another advertiser\'s campaign is 403, and so is its delete', async () => {
    const gw = await replica()
    await client.set(listKey(gw, '', 101), planted([101001, FOREIGN_CAMPAIGN]), 'PX', 600_000)
    const report = await asWriter(gw, 'POST', '/api/v1/report/campaigns/get', { campaignIds: [FOREIGN_CAMPAIGN], dateFrom: '2026-01-01', dateTo: '2026-01-07' })
    expect(report.statusCode).toBe(403)
    const del = await asWriter(gw, 'DELETE', `/api/v1/campaign/banner/delete/${FOREIGN_CAMPAIGN}`)
    expect(del.statusCode).toBe(403)
    expect(sandbox.countRequests((r) => r.path.startsWith('/api/v1/campaign/banner/delete/') || r.path.startsWith('/api/v1/report/'))).toBe(0)
    expect(await unverified(gw)).toBeGreaterThanOrEqual(1)
    // The list asked of the platform took the planted one's place: the team's own campaign is served.
    expect((await asWriter(gw, 'POST', '/api/v1/report/campaigns/get', { campaignIds: [101001], dateFrom: '2026-01-01', dateTo: '2026-01-07' })).statusCode).toBe(200)
  })

  it('a planted creative set list is read as none: a campaign showing another advertiser\'s set is 403', async () => {
    const gw = await replica()
    await client.set(listKey(gw, 'creative-set-list:', 101), planted([1010011, FOREIGN_SET]), 'PX', 600_000)
    const res = await asWriter(gw, 'POST', '/api/v1/campaign/banner/create', {
      userId: 101, name: 'planted', adDomain: 'example.com', clickUrl: 'https://example.com/', autoStart: false,
      dates: { from: '2026-01-01', to: '2026-01-31' }, country: 'KE', bid: 1, budget: { daily: 10, total: 100 }, creativeSetIds: [FOREIGN_SET],
    })
    expect(res.statusCode).toBe(403)
    expect(res.json().message).toContain(`creative set ${FOREIGN_SET}`)
    expect(sandbox.countRequests((r) => r.path === '/api/v1/campaign/banner/create')).toBe(0)
    expect(await unverified(gw)).toBeGreaterThanOrEqual(1)
  })

  it('a genuine list copied under another advertiser\'s key is read as none', async () => {
    const a = await replica()
    // Team `growth` (101 and 102) reads advertiser 102's campaign: a replica keeps 102's list.
    const own = await a.proxy.inject({ method: 'POST', url: '/api/v1/report/campaigns/get', headers: { 'x-api-key': KEYS.growth, 'content-type': 'application/json' }, payload: JSON.stringify({ campaignIds: [FOREIGN_CAMPAIGN], dateFrom: '2026-01-01', dateTo: '2026-01-07' }) })
    expect(own.statusCode).toBe(200)
    const genuine = await client.get(listKey(a, '', 102))
    expect(genuine).not.toBeNull()
    const b = await replica()
    await client.set(listKey(b, '', 101), genuine as string, 'PX', 600_000)
    expect((await asWriter(b, 'POST', '/api/v1/report/campaigns/get', { campaignIds: [FOREIGN_CAMPAIGN], dateFrom: '2026-01-01', dateTo: '2026-01-07' })).statusCode).toBe(403)
    expect(await unverified(b)).toBeGreaterThanOrEqual(1)
  })
})
