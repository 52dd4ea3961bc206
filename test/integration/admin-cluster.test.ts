import { describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH, sandboxLoginEnv, teamsYamlWith, testConfig, WEEK_BY_DATE, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'
import { redisKey } from '../../src/redis/keys.js'
import { BUCKET_MS, BUCKETS, emptyHistory, History } from '../../src/observe/history.js'
import { Replicas, type Announcement } from '../../src/observe/replicas.js'
import type { HistoryView } from '../../src/observe/history.js'
import { RedisBus } from '../../src/redis/bus.js'
import { RedisBreaker } from '../../src/redis/breaker.js'
import { RedisSeal } from '../../src/redis/seal.js'
import { fakeClock, onRealTimers, type FakeClock } from '../helpers/clock.js'
import { TEST_GATEWAY_SECRET } from '../helpers/build-gateway.js'
import { pino } from 'pino'

// GET /admin/cluster: the replicas announce themselves in Redis (sealed with
// GATEWAY_SECRET) and each lists them all, with their last hour; without Redis a
// replica lists itself and says so.

const { available } = redisAvailability()
const ADMIN_TOKEN = 'admin-cluster-admin-token-0123456789'

interface Replica {
  id: string
  self: boolean
  ready: boolean
  version: string
  gone: { how: string; lastSeen: string } | null
  inFlight: number
  degraded: string[]
  history: { requests: (number | null)[]; reportReads: (number | null)[]; platformCalls: (number | null)[]; credentials: { credential: string; limit: (number | null)[] }[] }
}
interface Cluster {
  redis: string
  complete: boolean
  note: string | null
  replicas: Replica[]
}

const sandbox = useSandbox()
const gateways = useGateways()

const cluster = async (gw: TestGateway, token: string | null = ADMIN_TOKEN) =>
  gw.admin.inject({ method: 'GET', url: '/admin/cluster', headers: token === null ? {} : { authorization: `Bearer ${token}` } })
const clusterOf = async (gw: TestGateway): Promise<Cluster> => (await cluster(gw)).json()
/** The replicas listed as live; a replica closed by an earlier test stays listed as gone. */
const liveOf = async (gw: TestGateway): Promise<Replica[]> => (await clusterOf(gw)).replicas.filter((r) => r.gone === null)
const sum = (values: (number | null)[]) => values.reduce<number>((a, b) => a + (b ?? 0), 0)

describe('GET /admin/cluster without Redis', () => {
  it('needs the admin token, and lists this replica only, saying so', async () => {
    const gw = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, ADMIN_TOKEN, ...sandboxLoginEnv(sandbox) }))
    expect((await cluster(gw, null)).statusCode).toBe(401)
    expect((await cluster(gw, 'a-wrong-admin-token-000000')).statusCode).toBe(401)
    const res = await cluster(gw)
    expect(res.statusCode).toBe(200)
    expect(res.headers['cache-control']).toBe('no-store')
    expect((await gw.proxy.inject({ method: 'GET', url: `${REPORT_PATH}?${WEEK_BY_DATE}`, headers: { 'x-api-key': KEYS.all } })).headers['x-cache']).toBe('MISS')
    const view = await clusterOf(gw)
    expect(view).toMatchObject({ redis: 'not configured', complete: false, note: expect.stringMatching(/this replica only/) })
    expect(view.replicas).toHaveLength(1)
    const [self] = view.replicas as [Replica]
    expect(self).toMatchObject({ self: true, ready: true, inFlight: 0, degraded: [] })
    expect(self.history.requests).toHaveLength(BUCKETS)
    expect(sum(self.history.requests)).toBe(1)
    expect(sum(self.history.reportReads)).toBe(1)
    // The report's fill, the token login's probe, …: at least one call.
    expect(sum(self.history.platformCalls)).toBeGreaterThanOrEqual(1)
    expect(self.history.credentials[0]).toMatchObject({ credential: 'default' })
    // The limit in force: it starts at platform.initialConcurrent (8).
    expect(self.history.credentials[0]?.limit.at(-1)).toBe(8)
  })
})

