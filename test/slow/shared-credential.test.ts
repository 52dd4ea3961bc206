import { request } from 'undici'
import { describe, expect, it } from 'vitest'
import { KEYS, listen, TEAMS_YAML, testConfig } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'
import { stalledCampaignCall } from '../helpers/gateway-calls.js'
import { governorView, seatsOf } from '../helpers/governors.js'
import { canonicalGetReport } from '../../src/reports/report-query.js'
import { workClass } from '../../src/reports/work-class.js'

// Teams share one platform credential. Each attack is one team acting as an ordinary
// read-only key may (year-long reports, answers left unread, reports the platform fails
// or throttles, stale reports in bulk, a light load); the assertion is about the other
// team's answers, or about whom the gateway's reaction is charged to. A platform with a
// pool of workers (the sandbox's capacity): a report holds its worker for its range.

const sandbox = useSandbox()
const gateways = useGateways()
const redis = useRedis()

const CAMPAIGNS = '/api/v1/report/campaigns/get'
const CREATIVES = '/api/v1/report/creatives/get'
const PLACEMENTS = '/api/v1/report/adPlacementPositions/get'

/** The n-th distinct report over `days` days, of advertiser 101, on `path`. */
function report(n: number, days: number, path = CAMPAIGNS): string {
  const day = (offset: number) => new Date(Date.UTC(2020, 0, 1 + offset)).toISOString().slice(0, 10)
  return `${path}?advertiserId=101&byDate=1&dateFrom=${day(n)}&dateTo=${day(n + days - 1)}`
}

async function gateway(yaml: string, env: Record<string, string> = {}, teams = TEAMS_YAML) {
  const gw = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ...env }, `${teams}\n${yaml}`))
  return listen(gw)
}

type Gateway = Awaited<ReturnType<typeof gateway>>

async function get(gw: Gateway, path: string, key: string, signal?: AbortSignal): Promise<{ status: number; cache: string | undefined }> {
  const res = await request(`${gw.url}${path}`, { headers: { 'x-api-key': key }, ...(signal ? { signal } : {}) })
  await res.body.dump()
  return { status: res.statusCode, cache: res.headers['x-cache'] as string | undefined }
}

/** A counter's value on /metrics of `gw` (0 when it is not there). */
async function metric(gw: Gateway, series: string): Promise<number> {
  const text = (await gw.admin.inject({ method: 'GET', url: '/metrics' })).body
  const line = text.split('\n').find((l) => l.startsWith(`${series} `))
  return line === undefined ? 0 : Number(line.slice(series.length + 1))
}

/**
 * `callers` callers of `key` asking distinct reports one after another until `stop()`; the
 * answers they got (0: none). `stop(true)` hangs up on the calls under way rather than wait
 * for their answers.
 */
function callers(gw: Gateway, key: string, count: number, next: (i: number) => string) {
  let stopped = false
  let n = 0
  const statuses: number[] = []
  const hangUp = new AbortController()
  const loops = Array.from({ length: count }, async () => {
    while (!stopped) statuses.push(await get(gw, next(n++), key, hangUp.signal).then((a) => a.status, () => 0))
  })
  return {
    statuses,
    stop: async (abandon = false) => {
      stopped = true
      if (abandon) hangUp.abort()
      await Promise.all(loops)
    },
  }
}

