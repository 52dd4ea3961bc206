import { Redis } from 'ioredis'
import { describe, expect, it } from 'vitest'
import { hashApiKey } from '../../src/access/api-keys.js'
import { KeyUse, decodeKeyUse, encodeKeyUse, requestsInLastHour } from '../../src/observe/key-use.js'
import { RedisBreaker } from '../../src/redis/breaker.js'
import { RedisSeal } from '../../src/redis/seal.js'
import { redisKey } from '../../src/redis/keys.js'
import { TEST_GATEWAY_SECRET, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { fakeClock, type FakeClock } from '../helpers/clock.js'
import { pino } from 'pino'

// A key's life (contract, GET /admin/keys): made, expires, last used on each replica
// (gathered through Redis as the cluster view is), requests in the last hour. Each replica
// writes the use of the keys that had traffic, and only those, at most every 30 s.

const ADMIN_TOKEN = 'key-use-admin-token-0123456789abc'
const OLD = 'rgw_key_use_old_key_0000000000000000000000000'
const NEW = 'rgw_key_use_new_key_1111111111111111111111111'
const IDLE = 'rgw_key_use_idle_key_222222222222222222222222'
const YAML = `
teams:
  growth:
    keys:
      - { hash: "${hashApiKey(OLD)}", id: growth-2025, createdAt: 2025-01-15T08:00:00Z, expiresAt: 2099-01-01 }
      - { hash: "${hashApiKey(NEW)}", id: growth-2026, createdAt: 2026-01-10 }
  idle:
    keys: ["${hashApiKey(IDLE)}"]
    advertisers: ["*"]
`.replace('createdAt: 2026-01-10 }', 'createdAt: 2026-01-10 }\n    advertisers: ["*"]')
const REPORT = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-07'

const sandbox = useSandbox()
const redis = useRedis()
const gateways = useGateways()

const replica = (withRedis = true) =>
  gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN, ...(withRedis ? { REDIS_URL: redis.server.url } : {}) }, YAML))

const call = (gw: TestGateway, key: string) => gw.proxy.inject({ method: 'GET', url: REPORT, headers: { 'x-api-key': key } })

