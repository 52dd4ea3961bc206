import { createHash } from 'node:crypto'
import { gzipSync } from 'node:zlib'
import { setTimeout as sleep } from 'node:timers/promises'
import { Cluster, Redis } from 'ioredis'
import pino from 'pino'
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import type { TeamConfig } from '../../src/config.js'
import { fingerprint } from '../../src/observe/fingerprint.js'
import { hashApiKey } from '../../src/access/api-keys.js'
import { KEYS, testConfig, withLimitedWindow, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useSandbox } from '../helpers/fixtures.js'
import { fillRedisUp, redisAvailability } from '../helpers/start-redis.js'
import { startRedisCluster, startRedisSentinel, type RedisTopology, type SentinelTopology } from '../helpers/start-redis-topology.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'
import { fakeClock, onRealTimers } from '../helpers/clock.js'
import { RedisClock } from '../../src/redis/redis-clock.js'
import { RedisSeal } from '../../src/redis/seal.js'
import { etagOf } from '../../src/cache/cache-entry.js'
import { RedisBus } from '../../src/redis/bus.js'
import { RedisJobStore } from '../../src/jobs/redis-job-store.js'
import { RedisDeliveryStore } from '../../src/jobs/redis-delivery-store.js'
import { dropAt, endJob, newJob, startJob, type Job } from '../../src/jobs/job.js'
import { newDelivery } from '../../src/jobs/delivery.js'
import { canonicalGetReport } from '../../src/reports/report-query.js'
import { dueDeliveries } from '../helpers/due-deliveries.js'

// The gateway on the Redis a production deployment runs: a 3-master Cluster (every key
// in its own slot unless hash-tagged; pub/sub through the cluster bus) and a master +
// replica behind a Sentinel (a failover under traffic). Two gateway instances in this
// process stand for two replicas; everything shared between them goes through Redis.

const { available, notice } = redisAvailability('the Redis Cluster and Sentinel tests')
if (notice) console.warn(notice)

const ADMIN_TOKEN = 'topology-admin-token-0123456789abcdef'
const GATEWAY_SECRET = 'topology-gateway-secret-0123456789'
const PATH = '/api/v1/report/campaigns/get'
/** A week's report; `n` picks one of 240 weeks of 2025, so that each n is a key of its own. */
const query = (advertiserId: number, n = 0, by = 'byDate') => {
  const month = String(1 + (Math.floor(n / 20) % 12)).padStart(2, '0')
  const day = 1 + (n % 20)
  return `advertiserId=${advertiserId}&${by}=1&dateFrom=2025-${month}-${String(day).padStart(2, '0')}&dateTo=2025-${month}-${String(day + 6).padStart(2, '0')}`
}
const Q101 = query(101)
const Q101B = query(101, 0, 'byCampaign')
const Q102 = query(102)

// A second limited team: its counter sits in a hash slot of its own.
const OTHER_LIMITED_KEY = 'rgw_test_limited2_key_4444444444444444444444'
// Both limited teams' windows are 10000d (withLimitedWindow): a window that ended during
// the test would start the count over.
const yamlFor = (topology: RedisTopology) => `${withLimitedWindow('10000d')}
  limited2:
    keys: ["${hashApiKey(OTHER_LIMITED_KEY)}"]
    advertisers: ["*"]
    rateLimit: { max: 3, window: 10000d }
platform:
  timeout: 3s
redis:
${topology.configLines.join('\n')}
  commandTimeout: 500ms
  breakerCooldown: 200ms
  rateLimitSync: 50ms
cache:
  ttl: { recent: 60s, settled: 60s }
`

const topologies: [string, () => Promise<RedisTopology>][] = [
  ['a 3-master Redis Cluster', () => startRedisCluster()],
  ['a master and a replica behind Redis Sentinel', () => startRedisSentinel()],
]

