import { describe, expect, it, onTestFinished } from 'vitest'
import { hashApiKey } from '../../src/access/api-keys.js'
import { listen, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { fakeClock, onRealTimers, type FakeClock } from '../helpers/clock.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { waitFor } from '../helpers/wait.js'

// What a call cost and which of its figures may still change, on every report answer:
// `platform-usage` (the fill's platform-seconds, the team's minute and UTC day),
// `report-settled-through` and `report-provisional-days`; the platform-seconds of each
// team and day in GET /admin/usage; a team's bound of platform-seconds a day, shared by
// the replicas through Redis. The gateway's time is the test's (a fake clock on real timers).

const ADMIN_TOKEN = 'call-cost-admin-token-000000000000'
const KEY = 'rgw_test_call_cost_key_00000000000000000000'
const BOUNDED_KEY = 'rgw_test_call_cost_bounded_00000000000000000'
const NOON = Date.parse('2026-03-10T12:00:00Z')
const PATH = '/api/v1/report/campaigns/get'
// settledAfterDays 3, fetched on 2026-03-10 (UTC): days to 2026-03-06 are settled.
const REPORT = (advertiser: number, from = '2026-03-01', to = '2026-03-10') => `${PATH}?advertiserId=${advertiser}&dateFrom=${from}&dateTo=${to}`

const TEAMS = `
teams:
  dashboard:
    keys: ["${hashApiKey(KEY)}"]
    advertisers: ["*"]
  bounded:
    keys: ["${hashApiKey(BOUNDED_KEY)}"]
    advertisers: ["*"]
    refresh: true
    platformSecondsPerDay: 0.001
cache:
  settledAfterDays: 3
  timeZone: UTC
  refreshAhead: 0
`

const sandbox = useSandbox()
const redis = useRedis()
const gateways = useGateways()

async function gatewayOn(clock: FakeClock, env: Record<string, string> = {}, yaml = ''): Promise<TestGateway & { url: string }> {
  const config = testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN, ...env }, `${TEAMS}${yaml}`)
  return listen(await gateways.build(config, { clock: onRealTimers(clock.now) }))
}

const get = (gw: { url: string }, target: string, key = KEY) => fetch(`${gw.url}${target}`, { headers: { 'x-api-key': key } })

interface Usage {
  fill: number
  minute: number
  share?: number
  day: number
  'day-limit'?: number
  reset: number
}

/** The `platform-usage` dictionary of an answer, its members as numbers. */
function usageOf(res: Response): Usage {
  const header = res.headers.get('platform-usage')
  expect(header, 'platform-usage').toMatch(/^fill=\d+(\.\d{1,3})?, minute=\d+\.\d{3}(, share=\d+)?, day=\d+\.\d{3}(, day-limit=\d+\.\d{3})?, reset=\d+$/)
  return Object.fromEntries((header as string).split(', ').map((member) => {
    const [name, value] = member.split('=') as [string, string]
    return [name, Number(value)]
  })) as unknown as Usage
}

