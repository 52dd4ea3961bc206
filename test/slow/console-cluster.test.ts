import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, Page } from 'puppeteer-core'
import { startSandbox, type Sandbox } from '../../src/sandbox/sandbox.js'
import { buildGateway, KEYS, listen, REPORT_PATH, sandboxLoginEnv, teamsYamlWith, testConfig, WEEK_BY_CAMPAIGN, WEEK_BY_DATE, type TestGateway } from '../helpers/build-gateway.js'
import { ARTIFACTS, chromiumPath, CONSOLE_SCRIPTS as SCRIPTS, openConsoleBrowser } from '../helpers/console-browser.js'
import { redisAvailability, startRedis, type RedisServer } from '../helpers/start-redis.js'
import { Redis } from 'ioredis'
import { pino } from 'pino'
import { Replicas, type ReplicaState } from '../../src/observe/replicas.js'
import { BUCKET_MS, emptyHistory, type HistoryView } from '../../src/observe/history.js'
import { RedisBreaker } from '../../src/redis/breaker.js'
import { RedisSeal } from '../../src/redis/seal.js'
import { fakeClock } from '../helpers/clock.js'
import { TEST_GATEWAY_SECRET } from '../helpers/build-gateway.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'

// The console's view of the whole cluster in a headless browser: two replicas on one
// redis-server, the charts of the last hour (uPlot, served by the gateway), and the
// health banner once Redis stops.

const CHROMIUM = chromiumPath('the console cluster browser test')
const { available: REDIS } = redisAvailability('the console cluster browser test')

const ADMIN_TOKEN = 'console-cluster-admin-token-0123456789'
// Redis seen down within a second or two of stopping (the watch pings every cooldown).
const YAML = teamsYamlWith({ redis: { breakerCooldown: '1s' } })
/** The console refreshes every 5 s: a state it must show is waited for over a few refreshes. */
const SHOWN_MS = 20_000

