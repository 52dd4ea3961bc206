import { performance } from 'node:perf_hooks'
import { request } from 'undici'
import { describe, expect, it } from 'vitest'
import type { TestGateway } from '../helpers/build-gateway.js'
import { KEYS, REPORT_PATH as REPORT, TEAMS_YAML, WHOLE_SHARE_TEAMS_YAML, listen, testConfig } from '../helpers/build-gateway.js'
import { fakeClock, onRealTimers } from '../helpers/clock.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { distinctReport, proxyGet } from '../helpers/gateway-calls.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'
import { governorView, seatsOf } from '../helpers/governors.js'

// The governor in front of the platform, against the sandbox over loopback
// HTTP, and its 429 pause across two replicas sharing one Redis.

const { available, notice } = redisAvailability()
if (notice) console.warn(notice)

const sandbox = useSandbox()
const redis = useRedis()
const gateways = useGateways()

const PAUSED = 'platform credential paused: the platform answered 429'
const RESUMED = 'platform credential resumed'

function gateway(yaml = '', env: Record<string, string> = {}, deps: Parameters<typeof gateways.build>[1] = {}, teams = TEAMS_YAML) {
  return gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ...env }, `${teams}\n${yaml}`), deps)
}

const reportCalls = () => sandbox.countRequests((r) => r.path === REPORT)

describe('the concurrency cap', () => {
  it('keeps at most platform.maxConcurrent calls at the platform under 100 concurrent distinct misses', async () => {
    // A fixed cap: the learned limit has tests of its own.
    const gw = await gateway('platform: { maxConcurrent: 8, adaptive: false }')
    sandbox.setLatency(100)
    const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => proxyGet(gw, distinctReport(i))))
    expect(answers.map((a) => a.statusCode)).toEqual(Array(100).fill(200))
    expect(reportCalls()).toBe(100)
    const { peak } = sandbox.concurrency()
    expect(peak).toBeLessThanOrEqual(8)
    // The cap was reached, so the bound above says something.
    expect(peak).toBeGreaterThanOrEqual(6)
  })

  it('raises the learned limit while a team alone keeps it busy at the platform\'s floor: the platform does not sit idle', async () => {
    const gw = await gateway('platform: { maxConcurrent: 32 }')
    sandbox.setLatency(100)
    const governor = seatsOf(gw)
    // The limit starts at platform.initialConcurrent, and doubles while calls wait and no queue shows.
    expect([governor.limit, governorView(gw).phase]).toEqual([8, 'start'])
    // 64 callers ask distinct reports one after another until the limit passes 8 (at most
    // 1,200 calls, 15 s of the platform at 8 seats): a burst that ends first proves nothing.
    const statuses: number[] = []
    let next = 0
    const caller = async () => {
      while (governor.limit <= 8 && next < 1_200) statuses.push((await proxyGet(gw, distinctReport(next++))).statusCode)
    }
    await Promise.all(Array.from({ length: 64 }, caller))
    expect(governor.limit).toBeGreaterThan(8)
    expect(statuses).toEqual(Array(statuses.length).fill(200))
    const { peak } = sandbox.concurrency()
    expect(peak).toBeGreaterThan(8)
    expect(peak).toBeLessThanOrEqual(32)
    const metrics = await gw.admin.inject({ method: 'GET', url: '/metrics' })
    expect(metrics.body).toMatch(/gateway_platform_concurrency_limit\{credential="default"\} (9|[1-9]\d)/)
  }, 60_000)

  it('answers a second team\'s miss within about one platform latency during another team\'s burst', async () => {
    const latency = 200
    // A fixed limit: the learned one starts lower, to measure the floors (it has tests of its own).
    const gw = await gateway('platform: { maxConcurrent: 8, adaptive: false }')
    sandbox.setLatency(latency)
    let answered = 0
    // 100 misses of team "all": 100 / 8 seats × 200 ms ≈ 2.5 s in all.
    const burst = Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        proxyGet(gw, distinctReport(i)).then((a) => {
          answered += 1
          return a
        }),
      ),
    )
    await waitFor('the burst to fill the queue', () => seatsOf(gw).queued >= 80)
    const started = performance.now()
    const second = await proxyGet(gw, distinctReport(200, 102), KEYS.growth)
    const took = performance.now() - started
    expect(second.statusCode).toBe(200)
    expect(second.headers['x-cache']).toBe('MISS')
    // Served at the next turn: of the ≥ 80 calls queued before it, few were answered
    // first (one queue without turns would have answered them all first).
    expect(answered).toBeLessThan(30)
    // At most one seat's wait plus its own call (≈ 2 × 200 ms), with a wide margin for a
    // busy machine; behind the queue it would take over 2 s.
    expect(took).toBeLessThan(7 * latency)
    const answers = await burst
    expect(answers.filter((a) => a.statusCode !== 200).map((a) => a.body)).toEqual([])
  })

  it('refuses with 503 GW_OVERLOADED and retry-after once the queue is full', async () => {
    // No token probe at start: the gateway's own call would make its team an active one,
    // owed a seat for the linger (seats-unit tests cover that rule).
    const gw = await gateway('platform: { maxConcurrent: 2, adaptive: false, queue: 3, probe: null }', {}, {}, WHOLE_SHARE_TEAMS_YAML)
    sandbox.setLatency(300)
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => proxyGet(gw, distinctReport(i))))
    const refused = answers.filter((a) => a.statusCode === 503)
    expect(answers.filter((a) => a.statusCode === 200)).toHaveLength(5)
    expect(refused).toHaveLength(3)
    for (const r of refused) {
      expect(r.json()).toMatchObject({ statusCode: 503, code: 'GW_OVERLOADED' })
      expect(r.headers['retry-after']).toBe('1')
    }
    const metrics = await gw.admin.inject({ method: 'GET', url: '/metrics' })
    expect(metrics.body).toContain('gateway_platform_refused_total{credential="default",reason="queue_full"} 3')
    expect(metrics.body).toMatch(/gateway_platform_in_flight_calls\{credential="default"\} 0/)
  })
})

