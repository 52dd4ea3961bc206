import { describe, expect, it } from 'vitest'
import { KEYS, SANDBOX_TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import { testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'

// test/attacks/l1-room.test.ts's flood on two replicas sharing a Redis, read from outside
// (answers and /admin/cache/entry). A fill goes to both tiers (TieredStore), and a copy read from Redis into a
// replica's memory counts there on the team that filled it. The flooding team's 16 copies a
// replica pass its part of each replica's memory (L1 2 MiB: 512 KiB a team of four, a copy
// about 210 KB there) and push out none of growth's: its copy stays in the memory of the
// replica that filled it (not only in Redis, whence a read would still be a HIT), and the
// other replica reads it from Redis, one platform call in all.

const { available } = redisAvailability()
const SECRET = 'l1-room-tiers-test-secret-0000000000000000'
const ADMIN_TOKEN = 'l1-room-tiers-admin-token-0123456789'
const YAML = `${SANDBOX_TEAMS_YAML}cache:\n  l1MaxBytes: 2MiB\n  refreshAhead: false\n`
const REPORT = '/api/v1/report/campaigns/get'
const DASHBOARD = `${REPORT}?advertiserId=102&dateFrom=2026-11-01&dateTo=2026-11-30&byDate=1`
const flood = (n: number): string => `${REPORT}?advertiserId=101&dateFrom=2025-12-01&dateTo=2026-11-30&byDate=1&byCampaign=1&bust=${n}`

describe.skipIf(!available)("one team's many copies on replicas sharing a Redis", () => {
  const sandbox = useSandbox()
  const { server } = useRedis()
  const gateways = useGateways()

  async function read(gw: TestGateway, url: string, key: string): Promise<string | undefined> {
    const res = await gw.proxy.inject({ method: 'GET', url, headers: { 'x-api-key': key } })
    expect(res.statusCode).toBe(200)
    return res.headers['x-cache'] as string | undefined
  }
  async function tiers(gw: TestGateway): Promise<string[]> {
    const res = await gw.admin.inject({ method: 'GET', url: `/admin/cache/entry?url=${encodeURIComponent(DASHBOARD)}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    if (res.statusCode === 404) return []
    return res.json<{ entries: { tiers: { tier: string }[] }[] }>().entries.flatMap((e) => e.tiers.map((t) => t.tier))
  }

  it("push out none of another team's copies from the replica's memory that filled them", async () => {
    const config = () => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: server.url, GATEWAY_SECRET: SECRET, ADMIN_TOKEN }, YAML)
    const [one, two] = [await gateways.build(config()), await gateways.build(config())]
    const dashboardCalls = (): number => sandbox.requests.filter((r) => r.query?.includes('dateFrom=2026-11-01') === true).length
    expect(await read(one, DASHBOARD, KEYS.growth)).toBe('MISS')
    // Sixteen copies on each replica, four at a time.
    for (let n = 0; n < 16; n += 2) {
      await Promise.all([one, two].flatMap((gw, i) => [n, n + 1].map((m) => read(gw, flood(100 * i + m), KEYS.all))))
    }
    expect(await tiers(one)).toEqual(['l1', 'l2'])
    expect(await tiers(two)).toEqual(['l2'])
    expect(await read(one, DASHBOARD, KEYS.growth)).toBe('HIT')
    expect(await read(two, DASHBOARD, KEYS.growth)).toBe('HIT')
    expect(dashboardCalls()).toBe(1)
  })
})