describe.skipIf(CHROMIUM === null || !REDIS)('the console shows the whole cluster', () => {
  let sandbox: Sandbox
  let redis: RedisServer
  let a: TestGateway & { url: string }
  let b: TestGateway & { url: string }
  let c: (TestGateway & { url: string }) | undefined
  let adminUrl: string
  let browser: Browser
  let page: Page
  const requested: string[] = []
  const refusedByPolicy: string[] = []

  beforeAll(async () => {
    sandbox = await startSandbox()
    redis = await startRedis()
    const config = () => testConfig({ PLATFORM_BASE_URL: sandbox.url, ...sandboxLoginEnv(sandbox), ADMIN_TOKEN, REDIS_URL: redis.url }, YAML)
    a = await listen(await buildGateway(config(), { consoleScriptsDir: SCRIPTS }))
    b = await listen(await buildGateway(config(), { consoleScriptsDir: SCRIPTS }))
    await a.admin.listen({ host: '127.0.0.1', port: 0 })
    adminUrl = `http://127.0.0.1:${(a.admin.server.address() as AddressInfo).port}`
    ;({ browser, page } = await openConsoleBrowser(CHROMIUM as string, requested))
    page.on('console', (message) => {
      if (/Content[ -]Security[ -]Policy/i.test(message.text())) refusedByPolicy.push(message.text())
    })
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
    await c?.close()
    await b?.close()
    await a?.close()
    await redis?.close()
    await sandbox?.close()
  })

  const until = (expression: string, timeout = SHOWN_MS) => page.waitForFunction(expression, { timeout, polling: 100 })
  const text = (selector: string) => page.$eval(selector, (node) => (node as unknown as { innerText: string }).innerText)
  const points = (id: string) => `Number(document.getElementById(${JSON.stringify(id)})?.dataset.points ?? 0)`

  /** A bounded load on both replicas: misses, hits, and a rate-limited team's 429s. */
  const load = async () => {
    for (const [gw, query] of [[a, WEEK_BY_DATE], [b, WEEK_BY_CAMPAIGN]] as const) {
      for (let i = 0; i < 5; i++) {
        const res = await fetch(`${gw.url}${REPORT_PATH}?${query}`, { headers: { 'x-api-key': KEYS.all } })
        await res.arrayBuffer()
        expect(res.status).toBe(200)
      }
    }
    for (let i = 0; i < 5; i++) {
      const res = await fetch(`${a.url}${REPORT_PATH}?${WEEK_BY_DATE}`, { headers: { 'x-api-key': KEYS.limited } })
      await res.arrayBuffer()
    }
  }

  it('lists both replicas, this one marked, and says all is well', async () => {
    await page.goto(`${adminUrl}/console`, { waitUntil: 'networkidle0' })
    await page.type('#token', ADMIN_TOKEN)
    await page.keyboard.press('Enter')
    await until("document.querySelectorAll('#replicas tbody tr').length === 2")
    const replicas = await text('#replicas')
    for (const gw of [a, b]) expect(replicas).toContain((await gw.admin.inject({ method: 'GET', url: '/admin/cluster', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json().replicas[0].id)
    expect(await page.$$eval('#replicas tr.self', (rows) => rows.length)).toBe(1)
    expect(await text('#replicas tr.self')).toContain('this replica')
    await until("document.getElementById('health').classList.contains('ok')")
    expect(await text('#health')).toMatch(/^All is well: 2 replicas ready/)
  })

  it('draws the last hour with uPlot once there is load, for the cluster and for one replica', async () => {
    await load()
    await until(`${points('chart-requests')} > 0 && ${points('chart-platform')} > 0 && ${points('chart-hits')} > 0`)
    for (const id of ['chart-requests', 'chart-errors', 'chart-hits', 'chart-platform', 'chart-inflight']) {
      expect(await page.$(`#${id} canvas`)).not.toBeNull()
    }
    // The limit in force is drawn (with the calls in flight) from the first bucket this replica saw.
    expect(await page.evaluate(points('chart-inflight'))).toBeGreaterThan(0)
    // The default window is the data's age: these replicas started seconds ago, so 5 minutes.
    expect(await text('#chart-requests-summary')).toMatch(/^Last 5 min: [1-9]\d* requests/)
    expect(await text('#chart-window option:checked')).toMatch(/^since the data starts \((under a minute|\d min)\)$/)
    await page.select('#chart-window', '1h')
    await until("/^Last hour: [1-9]/.test(document.getElementById('chart-requests-summary').textContent)")
    // The rate-limited team's 429s, summed over both replicas.
    await until("document.getElementById('team-errors')?.textContent?.includes('limited')")
    expect(await text('#team-errors')).toMatch(/limited\s+2\s+2/)
    // One replica's charts: B served 5 requests.
    const idOfB = (await b.admin.inject({ method: 'GET', url: '/admin/cluster', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json().replicas[0].id as string
    await page.select('#chart-scope', idOfB)
    await until("/Last hour: 5 requests/.test(document.getElementById('chart-requests-summary').textContent)")
    await page.select('#chart-scope', 'cluster')
    await page.screenshot({ path: `${ARTIFACTS}console-cluster.png`, fullPage: true })
  })

  it('fits a 420 px phone: tables scroll in their own region, the page does not', async () => {
    await page.setViewport({ width: 420, height: 900, isMobile: true })
    // Each chart follows its box's width: the whole width of the phone, less the page's margins.
    const fits = (id: string) => `Math.abs(document.querySelector('#${id} canvas')?.getBoundingClientRect().width - document.getElementById('${id}').clientWidth) <= 2`
    await until(`document.getElementById('chart-requests').clientWidth > 300 && ${fits('chart-requests')} && ${fits('chart-inflight')}`)
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(420)
    expect(await page.evaluate("getComputedStyle(document.querySelector('#replicas .scroll')).overflowX")).toBe('auto')
    await page.screenshot({ path: `${ARTIFACTS}console-cluster-phone.png`, fullPage: true })
    await page.setViewport({ width: 1280, height: 900 })
  })

  it('keeps a replica that vanished listed as gone, with its past; the banner says so; charts over 5 min, 15 min, the hour, with labelled axes', async () => {
    const hourSummary = async () => Number(/Last hour: (\d+) request/.exec(await text('#chart-requests-summary'))?.[1])
    // (Turning the page into a phone's and back reloaded it: the window is the default again.)
    await until("document.querySelector('#chart-window option[value=\"1h\"]') !== null")
    await page.select('#chart-window', '1h')
    await until("/^Last hour: [1-9]/.test(document.getElementById('chart-requests-summary').textContent)")
    const before = await hourSummary()
    // A replica that served A's traffic 30 s earlier, announced itself 20 s ago and then
    // died: no clean stop. Its hour is the one its buckets make, each written as it closed.
    const own = (await a.admin.inject({ method: 'GET', url: '/admin/cluster', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json<{ replicas: ReplicaState[] }>().replicas[0]!
    const served = own.history.requests.reduce<number>((x, y) => x + (y ?? 0), 0)
    // It died 20 s ago, after both replicas started: neither is its replacement.
    const startedAt = await Promise.all([a, b].map(async (gw) => Date.parse((await gw.admin.inject({ method: 'GET', url: '/admin/cluster', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json<{ replicas: ReplicaState[] }>().replicas[0]!.startedAt)))
    await waitFor('both replicas to have run 25 s', () => Date.now() - Math.max(...startedAt) > 25_000, testTimeLeft(), 100)
    const clock = fakeClock(Date.now() - 20_000)
    const client = new Redis(redis.url, { maxRetriesPerRequest: 1 })
    const seal = new RedisSeal(TEST_GATEWAY_SECRET)
    try {
      const bucket = (n: number): HistoryView | null => {
        const requests = own.history.requests[n + 3 - own.history.start / BUCKET_MS]
        return requests === undefined || requests === null ? null : { ...emptyHistory(0, BUCKET_MS, 1), start: n * BUCKET_MS, requests: [requests] }
      }
      const crashed = new Replicas({
        id: 'crashed-replica-1',
        redis: client,
        breaker: new RedisBreaker({ cooldownMs: 1000, log: pino({ level: 'silent' }) }),
        seal,
        prefix: 'rgw:',
        log: pino({ level: 'silent' }),
        clock,
        state: () => ({ ...own, id: 'crashed-replica-1', at: new Date(clock.now()).toISOString() }),
        history: () => own.history,
        bucket,
      })
      expect(await crashed.announce()).toBe(true)
    } finally {
      client.disconnect()
    }
    await until("document.querySelector('#replicas tr[data-gone=\"vanished\"]') !== null")
    expect(await text('#replicas tr[data-gone="vanished"]')).toMatch(/crashed-replica-1[\s\S]*gone: no clean stop, last seen \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/)
    // No replica started since it died: amber, saying so.
    await until("document.getElementById('health').classList.contains('warn')")
    expect(await text('#health')).toMatch(/replica crashed-replica-1 stopped announcing itself at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC without a clean stop .*no replica has started since to replace it; listed as gone until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/)
    // Its past stays in the cluster's: the hour counts what it served.
    await until(`Number(/Last hour: (\\d+)/.exec(document.getElementById('chart-requests-summary').textContent)?.[1]) >= ${before + served}`)
    for (const [window, buckets, span] of [['5m', 30, '5 min'], ['15m', 90, '15 min'], ['1h', 360, 'hour']] as const) {
      await page.select('#chart-window', window)
      await until(`document.getElementById('chart-requests').dataset.buckets === '${buckets}'`)
      expect(await text('#chart-requests-summary')).toMatch(new RegExp(`^Last ${span}: `))
    }
    const axes = (id: string) => page.$eval(`#${id}`, (node) => (node as unknown as { dataset: { axes: string } }).dataset.axes)
    expect(await axes('chart-inflight')).toBe('Time (UTC) | Platform calls')
    expect(await axes('chart-platform')).toBe('Time (UTC) | Calls per 10 s | Latency (ms, log)')
    expect(await axes('chart-requests')).toBe('Time (UTC) | Requests per 10 s')
    await page.screenshot({ path: `${ARTIFACTS}console-cluster-gone.png`, fullPage: true })
    await (await page.$('#chart-inflight'))?.screenshot({ path: `${ARTIFACTS}console-chart-inflight.png` })
    // Its replacement starts (a Deployment's new pod): once ready, the crash reads as replaced, green, the gone replica in grey.
    c = await listen(await buildGateway(testConfig({ PLATFORM_BASE_URL: sandbox.url, ...sandboxLoginEnv(sandbox), ADMIN_TOKEN, REDIS_URL: redis.url }, YAML), { consoleScriptsDir: SCRIPTS }))
    const idOfC = (await c.admin.inject({ method: 'GET', url: '/admin/cluster', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json().replicas[0].id as string
    await until("document.getElementById('health').classList.contains('ok')")
    expect(await text('#health')).toMatch(new RegExp(`^All is well: 3 replicas ready \\(replica crashed-replica-1 crashed \\(no clean stop, last seen \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d UTC\\) and was replaced by ${idOfC}\\)`))
    expect(await text('#replicas tr[data-gone="vanished"]')).toContain(`; replaced by ${idOfC}`)
    await page.screenshot({ path: `${ARTIFACTS}console-cluster-replaced.png`, fullPage: true })
    // A clean stop is listed as such, and is no warning.
    await b.close()
    await until("document.querySelector('#replicas tr[data-gone=\"stopped\"]') !== null")
    const cleanup = new Redis(redis.url, { maxRetriesPerRequest: 1 })
    await cleanup.del('rgw:{replicas}:replica:crashed-replica-1', 'rgw:{replicas}:history:crashed-replica-1')
    cleanup.disconnect()
    await until("/^All is well: 2 replicas ready \\(1 stopped cleanly in the last hour\\)/.test(document.getElementById('health').textContent)")
  }, 120_000)

  it('turns the banner red when Redis stops, and lists this replica only, saying so', async () => {
    await redis.stop()
    await until("document.getElementById('health').classList.contains('bad')")
    expect(await text('#health')).toMatch(/Redis \(127\.0\.0\.1:\d+\) is down/)
    await until("document.querySelectorAll('#replicas tbody tr').length === 1")
    expect(await text('#cluster-note')).toMatch(/this replica only/)
    // Red: the page's colour for what is wrong, not the text's.
    expect(await page.evaluate("getComputedStyle(document.getElementById('health')).color")).not.toBe(await page.evaluate('getComputedStyle(document.body).color'))
    await page.screenshot({ path: `${ARTIFACTS}console-cluster-redis-down.png`, fullPage: true })
  })

  it('asked nothing of any other origin, and the policy refused nothing', () => {
    expect(requested.some((url) => url.endsWith('/console/uPlot.iife.min.js'))).toBe(true)
    expect(requested.filter((url) => !url.startsWith(`${adminUrl}/`))).toEqual([])
    expect(refusedByPolicy).toEqual([])
  })
})
