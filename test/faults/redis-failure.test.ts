import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { Redis } from 'ioredis'
import { composeGateway, KEYS, startGateway, TEAMS_YAML, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useGateway, useRedis, useSandbox } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { settled, waitFor } from '../helpers/wait.js'

// Redis is an accelerator. Killed in the middle of a test, the
// gateway answers on from L1 and the platform without errors and without waiting longer
// than the command timeout; once it is back, it is used again. Transitions of the
// circuit breaker are logged once each.

const { available, notice } = redisAvailability()
if (notice) console.warn(notice)

const PATH = '/api/v1/report/campaigns/get'
const COMMAND_TIMEOUT_MS = 250
const COOLDOWN_MS = 250
const ADMIN_TOKEN = 'redis-failure-admin-token-000000'
const DOWN = 'redis unavailable: serving without it (circuit open)'
const UP = 'redis available again (circuit closed)'

const YAML = `${TEAMS_YAML}
platform:
  timeout: 4s
  maxConcurrentPerReplica: 4
redis:
  commandTimeout: ${COMMAND_TIMEOUT_MS}ms
  breakerCooldown: ${COOLDOWN_MS}ms
cache:
  ttl: { recent: 60s, settled: 60s }
  lockTtl: 1s
`

const query = (day: number, advertiserId = 101) =>
  `advertiserId=${advertiserId}&byDate=1&dateFrom=2026-03-01&dateTo=2026-03-${String(day).padStart(2, '0')}`

