import type { IncomingHttpHeaders } from 'node:http'
import { beforeEach, describe, expect, it } from 'vitest'
import { REPORT_PATH as PATH, type TestGateway } from '../helpers/build-gateway.js'
import { fakeClock, type FakeClock } from '../helpers/clock.js'
import { CACHE, DASHBOARD_KEY, FRESH_S, MIN_AGE_S, OPS_KEY, QUERY, TEAMS, WITH_REFRESH, useConditionalRequests, type Answer } from '../helpers/conditional-requests.js'

// Conditional requests as Node's fetch sends them (test/helpers/conditional-requests.ts
// says what the Fetch standard adds); headless Chromium's, with its own cache, are
// test/slow/conditional-requests-chromium.test.ts.

const { sandbox, gatewayOn, reportCalls } = useConditionalRequests()

/** fetch's options with its cache mode, which Node's fetch takes (the Fetch standard's RequestInit) and @types/node 20 does not name. */
type FetchInit = RequestInit & { cache?: 'default' | 'no-store' | 'reload' | 'no-cache' | 'force-cache' | 'only-if-cached' }

async function answerOf(res: Response): Promise<Answer> {
  const h = res.headers
  return { status: res.status, cache: h.get('x-cache'), cacheStatus: h.get('cache-status'), etag: h.get('etag'), age: h.get('age'), body: await res.text() }
}

