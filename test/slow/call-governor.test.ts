import { describe, expect, it, onTestFinished } from 'vitest'
import { KEYS, REPORT_PATH as REPORT, TEAMS_YAML, WHOLE_SHARE_TEAMS_YAML, testConfig } from '../helpers/build-gateway.js'
import { useGateways, useSandbox } from '../helpers/fixtures.js'
import { distinctReport, proxyGet } from '../helpers/gateway-calls.js'
import { waitFor } from '../helpers/wait.js'
import { governorView, seatsOf } from '../helpers/governors.js'
import { fakeClock, onRealTimers } from '../helpers/clock.js'

// The governor in front of the platform, against the sandbox over loopback HTTP. Its longer
// scenarios (a burst over seats and queue, callers that hang up, the 429 pause across
// replicas) are in test/slow/call-governor-scenarios.test.ts.

const sandbox = useSandbox()
const gateways = useGateways()

function gateway(yaml = '', env: Record<string, string> = {}, deps: Parameters<typeof gateways.build>[1] = {}, teams = TEAMS_YAML) {
  return gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ...env }, `${teams}\n${yaml}`), deps)
}

const reportCalls = () => sandbox.countRequests((r) => r.path === REPORT)
// A burst's calls wait for their seats behind calls held at the platform, then answered 8 at
// a time, for as long as the machine takes: the queue's timeout (10 s) or the deadline (30 s)
// would refuse the last of them on a loaded machine. 90 s is past the tests' own limit (60 s).
const UNBOUNDED_WAIT = 'queueTimeout: 90s, timeout: 90s'

