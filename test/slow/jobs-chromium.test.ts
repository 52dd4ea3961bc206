/**
 * A report job asked and waited for by a page of the gateway's own origin in headless
 * Chromium, with fetch() as a dashboard uses it: the 202 with its `location`, a status
 * waited for with `?wait` (the long wait the gateway offers browsers: no push, no
 * EventSource, whose requests cannot carry a key), a wait the page gives up (its
 * AbortController, a tab closed) giving its place back, and the result with what it cost
 * and which figures may still change, each header readable by the page. Node's fetch
 * meets the same bounds in test/attacks/job-waits.test.ts.
 */
import type { Browser, Page } from 'puppeteer-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH, teamsYamlWith } from '../helpers/build-gateway.js'
import { chromiumPath, launchChromium } from '../helpers/console-browser.js'
import { startSandboxGateway, type SandboxGateway } from '../helpers/sandbox-gateway.js'
import { waitFor } from '../helpers/wait.js'

const CHROMIUM = chromiumPath('the report jobs browser test')

describe.skipIf(CHROMIUM === null)('a report job in a page of the gateway\'s origin', () => {
  let sg: SandboxGateway
  let browser: Browser
  let page: Page
  beforeAll(async () => {
    // One wait of a team at a time: a place the page left and never gave back refuses the next.
    sg = await startSandboxGateway({ yaml: teamsYamlWith({ jobs: { maxWaitsPerTeam: 1 } }) })
    browser = await launchChromium(CHROMIUM as string)
    page = await browser.newPage()
    // The page stands for an app served on the gateway's origin by another server (an ingress
    // routing the API's paths to the gateway): the gateway's own answers carry a CSP that
    // sandboxes any document made of them, which the app's page would not carry.
    await page.setBypassCSP(true)
    await page.goto(`${sg.url}/healthz`)
  }, 60_000)
  afterAll(async () => {
    sg?.sandbox.releaseHeld()
    await browser?.close()
    await sg?.closeAfterTests()
  })

  /** The replica's gauge of the team's waits held now. */
  async function waiting(team: string): Promise<number> {
    const text = (await sg.gw.admin.inject({ method: 'GET', url: '/metrics' })).body
    return Number(new RegExp(`^gateway_report_job_waits\\{team="${team}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0)
  }

  it('asks it (202, location), waits with ?wait, gives a wait up and waits again, then reads its result with its cost and finality', async () => {
    sg.sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    const asked = await page.evaluate(async (url: string, key: string) => {
      const res = await fetch(url, { headers: { 'x-api-key': key, prefer: 'respond-async' } })
      return { status: res.status, location: res.headers.get('location'), applied: res.headers.get('preference-applied'), usage: res.headers.get('platform-usage'), body: (await res.json()) as { id: string; state: string } }
    }, `${REPORT_PATH}?advertiserId=101&dateFrom=2025-01-01&dateTo=2025-12-31&byDate=1`, KEYS.all)
    // What the team spent so far: its job's call is still to come (fill=0).
    expect(asked).toMatchObject({ status: 202, location: `/api/v1/jobs/${asked.body.id}`, applied: 'respond-async', usage: expect.stringMatching(/^fill=0, minute=/), body: { state: 'queued' } })
    await waitFor('the job\'s call at the platform', () => sg.callerRequests().some((r) => r.path === REPORT_PATH && r.query.includes('2025-01-01')))

    // A wait the page gives up: held at the gateway, then aborted in the page.
    await page.evaluate((location: string, key: string) => {
      const left = new AbortController()
      Object.assign(globalThis, { left, leftWait: fetch(`${location}?wait=30`, { headers: { 'x-api-key': key }, signal: left.signal }).then((r) => `read ${r.status}`, (e: Error) => e.name) })
    }, asked.location as string, KEYS.all)
    await waitFor('the page\'s wait held', async () => (await waiting('all')) === 1)
    expect(await page.evaluate(() => {
      const w = globalThis as unknown as { left: AbortController; leftWait: Promise<string> }
      w.left.abort()
      return w.leftWait
    })).toBe('AbortError')
    await waitFor('the place of the wait the page left given back', async () => (await waiting('all')) === 0)

    // The page waits again: held, not refused; answered once the job ends.
    await page.evaluate((location: string, key: string) => {
      Object.assign(globalThis, { waited: fetch(`${location}?wait=30`, { headers: { 'x-api-key': key } }).then(async (r) => ({ status: r.status, cacheControl: r.headers.get('cache-control'), body: (await r.json()) as { state: string; result: string | null } })) })
    }, asked.location as string, KEYS.all)
    await waitFor('the page\'s second wait held', async () => (await waiting('all')) === 1)
    sg.sandbox.releaseHeld()
    const waited = await page.evaluate(() => (globalThis as unknown as { waited: Promise<{ status: number; cacheControl: string | null; body: { state: string; result: string | null } }> }).waited)
    expect(waited).toMatchObject({ status: 200, cacheControl: 'private, no-store', body: { state: 'done', result: `${asked.location}/result` } })

    // Its result: the report, with what it cost and its finality, as a report read's answer.
    const result = await page.evaluate(async (url: string, key: string) => {
      const res = await fetch(url, { headers: { 'x-api-key': key } })
      const h = res.headers
      return { status: res.status, usage: h.get('platform-usage'), settled: h.get('report-settled-through'), provisional: h.get('report-provisional-days'), requestId: h.get('x-request-id'), rows: ((await res.json()) as { data: unknown[] }).data.length }
    }, waited.body.result as string, KEYS.all)
    expect(result).toMatchObject({ status: 200, usage: expect.stringMatching(/^fill=\d+(\.\d{1,3})?, minute=/), settled: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/), provisional: 'none', requestId: expect.any(String) })
    expect(result.rows).toBeGreaterThan(0)
  }, 60_000)

  it('reads each refusal of a job call whole (status, code, message, retry-after) and takes a 202 with redirect: \'follow\' as it is: a job running refuses its cancel, a second wait is over the team\'s bound, an unknown id is 404', async () => {
    sg.sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    const asked = await page.evaluate(async (url: string, key: string) => {
      const res = await fetch(url, { headers: { 'x-api-key': key, prefer: 'respond-async' }, redirect: 'follow' })
      return { status: res.status, redirected: res.redirected, url: res.url, location: res.headers.get('location'), body: (await res.json()) as { id: string } }
    }, `${REPORT_PATH}?advertiserId=101&dateFrom=2024-01-01&dateTo=2024-12-31&byDate=1`, KEYS.all)
    expect(asked).toMatchObject({ status: 202, redirected: false, location: `/api/v1/jobs/${asked.body.id}` })
    await waitFor('the job\'s call at the platform', () => sg.callerRequests().some((r) => r.path === REPORT_PATH && r.query.includes('2024-01-01')))

    type Read = { status: number; code: string; message: string; retryAfter: string | null; requestId: string | null }
    const read = (url: string, init: RequestInit) => page.evaluate(async (u: string, i: RequestInit) => {
      const res = await fetch(u, i)
      const body = (await res.json()) as { code: string; message: string }
      return { status: res.status, code: body.code, message: body.message, retryAfter: res.headers.get('retry-after'), requestId: res.headers.get('x-request-id') }
    }, url, init) as Promise<Read>
    const key = { 'x-api-key': KEYS.all }
    expect(await read(asked.location as string, { method: 'DELETE', headers: key })).toMatchObject({ status: 409, code: 'GW_JOB_RUNNING', message: expect.stringContaining('running'), requestId: expect.any(String) })

    // One wait held (the team's bound is 1): the page's second wait is refused, with when to come back.
    await page.evaluate((location: string, k: string) => {
      Object.assign(globalThis, { held: fetch(`${location}?wait=30`, { headers: { 'x-api-key': k } }).then((r) => r.status) })
    }, asked.location as string, KEYS.all)
    await waitFor('the page\'s wait held', async () => (await waiting('all')) === 1)
    expect(await read(`${asked.location as string}?wait=30`, { headers: key })).toMatchObject({ status: 429, code: 'GW_WAITS_FULL', retryAfter: expect.stringMatching(/^\d+$/) })
    expect(await read('/api/v1/jobs/0mx40zbyc0001Nv0ZuPzNajELtOO3', { headers: key })).toMatchObject({ status: 404, code: 'GW_NOT_FOUND' })
    expect(await read(`${asked.location as string}/result`, { headers: key })).toMatchObject({ status: 409, code: 'GW_JOB_NOT_DONE' })

    sg.sandbox.releaseHeld()
    expect(await page.evaluate(() => (globalThis as unknown as { held: Promise<number> }).held)).toBe(200)
    const result = await page.evaluate(async (url: string, k: string) => {
      const res = await fetch(url, { headers: { 'x-api-key': k }, redirect: 'follow' })
      await res.arrayBuffer()
      return { status: res.status, redirected: res.redirected, usage: res.headers.get('platform-usage') }
    }, `${asked.location as string}/result`, KEYS.all)
    expect(result).toMatchObject({ status: 200, redirected: false, usage: expect.stringMatching(/^fill=/) })
    expect(await read(asked.location as string, { method: 'DELETE', headers: key })).toMatchObject({ status: 409, code: 'GW_JOB_RUNNING', message: expect.stringContaining('done') })
  }, 60_000)

  it('a read the page gives up before its answer holds its seat only while the platform works, and the copy it asked is kept; an EventSource on a job has no key: 401, closed', async () => {
    const seats = async () => Number(/^gateway_platform_seats_held\{credential="default"\} (\d+)$/m.exec((await sg.gw.admin.inject({ method: 'GET', url: '/metrics' })).body)?.[1] ?? 0)
    const url = `${REPORT_PATH}?advertiserId=101&dateFrom=2023-03-01&dateTo=2023-03-31&byDate=1&byCampaign=1`
    sg.sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    await page.evaluate((u: string, key: string) => {
      const gaveUp = new AbortController()
      Object.assign(globalThis, { gaveUp, givenUp: fetch(u, { headers: { 'x-api-key': key, 'x-request-id': 'page-gave-up' }, signal: gaveUp.signal }).then((r) => `read ${r.status}`, (e: Error) => e.name) })
    }, url, KEYS.all)
    await waitFor('the read\'s call at the platform', () => sg.callerRequests().some((r) => r.path === REPORT_PATH && r.query.includes('2023-03-01')))
    expect(await page.evaluate(() => {
      const w = globalThis as unknown as { gaveUp: AbortController; givenUp: Promise<string> }
      w.gaveUp.abort()
      return w.givenUp
    })).toBe('AbortError')
    // The platform's worker runs the call to its end whatever the page does (docs/governor.md): its seat with it.
    expect(await seats()).toBe(1)
    sg.sandbox.releaseHeld()
    await sg.gw.reports.settled()
    expect(await seats()).toBe(0)
    // Its access line says what the fill did, the copy stored: a 499 once the fill ended where the
    // gateway heard the page leave, else the answer written to a connection the page had left.
    const gaveUpLines = () => sg.gw.logs.records().filter((r) => r.msg === 'request' && r.reqId === 'page-gave-up')
    await waitFor('the given-up read\'s access line', () => gaveUpLines().length > 0)
    expect(gaveUpLines()).toEqual([expect.objectContaining({ path: REPORT_PATH, route: 'report', cache: 'MISS' })])
    const again = await page.evaluate(async (u: string, key: string) => {
      const res = await fetch(u, { headers: { 'x-api-key': key } })
      await res.arrayBuffer()
      return { status: res.status, cache: res.headers.get('x-cache'), usage: res.headers.get('platform-usage') }
    }, url, KEYS.all)
    expect(again).toMatchObject({ status: 200, cache: 'HIT', usage: expect.stringMatching(/^fill=0,/) })
    expect(sg.callerRequests().filter((r) => r.path === REPORT_PATH && r.query.includes('2023-03-01'))).toHaveLength(1)

    // EventSource sends none of the page's headers: no key, 401, and the browser closes it.
    const id = ((await (await fetch(`${sg.url}${url.replace('2023-03-31', '2023-03-30')}`, { headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })).json()) as { id: string }).id
    expect(await page.evaluate((u: string) => new Promise((resolve) => {
      const source = new EventSource(u)
      source.onerror = () => resolve(source.readyState)
      source.onmessage = () => resolve('a message')
    }), `/api/v1/jobs/${id}?wait=30`)).toBe(2)
  }, 60_000)
})
