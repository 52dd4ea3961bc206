import { afterEach, describe, expect, it } from 'vitest'
import { KEYS, listen, REPORT_PATH, TEAMS_YAML, teamsYamlWith, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { fakeClock, onRealTimers, type FakeClock } from '../helpers/clock.js'
import { useGateways, useSandbox } from '../helpers/fixtures.js'

// A black-box pass over the cost and finality headers: each answer the contract names
// (docs/call-cost.md, docs/jobs.md) carries `platform-usage` and the two finality headers
// where it holds figures, `platform-usage` alone where it holds none, and nothing where the
// gateway refused the call before any report was asked; a 304 and a HEAD say what their 200 says.

const REPORT = `${REPORT_PATH}?advertiserId=101&byDate=1&dateFrom=2025-01-01&dateTo=2025-01-31`
const COST = ['platform-usage', 'report-settled-through', 'report-provisional-days'] as const
const SAME = ['cache-control', 'etag', 'vary', 'x-cache', 'report-settled-through', 'report-provisional-days'] as const
const headersOf = (res: Response, names: readonly string[]) => Object.fromEntries(names.map((n) => [n, res.headers.get(n)]))

describe('the cost and finality headers on every answer', () => {
  const sandbox = useSandbox()
  const gateways = useGateways()
  // Before the gateways close (after-hooks run last-registered first): a held call would hold their close.
  afterEach(() => sandbox.releaseHeld())

  async function start(settings: Record<string, unknown> = {}, clock?: FakeClock): Promise<TestGateway & { url: string }> {
    const env = { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }
    const config = testConfig(env, Object.keys(settings).length === 0 ? TEAMS_YAML : teamsYamlWith(settings))
    return listen(await gateways.build(config, clock === undefined ? {} : { clock: onRealTimers(clock.now) }))
  }
  const get = (gw: { url: string }, target: string, headers: Record<string, string> = {}, method = 'GET') =>
    fetch(`${gw.url}${target}`, { method, headers: { 'x-api-key': KEYS.all, ...headers } })

  it('a MISS, a HIT, its HEAD and its 304 say the same finality and cache-control; the 304 and HEAD fill 0', async () => {
    const gw = await start()
    const miss = await get(gw, REPORT)
    await miss.arrayBuffer()
    const hit = await get(gw, REPORT)
    await hit.arrayBuffer()
    const head = await get(gw, REPORT, {}, 'HEAD')
    const notModified = await get(gw, REPORT, { 'if-none-match': hit.headers.get('etag') as string })
    expect([miss.status, hit.status, head.status, notModified.status]).toEqual([200, 200, 200, 304])
    expect(miss.headers.get('x-cache')).toBe('MISS')
    expect(miss.headers.get('report-settled-through')).toMatch(/^\d{4}-\d{2}-\d{2}$/)
    expect(miss.headers.get('report-provisional-days')).toBe('none')
    for (const res of [hit, head, notModified]) expect(headersOf(res, SAME)).toEqual(headersOf(hit, SAME))
    for (const res of [hit, head, notModified]) expect(res.headers.get('platform-usage')).toMatch(/^fill=0, /)
    expect(hit.headers.get('cache-control')).toMatch(/^private, max-age=\d+$/)
  })

  it('a 304 to a MISS and a STALE says what its 200 says, the fill its call held', async () => {
    const clock = fakeClock(Date.parse('2026-03-10T12:00:00Z'))
    const gw = await start({}, clock)
    const first = await get(gw, REPORT)
    await first.arrayBuffer()
    const etag = first.headers.get('etag') as string
    const other = `${REPORT}&byCampaign=1`
    const twin = await get(gw, other)
    await twin.arrayBuffer()
    // Another replica without the copy (no Redis): its MISS answers the validator 304.
    const elsewhere = await start({}, clock)
    const missed = await get(elsewhere, REPORT, { 'if-none-match': etag })
    expect([missed.status, missed.headers.get('x-cache')]).toEqual([304, 'MISS'])
    expect(missed.headers.get('platform-usage')).toMatch(/^fill=0\.\d+, /)
    const missSame = ['report-settled-through', 'report-provisional-days', 'vary', 'etag', 'cache-control']
    expect(headersOf(missed, missSame)).toEqual(headersOf(first, missSame))
    clock.advance((Number(/max-age=(\d+)/.exec(twin.headers.get('cache-control') as string)?.[1]) + 2) * 1000)
    sandbox.setFailure({ kind: 'held', times: 1 })
    const stale = await get(gw, other)
    await stale.arrayBuffer()
    const staleNotModified = await get(gw, other, { 'if-none-match': twin.headers.get('etag') as string })
    sandbox.releaseHeld()
    expect([stale.headers.get('x-cache'), staleNotModified.status]).toEqual(['STALE', 304])
    const staleSame = [...SAME, 'age', 'cache-status', 'platform-usage']
    expect(headersOf(staleNotModified, staleSame)).toEqual(headersOf(stale, staleSame))
  })

  it('a provisional report is private: no shared cache keeps it', async () => {
    const gw = await start({}, fakeClock(Date.parse('2026-03-10T12:00:00Z')))
    const today = '2026-03-10'
    const res = await get(gw, `${REPORT_PATH}?advertiserId=101&dateFrom=${today}&dateTo=${today}`)
    await res.arrayBuffer()
    expect(res.headers.get('report-provisional-days')).toBe(`${today}/${today}`)
    expect(res.headers.get('cache-control')).toMatch(/^private, /)
  })

  it('refusals before any report is asked carry none of the three', async () => {
    const gw = await start()
    const refused = [
      await get(gw, REPORT, { 'x-api-key': 'rgw_test_unknown_key_000000000000000000000' }),
      await get(gw, `${REPORT_PATH}?advertiserId=999&dateFrom=2025-01-01&dateTo=2025-01-31`, { 'x-api-key': KEYS.growth }),
      await get(gw, '/api/v1/jobs/00000000-0000-4000-8000-000000000000'),
    ]
    for (let i = 0; i < 4; i++) await (await get(gw, REPORT, { 'x-api-key': KEYS.limited })).arrayBuffer()
    refused.push(await get(gw, REPORT, { 'x-api-key': KEYS.limited }))
    expect(refused.map((r) => r.status)).toEqual([401, 403, 404, 429])
    for (const res of refused) expect(headersOf(res, COST)).toEqual({ 'platform-usage': null, 'report-settled-through': null, 'report-provisional-days': null })
  })

  it('a 504 and a 502 (the platform\'s 503, its retry-after) carry platform-usage alone; a report streamed past cache.maxEntryBytes all three', async () => {
    const gw = await start({ platform: { timeout: '300ms' }, cache: { maxEntryBytes: 200 } })
    sandbox.setFailure({ kind: 'hang', times: 1 })
    const late = await get(gw, REPORT)
    expect(late.status).toBe(504)
    expect(late.headers.get('platform-usage')).toMatch(/^fill=0\.\d+, /)
    expect(late.headers.get('report-settled-through')).toBeNull()
    sandbox.setFailure({ kind: 'status', status: 503, headers: { 'retry-after': '1' }, times: 1 })
    const down = await get(gw, `${REPORT}&byCampaign=1`)
    expect([down.status, down.headers.get('retry-after') !== null]).toEqual([502, true])
    expect(down.headers.get('platform-usage')).toMatch(/^fill=/)
    expect(down.headers.get('report-settled-through')).toBeNull()
    const large = await get(gw, REPORT)
    await large.arrayBuffer()
    expect([large.status, large.headers.get('x-cache'), large.headers.get('cache-control')]).toEqual([200, 'BYPASS', 'private, no-store'])
    expect(large.headers.get('platform-usage')).toMatch(/^fill=0\.\d+, /)
    expect(large.headers.get('report-provisional-days')).toBe('none')
  })

  it('a call not sent for its deadline (its kind no longer fits one) is answered 504 at once with platform-usage alone, fill 0', async () => {
    const gw = await start({ platform: { timeout: '300ms' } })
    // Two calls of a kind cut at their deadline without an answer (the second the one of the
    // kind sent all the same): the next call of it is answered at once, never sent.
    sandbox.setFailure({ kind: 'hang', times: 2 })
    for (const day of ['31', '30']) expect((await get(gw, REPORT.replace('2025-01-31', `2025-01-${day}`))).status).toBe(504)
    sandbox.clearRequests()
    const notSent = await get(gw, REPORT.replace('2025-01-31', '2025-01-29'))
    expect([notSent.status, ((await notSent.json()) as { code: string }).code]).toEqual([504, 'GW_UPSTREAM_TIMEOUT'])
    expect(sandbox.countRequests((r) => r.path === REPORT_PATH)).toBe(0)
    expect(notSent.headers.get('platform-usage')).toMatch(/^fill=0, /)
    expect(headersOf(notSent, COST.slice(1))).toEqual({ 'report-settled-through': null, 'report-provisional-days': null })
  })

  it("a job's 202 fill 0; its result, HEAD and 304 say its status's finality and tookSeconds; a failed job's result platform-usage alone", async () => {
    const gw = await start({ jobs: { perReplica: 1 } })
    const asked = await get(gw, REPORT, { prefer: 'respond-async' })
    expect(asked.status).toBe(202)
    expect(asked.headers.get('platform-usage')).toMatch(/^fill=0, /)
    expect(asked.headers.get('report-settled-through')).toBeNull()
    const { id } = await asked.json() as { id: string }
    const polled = await get(gw, `/api/v1/jobs/${id}?wait=10`)
    const status = await polled.json() as { state: string; settledThrough: string; provisionalDays: string; tookSeconds: number }
    expect(status.state).toBe('done')
    expect(polled.headers.get('cache-control')).toMatch(/^private, no-store/)
    const result = await get(gw, `/api/v1/jobs/${id}/result`)
    await result.arrayBuffer()
    expect([result.headers.get('report-settled-through'), result.headers.get('report-provisional-days')]).toEqual([status.settledThrough, status.provisionalDays])
    expect(result.headers.get('platform-usage')).toMatch(new RegExp(`^fill=${status.tookSeconds}, `))
    const resultHead = await get(gw, `/api/v1/jobs/${id}/result`, {}, 'HEAD')
    expect(headersOf(resultHead, COST)).toEqual(headersOf(result, COST))
    const again = await get(gw, `/api/v1/jobs/${id}/result`, { 'if-none-match': result.headers.get('etag') as string })
    expect(again.status).toBe(304)
    expect(headersOf(again, [...SAME, 'platform-usage'])).toEqual(headersOf(result, [...SAME, 'platform-usage']))

    sandbox.setFailure({ kind: 'status', status: 422, body: { message: 'no' }, times: 5 })
    const failing = await get(gw, `${REPORT}&byCampaign=1`, { prefer: 'respond-async' })
    const failed = await (await get(gw, `/api/v1/jobs/${((await failing.json()) as { id: string }).id}?wait=10`)).json() as { id: string; state: string; settledThrough: null; provisionalDays: null }
    expect([failed.state, failed.settledThrough, failed.provisionalDays]).toEqual(['failed', null, null])
    const failedResult = await get(gw, `/api/v1/jobs/${failed.id}/result`)
    expect(failedResult.status).toBe(422)
    expect(failedResult.headers.get('platform-usage')).toMatch(/^fill=/)
    expect(failedResult.headers.get('report-settled-through')).toBeNull()
  })
  it("a platform's 429 and the 503 of the pause it set carry platform-usage alone", async () => {
    const gw = await start({ jobs: { perReplica: 1 } })
    sandbox.setFailure({ kind: 'status', status: 429, headers: { 'retry-after': '30' }, times: 1 })
    const throttled = await get(gw, REPORT)
    await throttled.arrayBuffer()
    const paused = await get(gw, `${REPORT}&byCampaign=1`)
    const pausedBody = await paused.json() as { code: string }
    expect([throttled.status, paused.status, pausedBody.code]).toEqual([429, 503, 'GW_OVERLOADED'])
    for (const res of [throttled, paused]) {
      expect(res.headers.get('retry-after')).not.toBeNull()
      expect(res.headers.get('platform-usage')).toMatch(/^fill=/)
      expect(res.headers.get('report-settled-through')).toBeNull()
    }
  })

  it('a queued job\'s cancel 204 carries none of the three; a HEAD asking a job is 202 with platform-usage fill 0', async () => {
    const gw = await start({ jobs: { perReplica: 1 } })
    sandbox.setFailure({ kind: 'held', times: 1 })
    const running = await get(gw, REPORT, { prefer: 'respond-async' })
    const queued = await get(gw, `${REPORT}&byCampaign=1`, { prefer: 'respond-async' }, 'HEAD')
    expect([running.status, queued.status]).toEqual([202, 202])
    expect(queued.headers.get('platform-usage')).toMatch(/^fill=0, /)
    const cancelled = await get(gw, queued.headers.get('location') as string, {}, 'DELETE')
    sandbox.releaseHeld()
    expect(cancelled.status).toBe(204)
    expect(headersOf(cancelled, COST)).toEqual({ 'platform-usage': null, 'report-settled-through': null, 'report-provisional-days': null })
  })
})
