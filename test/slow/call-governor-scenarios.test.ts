import { performance } from 'node:perf_hooks'
import { request } from 'undici'
import { describe, expect, it } from 'vitest'
import type { TestGateway } from '../helpers/build-gateway.js'
import { KEYS, REPORT_PATH as REPORT, TEAMS_YAML, listen, testConfig } from '../helpers/build-gateway.js'
import { fakeClock, onRealTimers } from '../helpers/clock.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { distinctReport, proxyGet } from '../helpers/gateway-calls.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'
import { seatsOf } from '../helpers/governors.js'

// The governor's longer scenarios, against the sandbox over loopback HTTP: a burst that
// fills every seat and the queue, callers that hang up, and the 429 pause across two
// replicas sharing one Redis. The shorter ones are in test/slow/call-governor.test.ts.

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
// The burst's test: a gateway built and 216 calls through its seats, about 1.5 s of CPU
// (quiet, 2026-12-02); 55 s on 4 % of a core (pinned beside a busy one at nice 19): it has 90 s. Its queued calls wait for their
// seats however long that takes: their queueTimeout (10 s by default) is past the test's end.
const BURST_TEST_MS = 90_000
const QUEUE_TIMEOUT_MS = 120_000
describe('fair shares that never idle the platform', () => {
  it('lets one team\'s 215 concurrent misses take every seat and the whole queue, and gives another team\'s miss the first seat that frees', async ({ task }) => {
    expect(QUEUE_TIMEOUT_MS).toBeGreaterThan(task.timeout ?? Infinity)
    // No token probe at start: the gateway's team would be owed a seat for its linger.
    const gw = await gateway(`platform: { maxConcurrent: 8, adaptive: false, probe: null, queueTimeout: ${QUEUE_TIMEOUT_MS}ms }`)
    // The burst's first 8 calls stay at the platform until released: the queue fills
    // whatever the machine's pace, and no seat frees before the other team asks.
    sandbox.setRouteFailure(REPORT, { kind: 'held', times: 8 })
    const burst = Promise.all(Array.from({ length: 215 }, (_, i) => proxyGet(gw, distinctReport(i))))
    const governor = seatsOf(gw)
    const metrics = async () => (await gw.admin.inject({ method: 'GET', url: '/metrics' })).body
    const refused = (reason: string, n: number) => `gateway_platform_refused_total{credential="default",reason="${reason}"} ${n}`
    // A team alone: every seat and the whole queue, the 7 past it refused.
    await waitFor('the burst to fill every seat and the queue', async () => sandbox.concurrency().held === 8 && governor.queued === 200 && (await metrics()).includes(refused('queue_full', 7)))
    const otherReport = distinctReport(300, 102)
    const other = proxyGet(gw, otherReport, KEYS.growth)
    await waitFor("the other team's call queued", () => governor.waiting().get('growth') === 1)
    sandbox.releaseHeld()
    expect((await other).statusCode).toBe(200)
    // The first call sent once seats freed is the other team's, ahead of the burst's 200
    // queued (behind them it would be the 208th).
    const sent = sandbox.requests.filter((r) => r.path === REPORT)
    expect(sent.findIndex((r) => r.query === otherReport.split('?')[1])).toBe(8)
    const answers = await burst
    const turnedAway = answers.filter((a) => a.statusCode === 503)
    // 8 at the platform, 200 queued, 7 refused; the other team's call displaced the newest queued.
    expect(turnedAway).toHaveLength(215 - 208 + 1)
    expect(turnedAway[0]?.json()).toMatchObject({ code: 'GW_OVERLOADED' })
    expect(sandbox.concurrency().peak).toBeLessThanOrEqual(8)
    const text = await metrics()
    expect(text).toContain(refused('queue_full', 7))
    expect(text).toContain(refused('displaced', 1))
  }, BURST_TEST_MS)
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
    // The first 4 calls stay at the platform until released: no seat frees, and no queued
    // fill is sent, before the gateway has seen its callers hang up, whatever the machine's pace.
    sandbox.setRouteFailure(REPORT, { kind: 'held', times: 4 })
    const governor = seatsOf(gw)
    const hangUp = new AbortController()
    const sent = sender(gw)
    // 12 distinct misses of team `all`: 4 at the platform (the limit), 8 queued.
    const gone = Array.from({ length: 12 }, (_, i) => sent(distinctReport(i), KEYS.all, hangUp.signal))
    await waitFor('the burst at the platform and queued', () => sandbox.concurrency().held === 4 && governor.queued === 8)
    // Another caller joins one of the queued fills.
    const joined = sent(distinctReport(11), KEYS.all)
    await new Promise((resolve) => setTimeout(resolve, 50))
    hangUp.abort()
    await Promise.all(gone)
    // The gateway has seen the 12 leave: of the 8 queued fills, only the one still waited on is left.
    await waitFor('the fills nobody waits for dropped', () => governor.queued === 1)
    sandbox.releaseHeld()
    const answer = await joined
    expect(answer).toMatchObject({ status: 200, cache: 'MISS' })
    await waitFor('the platform idle', () => sandbox.concurrency().inFlight === 0 && governor.inFlight === 0 && governor.queued === 0)
    // The 4 already sent went on (their answers fill the cache), the joined fill was made,
    // and the 7 fills nobody waited for any more never reached the platform.
    expect(reportCalls()).toBe(5)
  })

  it('moves a fill queued for a team whose callers all hung up to the queue of the earliest team still waiting for it', async () => {
    const latency = 200
    // Team A, held to 4 calls by its ceiling, has its burst held at the platform past
    // platform.timeout: a fill left in A's queue would wait that long for one of A's seats.
    const ceiling = TEAMS_YAML.replace('    refresh: true\n  growth:', '    refresh: true\n    maxConcurrent: 4\n  growth:')
    const gw = await listen(await gateway('platform: { timeout: 6s, maxConcurrent: 8, adaptive: false }', {}, {}, ceiling))
    sandbox.setLatency(latency)
    sandbox.setRouteFailure(CREATIVES, { kind: 'held' })
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
    // The platform answers the burst's 4 calls: the gateway stops without waiting for their watch.
    sandbox.releaseHeld()
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
    await waitFor('the pause to reach the other replica', () => b.governors.paused('default', REPORT, 'all'))
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
    await waitFor('the resume to reach the other replica', () => !b.governors.paused('default', REPORT, 'all'))
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
    await waitFor('the credential pause on both replicas', () => seatsOf(a).pausedUntil > 0 && seatsOf(b).pausedUntil > 0)
    // platform.maxPause (60 s) from the 429, not the 900 s asked for.
    expect(seatsOf(a).pausedUntil - pausedAt).toBeLessThanOrEqual(61_000)
    const paused = a.logs.records().filter((r) => r.msg === PAUSED)
    expect(paused).toMatchObject([{ credential: 'default', scope: 'credential', team: 'growth', source: 'platform' }])
    // A replica that starts during the pause finds it in Redis.
    const late = await gateway('', { REDIS_URL: redis.server.url })
    expect(seatsOf(late).pausedUntil).toBeGreaterThan(0)

    // The probe call answers (it is not throttled): the pause ends on both, at a probe, not at
    // its end (60 s, past the test's timeout).
    sandbox.clearRouteFailures()
    await waitFor('the probe to end the pause', () => seatsOf(a).pausedUntil === 0 && seatsOf(b).pausedUntil === 0)
    expect(sandbox.countRequests((r) => r.path === '/api/v1/campaign/get')).toBeGreaterThan(0)
    for (const gw of [a, b]) {
      expect(gw.logs.records().filter((r) => r.msg === RESUMED)).toHaveLength(1)
    }
    expect((await proxyGet(b, creatives(1, 102), KEYS.growth)).statusCode).toBe(200)
    const metrics = await a.admin.inject({ method: 'GET', url: '/metrics' })
    expect(metrics.body).toContain('gateway_platform_pauses_total{credential="default"} 1')
  }, 20_000)
})
