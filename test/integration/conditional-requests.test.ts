import type { IncomingHttpHeaders } from 'node:http'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { Browser, Page } from 'puppeteer-core'
import { hashApiKey } from '../../src/access/api-keys.js'
import { listen, REPORT_PATH as PATH, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { fakeClock, onRealTimers, type FakeClock } from '../helpers/clock.js'
import { chromiumPath, launchChromium } from '../helpers/console-browser.js'
import { useGateways, useSandbox } from '../helpers/fixtures.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'

// Conditional requests as clients really send them, over real HTTP on 127.0.0.1: Node's
// fetch and headless Chromium's, in front of the platform sandbox. The Fetch standard
// adds `cache-control: no-cache` and `pragma: no-cache` to a request carrying a validator
// (If-None-Match, If-Modified-Since) in its default mode, and to every request in its
// `reload` and `no-store` modes: a poll is answered from the gateway's fresh copy, and only
// a team given `refresh: true` forces a fresh copy from the platform, at most once per
// `cache.refreshMinAge` of a report. The gateway's time is the test's (a fake clock on real timers).

const DASHBOARD_KEY = 'rgw_test_dashboard_key_000000000000000000000'
const OPS_KEY = 'rgw_test_ops_refresh_key_00000000000000000000'
const QUERY = 'advertiserId=101&byDate=1&dateFrom=2026-02-01&dateTo=2026-02-07'
const FRESH_S = 60
const MIN_AGE_S = 10

const TEAMS = `
teams:
  dashboard:
    keys: ["${hashApiKey(DASHBOARD_KEY)}"]
    advertisers: ["*"]
`
const CACHE = `
cache:
  ttl: { recent: ${FRESH_S}s, settled: ${FRESH_S}s }
  # The copies here expire only when a test says so.
  refreshAhead: 0
`
const WITH_REFRESH = `${TEAMS}  ops:
    keys: ["${hashApiKey(OPS_KEY)}"]
    advertisers: ["*"]
    refresh: true
${CACHE}  refreshMinAge: ${MIN_AGE_S}s
`

const sandbox = useSandbox()
const gateways = useGateways()

/** A listening gateway in front of the sandbox on `clock`, and the request headers it received, in order. */
async function gatewayOn(yaml: string, clock: FakeClock): Promise<{ gw: TestGateway & { url: string }; received: IncomingHttpHeaders[] }> {
  const gw = await listen(await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }, yaml), { clock: onRealTimers(clock.now) }))
  const received: IncomingHttpHeaders[] = []
  gw.proxy.server.on('request', (req: { url?: string; headers: IncomingHttpHeaders }) => {
    if (req.url?.startsWith(PATH)) received.push({ ...req.headers })
  })
  return { gw, received }
}

/** Report calls the platform received. */
const reportCalls = () => sandbox.countRequests((r) => r.path === PATH)

/** fetch's options with its cache mode, which Node's fetch takes (the Fetch standard's RequestInit) and @types/node 20 does not name. */
type FetchInit = RequestInit & { cache?: 'default' | 'no-store' | 'reload' | 'no-cache' | 'force-cache' | 'only-if-cached' }

interface Answer {
  status: number
  cache: string | null
  cacheStatus: string | null
  etag: string | null
  age: string | null
  body: string
}

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

const CHROMIUM = chromiumPath('the conditional requests browser test')