describe('the concurrency cap', () => {
  it('keeps at most platform.maxConcurrent calls at the platform under 100 concurrent distinct misses', async () => {
    // A fixed cap: the learned limit has tests of its own. No token probe at start: the
    // gateway's own call would take a seat beside the burst's.
    const gw = await gateway(`platform: { maxConcurrent: 8, adaptive: false, probe: null, ${UNBOUNDED_WAIT} }`)
    // The first 8 calls stay at the platform until released: the cap is reached whatever
    // the machine's pace, and the other 92 are asked while every seat is taken.
    sandbox.setRouteFailure(REPORT, { kind: 'held', times: 8 })
    sandbox.setLatency(20)
    const calls = Promise.all(Array.from({ length: 100 }, (_, i) => proxyGet(gw, distinctReport(i))))
    await waitFor('8 calls held at the platform and 92 queued', () => sandbox.concurrency().held === 8 && seatsOf(gw).queued === 92)
    expect(reportCalls()).toBe(8)
    sandbox.releaseHeld()
    const answers = await calls
    expect(answers.map((a) => a.statusCode)).toEqual(Array(100).fill(200))
    expect(reportCalls()).toBe(100)
    expect(sandbox.concurrency().peak).toBe(8)
  }, 60_000)

  it('raises the learned limit while a team alone keeps it busy at the platform\'s floor: the platform does not sit idle', async () => {
    // The gateway's clock is real time until the held calls below stop it. No token probe:
    // the gateway's own call would count at the platform beside the held ones.
    let stoppedAt: number | null = null
    const gw = await gateway(`platform: { maxConcurrent: 32, probe: null, ${UNBOUNDED_WAIT} }`, {}, { clock: onRealTimers(() => stoppedAt ?? Date.now()) })
    sandbox.setLatency(100)
    const governor = seatsOf(gw)
    // The limit starts at platform.initialConcurrent, and doubles while calls wait and no queue shows.
    expect([governor.limit, governorView(gw).phase]).toEqual([8, 'start'])
    // 64 callers ask distinct reports one after another until the limit passes 8 (at most
    // 1,200 calls, 15 s of the platform at 8 seats): a burst that ends first proves nothing.
    const statuses: number[] = []
    let next = 0
    // A test over (its time up on a loaded machine) sends no more: the tests after it see none of its calls.
    let over = false
    onTestFinished(() => { over = true })
    const caller = async () => {
      while (!over && governor.limit <= 8 && next < 1_200) statuses.push((await proxyGet(gw, distinctReport(next++))).statusCode)
    }
    await Promise.all(Array.from({ length: 64 }, caller))
    const raised = governor.limit
    expect(raised).toBeGreaterThan(8)
    // The raised limit in use: as many calls as it allows, held at the platform until all
    // are there at once. The gateway's clock stands still meanwhile: however long a loaded
    // machine takes to send them, no silence of the platform's shows as a fault that would
    // cut the limit (a second with calls overdue), and no answer comes to move it.
    stoppedAt = Date.now()
    sandbox.setRouteFailure(REPORT, { kind: 'held', times: raised })
    const held = Promise.all(Array.from({ length: raised }, (_, i) => proxyGet(gw, distinctReport(next + i))))
    await waitFor(`${raised} calls held at the platform at once`, () => sandbox.concurrency().held === raised)
    stoppedAt = null
    sandbox.releaseHeld()
    statuses.push(...(await held).map((a) => a.statusCode))
    expect(statuses).toEqual(Array(statuses.length).fill(200))
    const { peak } = sandbox.concurrency()
    expect(peak).toBeGreaterThan(8)
    expect(peak).toBeLessThanOrEqual(32)
    const metrics = await gw.admin.inject({ method: 'GET', url: '/metrics' })
    expect(metrics.body).toMatch(/gateway_platform_concurrency_limit\{credential="default"\} (9|[1-9]\d)/)
  }, 60_000)

  it('answers a second team\'s miss at the first seat that frees during another team\'s burst', async () => {
    // A fixed limit: the learned one starts lower, to measure the floors (it has tests of
    // its own). No token probe at start: the gateway's own call would take a seat beside the burst's.
    // Its own token: the calls it sends are told apart at the sandbox from any other gateway's.
    const token = sandbox.issueToken()
    const gw = await gateway(`platform: { maxConcurrent: 8, adaptive: false, probe: null, ${UNBOUNDED_WAIT} }`, { PLATFORM_TOKEN: token })
    // The burst's first 8 calls stay at the platform until released: no seat frees before
    // the second team asks, whatever the machine's pace.
    sandbox.setRouteFailure(REPORT, { kind: 'held', times: 8 })
    sandbox.setLatency(20)
    const burst = Promise.all(Array.from({ length: 100 }, (_, i) => proxyGet(gw, distinctReport(i))))
    const governor = seatsOf(gw)
    await waitFor('the burst to take every seat and queue the rest', () => sandbox.concurrency().held === 8 && governor.queued === 92)
    const secondReport = distinctReport(200, 102)
    const second = proxyGet(gw, secondReport, KEYS.growth)
    await waitFor("the second team's call queued", () => governor.waiting().get('growth') === 1)
    sandbox.releaseHeld()
    const answer = await second
    expect([answer.statusCode, answer.headers['x-cache']]).toEqual([200, 'MISS'])
    // Sent at the next turn, the first call once a seat freed: ahead of the burst's 92
    // queued before it (one queue without turns would have sent it 101st).
    const sent = sandbox.requests.filter((r) => r.path === REPORT && r.headers.authorization === `Bearer ${token}`)
    expect(sent.findIndex((r) => r.query === secondReport.split('?')[1])).toBe(8)
    const answers = await burst
    expect(answers.filter((a) => a.statusCode !== 200).map((a) => a.body)).toEqual([])
  }, 60_000)

  it('refuses with 503 GW_OVERLOADED and retry-after once the queue is full', async () => {
    // No token probe at start: the gateway's own call would make its team an active one,
    // owed a seat for the linger (seats-unit tests cover that rule).
    const gw = await gateway('platform: { maxConcurrent: 2, adaptive: false, queue: 3, probe: null }', {}, {}, WHOLE_SHARE_TEAMS_YAML)
    // The first 2 calls stay at the platform until released: the seats and the queue are
    // full when the last 3 ask, whatever the machine's pace.
    sandbox.setRouteFailure(REPORT, { kind: 'held', times: 2 })
    const admitted = Promise.all(Array.from({ length: 5 }, (_, i) => proxyGet(gw, distinctReport(i))))
    await waitFor('2 calls held at the platform and 3 queued', () => sandbox.concurrency().held === 2 && seatsOf(gw).queued === 3)
    const refused = await Promise.all(Array.from({ length: 3 }, (_, i) => proxyGet(gw, distinctReport(5 + i))))
    sandbox.releaseHeld()
    expect((await admitted).map((a) => a.statusCode)).toEqual(Array(5).fill(200))
    expect(refused.map((a) => a.statusCode)).toEqual(Array(3).fill(503))
    for (const r of refused) {
      expect(r.json()).toMatchObject({ statusCode: 503, code: 'GW_OVERLOADED' })
      expect(r.headers['retry-after']).toBe('1')
    }
    const metrics = await gw.admin.inject({ method: 'GET', url: '/metrics' })
    expect(metrics.body).toContain('gateway_platform_refused_total{credential="default",reason="queue_full"} 3')
    expect(metrics.body).toMatch(/gateway_platform_in_flight_calls\{credential="default"\} 0/)
  })

  it('exports the seats held, and under their name of the last release (permits, deprecated) the same count', async () => {
    const gw = await gateway('platform: { maxConcurrent: 8, adaptive: false }')
    // The three calls stay at the platform until released: their seats are held while /metrics is read.
    sandbox.setRouteFailure(REPORT, { kind: 'held', times: 3 })
    const calls = Promise.all(Array.from({ length: 3 }, (_, i) => proxyGet(gw, distinctReport(i))))
    await waitFor('three calls held at the platform', () => sandbox.concurrency().held === 3 && governorView(gw).seatsHeld === 3)
    const { body } = await gw.admin.inject({ method: 'GET', url: '/metrics' })
    expect(body).toContain('gateway_platform_seats_held{credential="default"} 3')
    expect(body).toContain('gateway_platform_permits_held{credential="default"} 3')
    // Seats are lost only across replicas (a lease taken back): both names are declared.
    expect(body).toMatch(/# HELP gateway_platform_permits_lost_total Deprecated, the same as gateway_platform_seats_lost_total/)
    expect(body).toContain('# TYPE gateway_platform_seats_lost_total counter')
    sandbox.releaseHeld()
    expect((await calls).map((a) => a.statusCode)).toEqual([200, 200, 200])
  })
})

describe('a call that cannot end before its deadline', () => {
  // A deadline of 1 s; a copy fresh for 1 s, then served as STALE only when the platform fails (no stale-while-revalidate).
  const DEADLINE_1S = 'platform: { timeout: 1s, maxConcurrent: 8, adaptive: false }\ncache: { ttl: { recent: 1s, settled: 1s }, staleWhileRevalidate: 0s, staleIfError: 1h }'
  /**
   * A gateway on the test's clock with a copy of the kind (the week reports of distinctReport), then `calls`
   * calls of it at once, held at the platform (past `latencyMs` of its work) until the test releases them, each
   * cut by its deadline once all are there: the clock moves only then, so however long a loaded machine takes
   * to send them, none is cut, nor its kind learned slower, before the last is sent.
   */
  async function copyThenCuts(latencyMs: number, calls: number) {
    const clock = fakeClock()
    const gw = await gateway(DEADLINE_1S, {}, { clock })
    sandbox.setLatency(20)
    const copy = await proxyGet(gw, distinctReport(0))
    expect([copy.statusCode, copy.headers['x-cache']]).toEqual([200, 'MISS'])
    sandbox.setLatency(latencyMs)
    sandbox.setRouteFailure(REPORT, { kind: 'held', times: calls })
    const cuts = Promise.all(Array.from({ length: calls }, (_, i) => proxyGet(gw, distinctReport(i + 1))))
    await waitFor(`${calls} calls at the platform`, () => sandbox.concurrency().inFlight === calls)
    clock.advance(1_000)
    const cut = await cuts
    expect(cut.map((a) => a.json<{ code: string }>().code)).toEqual(Array(calls).fill('GW_UPSTREAM_TIMEOUT'))
    return { gw, copy, clock }
  }

  it('is not sent: a stale copy is served, else 504 GW_UPSTREAM_TIMEOUT saying why, with no platform call', async () => {
    // Eight calls of the kind sent at once, each cut by its deadline at 1 s while the
    // platform works on for 1.5 s, within the watch (another platform.timeout): their
    // answers (dropped) teach the kind's time, past 1 s.
    const { gw, copy, clock } = await copyThenCuts(1_500, 8)
    await waitFor('the platform to work 1.5 s on the eight calls', () => sandbox.concurrency().held === 8)
    sandbox.releaseHeld()
    await waitFor('the platform to answer the eight calls', () => sandbox.concurrency().inFlight === 0 && governorView(gw).inFlight === 0)
    const sent = reportCalls()
    expect(sent).toBe(9)

    // The copy, past its freshness by now (the eight calls took 1.5 s): its refresh is not sent, the copy is served.
    clock.advance(500)
    const stale = await proxyGet(gw, distinctReport(0))
    expect([stale.statusCode, stale.headers['x-cache']]).toEqual([200, 'STALE'])
    expect(stale.rawPayload.equals(copy.rawPayload)).toBe(true)
    // No copy: refused at once, saying what calls of its kind take and what its deadline
    // leaves: the whole second, the gateway's clock standing still while it is refused.
    const none = await proxyGet(gw, distinctReport(20))
    expect(none.statusCode).toBe(504)
    expect(none.json()).toMatchObject({ code: 'GW_UPSTREAM_TIMEOUT', message: expect.stringMatching(/^not sent to the platform: calls of its kind take about [\d.]+ s at the platform and its deadline leaves 1 s$/) })
    expect(reportCalls()).toBe(sent)
    const metrics = await gw.admin.inject({ method: 'GET', url: '/metrics' })
    expect(metrics.body).toContain('gateway_platform_refused_total{credential="default",reason="deadline"} 2')
  }, 30_000)

  it('is not sent once its kind, answered fast before, became slower than twice the budget: its cuts outweigh the answers', async () => {
    // The kind now takes 3 s: two calls cut by their deadline at 1 s and watched in vain
    // for another platform.timeout, ended once the platform has worked 3 s on them (the
    // latency the estimates learn, on the monotonic clock), no answer of the kind since the fast one.
    const { gw, clock } = await copyThenCuts(3_000, 2)
    await waitFor('the platform to work 3 s on the two calls', () => sandbox.concurrency().held === 2)
    clock.advance(1_000)
    // Cut in vain, their seats held to their expected end on the gateway's clock: it moves on, 100 ms a look, until they are back.
    await waitFor('the watch to end and the seats to come back', () => (clock.advance(100), governorView(gw).inFlight === 0))
    const sent = reportCalls()
    expect(sent).toBe(3)

    // Refused at once, with no platform call: the copy is served stale, a report with none is 504 saying why.
    const stale = await proxyGet(gw, distinctReport(0))
    expect([stale.statusCode, stale.headers['x-cache']]).toEqual([200, 'STALE'])
    const none = await proxyGet(gw, distinctReport(20))
    expect(none.statusCode).toBe(504)
    expect(none.json()).toMatchObject({ code: 'GW_UPSTREAM_TIMEOUT', message: expect.stringMatching(/^not sent to the platform: calls of its kind take about [\d.]+ s at the platform and its deadline leaves 1 s$/) })
    expect(reportCalls()).toBe(sent)
    sandbox.releaseHeld()
    await waitFor('the platform to end the cut calls', () => sandbox.concurrency().inFlight === 0)
  }, 30_000)

  it('is sent again when calls of its kind that hung together are cut after a call sent later was answered: one hang, not the kind slowing', async () => {
    // A platform that stopped with two calls on it: held past their deadline, never answered; a call sent after them is answered in 20 ms.
    const clock = fakeClock()
    const gw = await gateway(DEADLINE_1S, {}, { clock })
    sandbox.setLatency(20)
    expect((await proxyGet(gw, distinctReport(0))).statusCode).toBe(200)
    sandbox.setLatency(1_000)
    sandbox.setRouteFailure(REPORT, { kind: 'held', times: 2 })
    const hung = Promise.all([1, 2].map((i) => proxyGet(gw, distinctReport(i))))
    // Held once the platform worked 1 s on them (the latency the estimates learn, on the monotonic clock).
    await waitFor('the platform to hold the two calls past their 1 s', () => sandbox.concurrency().held === 2)
    sandbox.setLatency(20)
    clock.advance(10)
    const later = await proxyGet(gw, distinctReport(3))
    expect(later.statusCode).toBe(200)
    // Cut by their deadline, then by their watch's end: two cuts of 1 s or more, past the deadline once grown, no answer between them.
    clock.advance(1_000)
    expect((await hung).map((a) => a.statusCode)).toEqual([504, 504])
    await waitFor('the watch to end and the seats to come back', () => (clock.advance(100), governorView(gw).inFlight === 0))
    const sent = reportCalls()

    const next = await proxyGet(gw, distinctReport(4))
    expect(next.statusCode).toBe(200)
    expect(reportCalls()).toBe(sent + 1)
    sandbox.releaseHeld()
  }, 30_000)

  it('is not sent when its kind got slower while it waited for its seat: refused as the answer that made it slower comes, 504 GW_UPSTREAM_TIMEOUT saying why, with no platform call', async () => {
    // One seat, a deadline of 6 s; the kind known fast (a copy's call).
    const gw = await gateway('platform: { timeout: 6s, maxConcurrent: 1, adaptive: false }\ncache: { staleIfError: 0s }')
    sandbox.setLatency(20)
    expect((await proxyGet(gw, distinctReport(0))).statusCode).toBe(200)
    // A call of the kind holds the seat 5.4 s; one asked with it waits, sendable until about 6 s less the kind's ~20 ms.
    sandbox.setLatency(5_400)
    const holder = proxyGet(gw, distinctReport(1))
    await waitFor('the first call at the platform', () => reportCalls() === 2)
    const waiting = proxyGet(gw, distinctReport(2))
    // Its answer makes the kind about 1.1 s (20 + 0.2 × 5,380) as the seat comes free with about 600 ms of the waiting call's deadline left (the margins half a second either way on a loaded machine).
    expect((await holder).statusCode).toBe(200)
    const late = await waiting
    expect(late.statusCode).toBe(504)
    expect(late.json()).toMatchObject({ code: 'GW_UPSTREAM_TIMEOUT', message: expect.stringMatching(/^not sent to the platform: calls of its kind take about [\d.]+ s at the platform and its deadline leaves (0\.\d|1) s$/) })
    expect(reportCalls()).toBe(2)
  }, 30_000)
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