describe.skipIf(!available)('report cache when Redis fails', () => {
  const sandbox = useSandbox()
  const { server: redisServer } = useRedis()
  const config = () =>
    testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN, REDIS_URL: redisServer.url }, YAML)
  const a = useGateway(config)
  const b = useGateway(config)

  const reportCalls = () => sandbox.countRequests((r) => r.path === PATH)

  /** A report call through a replica. */
  const report = async (gw: TestGateway, q: string) => {
    const res = await gw.proxy.inject({ method: 'GET', url: `${PATH}?${q}`, headers: { 'x-api-key': KEYS.all } })
    return { status: res.statusCode, cache: res.headers['x-cache'], body: res.rawPayload }
  }

  const lines = (gw: TestGateway, msg: string) => gw.logs.records().filter((r) => r.msg === msg)

  /**
   * Counts the commands of a replica's Redis client that end by the command timeout, from
   * now until `stop()`: the real commands go to Redis as they are.
   */
  const countTimeouts = (gw: TestGateway) => {
    const client = gw.redis.client as Redis
    const send = client.sendCommand.bind(client)
    let timedOut = 0
    client.sendCommand = (command, stream) => {
      command.promise.catch((err: unknown) => {
        if (err instanceof Error && err.message === 'Command timed out') timedOut += 1
      })
      return send(command, stream)
    }
    return { count: () => timedOut, stop: () => Reflect.deleteProperty(client, 'sendCommand') }
  }

  const seatsHeld = async (gw: TestGateway) => {
    const text = (await gw.admin.inject({ method: 'GET', url: '/metrics' })).body
    return /^gateway_platform_seats_held\{[^}]*\} (\S+)$/m.exec(text)?.[1]
  }

  const redisUp = async (gw: TestGateway) => {
    const text = (await gw.admin.inject({ method: 'GET', url: '/metrics' })).body
    return /^gateway_redis_up (\d)$/m.exec(text)?.[1]
  }

  it('serves on through a Redis outage and uses Redis again once it is back', async () => {
    // Before: A fills, B answers from L2 and keeps a copy in L1.
    expect((await report(a, query(1))).cache).toBe('MISS')
    expect((await report(b, query(1))).cache).toBe('HIT')
    expect(reportCalls()).toBe(1)
    expect(await redisUp(a)).toBe('1')

    // Killed while A fills (A holds the lock and is about to write L2).
    sandbox.setLatency(150)
    const filling = report(a, query(2))
    await waitFor('the fill to reach the platform', () => reportCalls() === 2)
    await redisServer.stop(true)
    const during = await filling
    expect(during.status).toBe(200)
    expect(during.cache).toBe('MISS')
    sandbox.setLatency(0)

    // The outage spans several breaker cooldowns; every answer is a 200, and none waits
    // for Redis: with the connection gone, each command the replicas send (a trial after
    // a cooldown, the watch's pings) fails at once, none by the command timeout.
    await waitFor('both replicas to lose the connection', () => a.redis.client?.status !== 'ready' && b.redis.client?.status !== 'ready')
    const timeouts = [countTimeouts(a), countTimeouts(b)]
    const answers: Awaited<ReturnType<typeof report>>[] = []
    for (let i = 0; i < 6; i++) {
      const hitA = await report(a, query(1))
      const hitB = await report(b, query(1))
      expect(hitA.cache).toBe('HIT')
      expect(hitB.cache).toBe('HIT')
      answers.push(hitA, hitB, await report(a, query(10 + i)), await report(b, query(2)))
      await sleep(COOLDOWN_MS / 2)
    }
    for (const answer of answers) expect(answer.status).toBe(200)
    for (const counted of timeouts) {
      counted.stop()
      expect(counted.count()).toBe(0)
    }
    // A's fill of query(2) reached its L1; B, with no L2, filled its own L1 once.
    expect((await report(a, query(2))).cache).toBe('HIT')
    expect(answers.filter((x, i) => i % 4 === 3).map((x) => x.cache)).toEqual(['MISS', 'HIT', 'HIT', 'HIT', 'HIT', 'HIT'])
    expect(reportCalls()).toBe(2 + 6 + 1)
    expect(await redisUp(a)).toBe('0')
    const ready = await a.admin.inject({ method: 'GET', url: '/readyz' })
    expect(ready.statusCode).toBe(200)
    expect(ready.json()).toMatchObject({ redis: 'down', degraded: ['redis'] })

    // Back (empty: the server keeps nothing on disk).
    await redisServer.restart()
    const probe = new Redis(redisServer.url, { maxRetriesPerRequest: 1 })
    try {
      await waitFor('both replicas to reconnect', () => a.redis.client?.status === 'ready' && b.redis.client?.status === 'ready')
      // Both subscribers are back too (purges and lock wake-ups).
      await waitFor('the subscribers to resubscribe', async () => {
        const [, n] = (await probe.pubsub('NUMSUB', 'rgw:bus:purge')) as [string, number]
        return n === 2
      })
      await sleep(COOLDOWN_MS + 50)
      // The copies the replicas kept (query 1, 2, 10 to 15), stored in the empty Redis again.
      await waitFor('the kept copies in Redis', async () => (await probe.keys('rgw:report:*')).length === 8)

      const fill = await report(a, query(20))
      expect(fill.cache).toBe('MISS')
      expect(await probe.keys('rgw:report:*')).toHaveLength(9)
      const fromL2 = await report(b, query(20))
      expect(fromL2.cache).toBe('HIT')
      expect(fromL2.body.equals(fill.body)).toBe(true)
      const callsBefore = reportCalls()
      expect(callsBefore).toBe(2 + 7 + 1)
      expect(await redisUp(a)).toBe('1')
      expect(await redisUp(b)).toBe('1')
      expect((await b.admin.inject({ method: 'GET', url: '/readyz' })).json()).toMatchObject({ redis: 'ok', degraded: [] })

      // A purge on A reaches B's L1 again.
      const sub = probe.duplicate()
      await sub.subscribe('rgw:bus:purge')
      const heard = new Promise<void>((resolve) => sub.once('message', () => resolve()))
      const before = Date.now()
      const purged = await a.admin.inject({ method: 'DELETE', url: '/admin/cache', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
      expect(purged.statusCode).toBe(200)
      await settled('the purge published on the bus', heard)
      sub.disconnect()
      // B hears it on its own connection, in its own time: a copy filled before the purge
      // is refused there once it has (its L1 emptied in the same turn).
      await waitFor('B to hear the purge', () => b.reports.purged({ fetchedAt: before - 1, advertiserIds: [101] }, ''))
      expect((await report(b, query(1))).cache).toBe('MISS')
      expect(reportCalls()).toBe(callsBefore + 1)
    } finally {
      probe.disconnect()
    }

    // One line per transition: down once, up once, per replica; no request failed.
    for (const gw of [a, b]) {
      expect(lines(gw, DOWN)).toHaveLength(1)
      expect(lines(gw, UP)).toHaveLength(1)
      expect(lines(gw, 'request failed')).toHaveLength(0)
    }
  })

  it('does not keep a waiter waiting for an announcement once Redis is gone', async () => {
    // Redis is up again after the test above; A's fill is held at the platform, B waits on A's lock.
    await waitFor('both replicas to use Redis', () => a.redis.breaker?.state === 'closed' && b.redis.breaker?.state === 'closed')
    // B has asked nothing of the platform since: its lease has gone back to the store. Without
    // Redis it calls on its own cap (platform.maxConcurrentPerReplica), from 1 s into the outage.
    await waitFor('B to hold no seat', async () => (await seatsHeld(b)) === '0')
    sandbox.setRouteFailure(PATH, { kind: 'held', times: 1 })
    const calls = reportCalls()
    const onA = report(a, query(25))
    await waitFor('the fill to reach the platform', () => reportCalls() === calls + 1)
    let answeredB = false
    const onB = report(b, query(25)).finally(() => {
      answeredB = true
    })
    await sleep(50)
    await redisServer.stop(true)
    // Without Redis no announcement can come: B goes upstream while A's call is still
    // held, before A has anything to announce. A waiter kept waiting for the announcement
    // answers at its deadline without calling.
    await waitFor('B to call the platform or answer', () => reportCalls() === calls + 2 || answeredB)
    expect(reportCalls()).toBe(calls + 2)
    sandbox.releaseHeld()
    const [fromA, fromB] = await Promise.all([onA, onB])
    expect(fromA.status).toBe(200)
    expect(fromB.status).toBe(200)
    expect(reportCalls()).toBe(calls + 2)
    await redisServer.restart()
  })

  it('starts while Redis is down, serves without it, and subscribes and uses it once it is up', async () => {
    await redisServer.stop(true)
    const c = await composeGateway(
      testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN, REDIS_URL: redisServer.url, LOG_LEVEL: 'debug' }, YAML),
    )
    const beforeStart = c.logs.lines.length
    try {
      await startGateway(c)
      // The start waits for one attempt to connect and no longer: the circuit opens
      // before Redis's connect retries (a debug line each) go on.
      const started = c.logs.records().slice(beforeStart).map((r) => r.msg)
      expect(started.slice(0, started.indexOf(DOWN)).filter((msg) => msg === 'redis connection error')).toHaveLength(1)
      // The truth from the first second, before any request needed Redis: the
      // metric, readiness's body, and one line naming host:port and the cause.
      expect(await redisUp(c)).toBe('0')
      expect((await c.admin.inject({ method: 'GET', url: '/readyz' })).json()).toMatchObject({ redis: 'down', degraded: ['redis'] })
      expect(lines(c, DOWN)).toEqual([expect.objectContaining({ level: 40, redis: `127.0.0.1:${redisServer.port}`, cause: expect.stringContaining('ECONNREFUSED') })])
      const during = await report(c, query(28))
      expect(during.status).toBe(200)
      expect(during.cache).toBe('MISS')
      expect((await c.proxy.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200)

      await redisServer.restart()
      const probe = new Redis(redisServer.url, { maxRetriesPerRequest: 1 })
      try {
        await waitFor('all three replicas to subscribe', async () => {
          const [, purge, , filled] = (await probe.pubsub('NUMSUB', 'rgw:bus:purge', 'rgw:bus:filled')) as [string, number, string, number]
          return purge === 3 && filled === 3
        })
      } finally {
        probe.disconnect()
      }
      await waitFor('the replicas to reconnect', () => a.redis.client?.status === 'ready' && c.redis.client?.status === 'ready')
      // Found back by the periodic ping, without a request.
      await waitFor('the ping to find Redis back', async () => (await redisUp(c)) === '1')
      expect(lines(c, UP)).toEqual([expect.objectContaining({ redis: `127.0.0.1:${redisServer.port}` })])
      expect(lines(c, DOWN)).toHaveLength(1)
      await sleep(COOLDOWN_MS + 50)
      expect((await report(a, query(29))).cache).toBe('MISS')
      expect((await report(c, query(29))).cache).toBe('HIT')
    } finally {
      await c.close()
    }
  })
})