describe('what a call cost, on every report answer', () => {
  it('says the platform-seconds of its fill (0 for a hit), the team\'s minute and day, and /admin/usage the day\'s', async () => {
    const clock = fakeClock(NOON)
    const gw = await gatewayOn(clock, { REDIS_URL: redis.server.url })
    sandbox.setLatency(30)
    const miss = await get(gw, REPORT(101))
    const fast = await get(gw, REPORT(101))
    // The same report spelled anew: a URL not seen before goes through the router.
    const routed = await get(gw, `${PATH}?dateTo=2026-03-10&dateFrom=2026-03-01&advertiserId=101`)
    expect([miss.headers.get('x-cache'), fast.headers.get('x-cache'), routed.headers.get('x-cache')]).toEqual(['MISS', 'HIT', 'HIT'])
    const [missed, hit, posted] = [usageOf(miss), usageOf(fast), usageOf(routed)]
    expect(missed.fill).toBeGreaterThan(0)
    expect(missed.minute).toBe(missed.fill)
    expect(missed.day).toBe(missed.fill)
    expect(missed.reset).toBe(12 * 3600)
    // A team alone on its credential: its share is every seat.
    expect(missed.share).toBeGreaterThanOrEqual(0)
    expect([hit.fill, posted.fill]).toEqual([0, 0])
    expect([hit.day, posted.day]).toEqual([missed.day, missed.day])

    const second = usageOf(await get(gw, REPORT(102)))
    expect(second.day).toBeCloseTo(missed.fill + second.fill, 3)
    // A minute later the minute is empty; the day is not.
    clock.advance(61_000)
    const later = usageOf(await get(gw, REPORT(102)))
    expect([later.fill, later.minute, later.day]).toEqual([0, 0, second.day])

    const usage = await gw.admin.inject({ method: 'GET', url: '/admin/usage?team=dashboard&from=2026-03-10&to=2026-03-10', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(usage.statusCode).toBe(200)
    const [row] = (usage.json() as { usage: { platformSeconds: number; platformCalls: number }[] }).usage
    expect(row?.platformCalls).toBe(2)
    expect(row?.platformSeconds ?? -1).toBeCloseTo(second.day, 3)
  })

  it('says on a 202 what the team spent so far: fill 0 (the job\'s call is still to come), its minute and day; its HEAD alike', async () => {
    const clock = fakeClock(NOON)
    const gw = await gatewayOn(clock)
    const spent = usageOf(await get(gw, REPORT(101)))
    expect(spent.fill).toBeGreaterThan(0)
    for (const method of ['GET', 'HEAD']) {
      const asked = await fetch(`${gw.url}${REPORT(102, '2026-02-01', method === 'GET' ? '2026-02-10' : '2026-02-11')}`, { method, headers: { 'x-api-key': KEY, prefer: 'respond-async' } })
      expect(asked.status, method).toBe(202)
      expect(usageOf(asked), method).toMatchObject({ fill: 0, minute: spent.minute, day: spent.day, reset: 12 * 3600 })
      // A job holds no figures yet: its status says their finality, as the result will.
      expect([asked.headers.get('report-settled-through'), asked.headers.get('report-provisional-days')], method).toEqual([null, null])
    }
  })

  it('says which of the report\'s days are settled and which provisional, from the fill\'s day', async () => {
    const clock = fakeClock(NOON)
    const gw = await gatewayOn(clock)
    const recent = await get(gw, REPORT(101))
    expect([recent.headers.get('report-settled-through'), recent.headers.get('report-provisional-days')]).toEqual(['2026-03-06', '2026-03-07/2026-03-10'])
    const settled = await get(gw, REPORT(101, '2026-02-01', '2026-02-28'))
    expect([settled.headers.get('report-settled-through'), settled.headers.get('report-provisional-days')]).toEqual(['2026-03-06', 'none'])
    // A hit a day later still says what its copy's figures were when fetched.
    clock.advance(60_000)
    const hit = await get(gw, REPORT(101))
    expect(hit.headers.get('x-cache')).toBe('HIT')
    expect(hit.headers.get('report-provisional-days')).toBe('2026-03-07/2026-03-10')
  })
})

describe('a STALE answer', () => {
  it('says what a copy from the cache says: fill 0, the team\'s minute and day, and the finality of its fetch; served while it refreshes, after the platform failed, and as a 304', async () => {
    const clock = fakeClock(NOON)
    const gw = await gatewayOn(clock)
    sandbox.setLatency(5)
    const miss = await get(gw, REPORT(101))
    expect(miss.headers.get('x-cache')).toBe('MISS')
    const filled = usageOf(miss)
    const etag = miss.headers.get('etag') as string
    const finality = (res: Response) => [res.headers.get('report-settled-through'), res.headers.get('report-provisional-days')]
    // A day later than the fetch the copy's figures still say what they were when fetched.
    const fetched = ['2026-03-06', '2026-03-07/2026-03-10']
    expect(finality(miss)).toEqual(fetched)

    // Past its freshness (5 min), within stale-while-revalidate: STALE at once, and a refresh behind it.
    sandbox.setRouteFailure(PATH, { kind: 'held', times: 1 })
    onTestFinished(() => sandbox.releaseHeld())
    clock.advance(5 * 60_000 + 10_000)
    const revalidating = await get(gw, REPORT(101))
    expect(revalidating.headers.get('x-cache')).toBe('STALE')
    const whileRefreshing = usageOf(revalidating)
    expect(whileRefreshing.fill).toBe(0)
    expect(whileRefreshing.day).toBe(filled.day)
    expect(whileRefreshing.reset).toBe(12 * 3600 - 310)
    expect(finality(revalidating)).toEqual(fetched)
    const notModified = await fetch(`${gw.url}${REPORT(101)}`, { headers: { 'x-api-key': KEY, 'if-none-match': etag } })
    expect([notModified.status, notModified.headers.get('x-cache')]).toEqual([304, 'STALE'])
    expect(usageOf(notModified).fill).toBe(0)
    expect(finality(notModified)).toEqual(fetched)
    // The refresh may reach the sandbox's hold after a first release: each look releases it again.
    await waitFor('the background refresh', async () => {
      sandbox.releaseHeld()
      return (await get(gw, REPORT(101))).headers.get('x-cache') === 'HIT'
    })

    // Past stale-while-revalidate, the platform failing: the copy is served STALE after its call failed.
    const refreshed = await get(gw, REPORT(101))
    clock.advance(5 * 60_000 + 61_000)
    sandbox.setRouteFailure(PATH, { kind: 'status', status: 500, times: 1 })
    const failed = await get(gw, REPORT(101))
    expect(failed.headers.get('x-cache')).toBe('STALE')
    expect(failed.headers.get('cache-status')).toMatch(/fwd=stale; ttl=-/)
    const afterFailure = usageOf(failed)
    expect(afterFailure.fill).toBe(0)
    // The failed call's platform-seconds are the team's too.
    expect(afterFailure.day).toBeGreaterThanOrEqual(usageOf(refreshed).day)
    expect(finality(failed)).toEqual(fetched)
  })
})

describe('what a failed read cost', () => {
  it('says the platform-seconds its own failed call held on the 502: platform-usage fill, in the team\'s day', async () => {
    const clock = fakeClock(NOON)
    const gw = await gatewayOn(clock)
    sandbox.setLatency(20)
    // A 500 is no answer a read retries: one call, held for the sandbox's latency at least.
    sandbox.setRouteFailure(PATH, { kind: 'status', status: 500, times: 1 })
    const failed = await get(gw, REPORT(101))
    expect(failed.status).toBe(502)
    expect(((await failed.json()) as { code: string }).code).toBe('GW_UPSTREAM')
    const usage = usageOf(failed)
    expect(usage.fill).toBeGreaterThan(0)
    // The team's first call of the day: its day is that call.
    expect(usage.day).toBe(usage.fill)
    // A failure has no figures: nothing is said of their finality.
    expect(failed.headers.get('report-settled-through')).toBeNull()
  })
})

describe('a fill another replica made', () => {
  it('says the platform-seconds of that fill: the entry carries them through Redis', async () => {
    const clock = fakeClock(NOON)
    const shared = { REDIS_URL: redis.server.url }
    const a = await gatewayOn(clock, shared)
    const b = await gatewayOn(clock, shared)
    sandbox.setLatency(200)
    const first = get(a, REPORT(101, '2026-03-02', '2026-03-09'))
    await waitFor('the platform to have the first replica\'s call', () => sandbox.countRequests((r) => r.path === PATH) === 1)
    // B finds A's fill under way (the Redis lock) and waits for its copy.
    const [filled, waited] = await Promise.all([first, get(b, REPORT(101, '2026-03-02', '2026-03-09'))])
    expect([filled.headers.get('x-cache'), waited.headers.get('x-cache')]).toEqual(['MISS', 'MISS'])
    expect(waited.headers.get('cache-status')).toContain('collapsed')
    expect(sandbox.countRequests((r) => r.path === PATH)).toBe(1)
    const fill = usageOf(filled).fill
    expect(fill).toBeGreaterThan(0)
    // The fill's time to the ms, rounded up as the entry keeps it.
    expect(Math.abs(usageOf(waited).fill - fill)).toBeLessThanOrEqual(0.001)
    // The day is charged to the team whose read made the call, on the replica that made it.
    expect(usageOf(waited).day).toBe(0)
  })
})

describe('a team\'s bound of platform-seconds a day', () => {
  it('answers the cache only once it is spent: a miss is 429 GW_PLATFORM_TIME_SPENT until UTC midnight', async () => {
    const clock = fakeClock(NOON)
    const gw = await gatewayOn(clock)
    sandbox.setLatency(5)
    const first = await get(gw, REPORT(101), BOUNDED_KEY)
    expect(first.status).toBe(200)
    expect(usageOf(first)['day-limit']).toBe(0.001)
    const refused = await get(gw, REPORT(102), BOUNDED_KEY)
    expect(refused.status).toBe(429)
    expect(((await refused.json()) as { code: string }).code).toBe('GW_PLATFORM_TIME_SPENT')
    expect(refused.headers.get('retry-after')).toBe(String(12 * 3600))
    // Cached answers still come, and another team is not held.
    expect((await get(gw, REPORT(101), BOUNDED_KEY)).status).toBe(200)
    expect((await get(gw, REPORT(102))).status).toBe(200)
    const calls = sandbox.countRequests((r) => r.path === PATH)
    // Past its freshness, the copy is answered stale without a refresh.
    clock.advance(6 * 60_000)
    const stale = await get(gw, REPORT(101), BOUNDED_KEY)
    expect([stale.status, stale.headers.get('x-cache')]).toEqual([200, 'STALE'])
    await new Promise((resolve) => setImmediate(resolve))
    expect(sandbox.countRequests((r) => r.path === PATH)).toBe(calls)
    // A new UTC day: its platform-seconds start again.
    clock.advance(12 * 3600 * 1000)
    expect((await get(gw, REPORT(103), BOUNDED_KEY)).status).toBe(200)
  })

  it('says what the team spent on the refusal itself: the 429 GW_PLATFORM_TIME_SPENT carries platform-usage, its day past its day-limit, for a read, the POST form and a job asked', async () => {
    const clock = fakeClock(NOON)
    const gw = await gatewayOn(clock)
    sandbox.setLatency(5)
    const spent = usageOf(await get(gw, REPORT(101), BOUNDED_KEY))
    const post = (prefer?: string) => fetch(`${gw.url}${PATH}`, {
      method: 'POST',
      headers: { 'x-api-key': BOUNDED_KEY, 'content-type': 'application/json', ...(prefer ? { prefer } : {}) },
      body: JSON.stringify({ advertiserId: 105, campaignIds: [105001], dateFrom: '2026-03-01', dateTo: '2026-03-02' }),
    })
    const refusals = [
      await get(gw, REPORT(102), BOUNDED_KEY),
      await fetch(`${gw.url}${REPORT(104)}`, { headers: { 'x-api-key': BOUNDED_KEY, prefer: 'respond-async' } }),
      await post(),
      await post('respond-async'),
    ]
    for (const refused of refusals) {
      expect(refused.status).toBe(429)
      expect(((await refused.json()) as { code: string }).code).toBe('GW_PLATFORM_TIME_SPENT')
      // No call was made for it; the team's day, its bound and its reset are what the refusal is about.
      const usage = usageOf(refused)
      expect(usage.fill).toBe(0)
      expect(usage['day-limit']).toBe(0.001)
      expect(usage.day).toBe(spent.day)
      expect(usage.day).toBeGreaterThanOrEqual(usage['day-limit'] as number)
      expect(usage.reset).toBe(12 * 3600)
    }
  })

  it('answers a forced refresh from the cache once the day is spent, as any read: its copy, fresh or stale, not a 429', async () => {
    const clock = fakeClock(NOON)
    const gw = await gatewayOn(clock)
    sandbox.setLatency(5)
    const refresh = (target: string) => fetch(`${gw.url}${target}`, { headers: { 'x-api-key': BOUNDED_KEY, 'cache-control': 'no-cache' } })
    expect((await get(gw, REPORT(101), BOUNDED_KEY)).status).toBe(200)
    const calls = sandbox.countRequests((r) => r.path === PATH)
    // Older than cache.refreshMinAge (10 s), within its freshness (5 min): the copy, a HIT.
    clock.advance(11_000)
    const fresh = await refresh(REPORT(101))
    expect([fresh.status, fresh.headers.get('x-cache')]).toEqual([200, 'HIT'])
    // Past its freshness: the copy STALE, without a refresh.
    clock.advance(6 * 60_000)
    const stale = await refresh(REPORT(101))
    expect([stale.status, stale.headers.get('x-cache')]).toEqual([200, 'STALE'])
    // No copy: the 429 of any read the cache cannot answer.
    const none = await refresh(REPORT(102))
    expect(none.status).toBe(429)
    expect(((await none.json()) as { code: string }).code).toBe('GW_PLATFORM_TIME_SPENT')
    await new Promise((resolve) => setImmediate(resolve))
    expect(sandbox.countRequests((r) => r.path === PATH)).toBe(calls)
  })

  it('refuses a job as it refuses a miss once the day is spent: respond-async is no way past the bound', async () => {
    const clock = fakeClock(NOON)
    const gw = await gatewayOn(clock)
    sandbox.setLatency(5)
    expect((await get(gw, REPORT(101), BOUNDED_KEY)).status).toBe(200)
    const calls = sandbox.countRequests((r) => r.path === PATH)
    const asked = await fetch(`${gw.url}${REPORT(104)}`, { headers: { 'x-api-key': BOUNDED_KEY, prefer: 'respond-async' } })
    expect(asked.status).toBe(429)
    expect(((await asked.json()) as { code: string }).code).toBe('GW_PLATFORM_TIME_SPENT')
    expect(asked.headers.get('retry-after')).toBe(String(12 * 3600))
    expect(sandbox.countRequests((r) => r.path === PATH)).toBe(calls)
  })

  it('answers a job asked once the day is spent with the copy a read without the preference gets: STALE past its stale-while-revalidate, not a 429', async () => {
    const clock = fakeClock(NOON)
    const gw = await gatewayOn(clock)
    sandbox.setLatency(5)
    expect((await get(gw, REPORT(101), BOUNDED_KEY)).status).toBe(200)
    const calls = sandbox.countRequests((r) => r.path === PATH)
    // Past its freshness (5 min) and its stale-while-revalidate (60 s), within its stale-if-error (24 h).
    clock.advance(7 * 60_000)
    const plain = await get(gw, REPORT(101), BOUNDED_KEY)
    expect([plain.status, plain.headers.get('x-cache')]).toEqual([200, 'STALE'])
    const asked = await fetch(`${gw.url}${REPORT(101)}`, { headers: { 'x-api-key': BOUNDED_KEY, prefer: 'respond-async' } })
    expect([asked.status, asked.headers.get('x-cache')]).toEqual([200, 'STALE'])
    expect(asked.headers.get('preference-applied')).toBeNull()
    expect(usageOf(asked).fill).toBe(0)
    expect(asked.headers.get('report-settled-through')).toBe('2026-03-06')
    expect(sandbox.countRequests((r) => r.path === PATH)).toBe(calls)
  })

  it('fails a job asked before the day was spent but started after, without a platform call, unless the cache answers it then', async () => {
    const clock = fakeClock(NOON)
    const gw = await gatewayOn(clock, {}, 'jobs:\n  perReplica: 1\n')
    sandbox.setLatency(5)
    const job = (target: string, key: string) => fetch(`${gw.url}${target}`, { headers: { 'x-api-key': key, prefer: 'respond-async' } })
    const statusOf = async (id: string) => (await (await fetch(`${gw.url}/api/v1/jobs/${id}`, { headers: { 'x-api-key': BOUNDED_KEY } })).json()) as { state: string; tookSeconds: number | null; error: { code: string; message: string } | null }
    // Another team's job holds the replica's one runner: its call stays at the platform.
    sandbox.setRouteFailure(PATH, { kind: 'held', times: 1 })
    onTestFinished(() => sandbox.releaseHeld())
    expect((await job(REPORT(102), KEY)).status).toBe(202)
    await waitFor('the holding job\'s call at the platform', () => sandbox.countRequests((r) => r.path === PATH) === 1)
    // Two jobs of the bounded team, asked while its day is not spent: queued behind it.
    const spentOne = await job(REPORT(101, '2026-02-01', '2026-02-28'), BOUNDED_KEY)
    const cachedOne = await job(REPORT(102, '2026-02-01', '2026-02-28'), BOUNDED_KEY)
    expect([spentOne.status, cachedOne.status]).toEqual([202, 202])
    const [spent, cached] = [((await spentOne.json()) as { id: string }).id, ((await cachedOne.json()) as { id: string }).id]
    // The team spends its day; another team fills the second job's report meanwhile.
    expect((await get(gw, REPORT(101), BOUNDED_KEY)).status).toBe(200)
    expect((await get(gw, REPORT(102, '2026-02-01', '2026-02-28'))).status).toBe(200)
    const calls = sandbox.countRequests((r) => r.path === PATH)
    sandbox.releaseHeld()
    const ended = async (id: string) => ['done', 'failed'].includes((await statusOf(id)).state)
    await waitFor('both jobs ended', async () => (await ended(spent)) && (await ended(cached)))
    const failed = await statusOf(spent)
    expect(failed.error?.code).toBe('GW_PLATFORM_TIME_SPENT')
    // When the UTC day resets, as an instant.
    expect(failed.error?.message).toContain('2026-03-11T00:00:00.000Z')
    expect(failed.tookSeconds).toBe(0)
    // Its result is that failure, and says when to come back, as every 429 does: the seconds to the day's end.
    const result = await fetch(`${gw.url}/api/v1/jobs/${spent}/result`, { headers: { 'x-api-key': BOUNDED_KEY } })
    expect(result.status).toBe(429)
    expect(Number(result.headers.get('retry-after'))).toBe(Math.ceil((Date.parse('2026-03-11T00:00:00.000Z') - clock.now()) / 1000))
    // A cached copy is an answer, not a call.
    expect(await statusOf(cached)).toMatchObject({ state: 'done', tookSeconds: 0 })
    expect(sandbox.countRequests((r) => r.path === PATH)).toBe(calls)
  })

  it('is one bound across replicas: what one spent, the other refuses, once their usage flushes ran', async () => {
    const clock = fakeClock(NOON)
    const shared = { REDIS_URL: redis.server.url }
    const flush = '\nusage: { flush: 50ms }\n'
    const a = await gatewayOn(clock, shared, flush)
    const b = await gatewayOn(clock, shared, flush)
    sandbox.setLatency(5)
    expect((await get(a, REPORT(101), BOUNDED_KEY)).status).toBe(200)
    // B learns the day's total when its own flush of the team's answers reads it back; its
    // answers say their figures anew each second.
    await waitFor('replica B to see the team\'s day spent', async () => {
      clock.advance(1_000)
      const res = await get(b, REPORT(101), BOUNDED_KEY)
      return res.status === 200 && usageOf(res).day >= 0.001
    })
    const refused = await get(b, REPORT(104), BOUNDED_KEY)
    expect(refused.status).toBe(429)
    expect(((await refused.json()) as { code: string }).code).toBe('GW_PLATFORM_TIME_SPENT')
  })
  it("says on a replica's first answer the day the team spent on replicas before it, bound or none", async () => {
    const clock = fakeClock(NOON)
    const shared = { REDIS_URL: redis.server.url }
    const a = await gatewayOn(clock, shared)
    sandbox.setLatency(50)
    const spent = usageOf(await get(a, REPORT(101))).day
    expect(spent).toBeGreaterThanOrEqual(0.05)
    // A's close flushes its counts: the day's total is in Redis before B starts.
    await a.close()
    const b = await gatewayOn(clock, shared)
    sandbox.setLatency(0)
    const first = usageOf(await get(b, REPORT(102)))
    // Each figure is rounded to thousandths on its own: the day's, in thousandths, is the sum of
    // the other two's within one (never a sum of floats, where 0.05 + 0.01 > 0.06).
    const thousandths = (seconds: number) => Math.round(seconds * 1000)
    expect(thousandths(first.day)).toBeGreaterThanOrEqual(thousandths(spent) + thousandths(first.fill) - 1)
  })

  it('holds on a replica that starts after the day was spent: its first read is 429 GW_PLATFORM_TIME_SPENT, without a platform call', async () => {
    const clock = fakeClock(NOON)
    const shared = { REDIS_URL: redis.server.url }
    const a = await gatewayOn(clock, shared)
    sandbox.setLatency(5)
    expect((await get(a, REPORT(101), BOUNDED_KEY)).status).toBe(200)
    // A's close flushes its counts: the day's total is in Redis before B starts.
    await a.close()
    const b = await gatewayOn(clock, shared)
    const calls = sandbox.countRequests((r) => r.path === PATH)
    const refused = await get(b, REPORT(102), BOUNDED_KEY)
    expect(refused.status).toBe(429)
    expect(((await refused.json()) as { code: string }).code).toBe('GW_PLATFORM_TIME_SPENT')
    expect(sandbox.countRequests((r) => r.path === PATH)).toBe(calls)
  })
})