async function keys(gw: TestGateway, query = '') {
  const res = await gw.admin.inject({ method: 'GET', url: `/admin/keys${query}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  return res
}

type KeyRow = { team: string; id: string; createdAt: string | null; expiresAt: string | null; lastUsedAt: string | null; lastUsed: { replica: string; at: string }[]; requestsLastHour: number }

describe('GET /admin/keys', () => {
  it('gives each key its life: made, expires, last used on each replica, requests in the last hour', async () => {
    const a = await replica()
    const b = await replica()
    for (const [gw, key] of [[a, OLD], [a, OLD], [b, OLD], [b, NEW]] as const) expect((await call(gw, key)).statusCode).toBe(200)
    await b.keyUse.flush()
    const res = await keys(a)
    expect(res.statusCode).toBe(200)
    const body = res.json<{ redis: string; complete: boolean; keys: KeyRow[] }>()
    expect(body).toMatchObject({ redis: 'ok', complete: true })
    const byId = Object.fromEntries(body.keys.map((k) => [k.id, k]))
    expect(Object.keys(byId)).toEqual(['growth-2025', 'growth-2026', hashApiKey(IDLE).slice(7, 19)])
    const idOf = async (gw: TestGateway) => (await gw.admin.inject({ method: 'GET', url: '/admin/cluster', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json().replicas[0].id as string
    expect(byId['growth-2025']).toMatchObject({ team: 'growth', createdAt: '2025-01-15T08:00:00.000Z', expiresAt: '2099-01-01T00:00:00.000Z', expired: false, requestsLastHour: 3 })
    expect(byId['growth-2025']!.lastUsed.map((u) => u.replica).sort()).toEqual([await idOf(a), await idOf(b)].sort())
    expect(byId['growth-2025']!.lastUsedAt).toBe(byId['growth-2025']!.lastUsed[0]!.at)
    expect(Math.abs(Date.parse(byId['growth-2025']!.lastUsedAt!) - Date.now())).toBeLessThan(60_000)
    expect(byId['growth-2026']).toMatchObject({ createdAt: '2026-01-10T00:00:00.000Z', expiresAt: null, requestsLastHour: 1, lastUsed: [{ replica: await idOf(b) }] })
    expect(byId[hashApiKey(IDLE).slice(7, 19)]).toMatchObject({ team: 'idle', createdAt: null, lastUsedAt: null, lastUsed: [], requestsLastHour: 0 })
    expect((await keys(a, '?team=idle')).json<{ keys: KeyRow[] }>().keys.map((k) => k.team)).toEqual(['idle'])
    expect((await keys(a, '?team=nobody')).statusCode).toBe(404)
    // Never a key or its hash.
    for (const secret of [OLD, NEW, hashApiKey(OLD), hashApiKey(NEW)]) expect(res.body).not.toContain(secret)
  })

  it('without Redis counts this replica alone, saying so', async () => {
    const gw = await replica(false)
    await call(gw, NEW)
    const body = (await keys(gw)).json<{ redis: string; complete: boolean; keys: KeyRow[] }>()
    expect(body).toMatchObject({ redis: 'not configured', complete: false })
    expect(body.keys.find((k) => k.id === 'growth-2026')).toMatchObject({ requestsLastHour: 1 })
  })
})

describe('KeyUse', () => {
  const at = Date.parse('2026-03-01T12:00:00Z')

  function counting(client: Redis): { redis: Redis; writes: () => number } {
    let writes = 0
    const redis = new Proxy(client, {
      get(target, prop, receiver) {
        if (prop === 'multi') writes++
        const value = Reflect.get(target, prop, receiver) as unknown
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value
      },
    })
    return { redis, writes: () => writes }
  }

  function keyUse(client: Redis, clock: FakeClock, seal: RedisSeal | null = new RedisSeal(TEST_GATEWAY_SECRET), replica = 'replica-a') {
    const breaker = new RedisBreaker({ cooldownMs: 1000, log: pino({ level: 'silent' }) })
    return new KeyUse({ replica, redis: client, breaker, seal, prefix: 'ku:', clock })
  }

  it('writes only the keys that had traffic since its last write, and nothing while idle', async () => {
    const clock = fakeClock(at)
    const { redis: counted, writes } = counting(redis.client)
    const use = keyUse(counted, clock)
    expect(await use.flush()).toBe(true)
    expect(writes()).toBe(0)
    use.note('growth-2025', at)
    use.note('growth-2025', at + 1000)
    await use.flush()
    expect(writes()).toBe(1)
    expect(await redis.client.hkeys(redisKey.keyUse('ku:', 'replica-a'))).toEqual(['growth-2025'])
    await use.flush()
    expect(writes()).toBe(1)
    use.note('growth-2026', at + 2000)
    await use.flush()
    expect(writes()).toBe(2)
    expect((await redis.client.hkeys(redisKey.keyUse('ku:', 'replica-a'))).sort()).toEqual(['growth-2025', 'growth-2026'])
    // Kept a while after the last write, then gone: a month.
    expect(await redis.client.pttl(redisKey.keyUse('ku:', 'replica-a'))).toBeGreaterThan(29 * 86_400_000)
  })

  it('keeps the counts of the last hour only: 100 keys of an hour before keep their last use and no count', async () => {
    const clock = fakeClock(at)
    const use = keyUse(redis.client, clock, new RedisSeal(TEST_GATEWAY_SECRET), 'replica-hour')
    for (let i = 0; i < 100; i++) use.note(`hour-key-${i}`, at)
    await use.flush()
    expect((await use.gather()).byKey.size).toBe(100)
    clock.advance(60 * 60_000 + 1)
    use.note('hour-key-new', clock.now())
    expect(await use.flush()).toBe(true)
    const view = (await use.gather()).byKey
    expect(view.size).toBe(101)
    expect(view.get('hour-key-7')).toEqual([{ replica: 'replica-hour', record: { at, minutes: [] } }])
    expect(view.get('hour-key-new')?.[0]?.record.minutes).toEqual([[Math.floor(clock.now() / 60_000), 1]])
  })

  it('writes its use and its removals again into a Redis that lost them (a restart without its data, a flush), once, and says so', async () => {
    const clock = fakeClock(at)
    const lost: number[] = []
    const breaker = new RedisBreaker({ cooldownMs: 1000, log: pino({ level: 'silent' }) })
    const seal = new RedisSeal(TEST_GATEWAY_SECRET)
    const a = new KeyUse({ replica: 'replica-heal-a', redis: redis.client, breaker, seal, prefix: 'heal:', clock, onLost: (keys) => lost.push(keys) })
    a.note('nightly-2025', at - 2 * 60 * 60_000)
    a.note('growth-2026', at)
    await a.keysChanged({ removed: [{ team: 'growth', id: 'growth-2024', lineage: 'growth-2024', replaces: null, successor: null, graceUntil: null, createdAt: null, expiresAt: null }], added: [] })
    await a.flush()
    clock.advance(30_000)
    await a.flush()
    const seenByB = async () => {
      const view = await new KeyUse({ replica: 'replica-heal-b', redis: redis.client, breaker, seal, prefix: 'heal:', clock }).gather()
      return { used: [...view.byKey.keys()].sort(), removed: [...view.removed.keys()] }
    }
    expect(await seenByB()).toEqual({ used: ['growth-2026', 'nightly-2025'], removed: ['growth-2024'] })
    // What a FLUSHALL does to this gateway's keys, leaving the other tests' alone.
    await redis.client.del(...(await redis.client.keys('heal:*')))
    expect(await seenByB()).toEqual({ used: [], removed: [] })
    clock.advance(30_000)
    expect(await a.flush()).toBe(true)
    expect(lost).toEqual([2])
    expect(await seenByB()).toEqual({ used: ['growth-2026', 'nightly-2025'], removed: ['growth-2024'] })
    clock.advance(30_000)
    await a.flush()
    expect(lost).toEqual([2])
  })

  it('reads another replica\'s use back, and ignores a record without the seal or larger than one of its own', async () => {
    const clock = fakeClock(at)
    const a = keyUse(redis.client, clock, new RedisSeal(TEST_GATEWAY_SECRET), 'replica-a')
    const b = keyUse(redis.client, clock, new RedisSeal(TEST_GATEWAY_SECRET), 'replica-b')
    b.note('growth-2025', at - 120_000)
    b.note('growth-2025', at)
    await b.flush()
    const hash = redisKey.keyUse('ku:', 'replica-b')
    await redis.client.hset(hash, 'forged', encodeKeyUse({ at, minutes: [[Math.floor(at / 60_000), 1_000_000]] }))
    await redis.client.hset(hash, 'huge', 'x'.repeat(4096))
    const view = await a.gather()
    expect(view.redis).toBe('ok')
    expect([...view.byKey.keys()]).toEqual(['growth-2025'])
    const [use] = view.byKey.get('growth-2025')!
    expect(use).toEqual({ replica: 'replica-b', record: { at, minutes: [[Math.floor(at / 60_000) - 2, 1], [Math.floor(at / 60_000), 1]] } })
  })

  it('counts the requests of the last hour only, whatever the ring held before', () => {
    const minute = Math.floor(at / 60_000)
    const records = [
      { at, minutes: [[minute - 60, 5], [minute - 59, 2], [minute, 1]] as [number, number][] },
      { at: at - 1000, minutes: [[minute - 1, 4]] as [number, number][] },
    ]
    expect(requestsInLastHour(records, at)).toBe(7)
  })

  it('reads back only what it writes', () => {
    expect(decodeKeyUse(encodeKeyUse({ at, minutes: [[1, 2]] }))).toEqual({ at, minutes: [[1, 2]] })
    // With the key's team (a removed key is listed under it); a team it cannot name is left out, the use kept.
    expect(decodeKeyUse(encodeKeyUse({ at, minutes: [[1, 2]], team: 'growth' }))).toEqual({ at, minutes: [[1, 2]], team: 'growth' })
    expect(decodeKeyUse(JSON.stringify({ at, m: [[1, 2]], t: '<b>' }))).toEqual({ at, minutes: [[1, 2]] })
    for (const bad of ['', 'null', '{"at":"x","m":[]}', '{"at":1,"m":[[1]]}', '{"at":1,"m":[[1,-1]]}', `{"at":1,"m":${JSON.stringify(Array.from({ length: 61 }, (_, i) => [i, 1]))}}`]) expect(decodeKeyUse(bad), bad).toBeNull()
  })
})
