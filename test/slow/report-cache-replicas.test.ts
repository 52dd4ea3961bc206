import { gunzipSync } from 'node:zlib'
import { beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { request } from 'undici'
import { KEYS, REPORT_PATH as PATH, teamsYamlWith, testConfig, WEEK_BY_CAMPAIGN as Q101B, WEEK_BY_DATE as Q101, type TestGateway } from '../helpers/build-gateway.js'
import { fakeClock, type FakeClock, onRealTimers } from '../helpers/clock.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { expectMissesOf } from '../helpers/gateway-calls.js'
import { PROCESS_START_MS, testTimeLeft, waitFor } from '../helpers/wait.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { BUDGET_EVERY_MS } from '../../src/reports/refresh-ahead.js'

// The report cache across replicas: two gateway instances on one Redis (one L1 each, one shared
// L2, one lock and one pub/sub bus, sealed with GATEWAY_SECRET: a leader's failure
// reaches the waiters only then). The platform token plays no part here.

const { available } = redisAvailability()

const ADMIN_TOKEN = 'replicas-admin-token-00000000000000'
const Q102 = 'advertiserId=102&byDate=1&dateFrom=2026-02-01&dateTo=2026-02-07'
const LOCK_TTL_MS = 1000

const YAML = teamsYamlWith({
  platform: { timeout: '3s' },
  redis: { commandTimeout: '500ms' },
  // These tests watch copies expire (no refresh ahead); refresh ahead has a test of its own.
  cache: { ttl: { recent: '60s', settled: '60s' }, lockTtl: `${LOCK_TTL_MS}ms`, refreshAhead: 0 },
})

describe.skipIf(!available)('report cache across two replicas on one Redis', () => {
  const sandbox = useSandbox()
  const { server: redisServer, client: admin } = useRedis()
  const gateways = useGateways()
  let platformToken: string
  let a: TestGateway
  let b: TestGateway
  let clock: FakeClock

  beforeAll(() => {
    platformToken = sandbox.issueToken()
  })

  /** Two replicas on the sandbox and the one Redis, with the bus sealed, on the test's clock. */
  const replicas = async (yaml = YAML): Promise<[TestGateway, TestGateway]> => {
    const config = () => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: platformToken, ADMIN_TOKEN, REDIS_URL: redisServer.url, GATEWAY_SECRET: 'replicas-gateway-secret-000000000000' }, yaml)
    // One clock for both, as replicas share wall time.
    return [await gateways.build(config(), { clock: onRealTimers(clock.now) }), await gateways.build(config(), { clock: onRealTimers(clock.now) })]
  }

  // Two replicas built: 0.35 s of CPU and 1 s on a quiet machine the first time, less after
  // (2026-12-02); the first pair took past 20 s (hookTimeout) at load 19, and on 4 % of a
  // core (pinned beside a busy one at nice 19). A test's own timeout has 20 s beside them.
  beforeEach(async () => {
    clock = fakeClock()
    ;[a, b] = await replicas()
  }, PROCESS_START_MS)

  const get = (gw: TestGateway, query: string, headers: Record<string, string> = {}) =>
    gw.proxy.inject({ method: 'GET', url: `${PATH}?${query}`, headers: { 'x-api-key': KEYS.all, ...headers } })

  const purge = (gw: TestGateway, query = '') =>
    gw.admin.inject({ method: 'DELETE', url: `/admin/cache${query}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })

  const reportCalls = () => sandbox.countRequests((r) => r.path === PATH && r.headers['x-direct'] === undefined)

  const direct = async (query: string): Promise<Buffer> => {
    const res = await request(`${sandbox.url}${PATH}?${query}`, { headers: { authorization: `Bearer ${platformToken}`, 'x-direct': '1' } })
    expect(res.statusCode).toBe(200)
    return Buffer.from(await res.body.arrayBuffer())
  }

  const metric = async (gw: TestGateway, line: string): Promise<number> => {
    const text = (await gw.admin.inject({ method: 'GET', url: '/metrics' })).body
    const found = text.split('\n').find((l) => l.startsWith(`${line} `))
    return found ? Number(found.slice(line.length + 1)) : 0
  }

  /** Waits until each replica holds in memory only `kept` of the report entries `keys` (a purge reached it through pub/sub). */
  const purgedOnEach = (keys: string[], kept: number) =>
    waitFor(`each replica to keep ${kept} of ${keys.length} entries in memory`, () => [a, b].every((gw) => keys.filter((k) => gw.reports.freshInMemory(k, clock.now()) !== null).length === kept))

  it('fills once on one replica and answers HIT from L2 on the other, which then keeps it in its L1', async () => {
    const first = await get(a, Q101)
    expect(first.headers['x-cache']).toBe('MISS')
    clock.advance(3_000)
    const second = await get(b, Q101, { 'accept-encoding': 'gzip' })
    expect(second.statusCode).toBe(200)
    expect(second.headers['x-cache']).toBe('HIT')
    expect(second.headers.age).toBe('3')
    expect(second.headers['cache-control']).toBe('private, max-age=60')
    const third = await get(b, Q101)
    expect(third.headers['x-cache']).toBe('HIT')
    expect(reportCalls()).toBe(1)

    const platform = await direct(Q101)
    expect(first.rawPayload.equals(platform)).toBe(true)
    expect(gunzipSync(second.rawPayload).equals(platform)).toBe(true)
    expect(third.rawPayload.equals(platform)).toBe(true)
    expect(await metric(b, 'gateway_cache_requests_total{result="HIT",tier="l2"}')).toBe(1)
    expect(await metric(b, 'gateway_cache_requests_total{result="HIT",tier="l1"}')).toBe(1)
    // The L2 copy expires with the entry (errorUntil), and so does the L1 copy filled from it.
    const [key] = await admin.keys('rgw:report:*')
    const pttl = await admin.pttl(key as string)
    expect(pttl).toBeGreaterThan(60_000 + 24 * 3600_000 - 10_000)
    expect(pttl).toBeLessThanOrEqual(60_000 + 24 * 3600_000)
  })

  it('makes one platform call for concurrent misses on both replicas, waking the waiters on the announcement', async () => {
    sandbox.setLatency(300)
    const onA = Array.from({ length: 50 }, () => get(a, Q101))
    // B's callers arrive while A's call is with the platform (A holds the lock).
    await waitFor("A's call at the platform", () => reportCalls() === 1)
    // The replicas' time stands still (the test's clock): a waiter's deadline never comes,
    // and B's waiters are answered by the leader's fill alone.
    const onB = Array.from({ length: 50 }, () => get(b, Q101))
    const answers = await Promise.all([...onA, ...onB])
    expect(reportCalls()).toBe(1)
    expectMissesOf(answers, await direct(Q101))
    expect(await metric(b, 'gateway_cache_requests_total{result="MISS",tier="l2"}')).toBe(50)
    expect((await get(b, Q101)).headers['x-cache']).toBe('HIT')
    expect(reportCalls()).toBe(1)
    expect(await admin.keys('rgw:lock:*')).toEqual([])
  })

  it('keeps the lock of a leader whose call outlasts the lock TTL: its heartbeat renews it, no waiter takes over', async () => {
    // A 2 s lease held for 4.5 s (within a 10 s platform.timeout): renewed at least twice,
    // and a stall of the loaded test machine has to pass about 1.3 s, not 0.7 s, to let
    // the lease lapse.
    const ttlMs = 2000
    const [leader, waiter] = await replicas(YAML.replace(`lockTtl: ${LOCK_TTL_MS}ms`, `lockTtl: ${ttlMs}ms`).replace('timeout: 3s', 'timeout: 10s'))
    sandbox.setLatency(ttlMs * 2 + 500)
    const onA = get(leader, Q101)
    await waitFor("A's call at the platform", () => reportCalls() === 1)
    const onB = Array.from({ length: 10 }, () => get(waiter, Q101))
    const answers = await Promise.all([onA, ...onB])
    expect(answers.map((r) => r.statusCode)).toEqual(Array(11).fill(200))
    expect(reportCalls()).toBe(1)
    expect(await admin.keys('rgw:lock:*')).toEqual([])
  })

  it("answers the leader's failure on the other replica at once, without a call of its own", async () => {
    sandbox.setLatency(600)
    sandbox.setFailure({ kind: 'status', status: 500, times: 1 })
    const onA = get(a, Q101)
    // B asks once A's call is with the platform (so A holds the lock).
    await waitFor("A's call at the platform", () => reportCalls() === 1)
    expect(reportCalls()).toBe(1)
    // B's deadline never comes (the replicas' time stands still): its 502 is the leader's word.
    const onB = await get(b, Q101)
    expect((await onA).statusCode).toBe(502)
    expect(onB.statusCode).toBe(502)
    expect(onB.json()).toMatchObject({ code: 'GW_UPSTREAM' })
    expect(reportCalls()).toBe(1)
    expect(await admin.keys('rgw:lock:*')).toEqual([])
  })

  it("passes the leader's 429 on to the other replica's waiter with its retry-after", async () => {
    sandbox.setLatency(600)
    sandbox.setFailure({ kind: 'status', status: 429, headers: { 'retry-after': '7' }, times: 1 })
    const onA = get(a, Q101)
    await waitFor("A's call at the platform", () => reportCalls() === 1)
    const onB = await get(b, Q101)
    for (const res of [await onA, onB]) {
      expect(res.statusCode).toBe(429)
      expect(res.headers['retry-after']).toBe('7')
      expect(res.json()).toEqual({ message: 'Too Many Attempts.' })
    }
    expect(reportCalls()).toBe(1)
  })

  it("answers the leader's timeout to the other replica's waiter, within its own deadline and without a second call", async () => {
    // The leader holds its lock for the whole platform.timeout (3 s), three times the 1 s
    // lease: a stall of the test process or of Redis past the lease on a loaded machine
    // lets the waiter take the lock over, as it should from a dead leader, and call the
    // platform itself. A 10 s lease keeps this test on what it checks; the renewal has
    // its own test above.
    const [leader, waiter] = await replicas(YAML.replace(`lockTtl: ${LOCK_TTL_MS}ms`, 'lockTtl: 10s'))
    sandbox.setFailure({ kind: 'hang', times: 1 })
    const onA = get(leader, Q101)
    await waitFor("A's call at the platform", () => reportCalls() === 1)
    // The leader's call is cut by its deadline on real timers; the replicas' time stands
    // still, so the waiter's own deadline never comes: its 504 is the leader's word.
    const onB = await get(waiter, Q101)
    expect(onB.statusCode).toBe(504)
    expect(onB.json()).toMatchObject({ code: 'GW_UPSTREAM_TIMEOUT' })
    expect((await onA).statusCode).toBe(504)
    expect(reportCalls()).toBe(1)
    expect(await admin.keys('rgw:report:*')).toEqual([])
  })

  it('refreshes a report popular on both replicas ahead once, by the replica that knows its latency, and each replica serves the new copy from its L1', async () => {
    const config = () => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: platformToken, ADMIN_TOKEN, REDIS_URL: redisServer.url }, YAML.replace('refreshAhead: 0', 'refreshAhead: true'))
    const [c, d] = [await gateways.build(config(), { clock: onRealTimers(clock.now), timers: clock.timers }), await gateways.build(config(), { clock: onRealTimers(clock.now), timers: clock.timers })]
    const outcome = async (gw: TestGateway, name: string) => metric(gw, `gateway_cache_refresh_ahead_total{outcome="${name}"}`)
    expect((await get(c, Q101)).headers['x-cache']).toBe('MISS')
    clock.advance(5_000)
    // Asked 15 times on each replica, the last BUDGET_EVERY_MS later (the budget is worked
    // out again then): popular on both. c, whose call taught it the class's latency, refreshes
    // it ahead; d took its copy from L2 and knows no latency of the class: its refresh
    // would lead by a fifth of the freshness, more than the budget's tenth of extra calls.
    for (let i = 1; i <= 15; i++) {
      if (i === 15) clock.advance(BUDGET_EVERY_MS)
      for (const gw of [c, d]) expect((await get(gw, Q101)).headers['x-cache']).toBe('HIT')
    }
    const l2Hits = await metric(d, 'gateway_cache_requests_total{result="HIT",tier="l2"}')
    clock.advance(54_999 - BUDGET_EVERY_MS)
    await waitFor('the refresh to end', async () => (await outcome(c, 'completed')) === 1)
    expect(await outcome(d, 'started')).toBe(0)
    expect(reportCalls()).toBe(2)
    // c announces its new copy over the bus; d takes it into its memory when the
    // announcement reaches it (TieredStore.takeNewer), in its own time.
    const [key] = await admin.keys('rgw:report:*')
    const fetchedAt = (await c.reports.inspect(key!)).l1?.fetchedAt
    expect(fetchedAt).toBeGreaterThan(0)
    await waitFor("the new copy in d's memory", async () => (await d.reports.inspect(key!)).l1?.fetchedAt === fetchedAt)
    clock.advance(12_000)
    for (const gw of [c, d]) {
      const hit = await get(gw, Q101)
      expect(hit.headers['x-cache']).toBe('HIT')
      expect(hit.headers.age).toBe('12')
    }
    // From L1 on both: the new copy replaced the old one there, not only in L2.
    expect(await metric(d, 'gateway_cache_requests_total{result="HIT",tier="l2"}')).toBe(l2Hits)
    expect(reportCalls()).toBe(2)
  })

  it('purges every replica: all entries, then one advertiser only', async () => {
    for (const q of [Q101, Q101B, Q102]) {
      expect((await get(a, q)).headers['x-cache']).toBe('MISS')
      expect((await get(b, q)).headers['x-cache']).toBe('HIT')
    }
    expect(reportCalls()).toBe(3)
    const keys = await admin.keys('rgw:report:*')
    expect(keys).toHaveLength(3)

    const all = await purge(a)
    expect(all.json()).toEqual({ purged: 'all', dryRun: false, dropped: 3 })
    await purgedOnEach(keys, 0)
    // The shared platform token (GATEWAY_SECRET), the replicas' announcements and their
    // seats (the learned platform limit with them), and the usage counts a replica's flush
    // writes on its timer (once the test has taken long enough), are no cache entries: a
    // purge leaves them, and the purge's record, which replicas that start later read.
    const left = (await admin.keys('rgw:*')).filter((k) => !k.startsWith('rgw:{replicas}:') && !k.startsWith('rgw:seats:') && !k.startsWith('rgw:usage'))
    expect(left.sort()).toEqual(['rgw:purges', 'rgw:token:default'])
    // B's L1 was dropped through pub/sub; B's fill then serves A from L2.
    expect((await get(b, Q101)).headers['x-cache']).toBe('MISS')
    expect((await get(a, Q101)).headers['x-cache']).toBe('HIT')
    expect(reportCalls()).toBe(4)

    for (const q of [Q101B, Q102]) {
      await get(a, q)
      await get(b, q)
    }
    expect(reportCalls()).toBe(6)
    await purgedOnEach(keys, 3)
    const one = await purge(b, '?advertiserId=101')
    expect(one.json()).toEqual({ purged: 'advertiser', advertiserId: 101, dryRun: false, dropped: 2 })
    await purgedOnEach(keys, 1)
    for (const gw of [a, b]) expect((await get(gw, Q102)).headers['x-cache']).toBe('HIT')
    expect(reportCalls()).toBe(6)
    expect((await get(a, Q101)).headers['x-cache']).toBe('MISS')
    expect((await get(b, Q101B)).headers['x-cache']).toBe('MISS')
    expect((await get(b, Q101)).headers['x-cache']).toBe('HIT')
    expect((await get(a, Q101B)).headers['x-cache']).toBe('HIT')
    expect(reportCalls()).toBe(8)
  })

  it('lets a replica with a stale copy take the refresh another replica is making, without a call of its own', async () => {
    await get(a, Q101)
    await get(b, Q101)
    clock.advance(70_000)
    sandbox.setLatency(300)
    // B's stale answer starts its background refresh; B holds the lock.
    expect((await get(b, Q101)).headers['x-cache']).toBe('STALE')
    await waitFor('the refresh at the platform', () => reportCalls() === 2)
    // A's stale answer starts a background refresh too, which waits for B's.
    const onA = await get(a, Q101)
    expect(onA.headers['x-cache']).toBe('STALE')
    expect(onA.headers.age).toBe('70')
    let last = onA
    await waitFor("A's read a HIT of the refreshed copy", async () => (last = await get(a, Q101)).headers['x-cache'] === 'HIT', testTimeLeft(), 20)
    expect(last.headers.age).toBe('0')
    expect(reportCalls()).toBe(2)
  })

  it("takes another replica's newer copy from L2 over its own stale one, without calling the platform", async () => {
    await get(a, Q101)
    await get(b, Q101)
    clock.advance(70_000)
    expect((await get(b, Q101, { 'cache-control': 'no-cache' })).headers['x-cache']).toBe('REFRESH')
    clock.advance(1_000)
    const onA = await get(a, Q101)
    expect(onA.headers['x-cache']).toBe('HIT')
    expect(onA.headers.age).toBe('1')
    expect((await get(a, Q101)).headers['x-cache']).toBe('HIT')
    expect(await metric(a, 'gateway_cache_requests_total{result="HIT",tier="l2"}')).toBe(1)
    expect(reportCalls()).toBe(2)
  })

  it('answers a REFRESH waiting on another replica with the new copy, not the one it asked to bypass', async () => {
    await get(a, Q101)
    clock.advance(10_000)
    sandbox.setLatency(400)
    const onA = get(a, Q101, { 'cache-control': 'no-cache' })
    await waitFor('the refresh at the platform', () => reportCalls() === 2)
    const onB = await get(b, Q101, { 'cache-control': 'no-cache' })
    expect((await onA).headers['cache-control']).toBe('private, max-age=60')
    expect(onB.statusCode).toBe(200)
    expect(onB.headers['x-cache']).toBe('REFRESH')
    // The bypassed copy had 50 s left; the new one has 60.
    expect(onB.headers['cache-control']).toBe('private, max-age=60')
    expect(reportCalls()).toBe(2)
  })

  /** B's answers to `query` until it serves a copy `age` seconds old: the ages it answered, in order (the last one `age`). */
  const agesUntil = async (gw: TestGateway, query: string, age: string): Promise<string[]> => {
    const ages: string[] = []
    await waitFor(() => `a copy of age ${age}; answered ${ages.length} times, the last ones ${ages.slice(-5).join(', ')}`, async () => {
      ages.push(String((await get(gw, query)).headers.age))
      return ages.at(-1) === age
    })
    return ages
  }

  it("serves the copy a caller's refresh on another replica stored, never the old one after it", async () => {
    expect((await get(a, Q101)).headers['x-cache']).toBe('MISS')
    expect((await get(b, Q101)).headers['x-cache']).toBe('HIT')
    clock.advance(10_000)
    // B holds the copy in its L1, fresh for 50 s more.
    expect((await get(b, Q101)).headers.age).toBe('10')
    expect((await get(a, Q101, { 'cache-control': 'no-cache' })).headers['x-cache']).toBe('REFRESH')
    // Once the new copy is stored, B takes it (the announcement, then one L2 read): before,
    // B served the old copy for the rest of its freshness (up to 24 h for a settled report).
    const ages = await agesUntil(b, Q101, '0')
    expect(ages.filter((age) => age !== '10' && age !== '0')).toEqual([])
    for (let i = 0; i < 20; i++) expect((await get(b, Q101)).headers.age).toBe('0')
    expect(await metric(b, 'gateway_cache_requests_total{result="HIT",tier="l1"}')).toBeGreaterThanOrEqual(20)
    expect(reportCalls()).toBe(2)
  })

  it('serves the copy a stale-while-revalidate refresh on another replica stored, never the old one after it', async () => {
    // B's clock runs 20 s behind A's (replicas' clocks agree within seconds, not exactly):
    // when the copy both hold is stale on A, it is still fresh on B.
    const config = () => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: platformToken, ADMIN_TOKEN, REDIS_URL: redisServer.url, GATEWAY_SECRET: 'replicas-gateway-secret-000000000000' }, YAML)
    const [c, d] = [await gateways.build(config(), { clock: onRealTimers(clock.now) }), await gateways.build(config(), { clock: onRealTimers(() => clock.now() - 20_000) })]
    expect((await get(c, Q101)).headers['x-cache']).toBe('MISS')
    expect((await get(d, Q101)).headers['x-cache']).toBe('HIT')
    clock.advance(65_000)
    expect((await get(d, Q101)).headers.age).toBe('45')
    // Stale on C: answered STALE, refreshed in the background.
    expect((await get(c, Q101)).headers['x-cache']).toBe('STALE')
    await waitFor('the refresh stored', async () => (await get(c, Q101)).headers.age === '0')
    const ages = await agesUntil(d, Q101, '0')
    expect(ages.filter((age) => age !== '45' && age !== '0')).toEqual([])
    for (let i = 0; i < 20; i++) expect((await get(d, Q101)).headers.age).toBe('0')
    expect(reportCalls()).toBe(2)
  })

  it('serves the copy a miss on another replica stored after L2 lost the one it holds', async () => {
    expect((await get(a, Q101)).headers['x-cache']).toBe('MISS')
    expect((await get(b, Q101)).headers['x-cache']).toBe('HIT')
    await admin.del(...(await admin.keys('rgw:report:*')))
    clock.advance(20_000)
    expect((await get(a, Q101, { 'cache-control': 'no-cache' })).headers['x-cache']).toBe('REFRESH')
    const ages = await agesUntil(b, Q101, '0')
    expect(ages.filter((age) => age !== '20' && age !== '0')).toEqual([])
    expect(reportCalls()).toBe(2)
  })

  it("answers a forced refresh on B with A's refresh younger than cache.refreshMinAge: one platform call for both", async () => {
    await get(a, Q101)
    // B holds the copy in its L1 too.
    await get(b, Q101)
    clock.advance(20_000)
    expect((await get(a, Q101, { 'cache-control': 'no-cache' })).headers['x-cache']).toBe('REFRESH')
    clock.advance(1_000)
    // B has taken A's copy (the announcement), or finds it in Redis before it calls.
    const onB = await get(b, Q101, { 'cache-control': 'no-cache' })
    expect(onB.statusCode).toBe(200)
    expect(onB.headers['cache-status']).toMatch(/^report-gateway; (hit|fwd=request; collapsed; stored); ttl=59$/)
    expect(reportCalls()).toBe(2)
  })

  it('refreshes through one replica for both: a REFRESH on A is seen as a HIT on B once B holds no copy', async () => {
    await get(a, Q101)
    clock.advance(10_000)
    const refreshed = await get(a, Q101, { 'cache-control': 'no-cache' })
    expect(refreshed.headers['x-cache']).toBe('REFRESH')
    const onB = await get(b, Q101)
    expect(onB.headers['x-cache']).toBe('HIT')
    expect(onB.headers.age).toBe('0')
    expect(reportCalls()).toBe(2)
  })
})