describe('fair shares that never idle the platform', () => {
  it('lets one team\'s 215 concurrent misses take every seat and the whole queue, and answers another team\'s miss within about one platform call', async () => {
    const latency = 200
    // No token probe at start: the gateway's team would be owed a seat for its linger.
    const gw = await gateway('platform: { maxConcurrent: 8, adaptive: false, probe: null }')
    sandbox.setLatency(latency)
    const burst = Promise.all(Array.from({ length: 215 }, (_, i) => proxyGet(gw, distinctReport(i))))
    const governor = seatsOf(gw)
    // A team alone: every seat and the whole queue.
    await waitFor('the burst to fill every seat and the queue', () => governor.running('all') === 8 && governor.queued === 200)
    const started = performance.now()
    const other = await proxyGet(gw, distinctReport(300, 102), KEYS.growth)
    const took = performance.now() - started
    expect(other.statusCode).toBe(200)
    expect(other.headers['x-cache']).toBe('MISS')
    // The next seat that frees, then its own call: about two platform latencies, with a
    // wide margin for a busy machine (behind the burst's queue it would take 25).
    expect(took).toBeLessThan(6 * latency)
    const answers = await burst
    const refused = answers.filter((a) => a.statusCode === 503)
    // 8 at the platform, 200 queued, 7 refused; the other team's call displaced the newest queued.
    expect(refused).toHaveLength(215 - 208 + 1)
    expect(refused[0]?.json()).toMatchObject({ code: 'GW_OVERLOADED' })
    expect(sandbox.concurrency().peak).toBeLessThanOrEqual(8)
    const metrics = await gw.admin.inject({ method: 'GET', url: '/metrics' })
    expect(metrics.body).toContain('gateway_platform_refused_total{credential="default",reason="queue_full"} 7')
    expect(metrics.body).toContain('gateway_platform_refused_total{credential="default",reason="displaced"} 1')
  })
})

