import { Redis } from 'ioredis'
import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { RedisBus } from '../../src/redis/bus.js'
import { createRedisClient } from '../../src/redis/client.js'
import { redisKey } from '../../src/redis/keys.js'
import { RedisSeal } from '../../src/redis/seal.js'
import { fakeSentinel } from '../helpers/fake-sentinel.js'
import { KEYS, testConfig } from '../helpers/build-gateway.js'
import { useCleanups, useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// Two deployments on one Redis, each in a database of its own (REDIS_URL's /db), share
// nothing: not their keys (Redis keeps them per database), not their bus messages (pub/sub
// is not per database, so the channels say which one), and not behind a Sentinel either.

const { available } = redisAvailability('two deployments in two databases of one Redis')
const log = pino({ level: 'silent' })
const SECRET = 'one-secret-for-two-deployments-0123456789'

describe.skipIf(!available)('deployments in two databases of one Redis', () => {
  const redis = useRedis()
  const cleanups = useCleanups()
  const sandbox = useSandbox()
  const gateways = useGateways()

  async function client(db: number): Promise<Redis> {
    const c = new Redis(`${redis.server.url}/${db}`, { maxRetriesPerRequest: 0, lazyConnect: true })
    c.on('error', () => undefined)
    await c.connect()
    cleanups.push(() => c.disconnect())
    return c
  }

  function bus(c: Redis): RedisBus {
    const b = new RedisBus(c, redisKey.bus('rgw:'), log, { seal: new RedisSeal(SECRET) })
    cleanups.push(() => b.close())
    return b
  }

  it("hear only their own bus messages, the same prefix and GATEWAY_SECRET notwithstanding", async () => {
    const [first, second] = [bus(await client(0)), bus(await client(1))]
    const heard: string[] = []
    await second.subscribe('teams-reload', (message) => heard.push(message))
    // Redis hands one subscriber its messages in the order they were published: the
    // first deployment's, had it reached the second, comes before the second's own.
    await first.publish('teams-reload', 'from the deployment in db 0')
    await second.publish('teams-reload', 'from the deployment in db 1')
    await waitFor('the second deployment hears its own message', () => heard.length > 0 && heard.at(-1) === 'from the deployment in db 1')
    expect(heard).toEqual(['from the deployment in db 1'])
  })

  it("behind a Sentinel, use REDIS_URL's database", async () => {
    const sentinel = await fakeSentinel(() => ({ host: '127.0.0.1', port: redis.server.port }))
    cleanups.push(() => sentinel.close())
    const viaSentinel = createRedisClient(
      {
        url: 'redis://ignored.invalid:6379/3',
        sentinels: [{ host: '127.0.0.1', port: sentinel.port }],
        sentinelName: 'mymaster',
        commandTimeoutMs: 1000,
      } as Parameters<typeof createRedisClient>[0],
      log,
    )!
    cleanups.push(() => viaSentinel.disconnect())
    await waitFor('the connection through the Sentinel', () => viaSentinel.status === 'ready')
    await viaSentinel.set('rgw:written-behind-sentinel', '1')
    expect(await (await client(3)).get('rgw:written-behind-sentinel'), 'in database 3').toBe('1')
    expect(await (await client(0)).get('rgw:written-behind-sentinel'), 'in database 0').toBeNull()
  })

  it.each([
    ['a database this Redis does not have', '', '/99999', 'ERR DB index is out of range'],
    ['a database its ACL user may not select', 'no-select:user-password-0123456789@', '/3', "NOPERM this user has no permissions to run the 'select' command"],
  ])('never use database 0 for %s: the connection is dropped, and the cause names REDIS_URL', async (_what, user, database, refusal) => {
    await redis.client.acl('SETUSER', 'no-select', 'on', '>user-password-0123456789', '~*', '&*', '+@all', '-select')
    cleanups.push(async () => void (await redis.client.acl('DELUSER', 'no-select')))
    const gw = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: `${redis.server.url.replace('redis://', `redis://${user}`)}${database}` }))
    // ioredis went on in database 0 after Redis refused its SELECT: another deployment's keys.
    for (let n = 1; n <= 3; n++) {
      const res = await gw.proxy.inject({ method: 'GET', url: `/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-01-0${n}&dateTo=2026-01-0${n}`, headers: { 'x-api-key': KEYS.all } })
      expect(res.statusCode).toBe(200)
    }
    expect(await redis.client.dbsize(), 'keys written in database 0').toBe(0)
    const down = gw.logs.records().filter((r) => r.msg === 'redis unavailable: serving without it (circuit open)')
    expect(down.map((r) => r.cause)).toEqual([
      `REDIS_URL names database ${database.slice(1)}, which Redis refused to select (${refusal}): its commands are not sent to another database in its place; name a database it has (CONFIG GET databases) that its user may select, and restart`,
    ])
    // The commands refused on the dropped connection are said in the gateway's words, never the Redis client's.
    // The start reads the purge record as the connection is made: before Redis's refusal of the SELECT
    // came (a busy machine), the read met a connection not ready yet; after it, one dropped for good.
    const purgeRecord = gw.logs.records().filter((r) => r.msg === 'the shared purge record could not be read: report entries stored before now are filled again')
    expect(purgeRecord.map((r) => r.why)).toHaveLength(1)
    expect(['not connected to Redis (reconnecting)', 'not connected to Redis (the connection was closed and is not made again)']).toContain(purgeRecord[0]?.why)
    const said = gw.logs.records().flatMap((r) => [r.why, r.reason, r.cause, (r.err as { message?: unknown } | undefined)?.message])
    expect(said).not.toContain('Connection is closed.')
  })
})
