import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { gunzipSync, gzipSync } from 'node:zlib'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { request } from 'undici'
import { KEYS, REPORT_PATH as PATH, TEAMS_YAML, teamsYamlWith, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { fakeClock, type FakeClock, onRealTimers, wokenBy } from '../helpers/clock.js'
import { useGateway, useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { expectMissesOf } from '../helpers/gateway-calls.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'
import { seatsOf } from '../helpers/governors.js'
import { BUDGET_EVERY_MS } from '../../src/reports/refresh-ahead.js'

// The report cache on one gateway instance, against the sandbox over loopback, once with the
// in-memory cache only and once with Redis as L2. Time moves on a fake clock.

const { available } = redisAvailability()

const ADMIN_TOKEN = 'report-cache-admin-token-0000000000'
const CANONICAL = 'advertiserId=101&byDate=1&dateFrom=2026-01-01&dateTo=2026-01-07'
const FRESH_S = 60
const SWR_S = 30
const SIE_S = 600
// Asks in one freshness that qualify a lone report for refresh ahead: K and the budget
// (reports/refresh-ahead.ts), which with one report watched and a platform answering in
// under 300 ms takes about 11 (its extra calls (F + L + F/a) / (F − lead + L) − 1 ≤ 0.1).
const POPULAR = 15

/**
 * Asks a copy POPULAR − 1 more times (each answered `expected`, when given), the last
 * BUDGET_EVERY_MS after the others: the budget's fewest asks are worked out again then.
 */
async function askPopular(ask: () => Promise<{ headers: Record<string, unknown> }>, advance: (ms: number) => void, expected?: string): Promise<void> {
  for (let i = 2; i <= POPULAR; i++) {
    if (i === POPULAR) advance(BUDGET_EVERY_MS)
    const answer = await ask()
    if (expected !== undefined) expect(answer.headers['x-cache']).toBe(expected)
  }
}

// A deadline no call on a loaded machine comes near (the deadline rule refuses a kind whose
// calls take longer than the deadline leaves): only the hang cases wait it out, on a gateway
// of their own with HANG_TIMEOUT.
const TIMEOUT = '30s'
const HANG_TIMEOUT_MS = 1500
const HANG_TIMEOUT = `${HANG_TIMEOUT_MS}ms`
const YAML = teamsYamlWith({
  platform: { timeout: TIMEOUT },
  redis: { commandTimeout: '500ms', breakerCooldown: '500ms' },
  cache: {
    ttl: { recent: `${FRESH_S}s`, settled: `${FRESH_S}s` },
    staleWhileRevalidate: `${SWR_S}s`,
    staleIfError: `${SIE_S}s`,
    lockTtl: '1s',
    // These tests watch copies expire (no refresh ahead); refresh ahead has tests of its own below.
    refreshAhead: 0,
  },
})

const sandbox = useSandbox()
let platformToken: string

beforeAll(() => {
  platformToken = sandbox.issueToken()
})

/** The platform's own bytes for a canonical query, asked directly with a valid token. */
async function direct(query: string, path = PATH): Promise<Buffer> {
  const res = await request(`${sandbox.url}${path}?${query}`, { headers: { authorization: `Bearer ${platformToken}`, 'x-direct': '1' } })
  expect(res.statusCode).toBe(200)
  return Buffer.from(await res.body.arrayBuffer())
}

/** Report calls the gateway made (the test's own direct calls are marked). */
function reportCalls(path = PATH): number {
  return sandbox.countRequests((r) => r.path === path && r.headers['x-direct'] === undefined)
}

function defineSuite(mode: 'memory' | 'redis'): void {
  const redis = mode === 'redis' ? useRedis() : null
  const admin = redis?.client ?? null
  const gateways = useGateways()
  let gw: TestGateway
  let clock: FakeClock

  const env = (): Record<string, string> => ({
    PLATFORM_BASE_URL: sandbox.url,
    PLATFORM_TOKEN: platformToken,
    ADMIN_TOKEN,
    ...(redis ? { REDIS_URL: redis.server.url } : {}),
  })

  beforeEach(async () => {
    clock = fakeClock()
    gw = await gateways.build(testConfig(env(), YAML), { clock: onRealTimers(clock.now) })
  })

  const getOn = (on: TestGateway, query: string, headers: Record<string, string> = {}, path = PATH) =>
    on.proxy.inject({ method: 'GET', url: `${path}?${query}`, headers: { 'x-api-key': KEYS.all, ...headers } })
  const get = (query: string, headers: Record<string, string> = {}, path = PATH) => getOn(gw, query, headers, path)

  /**
   * Moves the clock to the end of the report route's pause on `on`, checking that it
   * holds until its last millisecond and not after; returns the time moved on.
   */
  function passPause(on: TestGateway = gw): number {
    const [pause] = on.governors.pausesOf('default')
    if (!pause) throw new Error('no pause under way')
    const left = pause.until - clock.now()
    clock.advance(left - 1)
    expect(on.governors.paused('default', PATH)).toBe(true)
    clock.advance(1)
    expect(on.governors.paused('default', PATH)).toBe(false)
    return left
  }

  const purge = (query = '') =>
    gw.admin.inject({ method: 'DELETE', url: `/admin/cache${query}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })

  /** A gateway that refreshes ahead on the test's clock, its settings changed by `edit`, and a GET of one of its reports. */
  async function refreshingAhead(edit: (yaml: string) => string) {
    const ahead = await gateways.build(testConfig(env(), edit(YAML.replace('refreshAhead: 0', 'refreshAhead: true'))), { clock: onRealTimers(clock.now), timers: clock.timers })
    const ask = (query = CANONICAL) => ahead.proxy.inject({ method: 'GET', url: `${PATH}?${query}`, headers: { 'x-api-key': KEYS.all } })
    return { ahead, ask }
  }

  /**
   * `call`, its one report call held at the platform until the test's clock has moved `ms` on:
   * a latency on the gateway's clock, what the refresh ahead learns, whatever the machine's speed.
   */
  async function takingOnTheClock<T>(ms: number, call: () => Promise<T>): Promise<T> {
    sandbox.setRouteFailure(PATH, { kind: 'held', times: 1 })
    const answer = call()
    await waitFor('the call held at the platform', () => sandbox.concurrency().held === 1)
    clock.advance(ms)
    sandbox.releaseHeld()
    return answer
  }

  it('answers MISS, then HIT from the one stored copy, with age and max-age on the fake clock', async () => {
    const first = await get(CANONICAL)
    expect(first.statusCode).toBe(200)
    expect(first.headers['x-cache']).toBe('MISS')
    expect(first.headers.age).toBeUndefined()
    expect(first.headers['cache-control']).toBe(`private, max-age=${FRESH_S}`)
    expect(first.headers['cache-status']).toBe(`report-gateway; fwd=uri-miss; stored; ttl=${FRESH_S}`)
    expect(reportCalls()).toBe(1)
    // The platform got the canonical query and the gateway's token, not the caller's key.
    const sent = sandbox.requests.find((r) => r.path === PATH)
    expect(sent?.query).toBe(CANONICAL)
    expect(sent?.headers.authorization).toBe(`Bearer ${platformToken}`)
    expect(sent?.headers['x-api-key']).toBeUndefined()

    clock.advance(12_500)
    const second = await get(CANONICAL)
    expect(second.statusCode).toBe(200)
    expect(second.headers['x-cache']).toBe('HIT')
    expect(second.headers.age).toBe('12')
    // max-age is the entry's whole freshness, age how much of it has passed (RFC 9111).
    expect(second.headers['cache-control']).toBe(`private, max-age=${FRESH_S}`)
    // RFC 9211: the freshness left, max-age - age.
    expect(second.headers['cache-status']).toBe(`report-gateway; hit; ttl=${FRESH_S - 12}`)
    expect(second.headers['content-type']).toBe('application/json')
    expect(reportCalls()).toBe(1)
    const platform = await direct(CANONICAL)
    expect(first.rawPayload.equals(platform)).toBe(true)
    expect(second.rawPayload.equals(platform)).toBe(true)
    if (mode === 'redis') expect(await admin?.keys('rgw:report:*')).toHaveLength(1)
  })

  it('serves five spellings of one report, for two teams on one credential, from one platform call', async () => {
    const spellings = [
      'advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-07&byDate=1',
      'byDate=true&dateTo=2026-01-07&dateFrom=2026-01-01&advertiserId=101',
      'advertiserId=0101&dateFrom=2026-01-01&dateTo=2026-01-07&byDate=1&byCampaign=0',
      'dateFrom=2026-01-01&byCampaign=false&advertiserId=00101&byDate=true&dateTo=2026-01-07',
      'byDate=1&advertiserId=101&dateTo=2026-01-07&dateFrom=2026-01-01',
    ]
    const answers = []
    for (const q of spellings) answers.push(await get(q))
    answers.push(await get(spellings[1] as string, { 'x-api-key': KEYS.growth }))
    expect(answers.map((a) => a.statusCode)).toEqual([200, 200, 200, 200, 200, 200])
    expect(answers.map((a) => a.headers['x-cache'])).toEqual(['MISS', 'HIT', 'HIT', 'HIT', 'HIT', 'HIT'])
    expect(reportCalls()).toBe(1)
    expect(sandbox.requests.filter((r) => r.path === PATH && !r.headers['x-direct']).map((r) => r.query)).toEqual([CANONICAL])
    const platform = await direct(CANONICAL)
    for (const a of answers) expect(a.rawPayload.equals(platform)).toBe(true)
  })

  it('keeps distinct queries apart (no merging of reach across reports)', async () => {
    await get(CANONICAL)
    const other = await get('advertiserId=101&byDate=1&dateFrom=2026-01-01&dateTo=2026-01-08')
    const extra = await get(`${CANONICAL}&spentBased=local`)
    expect(other.headers['x-cache']).toBe('MISS')
    expect(extra.headers['x-cache']).toBe('MISS')
    expect(reportCalls()).toBe(3)
    expect(extra.rawPayload.equals(await direct(`${CANONICAL}&spentBased=local`))).toBe(true)
  })

  it('coalesces 200 concurrent misses into one platform call', async () => {
    sandbox.setLatency(150)
    const answers = await Promise.all(Array.from({ length: 200 }, () => get(CANONICAL)))
    expect(reportCalls()).toBe(1)
    expectMissesOf(answers, await direct(CANONICAL))
    // One read made the call; the others waited for it: collapsed (RFC 9211).
    const statuses = answers.map((a) => a.headers['cache-status'])
    expect(statuses.filter((v) => v === `report-gateway; fwd=uri-miss; stored; ttl=${FRESH_S}`)).toHaveLength(1)
    expect(statuses.filter((v) => v === `report-gateway; fwd=uri-miss; collapsed; stored; ttl=${FRESH_S}`)).toHaveLength(199)
  })

  it('answers cache-control: no-cache with REFRESH, coalesced like a miss, and stores the new copy', async () => {
    await get(CANONICAL)
    // A copy younger than cache.refreshMinAge (10 s) would answer them.
    clock.advance(10_000)
    sandbox.setLatency(100)
    const refreshes = await Promise.all(Array.from({ length: 10 }, () => get(CANONICAL, { 'cache-control': 'no-cache' })))
    expect(refreshes.map((r) => r.headers['x-cache'])).toEqual(Array(10).fill('REFRESH'))
    expect(refreshes.every((r) => r.headers['cache-control'] === `private, max-age=${FRESH_S}`)).toBe(true)
    const refreshed = refreshes.map((r) => r.headers['cache-status'])
    expect(refreshed.filter((v) => v === `report-gateway; fwd=request; stored; ttl=${FRESH_S}`)).toHaveLength(1)
    expect(refreshed.filter((v) => v === `report-gateway; fwd=request; collapsed; stored; ttl=${FRESH_S}`)).toHaveLength(9)
    expect(reportCalls()).toBe(2)
    clock.advance(1_000)
    const after = await get(CANONICAL)
    expect(after.headers['x-cache']).toBe('HIT')
    // age counts from the refresh, not from the first fill
    expect(after.headers.age).toBe('1')
    expect(reportCalls()).toBe(2)
  })

  // A copy still fresh is a hit with a positive ttl (RFC 9211) whatever became of a refresh:
  // a forced refresh the platform failed is answered with it as HIT, its true age, and the
  // forward that failed named. Before, it was STALE with ttl=-1 and age max-age + 1, which
  // any cache downstream takes as stale.
  it('answers a forced refresh that fails while its copy is fresh with that copy: HIT, its age, a positive ttl', async () => {
    const first = await get(CANONICAL)
    clock.advance(20_000)
    sandbox.setRouteFailure(PATH, { kind: 'status', status: 500, times: 1 })
    const refresh = await get(CANONICAL, { 'cache-control': 'no-cache' })
    expect(refresh.statusCode).toBe(200)
    expect([refresh.headers['x-cache'], refresh.headers.age, refresh.headers['cache-status']]).toEqual(['HIT', '20', `report-gateway; fwd=request; ttl=${FRESH_S - 20}`])
    expect(refresh.rawPayload.equals(first.rawPayload)).toBe(true)
    expect(reportCalls()).toBe(2)
  })

  it('does not cache a platform 500 (502 to the caller) nor a 4xx (passed through as BYPASS)', async () => {
    sandbox.setRouteFailure(PATH, { kind: 'status', status: 500, times: 1 })
    const failed = await get(CANONICAL)
    expect(failed.statusCode).toBe(502)
    expect(failed.json()).toMatchObject({ code: 'GW_UPSTREAM' })
    const retried = await get(CANONICAL)
    expect(retried.statusCode).toBe(200)
    expect(retried.headers['x-cache']).toBe('MISS')
    expect(reportCalls()).toBe(2)

    const invalid = `${CANONICAL}&spentBased=bogus`
    const a = await get(invalid)
    const b = await get(invalid)
    expect(a.statusCode).toBe(422)
    expect(a.headers['x-cache']).toBe('BYPASS')
    expect(a.headers['cache-status']).toBe('report-gateway; fwd=uri-miss; fwd-status=422')
    // Stored by no cache downstream either, and kept by none for another key.
    expect([a.headers['cache-control'], a.headers.vary]).toEqual(['private, no-store', 'accept-encoding, authorization, prefer, x-api-key'])
    expect(b.statusCode).toBe(422)
    expect(a.json()).toEqual(b.json())
    expect(reportCalls()).toBe(4)
    if (mode === 'redis') expect(await admin?.keys('rgw:report:*')).toHaveLength(1)
  })

  it('gives a STALE copy less than a second past its freshness a negative ttl, its age rounded up to max-age + 1', async () => {
    await get(CANONICAL)
    clock.advance(FRESH_S * 1000 + 300)
    const stale = await get(CANONICAL)
    expect(stale.headers['x-cache']).toBe('STALE')
    expect(stale.headers['cache-status']).toBe('report-gateway; hit; ttl=-1')
    expect(stale.headers.age).toBe(String(FRESH_S + 1))
  })

  it('serves STALE at once within stale-while-revalidate and refreshes once in the background', async () => {
    const first = await get(CANONICAL)
    clock.advance((FRESH_S + 10) * 1000)
    sandbox.setLatency(100)
    const stale = await Promise.all(Array.from({ length: 5 }, () => get(CANONICAL)))
    for (const s of stale) {
      expect(s.statusCode).toBe(200)
      expect(s.headers['x-cache']).toBe('STALE')
      expect(s.headers.age).toBe(String(FRESH_S + 10))
      // A stale hit: served from the copy, its freshness negative (RFC 9211).
      expect(s.headers['cache-status']).toBe('report-gateway; hit; ttl=-10')
      expect(s.headers['cache-control']).toBe(`private, max-age=${FRESH_S}`)
      expect(s.rawPayload.equals(first.rawPayload)).toBe(true)
    }
    // The background refresh lands; until then callers keep getting STALE, not new calls.
    let last = stale[0]
    await waitFor('the background refresh', async () => {
      last = await get(CANONICAL)
      return last.headers['x-cache'] === 'HIT'
    })
    expect(last?.headers.age).toBe('0')
    expect(reportCalls()).toBe(2)
  })

  it('serves STALE when the platform fails (5xx, 429, connection reset, timeout) within stale-if-error, else 502/504', async () => {
    // The hang waits its call's deadline out: on a gateway of its own with HANG_TIMEOUT, its
    // copy filled beside the other's, so that every other failure (a read sent three times
    // on a 503 or a reset, each retry only if it still fits before the deadline) has the
    // file's deadline, which no call on a loaded machine comes near.
    // Its deadline is a timer on the test's clock (`wokenBy`): the last hang's comes when the
    // test moves the clock past it.
    const hanging = await gateways.build(testConfig(env(), YAML.replace(`timeout: ${TIMEOUT}`, `timeout: ${HANG_TIMEOUT}`)), { clock: wokenBy(clock) })
    // The hanging gateway fills its copy from the platform (with Redis the other reads it
    // from there): a call that took its usual time is its kind's estimate beside the hangs.
    const firstHanging = await getOn(hanging, CANONICAL)
    const first = await get(CANONICAL)
    expect([first.statusCode, firstHanging.statusCode]).toEqual([200, 200])
    const filled = reportCalls()
    clock.advance((FRESH_S + SWR_S + 5) * 1000)
    // Each failure is the report route's own: another call the gateways make meanwhile (the
    // token probe, POST /api/v1/campaign/get, late on a loaded machine) takes none of them.
    // A read is sent three times (two retries) on a 503 or a reset before it counts as failed.
    const failures = [
      { failure: { kind: 'status', status: 500, times: 1 }, on: gw, copy: first },
      { failure: { kind: 'status', status: 503, times: 3 }, on: gw, copy: first },
      { failure: { kind: 'reset', times: 3 }, on: gw, copy: first },
      { failure: { kind: 'hang', times: 1 }, on: hanging, copy: firstHanging },
      { failure: { kind: 'status', status: 429, times: 1 }, on: gw, copy: first },
    ] as const
    for (const { failure, on, copy } of failures) {
      sandbox.setRouteFailure(PATH, failure)
      const res = await getOn(on, CANONICAL)
      expect(res.statusCode, failure.kind).toBe(200)
      expect(res.headers['x-cache']).toBe('STALE')
      expect(res.headers.age).toBe(String(FRESH_S + SWR_S + 5))
      // Sent on for a copy too old to serve; the platform failed, the copy is served.
      expect(res.headers['cache-status']).toBe(`report-gateway; fwd=stale; ttl=-${SWR_S + 5}`)
      expect(res.rawPayload.equals(copy.rawPayload)).toBe(true)
    }
    expect(reportCalls()).toBe(filled + failures.reduce((n, f) => n + f.failure.times, 0))
    // The 429 paused the report's route (1 s without retry-after): the stale copy is served without a call.
    expect(gw.governors.paused('default', PATH)).toBe(true)
    // With Redis the other gateway takes the pause from the bus as 1 s from when the word comes:
    // it has it before the clock moves on, so that both pauses end where gw's does.
    if (redis) await waitFor('the pause shared with the other gateway', () => hanging.governors.paused('default', PATH))
    const paused = await get(CANONICAL)
    expect(paused.headers['x-cache']).toBe('STALE')
    expect(paused.headers['cache-status']).toBe(`report-gateway; hit; ttl=-${SWR_S + 5}`)
    expect(reportCalls()).toBe(filled + failures.reduce((n, f) => n + f.failure.times, 0))
    const pausedFor = passPause()
    // One 429 is one strike: its pause is the first step of the backoff (FIRST_PAUSE_MS).
    expect(pausedFor).toBe(1000)
    // A caller's no-cache does not lose the stale copy either.
    sandbox.setRouteFailure(PATH, { kind: 'status', status: 500, times: 1 })
    const refresh = await get(CANONICAL, { 'cache-control': 'no-cache' })
    expect(refresh.headers['x-cache']).toBe('STALE')
    expect(refresh.headers['cache-status']).toBe(`report-gateway; fwd=request; ttl=-${SWR_S + 5 + Math.floor(pausedFor / 1000)}`)

    // Past stale-if-error: the platform's failure shows.
    clock.advance(SIE_S * 1000)
    sandbox.setRouteFailure(PATH, { kind: 'status', status: 500, times: 1 })
    const gone = await get(CANONICAL)
    expect(gone.statusCode, gone.body).toBe(502)
    expect(gone.json()).toMatchObject({ code: 'GW_UPSTREAM' })
    // A pause longer than a call may wait for its seat (platform.queueTimeout, 10 s) refuses at
    // once. On the 30 s gateway: a call to be answered on the hanging one has its short deadline
    // for a round trip, which a loaded machine may take.
    sandbox.setRouteFailure(PATH, { kind: 'status', status: 429, headers: { 'retry-after': '45' }, times: 1 })
    const limited = await get(CANONICAL)
    expect(limited.statusCode, limited.body).toBe(429)
    expect(limited.headers['retry-after']).toBe('45')
    expect(limited.headers['cache-status']).toMatch(/^report-gateway; fwd=(stale|uri-miss); fwd-status=429$/)
    const calls = reportCalls()
    const overloaded = await get(CANONICAL)
    expect(overloaded.statusCode).toBe(503)
    expect(overloaded.json()).toMatchObject({ code: 'GW_OVERLOADED' })
    expect(overloaded.headers['retry-after']).toBe('45')
    expect(reportCalls()).toBe(calls)
    if (redis) await waitFor('the pause shared with the other gateway', () => hanging.governors.paused('default', PATH))
    expect(passPause()).toBe(45_000)
    // The pause over, the call is sent: the platform hangs, and its deadline shows.
    sandbox.setRouteFailure(PATH, { kind: 'hang', times: 1 })
    const hung = getOn(hanging, CANONICAL)
    await waitFor('the call hanging at the platform', () => reportCalls() === calls + 1)
    clock.advance(HANG_TIMEOUT_MS)
    const timedOut = await hung
    expect(timedOut.statusCode).toBe(504)
    expect(timedOut.json()).toMatchObject({ code: 'GW_UPSTREAM_TIMEOUT' })
    expect(reportCalls()).toBe(calls + 1)
  })

  it('sends the stored gzip bytes to gzip callers and the platform bytes to the others, on MISS and HIT', async () => {
    const platform = await direct(CANONICAL)
    const missGzip = await get(CANONICAL, { 'accept-encoding': 'gzip, deflate, br' })
    const hitGzip = await get(CANONICAL, { 'accept-encoding': 'gzip' })
    const hitIdentity = await get(CANONICAL)
    const refused = await get(CANONICAL, { 'accept-encoding': 'gzip;q=0, identity' })
    // gzip's own weight of 0 holds wherever `*` stands, its `q` in any case (RFC 9110, 12.5.3).
    const refusedPastStar = await get(CANONICAL, { 'accept-encoding': '*, gzip;q=0' })
    const refusedUpper = await get(CANONICAL, { 'accept-encoding': 'gzip;Q=0' })
    expect(missGzip.headers['x-cache']).toBe('MISS')
    expect(missGzip.headers['content-encoding']).toBe('gzip')
    expect(hitGzip.headers['content-encoding']).toBe('gzip')
    expect(hitGzip.headers.vary).toBe('accept-encoding, authorization, prefer, x-api-key')
    expect(Number(hitGzip.headers['content-length'])).toBe(hitGzip.rawPayload.length)
    // one stored copy: identical compressed bytes every time
    expect(hitGzip.rawPayload.equals(missGzip.rawPayload)).toBe(true)
    expect(gunzipSync(hitGzip.rawPayload).equals(platform)).toBe(true)
    for (const plain of [hitIdentity, refused, refusedPastStar, refusedUpper]) {
      expect(plain.headers['x-cache']).toBe('HIT')
      expect(plain.headers['content-encoding']).toBeUndefined()
      expect(plain.rawPayload.equals(platform)).toBe(true)
    }
    expect(reportCalls()).toBe(1)
  })

  it('purges everything, or one advertiser only, on DELETE /admin/cache', async () => {
    const q102 = CANONICAL.replace('advertiserId=101', 'advertiserId=102')
    await get(CANONICAL)
    await get(`${CANONICAL}&byCampaign=1`)
    await get(q102)
    expect(reportCalls()).toBe(3)

    const unauthorized = await gw.admin.inject({ method: 'DELETE', url: '/admin/cache' })
    expect(unauthorized.statusCode).toBe(401)
    expect((await get(CANONICAL)).headers['x-cache']).toBe('HIT')

    const one = await purge('?advertiserId=101')
    expect(one.statusCode).toBe(200)
    expect(one.json()).toEqual({ purged: 'advertiser', advertiserId: 101, dryRun: false, dropped: 2 })
    expect((await get(q102)).headers['x-cache']).toBe('HIT')
    expect((await get(CANONICAL)).headers['x-cache']).toBe('MISS')
    expect((await get(`${CANONICAL}&byCampaign=1`)).headers['x-cache']).toBe('MISS')
    expect(reportCalls()).toBe(5)
    if (mode === 'redis') expect(await admin?.zrange('rgw:adv-entries:101', 0, -1)).toHaveLength(2)

    const all = await purge()
    expect(all.statusCode).toBe(200)
    expect(all.json()).toMatchObject({ purged: 'all', dropped: 3 })
    for (const q of [CANONICAL, q102]) expect((await get(q)).headers['x-cache']).toBe('MISS')
    expect(reportCalls()).toBe(7)
    expect((await purge('?advertiserId=abc')).statusCode).toBe(400)
  })

  it('answers If-None-Match naming the entry with 304 and no body, on HIT, STALE and a fresh fill (MISS) alike', async () => {
    const first = await get(CANONICAL)
    const tag = first.headers.etag as string
    expect(tag).toMatch(/^"[\w-]+"$/)
    const zipped = await get(CANONICAL, { 'accept-encoding': 'gzip' })
    const zipTag = zipped.headers.etag as string
    // Each representation its own strong validator.
    expect(zipTag).not.toBe(tag)

    clock.advance(5_000)
    for (const [inm, accept] of [[tag, 'identity'], [zipTag, 'gzip'], [`"other", W/${zipTag}`, 'identity'], ['*', 'gzip']] as const) {
      const hit = await get(CANONICAL, { 'if-none-match': inm, 'accept-encoding': accept })
      expect(hit.statusCode).toBe(304)
      expect(hit.rawPayload.length).toBe(0)
      expect(hit.headers).toMatchObject({ 'x-cache': 'HIT', 'cache-status': `report-gateway; hit; ttl=${FRESH_S - 5}`, etag: accept === 'gzip' ? zipTag : tag, age: '5', 'cache-control': `private, max-age=${FRESH_S}` })
      expect(hit.headers['content-encoding']).toBeUndefined()
    }
    const changed = await get(CANONICAL, { 'if-none-match': '"not-this-one"' })
    expect(changed.statusCode).toBe(200)
    expect(changed.rawPayload.equals(first.rawPayload)).toBe(true)

    clock.advance(FRESH_S * 1000)
    const stale = await get(CANONICAL, { 'if-none-match': tag })
    expect(stale.statusCode).toBe(304)
    expect(stale.headers['x-cache']).toBe('STALE')
    await waitFor('the background refresh', async () => (await get(CANONICAL)).headers['x-cache'] === 'HIT')
    // The refresh's copy is served before its fill has let go of its lock: a read that
    // came before then, on the clock moved past that copy's life, would join the fill
    // that made it (fresh in real time) rather than make a call of its own.
    if (admin) await waitFor('the refresh to release its fill lock', async () => (await admin.keys('rgw:lock:*')).length === 0)

    // The platform's body is the same after the copy expired: the new fill is 304 too.
    clock.advance((FRESH_S + SIE_S + 1) * 1000)
    const refilled = await get(CANONICAL, { 'if-none-match': tag })
    expect(refilled.statusCode).toBe(304)
    expect(refilled.headers['x-cache']).toBe('MISS')
    expect(refilled.headers.etag).toBe(tag)
    expect(reportCalls()).toBe(3)
  })

  it('refreshes a report asked often enough for the budget just before it expires, not at a fixed fraction: a HIT no older than its TTL while popular; an unpopular copy expires', async () => {
    const ahead = await gateways.build(testConfig(env(), YAML.replace('refreshAhead: 0', 'refreshAhead: true')), { clock: onRealTimers(clock.now), timers: clock.timers })
    const ask = () => ahead.proxy.inject({ method: 'GET', url: `${PATH}?${CANONICAL}`, headers: { 'x-api-key': KEYS.all } })
    const refreshes = async (outcome: string) => {
      const text = (await ahead.admin.inject({ method: 'GET', url: '/metrics' })).body
      return Number(text.match(new RegExp(`gateway_cache_refresh_ahead_total\\{outcome="${outcome}"\\} (\\d+)`))?.[1] ?? 0)
    }
    expect((await ask()).headers['x-cache']).toBe('MISS')
    let fetched = clock.now()
    const advanceTo = (ms: number) => clock.advance(fetched + ms - clock.now())
    for (let round = 1; round <= 3; round++) {
      // The copy's POPULAR-th ask (the first copy's miss, or the new copy's hit at 15 s, then the rest).
      advanceTo(25_000)
      await askPopular(ask, (ms) => clock.advance(ms), 'HIT')
      // At 80 % of its freshness nothing has started: the platform answers in milliseconds.
      advanceTo(48_000)
      expect(await refreshes('started')).toBe(round - 1)
      // Its class's latency (and the margin) before it expires, the refresh runs with no request to start it.
      advanceTo(FRESH_S * 1000 - 1)
      await waitFor(`refresh ahead ${round}`, async () => (await refreshes('completed')) === round)
      expect(reportCalls()).toBe(round + 1)
      fetched = clock.now()
      // After the old copy's freshness: the new one, fetched just before the old expired.
      advanceTo(15_000)
      const hit = await ask()
      expect(hit.headers['x-cache']).toBe('HIT')
      expect(hit.headers.age).toBe('15')
      expect(clock.now() - fetched).toBeLessThan(FRESH_S * 1000)
    }
    expect(await refreshes('started')).toBe(3)
    expect(await refreshes('failed')).toBe(0)
    // Asked once in its freshness: left to expire.
    clock.advance(FRESH_S * 1000)
    expect((await ask()).headers['x-cache']).toBe('STALE')
    expect(await refreshes('started')).toBe(3)
  })

  it("weighs a team's refreshes against its own calls: another team's one-off misses do not widen its budget", async () => {
    const ahead = await gateways.build(testConfig(env(), YAML.replace('refreshAhead: 0', 'refreshAhead: true')), { clock: onRealTimers(clock.now), timers: clock.timers })
    const ask = (key: string, query = CANONICAL) => ahead.proxy.inject({ method: 'GET', url: `${PATH}?${query}`, headers: { 'x-api-key': key } })
    const started = async () => Number((await ahead.admin.inject({ method: 'GET', url: '/metrics' })).body.match(/gateway_cache_refresh_ahead_total\{outcome="started"\} (\d+)/)?.[1] ?? 0)
    // Team growth: 40 reports, each asked once (a burst of misses).
    for (let day = 1; day <= 40; day++) expect((await ask(KEYS.growth, `advertiserId=102&byDate=1&dateFrom=2025-01-01&dateTo=${new Date(Date.UTC(2025, 0, 1 + day)).toISOString().slice(0, 10)}`)).statusCode).toBe(200)
    // Team all: one report asked 8 times in its freshness, K and more, but too few for its
    // refreshes to fit a tenth of its own calls (a lone report needs about 11).
    await ask(KEYS.all)
    clock.advance(10_000)
    for (let i = 2; i <= 8; i++) {
      if (i === 8) clock.advance(BUDGET_EVERY_MS)
      expect((await ask(KEYS.all)).headers['x-cache']).toBe('HIT')
    }
    // Past the point its refresh would have started: none did.
    clock.advance(FRESH_S * 1000 - 10_000 - BUDGET_EVERY_MS - 1)
    expect(await started()).toBe(0)
    expect((await ask(KEYS.all)).headers['x-cache']).toBe('HIT')
    expect(await started()).toBe(0)
  })

  it('queues a refresh ahead behind a caller\'s call for the only seat, and runs it as soon as the seat frees', async () => {
    // The caller's call below stays at the platform for as long as the test takes to see the
    // refresh wait (a busy machine may take seconds): its deadline is not what is tested.
    const { ahead, ask } = await refreshingAhead((yaml) => yaml.replace(`  timeout: ${TIMEOUT}`, '  timeout: 30s\n  maxConcurrent: 1'))
    const refreshes = async (outcome: string) => {
      const text = (await ahead.admin.inject({ method: 'GET', url: '/metrics' })).body
      return Number(text.match(new RegExp(`gateway_cache_refresh_ahead_total\\{outcome="${outcome}"\\} (\\d+)`))?.[1] ?? 0)
    }
    await ask()
    clock.advance(10_000)
    await askPopular(ask, (ms) => clock.advance(ms), 'HIT')
    // A caller's miss holds the credential's only seat when the refresh falls due: the
    // platform keeps it until the refresh is seen waiting (the refresh's own call is answered at once).
    sandbox.setRouteFailure(PATH, { kind: 'held', times: 1 })
    const governor = seatsOf(ahead)
    const busy = ask('advertiserId=102&byDate=1&dateFrom=2026-01-01&dateTo=2026-01-07')
    await waitFor('the caller\'s call at the platform', () => governor.inFlight === 1 && sandbox.concurrency().inFlight === 1)
    // Just before the copy expires: the refresh falls due.
    clock.advance(FRESH_S * 1000 - 10_001 - BUDGET_EVERY_MS)
    try {
      await waitFor('the refresh to wait for the seat', () => governor.queued === 1)
    } finally {
      sandbox.releaseHeld()
    }
    expect((await busy).statusCode).toBe(200)
    await waitFor('the refresh ahead', async () => (await refreshes('completed')) === 1)
    // The first fill, the caller's miss, then the refresh: nothing skipped.
    expect(reportCalls()).toBe(3)
    expect(await refreshes('skipped')).toBe(0)
  })

  it('starts the refresh ahead of a slower class earlier: the latency of its calls before expiry', async () => {
    // A budget no wait of a busy machine for the call's turn uses up: the call's budget, real
    // time, runs from the refresh's start, and a call its kind's time does not fit is not sent.
    const { ahead, ask } = await refreshingAhead((yaml) => yaml.replace(`  timeout: ${TIMEOUT}`, '  timeout: 5s'))
    const started = async () => (await ahead.admin.inject({ method: 'GET', url: '/metrics' })).body.includes('gateway_cache_refresh_ahead_total{outcome="started"} 1')
    // The class's one answer took 300 ms: a lead of about 600 ms (the least at which a call in 15
    // may outlast it, under its bound 300 + 4 × 150 + 20 ms), far under the lead of a class not
    // answered yet (a fifth of the freshness, 12 s).
    expect((await takingOnTheClock(300, ask)).headers['x-cache']).toBe('MISS')
    const fetched = clock.now()
    clock.advance(10_000)
    await askPopular(ask, (ms) => clock.advance(ms))
    clock.advance(fetched + FRESH_S * 1000 - 5000 - clock.now())
    expect(await started()).toBe(false)
    // 500 ms before expiry: within that lead.
    clock.advance(4500)
    await waitFor('the refresh ahead', started)
    await waitFor('its platform call', () => reportCalls() === 2)
  })

  it("learns its class's latency on the gateway's clock, the one its copies' freshness is on: a call a busy machine takes a second over while the clock stands still leads its refresh ahead by the margin only", async () => {
    const { ahead, ask } = await refreshingAhead((yaml) => yaml.replace(`  timeout: ${TIMEOUT}`, '  timeout: 5s'))
    const started = async () => (await ahead.admin.inject({ method: 'GET', url: '/metrics' })).body.includes('gateway_cache_refresh_ahead_total{outcome="started"} 1')
    // The platform answers after a second of the machine's time and none of the gateway's clock.
    sandbox.setLatency(1000)
    expect((await ask()).headers['x-cache']).toBe('MISS')
    sandbox.setLatency(0)
    const fetched = clock.now()
    clock.advance(10_000)
    await askPopular(ask, (ms) => clock.advance(ms), 'HIT')
    // A latency learned on the machine's time (a second) would price its refreshes over the budget: none would start.
    clock.advance(fetched + FRESH_S * 1000 - 500 - clock.now())
    expect(await started()).toBe(false)
    // The class's calls took 0 ms on the clock: the refresh starts the margin before expiry.
    clock.advance(499)
    await waitFor('the refresh ahead', started)
    await waitFor('its platform call', () => reportCalls() === 2)
  })

  it("moves a scheduled refresh ahead earlier when its class has learned a longer latency since: a burst's seat waits, learned after its timer was set", async () => {
    const { ahead, ask } = await refreshingAhead((yaml) => yaml.replace(`  timeout: ${TIMEOUT}`, '  timeout: 5s'))
    const started = async () => (await ahead.admin.inject({ method: 'GET', url: '/metrics' })).body.includes('gateway_cache_refresh_ahead_total{outcome="started"} 1')
    // Popular on a platform answering at once: its refresh is set the margin before expiry.
    expect((await ask()).headers['x-cache']).toBe('MISS')
    const fetched = clock.now()
    clock.advance(10_000)
    await askPopular(ask, (ms) => clock.advance(ms), 'HIT')
    // Another report of the same class then takes 600 ms (the wait for a seat included): the class
    // (mean 75 ms, deviation 150 ms) has its bound over 600 ms, and the lead of a report asked 15
    // times a freshness, the least at which a call in 15 may outlast it, about 240 ms.
    expect((await takingOnTheClock(600, () => ask('advertiserId=102&byDate=1&dateFrom=2026-01-01&dateTo=2026-01-07'))).headers['x-cache']).toBe('MISS')
    // The next ask of the popular copy reads the class's lead again: its refresh moves earlier.
    expect((await ask()).headers['x-cache']).toBe('HIT')
    clock.advance(fetched + FRESH_S * 1000 - 200 - clock.now())
    await waitFor('the refresh ahead, 200 ms before expiry', started)
    await waitFor('its platform call', () => reportCalls() === 3)
  })

  it("leads a class's refreshes ahead by their own latency once one was answered, not by its callers' faster calls: a refresh waits for a seat behind them", async () => {
    const { ahead, ask } = await refreshingAhead((yaml) => yaml.replace(`  timeout: ${TIMEOUT}`, '  timeout: 5s'))
    const started = async (n: number) => (await ahead.admin.inject({ method: 'GET', url: '/metrics' })).body.includes(`gateway_cache_refresh_ahead_total{outcome="started"} ${n}`)
    expect((await ask()).headers['x-cache']).toBe('MISS')
    clock.advance(10_000)
    await askPopular(ask, (ms) => clock.advance(ms), 'HIT')
    // The first refresh ahead takes 1 s (its wait for a seat included): the refreshes' lead is bound by 1000 + 4 × 500 + 20 ms.
    sandbox.setRouteFailure(PATH, { kind: 'held', times: 1 })
    clock.advance(FRESH_S * 1000 - 10_000 - BUDGET_EVERY_MS - 1)
    await waitFor('the first refresh ahead', () => started(1))
    await waitFor('its call held at the platform', () => sandbox.concurrency().held === 1)
    clock.advance(1000)
    sandbox.releaseHeld()
    await waitFor('its platform call', () => reportCalls() === 2)
    await waitFor('its copy', async () => (await ask()).headers.age === '0')
    // Then the class's callers' calls answer at once: the class's lead over all its calls falls under 200 ms.
    // Each report asked again (its copy's own ask): reports the budget weighs, within which a 3 s lead fits.
    for (let week = 1; week <= 30; week++) {
      const day = (n: number) => new Date(Date.UTC(2025, 0, 7 * week + n)).toISOString().slice(0, 10)
      const query = `advertiserId=101&byDate=1&dateFrom=${day(0)}&dateTo=${day(6)}`
      expect((await ask(query)).headers['x-cache']).toBe('MISS')
      expect((await ask(query)).headers['x-cache']).toBe('HIT')
    }
    // A report of another class asked the floor's K times: the budget's threshold, under the popular report's rate at its start.
    const quarter = 'advertiserId=101&byDate=1&dateFrom=2025-01-01&dateTo=2025-03-31'
    for (const status of ['MISS', 'HIT', 'HIT']) expect((await ask(quarter)).headers['x-cache']).toBe(status)
    clock.advance(10_000)
    await askPopular(ask, (ms) => clock.advance(ms), 'HIT')
    // 1 s before the new copy expires, its refresh has started: the refreshes' lead (about 2 s at 14 asks a freshness), not the callers'.
    clock.advance(FRESH_S * 1000 - 10_000 - BUDGET_EVERY_MS - 1000)
    await waitFor('the second refresh ahead, 1 s before expiry', () => started(2))
  })

  it('starts the refresh ahead at once on the ask that makes it popular enough when it is due', async () => {
    const ahead = await gateways.build(testConfig(env(), YAML.replace('refreshAhead: 0', 'refreshAhead: true')), { clock: onRealTimers(clock.now), timers: clock.timers })
    const ask = () => ahead.proxy.inject({ method: 'GET', url: `${PATH}?${CANONICAL}`, headers: { 'x-api-key': KEYS.all } })
    await ask()
    // 10 ms before expiry, within the lead (at least LEAD_MARGIN_MS) of its class.
    clock.advance(FRESH_S * 1000 - 10 - BUDGET_EVERY_MS)
    await askPopular(ask, (ms) => clock.advance(ms), 'HIT')
    await waitFor('the refresh ahead', async () => (await ahead.admin.inject({ method: 'GET', url: '/metrics' })).body.includes('gateway_cache_refresh_ahead_total{outcome="completed"} 1'))
    expect(reportCalls()).toBe(2)
    clock.advance(25_000)
    const hit = await ask()
    expect(hit.headers['x-cache']).toBe('HIT')
    expect(hit.headers.age).toBe('25')
  })

  it('counts hits, misses and stale serves by tier for /metrics', async () => {
    await get(CANONICAL)
    await get(CANONICAL)
    await get(CANONICAL)
    clock.advance((FRESH_S + 1) * 1000)
    await get(CANONICAL)
    await waitFor('the background refresh', () => reportCalls() === 2)
    const metrics = await gw.admin.inject({ method: 'GET', url: '/metrics' })
    expect(metrics.statusCode).toBe(200)
    const text = metrics.body
    expect(text).toContain('gateway_cache_requests_total{result="MISS",tier="platform"} 1')
    expect(text).toContain('gateway_cache_requests_total{result="HIT",tier="l1"} 2')
    expect(text).toContain('gateway_cache_requests_total{result="STALE",tier="l1"} 1')
    expect(text).not.toContain('tier="l2"')
  })
}

describe('report cache, memory only', () => defineSuite('memory'))

describe.skipIf(!available)('report cache, with Redis as L2', () => defineSuite('redis'))

describe('report cache size guard', () => {
  const BIG = 'advertiserId=101&byCampaign=1&byDate=1&dateFrom=2025-01-01&dateTo=2025-12-31'
  const gw = useGateway(() => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: platformToken }, `${TEAMS_YAML}\ncache:\n  maxEntryBytes: 4KiB\n`))

  it('streams a report larger than cache.maxEntryBytes through as BYPASS, uncached, gzip or not', async () => {
    sandbox.clearRequests()
    const platform = await direct(BIG)
    expect(platform.length).toBeGreaterThan(4096)
    const headers = { 'x-api-key': KEYS.all }
    const plain = await gw.proxy.inject({ method: 'GET', url: `${PATH}?${BIG}`, headers })
    const again = await gw.proxy.inject({ method: 'GET', url: `${PATH}?${BIG}`, headers: { ...headers, 'accept-encoding': 'gzip' } })
    expect(plain.statusCode).toBe(200)
    expect(plain.headers['x-cache']).toBe('BYPASS')
    expect(again.headers['x-cache']).toBe('BYPASS')
    // One team's report that no cache of the gateway's keeps: no shared cache in front may keep it for another key.
    for (const res of [plain, again]) expect([res.headers['cache-control'], res.headers.vary]).toEqual(['private, no-store', 'accept-encoding, authorization, prefer, x-api-key'])
    // Held whole before it is sent, as every answer: its length is said.
    expect(plain.headers['content-length']).toBe(String(platform.length))
    expect(plain.rawPayload.equals(platform)).toBe(true)
    const againBody = again.headers['content-encoding'] === 'gzip' ? gunzipSync(again.rawPayload) : again.rawPayload
    expect(againBody.equals(platform)).toBe(true)
    // two gateway calls, two platform calls
    expect(reportCalls()).toBe(2)
  })
})

// What the sandbox never does: a platform that compresses, and one that says no-store.
describe('report cache against a platform that gzips or forbids storing', () => {
  const JSON_BODY = Buffer.from(JSON.stringify({ data: [{ date: '2026-01-01', impressions: 7, reach: 5, currency: 'USD' }] }))
  // Compressed at another level than the gateway's: the bytes show whose gzip was sent.
  const PLATFORM_GZIP = gzipSync(JSON_BODY, { level: 1 })
  let stub: Server
  let calls: { query: string; acceptEncoding: string | undefined }[]
  let url: string

  beforeAll(async () => {
    calls = []
    stub = createServer((req, res) => {
      const query = (req.url ?? '').split('?')[1] ?? ''
      calls.push({ query, acceptEncoding: req.headers['accept-encoding'] })
      if (query.includes('advertiserId=101')) {
        res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'private, no-store' }).end(JSON_BODY)
      } else {
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'cache-control': 'no-cache, private' }).end(PLATFORM_GZIP)
      }
    })
    await new Promise<void>((resolve) => stub.listen(0, '127.0.0.1', resolve))
    url = `http://127.0.0.1:${(stub.address() as AddressInfo).port}`
  })

  afterAll(async () => {
    await new Promise((resolve) => stub.close(resolve))
  })

  const gw = useGateway(() => testConfig({ PLATFORM_BASE_URL: url, PLATFORM_TOKEN: 'stub-platform-token-0000000000' }, YAML))

  const get = (query: string, headers: Record<string, string> = {}) =>
    gw.proxy.inject({ method: 'GET', url: `${PATH}?${query}`, headers: { 'x-api-key': KEYS.all, ...headers } })

  it('does not store a 200 the platform marked no-store', async () => {
    const before = calls.length
    const first = await get(CANONICAL)
    const second = await get(CANONICAL)
    expect(first.statusCode).toBe(200)
    expect([first.headers['x-cache'], second.headers['x-cache']]).toEqual(['BYPASS', 'BYPASS'])
    expect(first.rawPayload.equals(JSON_BODY)).toBe(true)
    expect(calls.length - before).toBe(2)
  })

  it("stores the platform's own gzip bytes and sends them unchanged to gzip callers, decompressed to others", async () => {
    const q = CANONICAL.replace('advertiserId=101', 'advertiserId=102')
    const before = calls.length
    const miss = await get(q, { 'accept-encoding': 'gzip' })
    const hit = await get(q, { 'accept-encoding': 'gzip' })
    const plain = await get(q)
    expect([miss.headers['x-cache'], hit.headers['x-cache'], plain.headers['x-cache']]).toEqual(['MISS', 'HIT', 'HIT'])
    expect(calls.length - before).toBe(1)
    expect(calls.at(-1)?.acceptEncoding).toBe('gzip')
    for (const gz of [miss, hit]) {
      expect(gz.headers['content-encoding']).toBe('gzip')
      expect(gz.rawPayload.equals(PLATFORM_GZIP)).toBe(true)
    }
    expect(plain.headers['content-encoding']).toBeUndefined()
    expect(plain.rawPayload.equals(JSON_BODY)).toBe(true)
  })
})