describe('one team\'s reports cannot steer the platform for the others', () => {
  it('a team of year-long reports keeps to its share of the seats once another team waits: the other holds its own', async () => {
    sandbox.setCapacity({ workers: 8, perDayMs: 2 })
    // The week-long team's calls stay at the platform until the test lets them go (below):
    // its seats end only when its callers are all back, 4 of them waiting.
    sandbox.setRouteFailure(CREATIVES, { kind: 'held' })
    // No token probe at start: its team would be owed a seat for its linger, which long calls do not borrow.
    const gw = await gateway('platform: { adaptive: false, maxConcurrent: 8, probe: null }')
    const governor = seatsOf(gw)
    const growthWaiting = () => governor.waiting().get('growth') ?? 0
    // Team `all`: 32 callers of year-long reports (about 0.7 s each), every seat taken.
    const years = callers(gw, KEYS.all, 32, (i) => report(i * 400, 365))
    const weeks = { stop: async () => undefined, statuses: [] as number[] }
    try {
      await waitFor('the year-long reports holding every seat', () => governor.running('all') === 8)
      // Team `growth`: 8 callers of week-long reports, more than its share: some always wait.
      Object.assign(weeks, callers(gw, KEYS.growth, 8, (i) => report(i * 10, 7, CREATIVES)))
      // As the year-long calls end, their seats go to the week-long team, up to its share (4).
      const held: number[] = []
      const sample = () => {
        if (growthWaiting() > 0) held.push(governor.running('growth'))
      }
      await waitFor('the week-long team holding its share, the rest of it waiting', () => governor.running('growth') === 4 && growthWaiting() === 4)
      // Then it keeps them: whenever it has a call waiting, it holds its share. Its calls end
      // in rounds, each once its 8 callers are back (4 at the platform, 4 waiting): a team's
      // seats are owed to it while it waits for nothing only within the linger (5 s) of the
      // most it held and waited for at once (team-accounts.ts, `peakNow`), and callers on a
      // loaded core's thread, left to come back at their own pace, were not all back at once
      // within it: the seats they left went to year-long calls, and the team waited for them.
      for (let round = 0; round < 5; round++) {
        sandbox.releaseHeld()
        await waitFor(`round ${round + 1}: 4 of the week-long calls at the platform, 4 waiting`, () => {
          sample()
          return sandbox.concurrency().held === 4 && growthWaiting() === 4
        }, testTimeLeft(), 5)
        sample()
      }
      expect(held.length).toBeGreaterThanOrEqual(5)
      expect(Math.min(...held)).toBeGreaterThanOrEqual(4)
    } finally {
      sandbox.setRouteFailure(CREATIVES, { kind: 'none' })
      sandbox.releaseHeld()
      // The year-long calls waiting for seats are not waited out (24 of 0.7 s or more on 8 seats).
      await Promise.all([years.stop(true), weeks.stop()])
    }
    expect(weeks.statuses.every((s) => s === 200)).toBe(true)
  }, 30_000)

  it('a team whose callers stop reading holds no seat another team waits for: the seats went back with the answers\' headers', async () => {
    // readIdleTimeout far beyond the queue's timeout: only the seats' end at the headers can serve the other team in time.
    // No token probe at start: it calls the same route, and its team would be owed a seat for its linger.
    const gw = await gateway('platform: { adaptive: false, maxConcurrent: 4, readIdleTimeout: 60s, queueTimeout: 30s, timeout: 60s, probe: null }')
    sandbox.setRouteFailure('/api/v1/campaign/get', { kind: 'large', bytes: 24_000_000, times: 4 })
    const sockets = Array.from({ length: 4 }, () => stalledCampaignCall(gw.port, KEYS.all))
    try {
      await waitFor('4 unread answers at the gateway, their seats free', () => sandbox.countRequests((r) => r.path === '/api/v1/campaign/get') === 4 && seatsOf(gw).inFlight === 0)
      // Another team's miss: answered (not refused at queueTimeout, 30 s), none of the unread answers cut off for it.
      const answer = await get(gw, report(1, 7), KEYS.growth)
      expect(answer).toMatchObject({ status: 200, cache: 'MISS' })
      expect(gw.logs.records().some((r) => typeof r.msg === 'string' && r.msg.startsWith('caller stopped reading'))).toBe(false)
    } finally {
      for (const socket of sockets) socket.destroy()
    }
  }, 45_000)

  it('a team whose reports the platform fails (500 after the work, on two routes) does not cut the limit: its failing reports are answers, not overload', async () => {
    sandbox.setCapacity({ workers: 16, perDayMs: 1 })
    const gw = await gateway('platform: { initialConcurrent: 16, minConcurrent: 2 }')
    for (const path of [CREATIVES, PLACEMENTS]) sandbox.setRouteFailure(path, { kind: 'status', status: 500 })
    // 28 callers for 16 seats: calls wait at the limit, so the start doubles it and meets
    // the platform's queue. Faults are judged in every phase: whether the start has ended
    // by the 200th failing answer does not matter (on a busy machine the answers are not
    // timed, docs/governor.md "The gateway's own time", and the start goes on).
    const failing = callers(gw, KEYS.all, 24, (i) => report(i * 40, 30, i % 2 ? CREATIVES : PLACEMENTS))
    const fine = callers(gw, KEYS.growth, 4, (i) => report(i * 10, 7))
    try {
      await waitFor('200 failing reports answered', () => failing.statuses.filter((s) => s === 502).length >= 200)
    } finally {
      await Promise.all([failing.stop(), fine.stop()])
    }
    // The credential's limit was not cut for one team's failures.
    expect(governorView(gw).phase).not.toBe('fault')
    expect(await metric(gw, 'gateway_platform_concurrency_limit_changes_total{credential="default",direction="cut"}')).toBe(0)
    expect(fine.statuses.length).toBeGreaterThan(0)
    expect(fine.statuses.every((s) => s === 200)).toBe(true)
  }, 75_000)

  it('calls cut by their deadlines after waiting for a seat do not cut the limit: a deadline passed sooner than twice the expected time says nothing of load', async () => {
    sandbox.setLatency(300)
    const gw = await gateway('platform: { initialConcurrent: 2, minConcurrent: 1, maxConcurrent: 2, timeout: 1s }')
    // The kind's pace first (300 ms): two callers, who never wait. The pace is the kind's
    // expected seat-time, learned from every answer (work-estimates.ts); not the limit
    // rule's floor, which only answers the gateway timed give: on a busy core it times none
    // (docs/governor.md, "The gateway's own time"), and the floor stays null.
    const two = callers(gw, KEYS.all, 2, (i) => report(i * 10, 7))
    const [path, query] = report(0, 7).split('?') as [string, string]
    const kind = workClass(canonicalGetReport(path, query, { maxRangeDays: gw.config.cache.maxRangeDays }))
    try {
      await waitFor('the pace measured', () => gw.governors.ownExpectedMs('default', 'all', kind) !== null)
    } finally {
      await two.stop()
    }
    // Eight callers for two seats: a call waits most of its 1 s and is cut at the platform
    // after the little that is left, or is not sent at all, far short of its kind's time.
    const eight = callers(gw, KEYS.all, 8, (i) => report(1000 + i * 10, 7))
    try {
      await waitFor('20 calls past their deadlines', () => eight.statuses.filter((s) => s === 504).length >= 20, testTimeLeft(), 20)
    } finally {
      await eight.stop()
    }
    expect(await metric(gw, 'gateway_platform_concurrency_limit_changes_total{credential="default",direction="cut"}')).toBe(0)
    expect(seatsOf(gw).limit).toBe(2)
  }, 45_000)

  it('a team throttled on two routes is paused itself: another team on a third route is served, the credential is not paused', async () => {
    const gw = await gateway('')
    for (const path of [CREATIVES, PLACEMENTS]) sandbox.setRouteFailure(path, { kind: 'status', status: 429, headers: { 'retry-after': '30' } })
    expect((await get(gw, report(1, 7, CREATIVES), KEYS.all)).status).toBe(429)
    expect((await get(gw, report(1, 7, PLACEMENTS), KEYS.all)).status).toBe(429)
    const pauses = gw.governors.pausesOf('default')
    expect(pauses.map((p) => p.scope)).toContainEqual({ kind: 'team', team: 'all' })
    expect(seatsOf(gw).pausedUntil).toBe(0)
    // The paused team is refused on any route; the other team is not, on a route of its own.
    expect((await get(gw, report(2, 7), KEYS.all)).status).toBe(503)
    expect(await get(gw, report(3, 7), KEYS.growth)).toMatchObject({ status: 200, cache: 'MISS' })
  })

  it('a team capped at 2 keeps to 2 calls with its stale-while-revalidate refreshes too', async () => {
    const capped = TEAMS_YAML.replace('advertisers: [101, 102]', 'advertisers: [101, 102]\n    maxConcurrent: 2')
    const gw = await gateway('cache: { ttl: { recent: 1s, settled: 1s }, staleWhileRevalidate: 1h }\nplatform: { adaptive: false, maxConcurrent: 16 }', {}, capped)
    for (let i = 0; i < 20; i++) expect((await get(gw, report(i * 10, 7), KEYS.growth)).status).toBe(200)
    await new Promise((resolve) => setTimeout(resolve, 1100))
    sandbox.setLatency(200)
    sandbox.resetConcurrency()
    // 20 stale copies asked at once: each answered STALE at once, each refreshed in the background.
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => get(gw, report(i * 10, 7), KEYS.growth)))
    expect(answers.every((a) => a.status === 200 && a.cache === 'STALE')).toBe(true)
    await waitFor('the refreshes done', () => sandbox.countRequests((r) => r.path === CAMPAIGNS) >= 40)
    expect(sandbox.concurrency().peak).toBeLessThanOrEqual(2)
  }, 30_000)

  it('a light load across replicas does not grow the limit: calls that waited for Redis, not for a seat, did not use it', async () => {
    sandbox.setLatency(30)
    const gw = await gateway('platform: { initialConcurrent: 8 }', { REDIS_URL: redis.server.url })
    const governor = seatsOf(gw)
    const light = callers(gw, KEYS.growth, 3, (i) => report(i * 10, 7))
    try {
      await new Promise((resolve) => setTimeout(resolve, 8000))
    } finally {
      await light.stop()
    }
    expect(light.statuses.length).toBeGreaterThan(20)
    expect(governor.limit).toBe(8)
  }, 20_000)
})
