import { describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH as PATH, teamsYamlWith, testConfig, WEEK_BY_DATE as QUERY } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// What one team makes the gateway write into the Redis every team shares is bounded by
// what lives there: a team that asks report after report (a parameter the platform
// ignores, a new date range each time) fills entries that expire or are evicted, and
// nothing of them is kept past them. What never expires (report jobs' results) is bounded
// per team, and a Redis smaller than those bounds together is said at start: there one
// team's results, within its bound, evict every team's copies and then stop every job.

const { available } = redisAvailability()

const SECRET = 'redis-footprint-test-secret-000000000000'
// Reports of recent days live a second, so that the test sees them go; settled ones an hour.
const YAML = teamsYamlWith({
  cache: { ttl: { recent: '1s', settled: '1h' }, staleWhileRevalidate: '0s', staleIfError: '0s', refreshAhead: false },
})
const READS = 20
const TODAY = new Date().toISOString().slice(0, 10)

describe.skipIf(!available)("an advertiser's index in Redis", () => {
  const sandbox = useSandbox()
  const { server, client } = useRedis()
  const gateways = useGateways()

  /** The report keys an advertiser's index lists, whatever Redis type holds it. */
  async function listed(advertiserId: number): Promise<string[]> {
    const keys = (await client.keys(`rgw:adv*:${advertiserId}`)).filter((key) => !key.includes(':report:'))
    const members: string[] = []
    for (const key of keys) {
      const type = await client.type(key)
      members.push(...(type === 'zset' ? await client.zrange(key, 0, -1) : type === 'set' ? await client.smembers(key) : []))
    }
    return members
  }

  it('lists the entries that live, not every entry ever written of the advertiser', async () => {
    const gw = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: server.url, GATEWAY_SECRET: SECRET }, YAML))
    const read = async (query: string) => {
      const res = await gw.proxy.inject({ method: 'GET', url: `${PATH}?${query}`, headers: { 'x-api-key': KEYS.all } })
      expect(res.headers['x-cache']).toBe('MISS')
    }
    // A settled report keeps the advertiser's index alive while the team asks report after report.
    await read(QUERY)
    for (let i = 0; i < READS; i++) await read(`advertiserId=101&dateFrom=${TODAY}&dateTo=${TODAY}&bust=${i}`)
    expect(await listed(101)).toHaveLength(READS + 1)
    await waitFor('the recent reports to expire in Redis', async () => (await client.keys('rgw:report:*')).length === 1, 10_000, 100)

    await read(`${QUERY}&bust=settled`)
    const live = await client.keys('rgw:report:*')
    expect(live).toHaveLength(2)
    expect((await listed(101)).sort()).toEqual(live.sort())
  })
})

describe.skipIf(!available)("the teams' job results beside Redis' maxmemory", () => {
  const sandbox = useSandbox()
  const { server, client } = useRedis()
  const gateways = useGateways()
  const WARNING = "redis may fill with report jobs' results"

  async function startWith(maxmemory: string, resultBytesPerTeam: string) {
    await client.config('SET', 'maxmemory', maxmemory)
    try {
      const yaml = teamsYamlWith({ jobs: { resultBytesPerTeam } })
      return await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: server.url, GATEWAY_SECRET: SECRET }, yaml))
    } finally {
      await client.config('SET', 'maxmemory', '0')
    }
  }

  it('is one warning at start when they pass half of it, naming both', async () => {
    const gw = await startWith('64mb', '256MiB')
    const warned = gw.logs.records().filter((r) => String(r.msg).startsWith(WARNING))
    expect(warned).toHaveLength(1)
    const teams = (warned[0]?.teams as number)
    expect(teams).toBeGreaterThan(0)
    expect(warned[0]).toMatchObject({ level: 40, resultBytesPerTeam: 256 * 1024 * 1024, resultBytes: teams * 256 * 1024 * 1024, maxmemory: 64 * 1024 * 1024 })
  })

  it('is none when they fit in half of it, or Redis has no maxmemory', async () => {
    const fits = await startWith('1gb', '1MiB')
    expect(fits.logs.text()).not.toContain(WARNING)
    const unlimited = await startWith('0', '256MiB')
    expect(unlimited.logs.text()).not.toContain(WARNING)
  })
})
