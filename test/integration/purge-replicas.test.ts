import { describe, expect, it } from 'vitest'
import { TEAMS_YAML, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { distinctReport, proxyGet } from '../helpers/gateway-calls.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// A purge is final on every replica: one made on replica A reaches replica B's memory
// through the bus, and, when B's subscriber was away as it was announced (a reconnect),
// through the shared record B reads again as its subscriber is back. Two gateway
// instances in this process stand for two replicas, on one real redis-server.

const ADMIN_TOKEN = 'purge-admin-token-0123456789abcdef00'
const GATEWAY_SECRET = 'purge-gateway-secret-0123456789abc'

const redisCheck = redisAvailability()
if (redisCheck.notice) console.warn(redisCheck.notice)

describe.skipIf(!redisCheck.available)('a purge across replicas (Redis)', () => {
  const sandbox = useSandbox()
  const { server: redis, client } = useRedis()
  const gateways = useGateways()

  const replica = (): Promise<TestGateway> =>
    gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN, REDIS_URL: redis.url, GATEWAY_SECRET }, TEAMS_YAML))
  const purge = (gw: TestGateway, advertiserId: number) =>
    gw.admin.inject({ method: 'DELETE', url: `/admin/cache?advertiserId=${advertiserId}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  const xCache = async (gw: TestGateway, url: string) => {
    const res = await proxyGet(gw, url)
    expect(res.statusCode).toBe(200)
    return res.headers['x-cache']
  }
  /** Replicas A and B, each holding a copy of report n in memory (A filled it, B took it from Redis). */
  const bothHolding = async (n: number) => {
    const a = await replica()
    const b = await replica()
    // Settled days (2025): fresh for 24 h, so only a purge makes B call the platform again.
    const report = distinctReport(n)
    expect(await xCache(a, report)).toBe('MISS')
    expect(await xCache(b, report)).toBe('HIT')
    return { a, b, report }
  }

  it("reaches the other replica's memory on the bus", async () => {
    const { a, b, report } = await bothHolding(1)
    expect((await purge(a, 101)).statusCode).toBe(200)
    await waitFor('replica B to stop answering from the purged copy', async () => (await xCache(b, report)) !== 'HIT')
  })

  it('reaches a replica whose subscriber was away as it was announced, as the subscriber is back', async () => {
    const { a, b, report } = await bothHolding(2)
    // Both subscribers gone: they connect again after their reconnect delay (100 ms at
    // the first try), after the purge below is announced.
    await client.client('KILL', 'TYPE', 'pubsub')
    expect((await purge(a, 101)).statusCode).toBe(200)
    await waitFor('replica B to stop answering from the purged copy', async () => (await xCache(b, report)) !== 'HIT')
  })
})