describe('callers that hang up', () => {
  /** Sends a read to `gw` over a real connection, which `signal` hangs up: the answer, or null once hung up. */
  const sender = (gw: TestGateway & { url: string }) => (url: string, key: string, signal?: AbortSignal) =>
    request(`${gw.url}${url}`, { headers: { 'x-api-key': key }, ...(signal ? { signal } : {}) }).then(
      async (res) => ({ status: res.statusCode, cache: res.headers['x-cache'], body: await res.body.text() }),
      () => null,
    )

  it('drops their queued calls without a platform call; a fill another caller still waits on stays', async () => {
    const gw = await listen(await gateway('platform: { maxConcurrent: 4, adaptive: false, probe: null }'))
    sandbox.setLatency(400)
    const governor = seatsOf(gw)
    const hangUp = new AbortController()
    const sent = sender(gw)
    // 12 distinct misses of team `all`: 4 at the platform (the limit), 8 queued.
    const gone = Array.from({ length: 12 }, (_, i) => sent(distinctReport(i), KEYS.all, hangUp.signal))
    await waitFor('the burst queued', () => governor.queued === 8)
    // Another caller joins one of the queued fills.
    const joined = sent(distinctReport(11), KEYS.all)
    await new Promise((resolve) => setTimeout(resolve, 50))
    hangUp.abort()
    await Promise.all(gone)
    const answer = await joined
    expect(answer).toMatchObject({ status: 200, cache: 'MISS' })
    await waitFor('the platform idle', () => sandbox.concurrency().inFlight === 0 && governor.inFlight === 0 && governor.queued === 0)
    // The 4 already sent went on (their answers fill the cache), the joined fill was made,
    // and the 7 fills nobody waited for any more never reached the platform.
    expect(reportCalls()).toBe(5)
  })

  it('moves a fill queued for a team whose callers all hung up to the queue of the earliest team still waiting for it', async () => {
    const latency = 200
    // Team A, held to 4 calls by its ceiling, has its burst hang at the platform until
    // platform.timeout: a fill left in A's queue would wait that long for one of A's seats.
    const ceiling = TEAMS_YAML.replace('    refresh: true\n  growth:', '    refresh: true\n    maxConcurrent: 4\n  growth:')
    const gw = await listen(await gateway('platform: { timeout: 6s, maxConcurrent: 8, adaptive: false }', {}, {}, ceiling))
    sandbox.setLatency(latency)
    sandbox.setRouteFailure(CREATIVES, { kind: 'hang' })
    const governor = seatsOf(gw)
    const hangUp = new AbortController()
    const sent = sender(gw)
    // Team A (`all`): 24 distinct misses, 4 at the platform (its ceiling), 20 queued; then report R, queued behind them.
    const burst = Array.from({ length: 24 }, (_, i) => sent(creatives(i), KEYS.all, hangUp.signal))
    await waitFor('A\'s burst at the platform and queued', () => governor.running('all') === 4 && governor.queued === 20)
    const shared = distinctReport(500)
    const led = sent(shared, KEYS.all, hangUp.signal)
    await waitFor('A\'s read of R queued behind its burst', () => governor.queued === 21)
    // Team B (`limited`) asks for the same R: it joins A's queued fill.
    const joined = sent(shared, KEYS.limited)
    await waitFor('B admitted', () => gw.rateLimiter.peek(gw.config.teams.find((t) => t.name === 'limited')!).remaining === 2)
    await new Promise((resolve) => setTimeout(resolve, 100))
    const started = performance.now()
    hangUp.abort()
    await Promise.all([...burst, led])
    const answer = await joined
    const took = performance.now() - started
    expect(answer).toMatchObject({ status: 200, cache: 'MISS' })
    // About one platform latency (B's seat is free at once), with a wide margin for a busy
    // machine; left in A's queue it would wait for platform.timeout (6 s).
    expect(took).toBeLessThan(2500)
    expect(reportCalls()).toBe(1)
  })
})

const CREATIVES = '/api/v1/report/creatives/get'
const TEAM_ROUTE_PAUSED = 'platform team route paused: the platform answered 429'
const TEAM_ROUTE_RESUMED = 'platform team route resumed'
const THROTTLE = { kind: 'status', status: 429, headers: { 'retry-after': '900' } } as const

function creatives(n: number, advertiserId = 101): string {
  return distinctReport(n, advertiserId).replace(REPORT, CREATIVES)
}

