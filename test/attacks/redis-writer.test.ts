import { gzipSync } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { request } from 'undici'
import { Redis } from 'ioredis'
import { encodeEntry, etagOf } from '../../src/cache/cache-entry.js'
import { KEYS, REPORT_PATH as PATH, teamsYamlWith, testConfig, WEEK_BY_CAMPAIGN as Q2, WEEK_BY_DATE as Q1, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// Whoever may write to Redis (a neighbour on a shared instance, a
// leaked password) writes there directly and PUBLISHes on the bus. What the gateway
// serves and obeys must still be the gateway's own.

const { available } = redisAvailability()

const SECRET = 'redis-writer-test-secret-000000000000'
const SCRIPT = '<script>alert(document.cookie)</script>'
const LOCK_TTL_MS = 1000

const YAML = teamsYamlWith({
  platform: { timeout: '3s', maxPause: '5s' },
  redis: { commandTimeout: '500ms' },
  cache: { ttl: { recent: '60s', settled: '60s' }, lockTtl: `${LOCK_TTL_MS}ms` },
})

/** What a writer plants: an entry fresh for an hour, served as text/html with a script. */
function plantedEntry(): Buffer {
  const now = Date.now()
  return encodeEntry({
    contentType: 'text/html; charset=utf-8',
    gzip: gzipSync(SCRIPT),
    etag: etagOf(gzipSync(SCRIPT)),
    identity: null,
    fetchedAt: now,
    freshUntil: now + 3_600_000,
    staleUntil: now + 3_600_000,
    errorUntil: now + 3_600_000,
    advertiserIds: [101],
  })
}

/** A "fill failed" announcement as the gateway sent it before seals: a 429 with the writer's headers and body. */
function forgedFailure(key: string): string {
  return JSON.stringify({
    key,
    code: 'GW_UPSTREAM',
    response: { status: 429, headers: { 'content-type': 'text/html', 'set-cookie': 'session=attacker; Path=/' }, body: Buffer.from(SCRIPT).toString('base64') },
  })
}

describe.skipIf(!available)('a Redis writer does not speak for the gateway', () => {
  const sandbox = useSandbox()
  const { server, client } = useRedis()
  const gateways = useGateways()

  const replica = (env: Record<string, string> = {}) =>
    gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: server.url, ...env }, YAML))

  const get = (gw: TestGateway, query: string) => gw.proxy.inject({ method: 'GET', url: `${PATH}?${query}`, headers: { 'x-api-key': KEYS.all } })

  const reportCalls = () => sandbox.countRequests((r) => r.path === PATH && r.headers['x-direct'] === undefined)

  const direct = async (query: string): Promise<string> => {
    const res = await request(`${sandbox.url}${PATH}?${query}`, { headers: { authorization: `Bearer ${sandbox.issueToken()}`, 'x-direct': '1' } })
    return res.body.text()
  }

  const metric = async (gw: TestGateway, line: string): Promise<number> => {
    const text = (await gw.admin.inject({ method: 'GET', url: '/metrics' })).body
    const found = text.split('\n').find((l) => l.startsWith(`${line} `))
    return found ? Number(found.slice(line.length + 1)) : 0
  }

  /** Fills `query` through `gw`: the Redis key its entry was stored under. */
  async function filled(gw: TestGateway, query: string): Promise<string> {
    const before = new Set(await client.keys('rgw:report:*'))
    expect((await get(gw, query)).headers['x-cache']).toBe('MISS')
    const added = (await client.keys('rgw:report:*')).filter((k) => !before.has(k))
    expect(added).toHaveLength(1)
    return added[0] as string
  }

  /** `gw`'s read of `query` while the lock of `key` is held by the writer, who announces `message` until the read ends. */
  async function waitWhileAnnounced(gw: TestGateway, key: string, message: string) {
    await client.unlink(key)
    await client.set(`rgw:lock:${key}`, 'writer', 'PX', LOCK_TTL_MS)
    let done = false
    const read = get(gw, Q1).finally(() => (done = true))
    for (let i = 0; i < 200 && !done; i++) {
      await client.publish('rgw:bus:fill-failed', message)
      await new Promise((r) => setTimeout(r, 20))
    }
    return read
  }

  /** Runs `steps` with the first message a listener subscribed to `channel` hears from then on; the listener is gone after. */
  async function listeningOn(channel: string, steps: (heard: Promise<string>) => Promise<void>): Promise<void> {
    const listener = new Redis(server.url, { maxRetriesPerRequest: 1 })
    try {
      await listener.subscribe(channel)
      const heard = new Promise<string>((resolve) => listener.once('message', (_channel: string, message: string) => resolve(message)))
      await steps(heard)
    } finally {
      listener.disconnect()
    }
  }

  describe('with GATEWAY_SECRET', () => {
    const env = { GATEWAY_SECRET: SECRET }

    it('treats an entry planted under a report key as a miss: logged, counted, the platform answers', async () => {
      const a = await replica(env)
      const key = await filled(a, Q1)
      await client.set(key, plantedEntry(), 'PX', 3_600_000)
      const b = await replica(env)
      // Every series is there from the start at 0, so that increase() sees the first forgery.
      const text = (await b.admin.inject({ method: 'GET', url: '/metrics' })).body
      for (const what of ['entry', 'message', 'pause']) expect(text).toContain(`gateway_redis_unverified_total{what="${what}"} 0\n`)
      const res = await get(b, Q1)
      expect(res.statusCode).toBe(200)
      expect(res.headers['x-cache']).toBe('MISS')
      expect(res.headers['content-type']).toMatch(/^application\/json/)
      expect(res.body).toBe(await direct(Q1))
      expect(await metric(b, 'gateway_redis_unverified_total{what="entry"}')).toBe(1)
      expect(b.logs.records().filter((r) => /does not carry this gateway's seal/.test(String(r.msg)))).toHaveLength(1)
      // The refill wrote a sealed entry over the planted one: the next replica reads it.
      const c = await replica(env)
      expect((await get(c, Q1)).headers['x-cache']).toBe('HIT')
    })

    it("does not serve an entry copied under another report's key", async () => {
      const a = await replica(env)
      const k1 = await filled(a, Q1)
      const k2 = await filled(a, Q2)
      await client.set(k2, (await client.getBuffer(k1)) as Buffer, 'PX', 3_600_000)
      const b = await replica(env)
      const res = await get(b, Q2)
      expect(res.headers['x-cache']).toBe('MISS')
      expect(res.body).toBe(await direct(Q2))
      expect(await metric(b, 'gateway_redis_unverified_total{what="entry"}')).toBe(1)
    })

    it('lets no forged "fill failed" announcement answer a waiting caller', async () => {
      const a = await replica(env)
      const key = await filled(a, Q1)
      const b = await replica(env)
      const calls = reportCalls()
      const res = await waitWhileAnnounced(b, key, forgedFailure(key))
      expect(res.statusCode).toBe(200)
      expect(res.headers['set-cookie']).toBeUndefined()
      expect(res.headers['content-type']).toMatch(/^application\/json/)
      expect(res.body).toBe(await direct(Q1))
      // The writer's lock lapsed and the waiter filled for everyone.
      expect(reportCalls()).toBe(calls + 1)
      expect(await metric(b, 'gateway_redis_unverified_total{what="message"}')).toBeGreaterThan(0)
    })

    it('ignores a forged pause of the credential', async () => {
      const b = await replica(env)
      await client.publish('rgw:bus:platform-pause', JSON.stringify({ credential: 'default', scope: 'credential', team: 'all', route: '/', ms: 900_000 }))
      await waitFor('the forged pause to be refused', async () => (await metric(b, 'gateway_redis_unverified_total{what="message"}')) === 1)
      expect(b.governors.paused('default')).toBe(false)
      expect((await get(b, Q1)).statusCode).toBe(200)
    })

    it('ignores a pause written into Redis for replicas that start', async () => {
      await client.hset('rgw:pauses:{default}', 'credential', JSON.stringify({ until: Date.now() + 900_000, team: 'all', route: '/' }))
      await client.pexpire('rgw:pauses:{default}', 900_000)
      const b = await replica(env)
      expect(b.governors.paused('default')).toBe(false)
      expect(await metric(b, 'gateway_redis_unverified_total{what="pause"}')).toBe(1)
    })

    it("refuses a replica's genuine message replayed on another channel", async () => {
      const a = await replica(env)
      const b = await replica(env)
      await listeningOn('rgw:bus:filled', async (heard) => {
        const key = await filled(a, Q1)
        const genuine = await heard
        expect(genuine).not.toBe(key)
        await client.publish('rgw:bus:fill-failed', genuine)
        await client.publish('rgw:bus:platform-pause', genuine)
        await waitFor('both replays to be refused', async () => (await metric(b, 'gateway_redis_unverified_total{what="message"}')) === 2)
        expect(b.governors.paused('default')).toBe(false)
      })
    })

    it("refuses a replica's genuine pause replayed on its own channel once the platform recovered", async () => {
      const a = await replica(env)
      const b = await replica(env)
      await listeningOn('rgw:bus:platform-pause', async (heard) => {
        // The platform throttles the report route once, for a second.
        sandbox.setRouteFailure(PATH, { kind: 'status', status: 429, headers: { 'retry-after': '1' }, times: 1 })
        expect((await get(a, Q1)).statusCode).toBe(429)
        const genuine = await heard
        await waitFor('the route pause to reach the other replica', () => b.governors.paused('default', PATH))
        await waitFor('the route pause to end', () => !a.governors.paused('default', PATH) && !b.governors.paused('default', PATH))
        // Captured, and published again: the same sealed bytes, well within their 60 s.
        await client.publish('rgw:bus:platform-pause', genuine)
        await waitFor('the replay to be refused or obeyed', async () => b.governors.paused('default', PATH) || (await metric(b, 'gateway_redis_unverified_total{what="message"}')) >= 1)
        expect(b.governors.paused('default', PATH)).toBe(false)
        expect(a.governors.paused('default', PATH)).toBe(false)
        expect((await get(b, Q2)).statusCode).toBe(200)
      })
    })
  })

  describe('a purge is final', () => {
    const ADMIN_TOKEN = 'redis-writer-admin-token-0123456789'
    const env = { GATEWAY_SECRET: SECRET, ADMIN_TOKEN }
    const purge = (gw: TestGateway, query: string) => gw.admin.inject({ method: 'DELETE', url: `/admin/cache${query}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })

    it.each([
      ['of its advertiser', '?advertiserId=101'],
      ['of everything', ''],
    ])('refuses an entry saved before a purge %s and written back, on every replica', async (_name, query) => {
      const a = await replica(env)
      const b = await replica(env)
      const key = await filled(a, Q1)
      expect((await get(b, Q1)).headers['x-cache']).toBe('HIT')
      const saved = (await client.getBuffer(key)) as Buffer
      const ttl = await client.pttl(key)
      expect((await purge(a, query)).statusCode).toBe(200)
      await waitFor('the purge to reach the other replica', async () => b.reports.freshInMemory(key, Date.now()) === null)
      // The writer puts the sealed entry back, byte for byte.
      await client.set(key, saved, 'PX', ttl)
      // A replica that starts after the purge learns it from Redis.
      const c = await replica(env)
      for (const gw of [a, b, c]) {
        const calls = reportCalls()
        const res = await get(gw, Q1)
        expect(res.statusCode).toBe(200)
        expect(res.headers['x-cache']).toBe('MISS')
        expect(reportCalls()).toBe(calls + 1)
        // The writer puts it back again for the next replica.
        await client.set(key, saved, 'PX', ttl)
      }
    })
  })

  // Without GATEWAY_SECRET there is no Redis: the start stops (redis-bounds.test.ts).
})