describe.skipIf(!available)('GET /admin/cluster with two replicas on one Redis', () => {
  const { server: redisServer, client: redis } = useRedis()
  const replica = (yaml?: string) => gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, ADMIN_TOKEN, REDIS_URL: redisServer.url, ...sandboxLoginEnv(sandbox) }, yaml))

  it('each replica lists both, itself first, with each one\'s last hour', async () => {
    const [a, b] = [await replica(), await replica()]
    expect((await a.proxy.inject({ method: 'GET', url: `${REPORT_PATH}?${WEEK_BY_DATE}`, headers: { 'x-api-key': KEYS.all } })).statusCode).toBe(200)
    for (const gw of [a, b]) await waitFor('both replicas listed', async () => (await liveOf(gw)).length === 2)
    const fromA = { ...(await clusterOf(a)), replicas: await liveOf(a) }
    const fromB = { ...(await clusterOf(b)), replicas: await liveOf(b) }
    expect(fromA).toMatchObject({ redis: 'ok', complete: true, note: null })
    expect(fromA.replicas.map((r) => r.self)).toEqual([true, false])
    expect(fromA.replicas.map((r) => r.id)).toEqual([fromB.replicas[1]?.id, fromB.replicas[0]?.id])
    expect(new Set(fromA.replicas.map((r) => r.id)).size).toBe(2)
    for (const r of fromA.replicas) expect(r).toMatchObject({ ready: true, version: expect.any(String), degraded: [] })
    // A's request is in A's history, as B reads it from Redis (A writes its hour when B's view asks).
    await waitFor('A\'s request announced', async () => sum((await liveOf(b)).find((r) => !r.self)?.history.requests ?? []) === 1, testTimeLeft(), 100)
    expect(sum(fromB.replicas[0]?.history.requests ?? [])).toBe(0)
  }, 20_000)

  it.each([['30 s behind', -30_000], ['90 s ahead of', 90_000]])('a replica whose clock is %s the others\' is listed live by every replica, and PUT /admin/log-level reaches it: liveness is on Redis\' clock', async (_, skewMs) => {
    const a = await replica()
    const skewed = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, ADMIN_TOKEN, REDIS_URL: redisServer.url, ...sandboxLoginEnv(sandbox) }), { clock: onRealTimers(() => Date.now() + skewMs) })
    const idOfSkewed = (await clusterOf(skewed)).replicas[0]!.id
    // Listed at all once announced: a view that lists it (live or gone) has read its announcement.
    await waitFor('the skewed replica announced', async () => (await redis.exists(redisKey.replica(a.config.redis.keyPrefix, idOfSkewed))) === 1)
    for (const gw of [a, skewed]) expect((await liveOf(gw)).map((r) => r.id).sort()).toEqual([idOfSkewed, (await clusterOf(a)).replicas[0]!.id].sort())
    const set = await a.admin.inject({ method: 'PUT', url: '/admin/log-level', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { level: 'debug', replica: idOfSkewed } })
    expect(set.statusCode).toBe(200)
  })

  it('announcements are sealed: one without the seal is left out and counted; one too large is not read whole', async () => {
    const gw = await replica()
    const prefix = gw.config.redis.keyPrefix
    const forged = { id: 'forged-1', version: '9.9.9', ready: true, inFlight: 0, uptimeSeconds: 1, degraded: [], history: { start: 0, requests: [] } }
    await redis.set(redisKey.replica(prefix, 'forged-1'), JSON.stringify(forged), 'PX', 15_000)
    await redis.zadd(redisKey.replicas(prefix), Date.now(), 'forged-1')
    await redis.set(redisKey.replica(prefix, 'huge-1'), 'x'.repeat(2 * 1024 * 1024), 'PX', 15_000)
    await redis.zadd(redisKey.replicas(prefix), Date.now(), 'huge-1', Date.now(), 'y'.repeat(4096))
    const view = await clusterOf(gw)
    expect(view.replicas.map((r) => r.id)).not.toContain('forged-1')
    expect(view.replicas.filter((r) => r.gone === null)).toHaveLength(1)
    const metrics = (await gw.admin.inject({ method: 'GET', url: '/metrics' })).body
    expect(metrics).toMatch(/gateway_redis_unverified_total\{what="replica"\} [1-9]/)
  })

  it('an index entry dated ahead of now is no replica\'s: phantoms dated in the future push no real replica out of the newest 64', async () => {
    const [a, b] = [await replica(), await replica()]
    await waitFor('both replicas listed', async () => (await liveOf(a)).length === 2)
    // A Redis writer's ids dated a year ahead, more than the view reads.
    const ahead = Date.now() + 365 * 24 * 3600_000
    const phantoms = Array.from({ length: 200 }, (_, i) => [ahead, `phantom-${i}`] as const).flat()
    await redis.zadd(redisKey.replicas(a.config.redis.keyPrefix), ...phantoms)
    const view = await clusterOf(a)
    expect(view).toMatchObject({ redis: 'ok', complete: true })
    expect(view.replicas.map((r) => r.id)).toContain((await liveOf(b)).find((r) => r.self)?.id)
  })

  it('a replica that closes is listed as stopped, not ready, with its last hour, and no longer live', async () => {
    const [a, b] = [await replica(), await replica()]
    await waitFor('both replicas listed', async () => (await liveOf(a)).length === 2)
    expect((await b.proxy.inject({ method: 'GET', url: `${REPORT_PATH}?${WEEK_BY_DATE}`, headers: { 'x-api-key': KEYS.all } })).statusCode).toBe(200)
    const idOfB = (await clusterOf(b)).replicas[0]!.id
    await b.close()
    const view = await clusterOf(a)
    expect((await liveOf(a)).map((r) => r.self)).toEqual([true])
    const gone = view.replicas.find((r) => r.id === idOfB)!
    expect(gone).toMatchObject({ self: false, ready: false, gone: { how: 'stopped', lastSeen: expect.any(String) } })
    // Its past stays: the request it served is still in its hour.
    expect(sum(gone.history.requests)).toBe(1)
  })

  it('a replica that stops announcing itself without a clean stop is listed as vanished after 15 s, for the hour, with the hour its buckets make', async () => {
    const clock = fakeClock()
    // The crashed replica's clock: it announces once, then never again (it died).
    const frozen = fakeClock(clock.now())
    const silent = pino({ level: 'silent' })
    const breaker = new RedisBreaker({ cooldownMs: 1000, log: silent })
    const seal = new RedisSeal(TEST_GATEWAY_SECRET)
    const history = { bucketSeconds: 10, start: clock.now(), requests: [3], statuses: {}, reportReads: [], hits: [], platformCalls: [], latencyP50Ms: [], latencyP99Ms: [], credentials: [], teams: [] } as unknown as HistoryView
    // Its one bucket before its last announcement, with 5 requests.
    const closed = Math.floor(frozen.now() / BUCKET_MS) - 1
    const bucket = (n: number): HistoryView | null => (n === closed ? { ...emptyHistory(0, BUCKET_MS, 1), start: n * BUCKET_MS, requests: [5] } : null)
    const state = (id: string, on: FakeClock) => (): Announcement => ({ id, version: '1', commit: 'unknown', node: 'v24', startedAt: new Date(on.now()).toISOString(), uptimeSeconds: 1, phase: 'serving', ready: true, logLevel: 'info', inFlight: 0, waiting: 0, degraded: [], at: new Date(on.now()).toISOString() })
    const buses = [new RedisBus(redis, 'rgw:bus:', silent, { seal }), new RedisBus(redis, 'rgw:bus:', silent, { seal })]
    try {
      const options = { redis, breaker, seal, prefix: 'rgw:', log: silent, history: () => history, bucket }
      const crashed = new Replicas({ ...options, clock: frozen, id: 'crashed-1', state: state('crashed-1', frozen), bus: buses[0] })
      const reader = new Replicas({ ...options, clock, id: 'reader-1', state: state('reader-1', clock), bus: buses[1] })
      await Promise.all([crashed.start(), reader.start()])
      expect(await crashed.announce()).toBe(true)
      // Nothing of its hour in Redis until a view asks for it.
      expect(await redis.exists(redisKey.replicaHistory('rgw:', 'crashed-1'))).toBe(0)
      clock.advance(14_000)
      const live = (await reader.cluster()).replicas.find((r) => r.id === 'crashed-1')
      expect(live).toMatchObject({ gone: null, history: { requests: [3] } })
      // No close(): the process died.
      clock.advance(2_000)
      const seen = (await reader.cluster()).replicas.find((r) => r.id === 'crashed-1')
      expect(seen).toMatchObject({ ready: false, gone: { how: 'vanished', lastSeen: new Date(clock.now() - 16_000).toISOString() } })
      // Gone, its hour is the one its buckets make, not the one it wrote when asked.
      expect(seen?.history.requests).toHaveLength(BUCKETS)
      expect(seen?.history.requests.filter((n) => n !== null)).toEqual([5])
      // Kept for the hour, then gone from the list; the hour written when asked only a minute.
      expect(await redis.pttl(redisKey.replica('rgw:', 'crashed-1'))).toBeGreaterThan(3_500_000)
      expect(await redis.pttl(redisKey.replicaBuckets('rgw:', 'crashed-1'))).toBeGreaterThan(3_500_000)
      expect(await redis.pttl(redisKey.replicaHistory('rgw:', 'crashed-1'))).toBeLessThanOrEqual(60_000)
    } finally {
      await Promise.all(buses.map((b) => b.close()))
    }
  })

  it('a replica killed while no view looked is listed as vanished with its hour, up to its last closed bucket', async () => {
    const clock = fakeClock(Math.floor(Date.now() / BUCKET_MS) * BUCKET_MS)
    const frozen = fakeClock(clock.now())
    const silent = pino({ level: 'silent' })
    const breaker = new RedisBreaker({ cooldownMs: 1000, log: silent })
    const seal = new RedisSeal(TEST_GATEWAY_SECRET)
    const state = (id: string, on: FakeClock) => (): Announcement => ({ id, version: '1', commit: 'unknown', node: 'v24', startedAt: new Date(on.now()).toISOString(), uptimeSeconds: 1, phase: 'serving', ready: true, logLevel: 'info', inFlight: 0, waiting: 0, degraded: [], at: new Date(on.now()).toISOString() })
    const bus = new RedisBus(redis, 'rgw:bus:', silent, { seal })
    const served = new History({ clock: frozen })
    const options = { redis, breaker, seal, prefix: 'rgw:', log: silent }
    const killed = new Replicas({ ...options, clock: frozen, id: 'killed-1', state: state('killed-1', frozen), history: () => served.view(), bucket: (n) => served.bucket(n) })
    const reader = new Replicas({ ...options, clock, id: 'reader-2', state: state('reader-2', clock), history: () => emptyHistory(clock.now()), bucket: () => null, bus })
    try {
      await Promise.all([killed.start(), reader.start()])
      // It serves for three buckets, announcing itself every 5 s; no view asks meanwhile.
      for (let i = 0; i < 6; i++) {
        served.request(200, 'growth', true, i % 2 === 0)
        served.request(503, 'growth', true, false)
        frozen.advance(5_000)
        clock.advance(5_000)
        expect(await killed.announce()).toBe(true)
      }
      // Then it dies: no close(), nothing more from it; its last bucket has a request it never wrote.
      served.request(200, 'growth', true, false)
      expect(await redis.exists(redisKey.replicaHistory('rgw:', 'killed-1'))).toBe(0)
      // Still live for 15 s: a view that cannot ask it (no bus) lists it with the hour its buckets make.
      const unasked = new Replicas({ ...options, clock, id: 'reader-3', state: state('reader-3', clock), history: () => emptyHistory(clock.now()), bucket: () => null })
      const live = (await unasked.cluster()).replicas.find((r) => r.id === 'killed-1')
      expect(live).toMatchObject({ gone: null })
      expect(live?.history.requests.filter((n) => n !== null)).toEqual([4, 4, 4])
      clock.advance(16_000)
      const seen = (await reader.cluster()).replicas.find((r) => r.id === 'killed-1')
      expect(seen).toMatchObject({ ready: false, gone: { how: 'vanished' } })
      // The hour carries the three buckets it closed before its end (2 requests each), then nothing.
      expect(seen?.history.requests.filter((n) => n !== null)).toEqual([4, 4, 4])
      expect(sum(seen?.history.statuses['5xx'] ?? [])).toBe(6)
      expect(seen?.history.teams).toEqual([{ team: 'growth', tooManyRequests: expect.any(Array), errors: expect.any(Array) }])
      expect(sum(seen?.history.teams[0]?.errors ?? [])).toBe(6)
      expect(seen?.history.requests.at(-1)).toBeNull()
    } finally {
      await bus.close()
    }
  })

  it('a bucket without the seal is left out and counted, one too large is not read; a hash of more buckets than the hour is not read', async () => {
    const clock = fakeClock()
    const silent = pino({ level: 'silent' })
    const seal = new RedisSeal(TEST_GATEWAY_SECRET)
    const unverified: string[] = []
    const state = (id: string) => (): Announcement => ({ id, version: '1', commit: 'unknown', node: 'v24', startedAt: new Date(clock.now()).toISOString(), uptimeSeconds: 1, phase: 'serving', ready: true, logLevel: 'info', inFlight: 0, waiting: 0, degraded: [], at: new Date(clock.now()).toISOString() })
    const options = { redis, breaker: new RedisBreaker({ cooldownMs: 1000, log: silent }), seal, prefix: 'rgw:', log: silent, clock, history: () => emptyHistory(clock.now()), bucket: () => null, onUnverified: (key: string) => unverified.push(key) }
    const n = Math.floor(clock.now() / BUCKET_MS) - 1
    const one = (requests: number): HistoryView => ({ ...emptyHistory(0, BUCKET_MS, 1), start: n * BUCKET_MS, requests: [requests] })
    const field = String(n % BUCKETS)
    const sealedAt = (key: string, f: string, view: HistoryView) => seal.sealText(`${key}#${f}`, JSON.stringify(view))
    for (const id of ['kept-2', 'forged-2', 'huge-2', 'many-2']) expect(await new Replicas({ ...options, id, state: state(id) }).announce()).toBe(true)
    const kept = redisKey.replicaBuckets('rgw:', 'kept-2')
    await redis.hset(kept, field, sealedAt(kept, field, one(9)))
    const forged = redisKey.replicaBuckets('rgw:', 'forged-2')
    await redis.hset(forged, field, JSON.stringify(one(9)))
    const huge = redisKey.replicaBuckets('rgw:', 'huge-2')
    await redis.hset(huge, field, sealedAt(huge, field, { ...one(9), teams: [{ team: 'x'.repeat(9000), tooManyRequests: [1], errors: [0] }] }))
    const many = redisKey.replicaBuckets('rgw:', 'many-2')
    await redis.hset(many, field, sealedAt(many, field, one(9)), ...Array.from({ length: BUCKETS }, (_, i) => [`x${i}`, '1']).flat())
    clock.advance(16_000)
    const view = await new Replicas({ ...options, id: 'reader-4', state: state('reader-4') }).cluster()
    expect(view.replicas.find((x) => x.id === 'kept-2')?.history.requests.filter((v) => v !== null)).toEqual([9])
    for (const id of ['forged-2', 'huge-2', 'many-2']) {
      const r = view.replicas.find((x) => x.id === id)
      expect(r).toMatchObject({ gone: { how: 'vanished' } })
      expect(r?.history.requests.every((v) => v === null)).toBe(true)
    }
    expect(unverified).toEqual([`${forged}#${field}`])
  })

  it('announces some hundreds of bytes every 5 s; its hour only when a view asks', async () => {
    const [a, b] = [await replica(), await replica()]
    await waitFor('both replicas listed', async () => (await liveOf(a)).length === 2)
    const [self, other] = (await clusterOf(a)).replicas as [Replica, Replica]
    expect(await redis.strlen(redisKey.replica('rgw:', self.id))).toBeLessThan(1024)
    // A's views asked B for its hour; nobody asked A for its own.
    expect(await redis.exists(redisKey.replicaHistory('rgw:', self.id))).toBe(0)
    expect(await redis.strlen(redisKey.replicaHistory('rgw:', other.id))).toBeGreaterThan(10_000)
    await clusterOf(b)
    expect(await redis.strlen(redisKey.replicaHistory('rgw:', self.id))).toBeGreaterThan(10_000)
  })

  it('after Redis restarted empty, the live replicas are listed again at once, without waiting for their next announcement; the replicas gone before are not', async () => {
    // No announcement but the start's and the close's within the test: only Redis' return can list them again.
    const announceMs = 3_600_000
    const build = () => gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, ADMIN_TOKEN, REDIS_URL: redisServer.url, ...sandboxLoginEnv(sandbox) }), { announceMs })
    const [a, b, c] = [await build(), await build(), await build()]
    const [idOfA, idOfB, idOfC] = await Promise.all([a, b, c].map(async (gw) => (await clusterOf(gw)).replicas[0]!.id))
    await waitFor('the three replicas announced', async () => (await liveOf(a)).length === 3)
    await c.close()
    expect((await clusterOf(a)).replicas.find((r) => r.id === idOfC)).toMatchObject({ gone: { how: 'stopped' } })

    await redisServer.stop()
    await redisServer.restart()
    for (const [gw, other] of [[a, idOfB], [b, idOfA]] as const) {
      await waitFor(`${other} listed live again`, async () => (await liveOf(gw)).some((r) => r.id === other), testTimeLeft(), 100)
    }
    const view = await clusterOf(a)
    expect(view).toMatchObject({ redis: 'ok', complete: true })
    expect(view.replicas.map((r) => [r.id, r.gone === null])).toEqual([
      [idOfA, true],
      [idOfB, true],
    ])
  }, 30_000)

  it('after Redis restarted empty, a live replica writes its whole hour again: the hour its buckets make keeps what it served before', async () => {
    // A bucket is written with the announcement after it closes: b's clock moves a bucket
    // ahead once its read is served, closing the read's bucket, and b announces every 100 ms.
    let ahead = 0
    const b = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, ADMIN_TOKEN, REDIS_URL: redisServer.url, ...sandboxLoginEnv(sandbox) }), { clock: onRealTimers(() => Date.now() + ahead), announceMs: 100 })
    const idOfB = (await clusterOf(b)).replicas[0]!.id
    expect((await b.proxy.inject({ method: 'GET', url: `${REPORT_PATH}?${WEEK_BY_DATE}`, headers: { 'x-api-key': KEYS.all } })).statusCode).toBe(200)
    ahead = BUCKET_MS
    // A view that asks no replica for its hour (no bus): b's is the one its buckets in Redis make.
    const silent = pino({ level: 'silent' })
    const state = (): Announcement => ({ id: 'reader-5', version: '1', commit: 'unknown', node: 'v24', startedAt: new Date().toISOString(), uptimeSeconds: 1, phase: 'serving', ready: true, logLevel: 'info', inFlight: 0, waiting: 0, degraded: [], at: new Date().toISOString() })
    const reader = new Replicas({ id: 'reader-5', redis, breaker: new RedisBreaker({ cooldownMs: 100, log: silent }), seal: new RedisSeal(TEST_GATEWAY_SECRET), prefix: b.config.redis.keyPrefix, log: silent, state, history: () => emptyHistory(Date.now()), bucket: () => null })
    const servedOfB = async (): Promise<number | null> => {
      const listed = (await reader.cluster()).replicas.find((r) => r.id === idOfB)
      return listed ? sum(listed.history.reportReads) : null
    }
    await waitFor('the bucket of its report read written', async () => (await servedOfB()) === 1, testTimeLeft(), 200)

    await redisServer.stop()
    await redisServer.restart()
    await waitFor('b announced again', async () => (await redis.ping().catch(() => null)) === 'PONG' && (await servedOfB()) !== null, testTimeLeft(), 100)
    expect(await servedOfB()).toBe(1)
  }, 30_000)

  it('with Redis down, lists this replica only and says so', async () => {
    // Back once the breaker's cooldown has passed: a short one, so that comes within the test.
    const shortCooldown = teamsYamlWith({ redis: { breakerCooldown: '500ms' } })
    const [a, b] = [await replica(shortCooldown), await replica(shortCooldown)]
    await waitFor('both replicas listed', async () => (await liveOf(a)).length === 2)
    await redisServer.stop()
    try {
      await waitFor('Redis seen down', async () => (await clusterOf(a)).redis === 'down', testTimeLeft(), 100)
      const view = await clusterOf(a)
      expect(view).toMatchObject({ complete: false, note: expect.stringMatching(/could not be read/) })
      expect(view.replicas).toHaveLength(1)
      expect(view.replicas[0]).toMatchObject({ self: true, degraded: ['redis'] })
    } finally {
      await redisServer.restart()
    }
    // Back: both announce again.
    await waitFor('both listed again', async () => (await liveOf(b)).length === 2, testTimeLeft(), 100)
  }, 40_000)
})