describe.skipIf(!available)('a platform 429 pauses in proportion, two replicas on one Redis', () => {
  const yaml = `cache: { ttl: { recent: 1s, settled: 1s }, staleWhileRevalidate: 0s, staleIfError: 1h }`

  it('pauses only the throttled team on its route, serves its stale copy, and resumes it on a trial after the platform answers again', async () => {
    const clock = fakeClock()
    const a = await gateway(yaml, { REDIS_URL: redis.server.url }, { clock: onRealTimers(clock.now) })
    const b = await gateway(yaml, { REDIS_URL: redis.server.url }, { clock: onRealTimers(clock.now) })
    expect((await proxyGet(a, distinctReport(0))).headers['x-cache']).toBe('MISS')
    clock.advance(5000)

    // The platform throttles one call of team `all` on the report route.
    sandbox.setRouteFailure(REPORT, { ...THROTTLE, times: 1 })
    const limited = await proxyGet(a, distinctReport(1))
    expect(limited.statusCode).toBe(429)
    const pausedAt = Date.now()
    await waitFor('the pause to reach the other replica', () => b.governors.paused('default', REPORT, 'all'), 1500)
    // Another team keeps the same route and the others, on both replicas.
    for (const [i, gw] of [a, b].entries()) {
      expect((await proxyGet(gw, distinctReport(10 + i, 102), KEYS.growth)).statusCode).toBe(200)
      expect((await proxyGet(gw, creatives(i, 102), KEYS.growth)).statusCode).toBe(200)
    }
    expect(seatsOf(a).pausedUntil).toBe(0)

    // The paused team on that route: refused at once with retry-after ≤ 60 s, or its stale copy.
    const callsAtPause = reportCalls()
    for (const gw of [a, b]) {
      const refused = await proxyGet(gw, distinctReport(2))
      expect(refused.statusCode).toBe(503)
      expect(refused.json()).toMatchObject({ code: 'GW_OVERLOADED' })
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0)
      expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(60)
      const stale = await proxyGet(gw, distinctReport(0))
      expect(stale.statusCode).toBe(200)
      expect(stale.headers['x-cache']).toBe('STALE')
    }
    expect(reportCalls()).toBe(callsAtPause)
    // A replica that starts during the pause finds it in Redis.
    const late = await gateway(yaml, { REDIS_URL: redis.server.url }, { clock: onRealTimers(clock.now) })
    expect(late.governors.paused('default', REPORT, 'all')).toBe(true)
    expect(late.governors.paused('default', REPORT, 'growth')).toBe(false)

    // The first call after the probe interval (on the gateways' clock) is the trial: the platform answers, the pause ends.
    let answer = await proxyGet(a, distinctReport(3))
    // Steps of 250 ms of the gateways' clock, each after a short real pause for the
    // replicas' Redis traffic: the trial comes after 5 s of their clock, not of real time.
    for (let i = 0; i < 40 && answer.statusCode === 503; i++) {
      await new Promise((r) => setTimeout(r, 25))
      clock.advance(250)
      answer = await proxyGet(a, distinctReport(3))
    }
    expect(answer.statusCode).toBe(200)
    expect(Date.now() - pausedAt).toBeLessThan(8000)
    await waitFor('the resume to reach the other replica', () => !b.governors.paused('default', REPORT, 'all'), 1500)
    expect((await proxyGet(b, distinctReport(4))).statusCode).toBe(200)

    const fields = { credential: 'default', scope: 'team-route', route: REPORT, team: 'all' }
    expect(a.logs.records().filter((r) => r.msg === TEAM_ROUTE_PAUSED)).toMatchObject([{ ...fields, source: 'platform' }])
    expect(a.logs.records().filter((r) => r.msg === TEAM_ROUTE_RESUMED)).toMatchObject([{ ...fields, source: 'platform' }])
    expect(b.logs.records().filter((r) => r.msg === TEAM_ROUTE_PAUSED)).toMatchObject([{ ...fields, source: 'peer' }])
    expect(b.logs.records().filter((r) => r.msg === TEAM_ROUTE_RESUMED)).toMatchObject([{ ...fields, source: 'peer' }])
    expect(a.logs.records().some((r) => r.msg === PAUSED)).toBe(false)
  }, 20_000)

  it('pauses the credential when two teams are throttled on two routes within the window, on both replicas, and the probe call ends it', async () => {
    const a = await gateway('', { REDIS_URL: redis.server.url })
    const b = await gateway('', { REDIS_URL: redis.server.url })
    sandbox.setRouteFailure(REPORT, THROTTLE)
    expect((await proxyGet(a, distinctReport(0))).statusCode).toBe(429)
    sandbox.clearRouteFailures()
    sandbox.setRouteFailure(CREATIVES, THROTTLE)
    expect((await proxyGet(a, creatives(0, 102), KEYS.growth)).statusCode).toBe(429)
    const pausedAt = Date.now()
    await waitFor('the credential pause on both replicas', () => seatsOf(a).pausedUntil > 0 && seatsOf(b).pausedUntil > 0, 1500)
    // platform.maxPause (60 s) from the 429, not the 900 s asked for.
    expect(seatsOf(a).pausedUntil - pausedAt).toBeLessThanOrEqual(61_000)
    const paused = a.logs.records().filter((r) => r.msg === PAUSED)
    expect(paused).toMatchObject([{ credential: 'default', scope: 'credential', team: 'growth', source: 'platform' }])
    // A replica that starts during the pause finds it in Redis.
    const late = await gateway('', { REDIS_URL: redis.server.url })
    expect(seatsOf(late).pausedUntil).toBeGreaterThan(0)

    // The probe call answers (it is not throttled): the pause ends within about one probe interval, on both.
    sandbox.clearRouteFailures()
    await waitFor('the probe to end the pause', () => seatsOf(a).pausedUntil === 0 && seatsOf(b).pausedUntil === 0, 8000)
    expect(Date.now() - pausedAt).toBeLessThan(8000)
    expect(sandbox.countRequests((r) => r.path === '/api/v1/campaign/get')).toBeGreaterThan(0)
    for (const gw of [a, b]) {
      expect(gw.logs.records().filter((r) => r.msg === RESUMED)).toHaveLength(1)
    }
    expect((await proxyGet(b, creatives(1, 102), KEYS.growth)).statusCode).toBe(200)
    const metrics = await a.admin.inject({ method: 'GET', url: '/metrics' })
    expect(metrics.body).toContain('gateway_platform_pauses_total{credential="default"} 1')
  }, 20_000)
})

