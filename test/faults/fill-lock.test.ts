import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { startSandbox, type Sandbox } from '../../src/sandbox/sandbox.js'
import { KEYS, REPORT_PATH as REPORT, teamsYamlWith } from '../helpers/build-gateway.js'
import { spawnGateways, timedRequest, type GatewayProcess, type TimedResponse } from '../helpers/gateway-process.js'
import { redisAvailability, startRedis, type RedisServer } from '../helpers/start-redis.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'

// The fill lock with two gateway processes on one redis-server: a
// replica SIGKILLed while it holds a report's fill lock mid-stampede, and a leader whose
// platform call fails while the other replica's callers wait on it.

const { available } = redisAvailability()

const TIMEOUT_MS = 3000
const LOCK_TTL_MS = 1000
const LATENCY_MS = 2000
// A fixed limit (the learned one moves as it learns): all of
// which the killed replica's lease would hold until it lapses (seatLease).
const YAML = teamsYamlWith({
  platform: { timeout: `${TIMEOUT_MS}ms`, adaptive: false },
  cache: { ttl: { recent: '1s', settled: '1h' }, staleWhileRevalidate: '0s', staleIfError: '1h', lockTtl: `${LOCK_TTL_MS}ms` },
})

describe.skipIf(!available)('report fill lock across two gateway processes', () => {
  let sandbox: Sandbox
  let redis: RedisServer
  let a: GatewayProcess
  let b: GatewayProcess

  // One pair for the file (a gateway process takes seconds to start on a loaded machine);
  // the test that kills A comes last, and each test reads reports of its own.
  beforeAll(async () => {
    sandbox = await startSandbox()
    redis = await startRedis()
    const env = { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: redis.url, GATEWAY_SECRET: 'fill-lock-gateway-secret-00000000000' }
    ;[a, b] = (await spawnGateways(2, { env, yaml: YAML })) as [GatewayProcess, GatewayProcess]
  }, 120_000)

  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()])
    await redis?.close()
    await sandbox?.close()
  })

  beforeEach(() => sandbox.clearRequests())

  afterEach(() => {
    sandbox.setFailure({ kind: 'none' })
    sandbox.setLatency(0)
  })

  const report = (gw: GatewayProcess, query: string) => timedRequest(`${gw.url}${REPORT}?${query}`, { headers: { 'x-api-key': KEYS.all } })
  const reportCalls = () => sandbox.countRequests((r) => r.path === REPORT)
  const many = (gw: GatewayProcess, query: string, n: number) => Array.from({ length: n }, () => report(gw, query))

  it("answers the other replica's waiters with the leader's failure, or their stale copy, without a call of their own", async () => {
    // Reports of today: fresh for 1 s (`ttl.recent`), so a copy soon needs a new fill.
    const today = new Date().toISOString().slice(0, 10)
    const fresh = `advertiserId=101&byDate=1&dateFrom=${today}&dateTo=${today}`
    const old = `advertiserId=102&byDate=1&dateFrom=${today}&dateTo=${today}`
    // A copy of `old` on both replicas (A's fill, then B's from L2, or its own fill if a
    // loaded machine took more than a second), then past freshness.
    expect((await report(a, old)).status).toBe(200)
    expect((await report(b, old)).status).toBe(200)
    await sleep(1100)
    sandbox.clearRequests()
    sandbox.setFailure({ kind: 'hang' })

    const onA = [report(a, fresh), report(a, old)]
    await waitFor('both fills of A to reach the platform', () => reportCalls() === 2, testTimeLeft(), 5)
    const [freshB, oldB] = await Promise.all([report(b, fresh), report(b, old)])
    const [freshA, oldA] = await Promise.all(onA)

    expect([freshA!.status, freshB.status]).toEqual([504, 504])
    expect(JSON.parse(freshB.body)).toMatchObject({ code: 'GW_UPSTREAM_TIMEOUT' })
    for (const res of [oldA!, oldB]) {
      expect(res.status).toBe(200)
      expect(res.headers['x-cache']).toBe('STALE')
    }
    // No second call: the platform hangs, so any call made is still in its log.
    expect(reportCalls()).toBe(2)
  })

  it('survives the SIGKILL of the lock holder mid-stampede: the lock lapses, one waiter fills for all, the next read is a HIT', async () => {
    sandbox.setLatency(LATENCY_MS)
    const q = 'advertiserId=101&byDate=1&dateFrom=2026-02-01&dateTo=2026-02-07'
    const onA = many(a, q, 100)
    await waitFor('the fill of A to reach the platform', () => reportCalls() === 1, testTimeLeft(), 5)
    const calledAt = Date.now()
    const onB = many(b, q, 100)
    // A holds the lock and is halfway through its 2 s call when it dies.
    await sleep(calledAt + 1000 - Date.now())
    a.kill('SIGKILL')
    const fromB = await Promise.all(onB)
    expect((await Promise.all(onA)).filter((r: TimedResponse) => r.status !== 0 && r.status !== 200)).toEqual([])

    // Every waiter answered 200, each within its deadline (platform.timeout and the lock
    // TTL from its arrival, else 504): the lock lapsed and one waiter's fill served them all.
    expect(fromB.map((r) => r.status)).toEqual(Array(100).fill(200))
    expect(reportCalls()).toBeLessThanOrEqual(2)
    // The survivor stored what it fetched: a HIT, without another call.
    sandbox.setLatency(0)
    const next = await report(b, q)
    expect(next.status).toBe(200)
    expect(next.headers['x-cache']).toBe('HIT')
    expect(reportCalls()).toBeLessThanOrEqual(2)
  })
})
