import { describe, expect, it } from 'vitest'
import { hashApiKey } from '../../src/access/api-keys.js'
import { KEYS, listen, TEAMS_YAML, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { fakeClock, onRealTimers } from '../helpers/clock.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// A team's counters in Redis (its platform-seconds of the day, its rate-limit window) are
// counts every replica adds to. Whoever may write to Redis (a neighbour on a shared
// instance, a leaked password) but holds no admin token resets one there: the team must
// not get past the bound it had already reached. The gateway's time is the test's (a
// fake clock on real timers), so the day and the window stay put.

const { available } = redisAvailability()

const ADMIN_TOKEN = 'usage-counters-admin-token-0000000000'
const BOUNDED_KEY = 'rgw_test_usage_bounded_key_000000000000000'
const NOON = Date.parse('2026-03-10T12:00:00Z')
const PATH = '/api/v1/report/campaigns/get'
const REPORT = (advertiser: number) => `${PATH}?advertiserId=${advertiser}&dateFrom=2026-03-01&dateTo=2026-03-07`
const YAML = `${TEAMS_YAML.trimEnd()}
  bounded:
    keys: ["${hashApiKey(BOUNDED_KEY)}"]
    advertisers: ["*"]
    platformSecondsPerDay: 0.001
cache:
  refreshAhead: 0
`

describe.skipIf(!available)('a Redis writer resets a team\'s counters', () => {
  const sandbox = useSandbox()
  const { server, client } = useRedis()
  const gateways = useGateways()

  async function replica(): Promise<TestGateway & { url: string }> {
    const config = testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: server.url, ADMIN_TOKEN }, YAML)
    return listen(await gateways.build(config, { clock: onRealTimers(fakeClock(NOON).now) }))
  }

  const get = (gw: { url: string }, target: string, key: string) => fetch(`${gw.url}${target}`, { headers: { 'x-api-key': key } })
  // GET /admin/usage flushes the replica's counts to Redis first, and reads back the day.
  const flush = async (gw: TestGateway) => expect((await gw.admin.inject({ method: 'GET', url: '/admin/usage', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).statusCode).toBe(200)

  it.each([
    ['set to 0', (key: string) => client.hset(key, 'platformMs', '0')],
    ['deleted', (key: string) => client.del(key)],
  ])('the spent day %s: the team past its day stays refused', async (_name, reset) => {
    const gw = await replica()
    sandbox.setLatency(20)
    expect((await get(gw, REPORT(101), BOUNDED_KEY)).status).toBe(200)
    await flush(gw)
    const spent = await get(gw, REPORT(102), BOUNDED_KEY)
    expect(spent.status).toBe(429)
    expect(((await spent.json()) as { code: string }).code).toBe('GW_PLATFORM_TIME_SPENT')
    const [key] = await client.keys('rgw:usage:{bounded}:*')
    expect(key).toBeDefined()
    await reset(key as string)
    // The refused call is counted: the flush adds it and reads the day back from Redis.
    await flush(gw)
    const calls = sandbox.countRequests((r) => r.path === PATH)
    const after = await get(gw, REPORT(103), BOUNDED_KEY)
    expect(after.status).toBe(429)
    expect(sandbox.countRequests((r) => r.path === PATH)).toBe(calls)
  })

  it.each([
    ['set to 0', (key: string) => client.set(key, '0', 'KEEPTTL')],
    ['deleted', (key: string) => client.del(key)],
  ])('the rate-limit window %s: the team gets no more calls than its limit', async (_name, reset) => {
    // Team `limited`: 3 calls a minute.
    const gw = await replica()
    // The window's number is read on Redis' clock, not the gateway's (NOON).
    const windowKey = async () => (await client.keys('rgw:rl:{limited}:*'))[0] ?? ''
    expect((await get(gw, REPORT(101), KEYS.limited)).status).toBe(200)
    expect((await get(gw, REPORT(101), KEYS.limited)).status).toBe(200)
    await waitFor('the two calls in Redis', async () => (await client.get(await windowKey())) === '2')
    const window = await windowKey()
    await reset(window)
    expect((await get(gw, REPORT(101), KEYS.limited)).status).toBe(200)
    await waitFor('the third call in Redis', async () => (await client.get(window)) === '1')
    const statuses = [(await get(gw, REPORT(101), KEYS.limited)).status, (await get(gw, REPORT(101), KEYS.limited)).status]
    expect(statuses).toEqual([429, 429])
  })
})