describe.skipIf(!available).each(topologies)('on %s', (_name, start) => {
  const sandbox = useSandbox()
  const replicas = useGateways()
  let topology: RedisTopology

  beforeAll(async () => {
    topology = await start()
  }, 60_000)
  afterAll(async () => {
    await topology?.close()
  })
  // Every replica reached Redis throughout (but in a failover): a fallback would hide what is tested here.
  let redisMayFail = false
  afterEach(async () => {
    if (!redisMayFail) for (const gw of replicas.open) expect(gw.logs.text()).not.toMatch(/redis unavailable|could not be shared/)
    redisMayFail = false
    await topology.flush()
  })

  async function twoReplicas(env: Record<string, string> = {}): Promise<[TestGateway, TestGateway]> {
    const config = () => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: platformToken(), ADMIN_TOKEN, ...env }, yamlFor(topology))
    const pair: [TestGateway, TestGateway] = [await replicas.build(config()), await replicas.build(config())]
    // A replica starts serving on a ready connection: commands fail fast until it is (no
    // offline queue), and a failure would open the breaker for the first requests.
    for (const gw of pair) expect(gw.redis.client?.status).toBe('ready')
    return pair
  }

  let token: string | undefined
  const platformToken = () => (token ??= sandbox.issueToken())

  const get = (gw: TestGateway, q: string, key = KEYS.all) => gw.proxy.inject({ method: 'GET', url: `${PATH}?${q}`, headers: { 'x-api-key': key } })
  const reportCalls = () => sandbox.countRequests((r) => r.path === PATH)
  const adminCall = (gw: TestGateway, method: 'GET' | 'PUT' | 'DELETE', url: string, payload?: object) =>
    gw.admin.inject({ method, url, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, ...(payload ? { payload } : {}) })

  it('stores entries in L2, where the other replica finds them', async () => {
    const [a, b] = await twoReplicas()
    for (const q of [Q101, Q101B, Q102]) {
      expect((await get(a, q)).headers['x-cache']).toBe('MISS')
      const onB = await get(b, q)
      expect(onB.statusCode).toBe(200)
      expect(onB.headers['x-cache']).toBe('HIT')
    }
    expect(reportCalls()).toBe(3)
    expect(await topology.keys('rgw:report:*')).toHaveLength(3)
    expect(await topology.keys('rgw:adv-entries:*')).toEqual(['rgw:adv-entries:101', 'rgw:adv-entries:102'])
    expect(await topology.client.zcard('rgw:adv-entries:101')).toBe(2)
  })

  it('makes one platform call for concurrent misses on both replicas', async () => {
    const [a, b] = await twoReplicas()
    sandbox.setLatency(300)
    const onA = Array.from({ length: 20 }, () => get(a, Q101))
    // B's callers arrive while A's call is with the platform (A holds the lock).
    await waitFor('the leader at the platform', () => reportCalls() > 0)
    const onB = Array.from({ length: 20 }, () => get(b, Q101))
    const answers = await Promise.all([...onA, ...onB])
    for (const res of answers) expect(res.statusCode).toBe(200)
    expect(reportCalls()).toBe(1)
    expect(await topology.keys('rgw:lock:*')).toEqual([])
  })

  // A replica that starts while Redis holds no token waits for an answer from each replica
  // subscribed to the answers' channel (TokenStore.share). Each replica subscribes on a node
  // of its own choosing, and a node counts its own connections alone: one subscriber a node here.
  it('counts the subscribers of a channel on every node', async () => {
    const bus = new RedisBus(topology.client, 'rgw:bus:', pino({ level: 'silent' }))
    const nodes = topology.client instanceof Cluster ? topology.client.nodes('all') : [topology.client]
    const subscribers = nodes.map((node) => node.duplicate())
    try {
      for (const sub of subscribers) await sub.subscribe('rgw:bus:counted')
      expect(await bus.subscribers('counted')).toBe(nodes.length)
    } finally {
      for (const sub of subscribers) sub.disconnect()
    }
  })

  it("purges one advertiser's entries from L2 and from every replica's L1", async () => {
    const [a, b] = await twoReplicas()
    for (const q of [Q101, Q101B, Q102]) {
      await get(a, q)
      expect((await get(b, q)).headers['x-cache']).toBe('HIT')
    }
    const sub = topology.client.duplicate()
    await sub.subscribe('rgw:bus:purge')
    const heard = new Promise<void>((resolve) => sub.once('message', () => resolve()))
    const before = Date.now()
    const res = await adminCall(b, 'DELETE', '/admin/cache?advertiserId=101')
    expect(res.json()).toEqual({ purged: 'advertiser', advertiserId: 101, dryRun: false, dropped: 2 })
    await heard
    sub.disconnect()
    // a hears it on its own connection, in its own time: its copies of 101 are dropped once it has.
    await waitFor('a to hear the purge', () => a.reports.purged({ fetchedAt: before - 1, advertiserIds: [101] }, ''))
    expect(await topology.keys('rgw:report:*')).toHaveLength(1)
    expect(await topology.keys('rgw:adv-entries:101')).toEqual([])
    for (const gw of [a, b]) expect((await get(gw, Q102)).headers['x-cache']).toBe('HIT')
    expect(reportCalls()).toBe(3)
    expect((await get(a, Q101)).headers['x-cache']).toBe('MISS')
    expect((await get(b, Q101)).headers['x-cache']).toBe('HIT')
    expect((await get(b, Q101B)).headers['x-cache']).toBe('MISS')
    expect(reportCalls()).toBe(5)

    // All of them, on every master.
    const all = await adminCall(a, 'DELETE', '/admin/cache')
    expect(all.json()).toEqual({ purged: 'all', dryRun: false, dropped: 3 })
    // Nothing of the cache is left but the purge's record (which a replica that starts
    // later reads); the day's usage totals, the replicas' announcements, the keys' use, the shared token and the seats (the learned platform limit with them) are not the cache's.
    const notUsage = (await topology.keys('rgw:*')).filter((k) => !k.startsWith('rgw:usage'))
    expect(notUsage.filter((k) => !k.startsWith('rgw:{replicas}:') && !k.startsWith('rgw:{keyuse}:') && !k.startsWith('rgw:seats:')).sort()).toEqual(['rgw:purges', 'rgw:token:default'])
    // Both replicas announce themselves, in one hash slot (one MULTI, a Cluster too);
    // those of earlier tests stay listed for the hour as stopped.
    const ids = await Promise.all([a, b].map(async (gw) => (await adminCall(gw, 'GET', '/admin/cluster')).json<{ replicas: { id: string }[] }>().replicas[0]!.id))
    expect(notUsage.filter((k) => k.startsWith('rgw:{replicas}:replica:'))).toEqual(expect.arrayContaining(ids.map((id) => `rgw:{replicas}:replica:${id}`)))
  })

  /** The master holding the purges' record (`rgw:purges`): on a Cluster, the one serving its slot. */
  async function recordMaster(): Promise<{ cluster: Cluster | null; node: Redis }> {
    const cluster = topology.client instanceof Cluster ? topology.client : null
    if (!cluster) return { cluster, node: topology.client as Redis }
    const address = cluster.slots[Number(await cluster.cluster('KEYSLOT', 'rgw:purges'))]![0]!
    return { cluster, node: cluster.nodes('master').find((m) => `${m.options.host}:${m.options.port}` === address) as Redis }
  }

  // A purge while the master of its record is full (noeviction). One master (Sentinel):
  // the script that drops a copy writes the record after that delete, in the room it gives
  // back: 200. A Cluster: the record sits in another slot than the copies, no script
  // writes both, and the copies on other masters free no room on the record's: the copies
  // are dropped, the record refused, and the 503 says so; once the master has room, a
  // repeat completes.
  it('a purge while the master of its record is full: complete on one master; on a Cluster the copies dropped and a 503 that says so', async () => {
    const [a] = await twoReplicas()
    for (const q of [Q101, Q101B]) expect((await get(a, q)).headers['x-cache']).toBe('MISS')
    const { cluster, node } = await recordMaster()
    redisMayFail = true
    try {
      await fillRedisUp(node, (i) => `{rgw:purges}:junk:${i}`)
      const res = await adminCall(a, 'DELETE', '/admin/cache?advertiserId=101')
      expect(await topology.keys('rgw:report:*')).toEqual([])
      if (!cluster) {
        expect(res.json()).toEqual({ purged: 'advertiser', advertiserId: 101, dryRun: false, dropped: 2 })
        expect(await node.hexists('rgw:purges', 'adv:101')).toBe(1)
        return
      }
      expect(res.statusCode).toBe(503)
      expect(res.json<{ message: string }>().message).toMatch(/out of memory .*refused the purge's record; its 2 copies in Redis were dropped.*repeat it once Redis has room/)
      expect(await node.hexists('rgw:purges', 'adv:101')).toBe(0)
    } finally {
      await node.config('SET', 'maxmemory', '0')
    }
    const again = await adminCall(a, 'DELETE', '/admin/cache?advertiserId=101')
    expect(again.json()).toEqual({ purged: 'advertiser', advertiserId: 101, dryRun: false, dropped: 0 })
    expect(await node.hexists('rgw:purges', 'adv:101')).toBe(1)
  })

  // What a full record master still records, on a Cluster too: the script that writes a
  // purge's field deletes what the field replaces first (its last purge's, or for a purge
  // of everything the whole record), and the field is written in the room that gives back.
  // A purge recorded before is recorded again, and a purge of everything is recorded
  // whenever the record holds any purge, whatever the copies' masters free.
  it('a purge while the master of its record is full: a repeat, and a purge of everything, complete on a Cluster too', async () => {
    const [a] = await twoReplicas()
    const { node } = await recordMaster()
    expect((await adminCall(a, 'DELETE', '/admin/cache?advertiserId=102')).statusCode).toBe(200)
    for (const q of [Q101, Q101B, Q102]) expect((await get(a, q)).headers['x-cache']).toBe('MISS')
    redisMayFail = true
    try {
      await fillRedisUp(node, (i) => `{rgw:purges}:junk:${i}`)
      const repeat = await adminCall(a, 'DELETE', '/admin/cache?advertiserId=102')
      expect(repeat.json()).toEqual({ purged: 'advertiser', advertiserId: 102, dryRun: false, dropped: 1 })
      const everything = await adminCall(a, 'DELETE', '/admin/cache')
      expect(everything.statusCode).toBe(200)
      expect(await topology.keys('rgw:report:*')).toEqual([])
      expect(await node.hkeys('rgw:purges')).toEqual(['all'])
    } finally {
      await node.config('SET', 'maxmemory', '0')
    }
  })

  it('ends a report job, keeps its result and adds its webhook delivery in one script: every key of them in the {jobs} slot', async () => {
    const seal = new RedisSeal(GATEWAY_SECRET)
    const shared = { redis: topology.client, seal, prefix: 'rgw:', onUnverified: () => undefined }
    const outbox = new RedisDeliveryStore({ ...shared, bounds: { keepMs: 60_000, lifeMs: 600_000, perTeam: 10 } })
    const jobs = new RedisJobStore({ ...shared, maxEntryBytes: 1024 * 1024, outbox })
    const now = Date.now()
    const job = newJob({ id: 'j1', team: 'all', credential: 'default', key: 'k', report: canonicalGetReport(PATH, Q101, { maxRangeDays: 400 }), expectedSeconds: null }, now)
    expect(await jobs.add(job, 10, now)).toBe(true)
    const running = startJob(job, 'r1', now, 15_000) as Job
    expect(await jobs.swap(job, running, now)).toBe(true)
    const identity = Buffer.from('{"data":[]}')
    const entry = { contentType: 'application/json', gzip: gzipSync(identity), identity, fetchedAt: now, freshUntil: now, staleUntil: now, errorUntil: now, advertiserIds: [101], etag: etagOf(identity) }
    const done = endJob(running, { runner: 'r1', runs: 1 }, now, { kind: 'done', resultBytes: entry.gzip.length, tookSeconds: 0, fetchedAt: now }, 60_000) as Job
    const push = newDelivery({ job: 'j1', team: 'all', jobState: 'done', url: 'https://hooks.example.org/jobs', body: '{}' }, now)
    expect(await jobs.swap(running, done, now, push, entry)).toBe(true)
    expect(await jobs.get('j1')).toEqual(done)
    expect((await jobs.result('j1', now))?.etag).toBe(entry.etag)
    expect(await dueDeliveries(outbox, now, 10)).toEqual([push])
    // The sweep drops the job past its drop time, its result with it, in the same slot.
    await jobs.due(dropAt(done) as number, 10)
    expect(await jobs.get('j1')).toBeNull()
    expect(await jobs.result('j1', now)).toBeNull()
  })

  it('shares a token set on one replica with the other (GATEWAY_SECRET)', async () => {
    const [a, b] = await twoReplicas({ GATEWAY_SECRET })
    const next = sandbox.issueToken()
    expect((await adminCall(a, 'PUT', '/admin/token', { token: next })).statusCode).toBe(200)
    await waitFor('the token on the other replica', () => b.tokens.get('default').current()?.token === next)
    expect(await topology.keys('rgw:token:*')).toEqual(['rgw:token:default'])
    expect((await topology.client.get('rgw:token:default')) ?? '').not.toContain(next)
    sandbox.clearRequests()
    expect((await get(b, Q102)).statusCode).toBe(200)
    const sent = sandbox.requests.find((r) => r.path === PATH)?.headers.authorization
    expect(fingerprint(String(sent).replace(/^Bearer /, ''), GATEWAY_SECRET)).toBe(fingerprint(next, GATEWAY_SECRET))
  })

  // Redis lost its data (flushed) after the operator rotated the token: a replica starting
  // with the configured one waits for the running replicas' answers, counted by their
  // subscriptions on every node (on a Cluster, PUBLISH counts the subscribers of the node it
  // was sent to alone). On a clock that never moves, its start ends on those answers; its
  // probe bears the rotation, never the configured token.
  it('a replica starting while Redis holds no token waits for the running replicas\' answers and takes their rotation', async () => {
    const [a, b] = await twoReplicas({ GATEWAY_SECRET })
    const first = platformToken()
    const next = sandbox.issueToken()
    expect((await adminCall(a, 'PUT', '/admin/token', { token: next })).statusCode).toBe(200)
    await waitFor('the token on the other replica', () => b.tokens.get('default').current()?.token === next)
    await topology.flush()
    sandbox.clearRequests()
    const late = await replicas.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: first, ADMIN_TOKEN, GATEWAY_SECRET }, yamlFor(topology)), { clock: fakeClock() })
    expect(late.tokens.get('default').current()?.token).toBe(next)
    expect(sandbox.requests.map((r) => String(r.headers.authorization).replace(/^Bearer /, ''))).not.toContain(first)
  })

  it("counts a team's rate limit across replicas", async () => {
    const [a, b] = await twoReplicas()
    const counter = async (team = 'limited') => {
      const [key] = await topology.keys(`rgw:rl:{${team}}:*`)
      return key ? Number(await topology.client.get(key)) : 0
    }
    for (let i = 0; i < 2; i++) expect((await get(a, Q101, KEYS.limited)).statusCode).toBe(200)
    expect((await get(a, Q101, OTHER_LIMITED_KEY)).statusCode).toBe(200)
    await waitFor('A to share its counts', async () => (await counter()) === 2 && (await counter('limited2')) === 1)
    // Each team's counter in a hash slot of its own (on a Cluster, spread over the masters).
    const slots = await Promise.all(['limited', 'limited2'].map(async (team) => topology.client.call('CLUSTER', 'KEYSLOT', (await topology.keys(`rgw:rl:{${team}}:*`))[0] as string).catch(() => team)))
    expect(new Set(slots).size).toBe(2)
    expect((await get(b, Q101, KEYS.limited)).statusCode).toBe(200)
    await waitFor('B to share its count', async () => (await counter()) === 3)
    const limited = (gw: TestGateway) => gw.config.teams.find((t) => t.name === 'limited') as TeamConfig
    // B read the total back with its own hit's sync (every 50 ms): it refuses.
    await waitFor('B to read the shared count back', () => !b.rateLimiter.peek(limited(b)).allowed)
    expect((await get(b, Q101, KEYS.limited)).json()).toMatchObject({ code: 'GW_RATE_LIMITED' })
    // A sent nothing since (an idle team costs Redis nothing): it learns of B's hit with
    // its next one, which it admits on what it knew (the bound of one sync interval) and
    // syncs at once.
    expect((await get(a, Q101, KEYS.limited)).statusCode).toBe(200)
    await waitFor('A to add its hit', async () => (await counter()) === 4)
    for (const gw of [a, b]) {
      const refused = await get(gw, Q101, KEYS.limited)
      expect(refused.statusCode).toBe(429)
      expect(refused.json()).toMatchObject({ code: 'GW_RATE_LIMITED' })
    }
  })

  // A replica's clock 30 s ahead, twice jobs.lease: on its own clock it reads the other
  // replica's running job's lease as run out. It reads Redis' clock instead, from the master
  // of the `{jobs}` slot (the TIME script's key), and leaves the job to its runner.
  const jobsYaml = () => `${yamlFor(topology)}jobs:\n  poll: 100ms\n`
  const jobsReplica = (clock?: ReturnType<typeof onRealTimers>) =>
    replicas.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: platformToken(), ADMIN_TOKEN }, jobsYaml()), clock ? { clock } : {})
  const ahead30s = () => onRealTimers(() => Date.now() + 30_000)
  const askAsync = (gw: TestGateway, q: string) => gw.proxy.inject({ method: 'GET', url: `${PATH}?${q}`, headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
  const jobDone = (gw: TestGateway, location: string) => async () =>
    (await gw.proxy.inject({ method: 'GET', url: location, headers: { 'x-api-key': KEYS.all } })).json<{ state: string }>().state === 'done'
  const TIME_SHA = createHash('sha1').update("return redis.call('TIME')").digest('hex')
  const JOBS_KEY = 'rgw:{jobs}:due'
  const address = (node: Redis) => `${node.options.host}:${node.options.port}`

  it("a replica whose clock is 30 s ahead reads Redis' clock from the {jobs} master and does not take over the other replica's running job", async () => {
    const runner = await jobsReplica()
    sandbox.clearRequests()
    sandbox.setRouteFailure(PATH, { kind: 'held', times: 1 })
    const running = await askAsync(runner, Q101)
    expect(running.statusCode).toBe(202)
    await waitFor('the job at the platform', () => reportCalls() === 1)

    // The ahead replica's own job is due after the running one on its clock: once it is
    // done, that replica has looked past the running job.
    const ahead = await jobsReplica(ahead30s())
    const own = await askAsync(ahead, Q102)
    expect(own.statusCode).toBe(202)
    await waitFor("the ahead replica's own job done", jobDone(ahead, String(own.headers.location)), testTimeLeft(), 20)
    sandbox.releaseHeld()
    await waitFor('the running job done', jobDone(ahead, String(running.headers.location)), testTimeLeft(), 20)
    expect(ahead.logs.records().filter((r) => String(r.msg).startsWith('report job taken over'))).toEqual([])
    expect(reportCalls()).toBe(2)
    const metrics = (await ahead.admin.inject({ method: 'GET', url: '/metrics' })).body
    expect(Math.abs(Number(/^gateway_redis_clock_offset_seconds (\S+)$/m.exec(metrics)?.[1]) + 30)).toBeLessThan(1)

    // On a Cluster the clock read is the `{jobs}` master's: the TIME script is loaded there alone.
    if (!(topology.client instanceof Cluster)) return
    const slot = Number(await topology.client.call('CLUSTER', 'KEYSLOT', JOBS_KEY))
    const owner = topology.client.slots[slot]?.[0]
    const loaded = await Promise.all(topology.client.nodes('master').map(async (n) => [address(n), ((await n.script('EXISTS', TIME_SHA)) as number[])[0]]))
    expect(loaded.filter(([, has]) => has === 1).map(([at]) => at)).toEqual([owner])
  })

  // The `{jobs}` slot moved to another master (a resharding) while the replicas run: the
  // clock's reading is redirected (MOVED) to the new master, as the jobs' scripts are.
  it.runIf(start === topologies[0]?.[1])("reads Redis' clock from the {jobs} slot's new master after the slot moved (MOVED)", async () => {
    const gw = await jobsReplica(ahead30s())
    const cluster = topology.client as Cluster
    const slot = Number(await cluster.call('CLUSTER', 'KEYSLOT', JOBS_KEY))
    const masters = cluster.nodes('master')
    const from = masters.find((n) => address(n) === cluster.slots[slot]?.[0]) as Redis
    const to = masters.find((n) => n !== from) as Redis
    // A clock 30 s ahead on a connection made as the gateway's (its options), which knows
    // the slot's old master and is not used again until the slot moved: its next reading
    // is the first command to meet the MOVED answer.
    const own = (gw.redis.client as Cluster).duplicate()
    own.on('error', () => undefined)
    onTestFinished(() => own.disconnect())
    await waitFor('the connection ready (no offline queue, as the gateway\'s)', () => own.status === 'ready')
    const offsets: number[] = []
    const clock = new RedisClock(ahead30s(), { redis: own, key: JOBS_KEY, log: pino({ level: 'silent' }), onRead: (ms) => offsets.push(ms) })
    await clock.read()
    expect(offsets).toHaveLength(1)
    expect(own.slots[slot]?.[0]).toBe(address(from))

    const [fromId, toId] = await Promise.all([from, to].map(async (n) => String(await n.call('CLUSTER', 'MYID'))))
    await to.call('CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', fromId as string)
    await from.call('CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', toId as string)
    const keys = (await from.call('CLUSTER', 'GETKEYSINSLOT', String(slot), '1000')) as string[]
    if (keys.length > 0) await from.call('MIGRATE', '127.0.0.1', String(to.options.port), '', '0', '5000', 'KEYS', ...keys)
    for (const n of masters) await n.call('CLUSTER', 'SETSLOT', String(slot), 'NODE', toId as string)
    await waitFor('every master to name the new owner', async () => {
      for (const n of masters) if (((await n.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][]).every(([lo, hi, [, port]]) => slot < lo || slot > hi || port !== to.options.port)) return false
      return true
    })

    expect(own.slots[slot]?.[0]).toBe(address(from))
    await clock.read()
    expect(offsets).toHaveLength(2)
    expect(own.slots[slot]?.[0]).toBe(address(to))
    for (const ms of offsets) expect(Math.abs(ms + 30_000)).toBeLessThan(1000)
    expect(((await to.script('EXISTS', TIME_SHA)) as number[])[0]).toBe(1)
    // The gateway's jobs follow the slot too: a job asked now runs and ends on the new master.
    const job = await askAsync(gw, Q102)
    expect(job.statusCode).toBe(202)
    await waitFor('the job done', jobDone(gw, String(job.headers.location)), testTimeLeft(), 20)
    expect((await to.keys('rgw:{jobs}:*')).length).toBeGreaterThan(0)
  })

  /**
   * Steady traffic on both replicas (hits from L1, and a miss every third request) while
   * `move` takes the master away; then a fill on one replica must reach the other
   * through the new master. Returns the answers' statuses and x-cache values.
   */
  async function throughFailover(move: (t: SentinelTopology) => Promise<{ to: number }>) {
    redisMayFail = true
    const [a, b] = await twoReplicas()
    const cached = [Q101, Q102]
    for (const q of cached) await get(a, q)
    const statuses: Record<string, number> = {}
    const served: Record<string, number> = {}
    let moved = false
    let sent = 0
    const traffic = (async () => {
      const deadline = Date.now() + 30_000
      // Bounded; goes on a little after the move.
      for (let i = 1; (!moved || i % 50 !== 0) && sent < 3000 && Date.now() < deadline; i++) {
        const res = await get(i % 2 ? a : b, i % 3 === 0 ? query(103, i) : (cached[i % 2] as string))
        sent++
        statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1
        served[String(res.headers['x-cache'])] = (served[String(res.headers['x-cache'])] ?? 0) + 1
        await sleep(10)
      }
    })()
    await sleep(300)
    const { to } = await move(topology as SentinelTopology)
    moved = true
    await traffic
    expect(statuses).toEqual({ 200: sent })

    const promoted = new Redis({ host: '127.0.0.1', port: to, lazyConnect: true })
    let n = 0
    await waitFor(
      'a fill on one replica found by the other',
      async () => {
        const q = query(102, n++, 'byCampaign')
        await get(a, q)
        return (await get(b, q)).headers['x-cache'] === 'HIT'
      },
      testTimeLeft(),
      100,
    )
    expect((await promoted.keys('rgw:report:*')).length).toBeGreaterThan(0)
    promoted.disconnect()
    // And the bus works through the new master: a purge on B reaches A's L1.
    expect((await get(a, Q101)).headers['x-cache']).toBe('HIT')
    expect((await adminCall(b, 'DELETE', '/admin/cache?advertiserId=101')).statusCode).toBe(200)
    // A's subscriber finds the promoted master through Sentinel on its own schedule: waited
    // for as the fill above was, not bounded by a guess at a quiet machine's reconnection.
    await waitFor('the purge on the other replica', async () => (await get(a, Q101)).headers['x-cache'] === 'MISS', testTimeLeft(), 50)
    return { served, logs: [...a.logs.lines, ...b.logs.lines] }
  }

  const onSentinel = start === topologies[1]?.[1]

  it.runIf(onSentinel)('loses no request through SENTINEL FAILOVER under steady traffic, and caches on the new master after it', async () => {
    await throughFailover((t) => t.failover())
  }, 60_000)

  it.runIf(onSentinel)('report jobs running through SENTINEL FAILOVER end done, each run once at the platform', async () => {
    redisMayFail = true
    const [a, b] = await twoReplicas()
    const ask = (gw: TestGateway, q: string) => gw.proxy.inject({ method: 'GET', url: `${PATH}?${q}`, headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
    const state = async (location: string) => {
      const res = await b.proxy.inject({ method: 'GET', url: location, headers: { 'x-api-key': KEYS.all } })
      return res.statusCode === 200 ? (res.json() as { state: string }).state : `HTTP ${res.statusCode}`
    }
    // The replica in sync before the calls are held: the failover then takes a moment, well within platform.timeout.
    await waitFor('the replica online', async () => /slave0:.*state=online/.test(await topology.client.info('replication')))
    sandbox.clearRequests()
    // Every job's call stays at the platform until the failover is over.
    sandbox.setRouteFailure(PATH, { kind: 'held', times: 4 })
    const locations: string[] = []
    for (let i = 0; i < 4; i++) {
      const res = await ask(i % 2 ? a : b, query(101 + (i % 2), 30 + i))
      expect(res.statusCode).toBe(202)
      locations.push(String(res.headers.location))
    }
    await waitFor('every job at the platform', () => reportCalls() === 4)
    await (topology as SentinelTopology).failover()
    sandbox.releaseHeld()
    let seen: string[] = []
    await waitFor(() => `every job done (${seen.join(', ')})`, async () => (seen = await Promise.all(locations.map(state))).every((s) => s === 'done'), testTimeLeft(), 100)
    // Their leases outlived the failover: no job was taken over and run again.
    expect(reportCalls()).toBe(4)
  }, 60_000)

  it.runIf(onSentinel)('loses no request when the master is killed under steady traffic, serving from L1 and the platform until the replica is promoted', async () => {
    const { served, logs } = await throughFailover((t) => t.killMaster())
    expect(logs.join('\n')).toMatch(/redis unavailable/)
    expect(served.HIT).toBeGreaterThan(0)
    expect(served.MISS).toBeGreaterThan(0)
  }, 60_000)
})