describe("a dashboard polling with Node's fetch", () => {
  let clock: FakeClock
  let gw: TestGateway & { url: string }
  let received: IncomingHttpHeaders[]

  beforeEach(async () => {
    clock = fakeClock()
    ;({ gw, received } = await gatewayOn(`${TEAMS}${CACHE}`, clock))
  })

  const poll = async (headers: Record<string, string> = {}, init: FetchInit = {}) =>
    answerOf(await fetch(`${gw.url}${PATH}?${QUERY}`, { ...init, headers: { 'x-api-key': DASHBOARD_KEY, ...headers } }))

  it("answers its If-None-Match polls, sent with the no-cache fetch adds, 304 from the copy without a platform call", async () => {
    const first = await poll()
    expect([first.status, first.cache]).toEqual([200, 'MISS'])
    const etag = first.etag as string
    for (let i = 0; i < 3; i++) {
      clock.advance(5_000)
      const again = await poll({ 'if-none-match': etag })
      expect([again.status, again.cache, again.etag, again.body]).toEqual([304, 'HIT', etag, ''])
      expect(again.cacheStatus).toBe(`report-gateway; hit; ttl=${FRESH_S - 5 * (i + 1)}`)
    }
    // What fetch sent: the validator with fetch's no-cache (the Fetch standard, "HTTP-network-or-cache fetch").
    expect(received.slice(1).map((h) => [h['if-none-match'], h['cache-control'], h.pragma])).toEqual(Array(3).fill([etag, 'no-cache', 'no-cache']))
    expect(reportCalls()).toBe(1)
    const lines = gw.logs.records().filter((r) => r.msg === 'request')
    expect(lines.map((l) => [l.status, l.cache])).toEqual([[200, 'MISS'], [304, 'HIT'], [304, 'HIT'], [304, 'HIT']])
  })

  // Contract, "Report requests": a report read reads if-none-match alone of the conditional
  // headers. If-Match, If-Unmodified-Since, Range and If-Range are not read: the answer is the
  // whole report, 200, as without them (RFC 9110, 14.2: a server may ignore Range), never 206
  // nor 412, and none of them reaches the platform.
  it('answers If-Match, If-Unmodified-Since, Range and If-Range with the whole report, as without them, and sends none of them on', async () => {
    const unread = { 'if-match': '"not-this-copy"', 'if-unmodified-since': 'Thu, 01 Jan 1970 00:00:00 GMT', range: 'bytes=0-9', 'if-range': '"not-this-copy"' }
    const miss = await poll(unread)
    expect([miss.status, miss.cache]).toEqual([200, 'MISS'])
    const hit = await poll(unread)
    expect([hit.status, hit.cache, hit.body, hit.etag]).toEqual([200, 'HIT', miss.body, miss.etag])
    expect(JSON.parse(hit.body)).toHaveProperty('data')
    const sent = sandbox.requests.filter((r) => r.path === PATH)
    expect(sent.map((r) => Object.keys(r.headers).filter((name) => name in unread))).toEqual([[]])
  })

  it('answers If-Modified-Since, and an If-None-Match naming another copy, with 200 and the copy, without a platform call', async () => {
    const first = await poll()
    clock.advance(1_000)
    const since = await poll({ 'if-modified-since': new Date(clock.now()).toUTCString() })
    expect([since.status, since.cache, since.age, since.body]).toEqual([200, 'HIT', '1', first.body])
    const other = await poll({ 'if-none-match': '"an-older-copy"' })
    expect([other.status, other.cache, other.etag, other.body]).toEqual([200, 'HIT', first.etag, first.body])
    expect(received.slice(1).every((h) => h['cache-control'] === 'no-cache')).toBe(true)
    expect(reportCalls()).toBe(1)
  })

  it("reads fetch's reload and no-store modes from a team without refresh as reads of the copy", async () => {
    const first = await poll()
    clock.advance(MIN_AGE_S * 2 * 1000)
    for (const cache of ['reload', 'no-store'] as const) {
      const again = await poll({}, { cache })
      expect([again.status, again.cache, again.age, again.body], cache).toEqual([200, 'HIT', String(MIN_AGE_S * 2), first.body])
    }
    // curl's spelling of the same, and HTTP/1.0's.
    expect((await poll({ 'cache-control': 'no-cache' })).cache).toBe('HIT')
    expect((await poll({ pragma: 'no-cache' })).cache).toBe('HIT')
    expect(received.slice(1, 3).map((h) => [h['cache-control'], h.pragma])).toEqual([['no-cache', 'no-cache'], ['no-cache', 'no-cache']])
    expect(reportCalls()).toBe(1)
  })

  it('reads a POST report sent with no-cache by a team without refresh from the copy', async () => {
    const body = JSON.stringify({ advertiserId: 101, campaignIds: [101002, 101001], dateFrom: '2026-02-01', dateTo: '2026-02-07', byDate: true })
    const post = async (headers: Record<string, string> = {}) =>
      answerOf(await fetch(`${gw.url}${PATH}`, { method: 'POST', body, headers: { 'x-api-key': DASHBOARD_KEY, 'content-type': 'application/json', ...headers } }))
    expect((await post()).cache).toBe('MISS')
    clock.advance(MIN_AGE_S * 2 * 1000)
    const again = await post({ 'cache-control': 'no-cache' })
    expect([again.status, again.cache]).toEqual([200, 'HIT'])
    expect(reportCalls()).toBe(1)
  })
})

