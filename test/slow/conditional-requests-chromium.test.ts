import type { IncomingHttpHeaders } from 'node:http'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, Page } from 'puppeteer-core'
import { REPORT_PATH as PATH, type TestGateway } from '../helpers/build-gateway.js'
import { fakeClock, type FakeClock } from '../helpers/clock.js'
import { chromiumPath, launchChromium } from '../helpers/console-browser.js'
import { CACHE, DASHBOARD_KEY, FRESH_S, MIN_AGE_S, OPS_KEY, QUERY, TEAMS, WITH_REFRESH, useConditionalRequests, type Answer } from '../helpers/conditional-requests.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'

// Conditional requests as headless Chromium sends them, its own HTTP cache in between
// (test/helpers/conditional-requests.ts says what the Fetch standard adds). Its copy goes
// stale on the browser's own clock, a second of real time here; npm test checks the same
// modes as Node's fetch sends them (test/integration/conditional-requests.test.ts).

const { gatewayOn, reportCalls } = useConditionalRequests()

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
    // The page stands for an app served on the gateway's origin by another server (an ingress
    // routing the API's paths to the gateway): the gateway's own answers carry a CSP that
    // sandboxes any document made of them, which the app's page would not carry.
    await page.setBypassCSP(true)
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
