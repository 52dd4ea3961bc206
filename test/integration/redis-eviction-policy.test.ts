import { describe, expect, it } from 'vitest'
import { testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'

// Report jobs' records and results, and webhook deliveries not yet made, carry no expiry
// in Redis: a Redis at its maxmemory that evicts any key (allkeys-lru, -lfu, -random)
// loses them, a job's result gone before its caller reads it. An operator who gave Redis
// such a policy (a cache's usual one) is told at start, with what to set instead.

const { available } = redisAvailability('the warning of an evicting Redis')

describe.skipIf(!available)("Redis' maxmemory-policy", () => {
  const redis = useRedis()
  const sandbox = useSandbox()
  const gateways = useGateways()

  async function started(maxmemory: string, policy: string): Promise<TestGateway> {
    await redis.client.config('SET', 'maxmemory', maxmemory)
    await redis.client.config('SET', 'maxmemory-policy', policy)
    return gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: redis.server.url }))
  }

  const policyLines = (gw: TestGateway) => gw.logs.records().filter((r) => typeof r.msg === 'string' && r.msg.includes('maxmemory-policy'))

  it.each(['allkeys-lru', 'allkeys-lfu', 'allkeys-random'])('warns at start of %s, which evicts the keys that carry no expiry', async (policy) => {
    // A start reads Redis' memory before it serves.
    const gw = await started('64mb', policy)
    expect(policyLines(gw)).toEqual([
      expect.objectContaining({
        level: 40,
        policy,
        msg: `Redis evicts keys that carry no expiry at its maxmemory (maxmemory-policy ${policy}): report jobs' records and results, webhook deliveries not yet made, the purges and the team suspensions may be lost; set maxmemory-policy to volatile-lru (report copies carry an expiry) or noeviction`,
      }),
    ])
  })

  it.each([['64mb', 'volatile-lru'], ['64mb', 'noeviction'], ['0', 'allkeys-lru']])('says nothing of maxmemory %s with %s', async (maxmemory, policy) => {
    const gw = await started(maxmemory, policy)
    expect(policyLines(gw)).toEqual([])
  })
})