describe('a forced refresh: a capability a team is given, bounded and coalesced', () => {
  let clock: FakeClock
  let gw: TestGateway & { url: string }

  beforeEach(async () => {
    clock = fakeClock()
    ;({ gw } = await gatewayOn(WITH_REFRESH, clock))
  })

  const ask = async (key: string, headers: Record<string, string> = {}, init: FetchInit = {}) =>
    answerOf(await fetch(`${gw.url}${PATH}?${QUERY}`, { ...init, headers: { 'x-api-key': key, ...headers } }))

  it('refreshes for a team given refresh: true, at most once per cache.refreshMinAge of the report', async () => {
    expect((await ask(OPS_KEY)).cache).toBe('MISS')
    clock.advance(MIN_AGE_S * 1000)
    const refreshed = await ask(OPS_KEY, {}, { cache: 'reload' })
    expect([refreshed.status, refreshed.cache, refreshed.cacheStatus]).toEqual([200, 'REFRESH', `report-gateway; fwd=request; stored; ttl=${FRESH_S}`])
    expect(reportCalls()).toBe(2)
    // A copy younger than cache.refreshMinAge answers a forced refresh, however often it is asked.
    const young = await ask(OPS_KEY, { 'cache-control': 'no-cache' })
    expect([young.status, young.cache, young.age]).toEqual([200, 'HIT', '0'])
    clock.advance(MIN_AGE_S * 1000 - 1)
    expect((await ask(OPS_KEY, { pragma: 'no-cache' })).cache).toBe('HIT')
    expect(reportCalls()).toBe(2)
    clock.advance(1)
    expect((await ask(OPS_KEY, {}, { cache: 'no-store' })).cache).toBe('REFRESH')
    expect(reportCalls()).toBe(3)
    // The same request from a team without refresh is a read of the copy.
    clock.advance(MIN_AGE_S * 1000)
    expect((await ask(DASHBOARD_KEY, {}, { cache: 'reload' })).cache).toBe('HIT')
    expect(reportCalls()).toBe(3)
  })

  it('answers a poll with a validator from the copy for a team given refresh too: a validator revalidates, it does not refresh', async () => {
    const first = await ask(OPS_KEY)
    clock.advance(MIN_AGE_S * 2 * 1000)
    const polled = await ask(OPS_KEY, { 'if-none-match': first.etag as string })
    expect([polled.status, polled.cache]).toEqual([304, 'HIT'])
    expect(reportCalls()).toBe(1)
  })

  it('reads every other request directive as any read, from a team given refresh too: max-age, min-fresh, max-stale, no-store, only-if-cached', async () => {
    // only-if-cached with no copy is a read like any: a miss, its platform call.
    const filled = await ask(OPS_KEY, { 'cache-control': 'only-if-cached' })
    expect([filled.status, filled.cache]).toEqual([200, 'MISS'])
    clock.advance(20_000)
    for (const directive of ['max-age=5', 'min-fresh=55', 'max-stale=100', 'no-store', 'only-if-cached']) {
      const read = await ask(OPS_KEY, { 'cache-control': directive })
      expect({ directive, status: read.status, cache: read.cache, age: read.age }).toEqual({ directive, status: 200, cache: 'HIT', age: '20' })
    }
    expect(reportCalls()).toBe(1)
  })

  it('shares one platform call among concurrent forced refreshes', async () => {
    expect((await ask(OPS_KEY)).cache).toBe('MISS')
    clock.advance(MIN_AGE_S * 1000)
    sandbox.setLatency(300)
    const answers = await Promise.all(Array.from({ length: 10 }, () => ask(OPS_KEY, {}, { cache: 'reload' })))
    expect(reportCalls()).toBe(2)
    const statuses = answers.map((a) => a.cacheStatus)
    expect(statuses.filter((s) => s === `report-gateway; fwd=request; stored; ttl=${FRESH_S}`)).toHaveLength(1)
    // The others waited for that call, or (arriving after it) were answered with its copy.
    for (const s of statuses) expect(s).toMatch(new RegExp(`^report-gateway; (fwd=request; (collapsed; )?stored; ttl=${FRESH_S}|hit; ttl=${FRESH_S})$`))
    expect(new Set(answers.map((a) => a.body)).size).toBe(1)
  })

  it('refreshes a POST report for a team given refresh, and reads it from the copy for another', async () => {
    const body = JSON.stringify({ advertiserId: 101, campaignIds: [101001], dateFrom: '2026-02-01', dateTo: '2026-02-07' })
    const post = async (key: string, headers: Record<string, string> = {}) =>
      (await answerOf(await fetch(`${gw.url}${PATH}`, { method: 'POST', body, headers: { 'x-api-key': key, 'content-type': 'application/json', ...headers } }))).cache
    expect(await post(DASHBOARD_KEY)).toBe('MISS')
    clock.advance(MIN_AGE_S * 1000)
    expect(await post(DASHBOARD_KEY, { 'cache-control': 'no-cache' })).toBe('HIT')
    expect(await post(OPS_KEY, { 'cache-control': 'no-cache' })).toBe('REFRESH')
    expect(await post(OPS_KEY, { 'cache-control': 'no-cache' })).toBe('HIT')
    expect(reportCalls()).toBe(2)
  })
})