describe('retries', () => {
  it('sends a read again after a 503 or a reset, at most twice', async () => {
    const gw = await gateway()
    sandbox.setFailure({ kind: 'status', status: 503, times: 2 })
    expect((await proxyGet(gw, distinctReport(0))).statusCode).toBe(200)
    expect(reportCalls()).toBe(3)
    sandbox.clearRequests()
    sandbox.setFailure({ kind: 'reset', times: 1 })
    const proxied = await gw.proxy.inject({ method: 'POST', url: '/api/v1/campaign/get', headers: { 'x-api-key': KEYS.all }, payload: { userId: 101 } })
    expect(proxied.statusCode).toBe(200)
    expect(sandbox.countRequests()).toBe(2)
    sandbox.clearRequests()
    sandbox.setFailure({ kind: 'status', status: 504, times: 3 })
    expect((await proxyGet(gw, distinctReport(1))).statusCode).toBe(502)
    expect(reportCalls()).toBe(3)
    const metrics = await gw.admin.inject({ method: 'GET', url: '/metrics' })
    expect(metrics.body).toContain('gateway_platform_retries_total{credential="default"} 5')
  })

  it('never sends a write again', async () => {
    const gw = await gateway()
    for (const failure of [{ kind: 'status', status: 503, times: 1 }, { kind: 'reset', times: 1 }] as const) {
      sandbox.clearRequests()
      sandbox.setFailure(failure)
      const res = await gw.proxy.inject({ method: 'POST', url: '/api/v1/campaign/banner/create', headers: { 'x-api-key': KEYS.writer }, payload: { userId: 101 } })
      expect(res.statusCode, failure.kind).toBe(502)
      expect(sandbox.countRequests((r) => r.path === '/api/v1/campaign/banner/create')).toBe(1)
    }
  })
})