describe.skipIf(CHROMIUM === null)("headless Chromium's fetch and its own revalidation", () => {
  let browser: Browser
  let page: Page | undefined
  let clock: FakeClock
  let gw: TestGateway & { url: string }
  let received: IncomingHttpHeaders[]

  beforeAll(async () => {
    browser = await launchChromium(CHROMIUM as string)
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
  })

  /** A gateway with `yaml`, and a page of its origin: its fetches are same-origin, their headers its own, and its HTTP cache starts empty. */
  const open = async (yaml: string) => {
    clock = fakeClock()
    ;({ gw, received } = await gatewayOn(yaml, clock))
    page = await browser.newPage()
    await page.goto(`${gw.url}/healthz`)
  }

  afterEach(async () => {
    await page?.close()
    page = undefined
  })

  const WITHOUT_REFRESH = `${TEAMS}${CACHE}`

  /** The page's fetch of the report with `key` and `init` (RequestInit as JSON); what it got. */
  const fetchIn = (key: string, init: { cache?: string; headers?: Record<string, string> } = {}): Promise<Answer> =>
    (page as Page).evaluate(
      async (url: string, key: string, init: { cache?: string; headers?: Record<string, string> }) => {
        const res = await fetch(url, { ...init, headers: { 'x-api-key': key, ...init.headers } } as RequestInit)
        const h = res.headers
        return { status: res.status, cache: h.get('x-cache'), cacheStatus: h.get('cache-status'), etag: h.get('etag'), age: h.get('age'), body: await res.text() }
      },
      `${PATH}?${QUERY}`,
      key,
      init,
    )

  /** The access lines of the report's answers: status and x-cache. */
  const answered = () => gw.logs.records().filter((r) => r.msg === 'request' && r.route === 'report').map((l) => [l.status, l.cache])

  it("answers Chromium's revalidation of the copy it keeps (cache: 'no-cache') with 304, and the page reads its body", async () => {
    await open(WITHOUT_REFRESH)
    const first = await fetchIn(DASHBOARD_KEY)
    expect([first.status, first.cache]).toEqual([200, 'MISS'])
    const again = await fetchIn(DASHBOARD_KEY, { cache: 'no-cache' })
    expect([again.status, again.body]).toEqual([200, first.body])
    expect(received.map((h) => h['if-none-match'] ?? null)).toEqual([null, first.etag])
    expect(answered()).toEqual([[200, 'MISS'], [304, 'HIT']])
    expect(reportCalls()).toBe(1)
  })

  it("answers the page's own If-None-Match with 304 without a platform call", async () => {
    await open(WITHOUT_REFRESH)
    const first = await fetchIn(DASHBOARD_KEY)
    const polled = await fetchIn(DASHBOARD_KEY, { headers: { 'if-none-match': first.etag as string } })
    expect([polled.status, polled.cache, polled.body]).toEqual([304, 'HIT', ''])
    expect(received[1]?.['if-none-match']).toBe(first.etag)
    expect(reportCalls()).toBe(1)
  })

  it("answers its reload from the gateway's copy for a team without refresh, then its revalidation once the copy's max-age passed", async () => {
    await open(WITHOUT_REFRESH)
    const first = await fetchIn(DASHBOARD_KEY)
    // The gateway's copy is a second from its end: the answer to a reload says so (age 59,
    // max-age 60), and Chromium's copy of it goes stale a second later.
    clock.advance((FRESH_S - 1) * 1000)
    const reloaded = await fetchIn(DASHBOARD_KEY, { cache: 'reload' })
    expect([reloaded.status, reloaded.cache, reloaded.age, reloaded.body]).toEqual([200, 'HIT', String(FRESH_S - 1), first.body])
    expect([received[1]?.['cache-control'], received[1]?.pragma]).toEqual(['no-cache', 'no-cache'])
    // Polls in the default mode are Chromium's to answer while its copy is fresh, then it
    // revalidates that copy with the gateway.
    await waitFor("Chromium's revalidation of its copy", async () => {
      const polled = await fetchIn(DASHBOARD_KEY)
      expect([polled.status, polled.body]).toEqual([200, first.body])
      return received.length > 2
    }, testTimeLeft(), 100)
    expect(received[2]?.['if-none-match']).toBe(first.etag)
    expect(answered()).toEqual([[200, 'MISS'], [200, 'HIT'], [304, 'HIT']])
    expect(reportCalls()).toBe(1)
  })

  it("refreshes on its reload for a team given refresh, once per cache.refreshMinAge", async () => {
    await open(WITH_REFRESH)
    expect((await fetchIn(OPS_KEY)).cache).toBe('MISS')
    clock.advance(MIN_AGE_S * 1000)
    expect((await fetchIn(OPS_KEY, { cache: 'reload' })).cache).toBe('REFRESH')
    expect((await fetchIn(OPS_KEY, { cache: 'reload' })).cache).toBe('HIT')
    expect(reportCalls()).toBe(2)
  })
})
