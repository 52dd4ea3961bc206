import type { AddressInfo } from 'node:net'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, HTTPRequest, Page } from 'puppeteer-core'
import { startSandbox, type Sandbox } from '../../src/sandbox/sandbox.js'
import { hashApiKey } from '../../src/access/api-keys.js'
import { loadConfig } from '../../src/config.js'
import { buildGateway, listen, sandboxLoginEnv, type TestGateway } from '../helpers/build-gateway.js'
import { chromiumPath, CONSOLE_SCRIPTS as SCRIPTS, launchChromium } from '../helpers/console-browser.js'
import { ensureBuilt } from '../helpers/dist.js'
import { clusterFixture, FIXTURE_IDS } from '../helpers/console-cluster-fixture.js'

// The console read at a glance, at 1440 × 900, in a browser whose time zone is UTC and in
// one whose is America/New_York: one time zone on the page (UTC, the browser's own on
// hover), a date on every instant, axes whose labels do not overlap, counts in whole
// numbers, the default window fitted to the data's age, and a crashed replica whose
// replacement is ready read as replaced. The page comes from a real gateway; its
// /admin/cluster (and Redis's state in /admin/status) are answered with a cluster known
// to the minute (helpers/console-cluster-fixture.ts): 25 minutes of data that cross
// midnight UTC, a replica that crashed 8 minutes ago and its replacement, ready since. The
// crashed replica had learned a latency floor of 4017.9 ms (a platform slow then); the live
// replicas have none (yet): the summaries never put its floor beside their latencies.

const CHROMIUM = chromiumPath('the console glance test')

const ADMIN_TOKEN = 'console-glance-admin-token-0123456789ab'
const GROWTH_KEY = 'rgw_test_console_glance_growth_key_000000000'
const YAML = `
teams:
  growth:
    keys: ["${hashApiKey(GROWTH_KEY)}"]
    advertisers: [101]
`
const REPORT = '/api/v1/report/campaigns/get?advertiserId=101&byDate=1&dateFrom=2026-01-01&dateTo=2026-01-07'
/** The cluster's now: 00:20 UTC, 19:20 the evening before in New York. */
const NOW = Date.UTC(2026, 10, 24, 0, 20, 0)
const CLUSTER = clusterFixture({ now: NOW, ageMinutes: 25, crashedMinutesAgo: 8, replacedMinutesAgo: 7.5, floorMs: { live: null, crashed: 4017.9 } })
const CHARTS = ['chart-requests', 'chart-errors', 'chart-hits', 'chart-platform', 'chart-inflight'] as const
/** Screenshots go to a temp folder, never the repository. */
const SHOTS = mkdtempSync(join(tmpdir(), 'console-glance-'))

/** Every instant the page may show: a date, a time of day, and UTC. */
const INSTANT = /\b\d{4}-\d\d-\d\d \d\d:\d\d(?::\d\d)? UTC\b/g
/** A time of day anywhere in a text (not within an address such as 127.0.0.1:6379). */
const TIME_OF_DAY = /(?<![\d.:])\d{1,2}:\d\d(?::\d\d)?(?![\d:])/g

/** What is drawn on the charts' canvases: each text with its box in canvas pixels. */
interface Drawn {
  text: string
  align: string
  baseline: string
  rotated: boolean
  left: number
  right: number
  top: number
  bottom: number
}

// Run in the page before its scripts: every text a canvas draws is kept with its box (the
// canvas's transform applied), and a canvas cleared whole starts its list again.
const RECORD_CANVAS_TEXT = `(() => {
  const lists = new WeakMap()
  const P = CanvasRenderingContext2D.prototype
  const fill = P.fillText
  const clear = P.clearRect
  P.clearRect = function (x, y, w, h) {
    if (x <= 0 && y <= 0 && w >= this.canvas.width && h >= this.canvas.height) lists.set(this.canvas, [])
    return clear.call(this, x, y, w, h)
  }
  P.fillText = function (text, x, y, ...rest) {
    const m = this.measureText(text)
    const t = this.getTransform()
    const corners = [[x - m.actualBoundingBoxLeft, y - m.actualBoundingBoxAscent], [x + m.actualBoundingBoxRight, y - m.actualBoundingBoxAscent], [x - m.actualBoundingBoxLeft, y + m.actualBoundingBoxDescent], [x + m.actualBoundingBoxRight, y + m.actualBoundingBoxDescent]]
      .map(([px, py]) => [t.a * px + t.c * py + t.e, t.b * px + t.d * py + t.f])
    const xs = corners.map((c) => c[0])
    const ys = corners.map((c) => c[1])
    const list = lists.get(this.canvas) ?? []
    list.push({ text: String(text), align: this.textAlign, baseline: this.textBaseline, rotated: t.b !== 0 || t.c !== 0, left: Math.min(...xs), right: Math.max(...xs), top: Math.min(...ys), bottom: Math.max(...ys) })
    lists.set(this.canvas, list)
    return fill.call(this, text, x, y, ...rest)
  }
  // Every uPlot made, to read where each series is drawn on its axis.
  const plots = []
  let U
  Object.defineProperty(globalThis, 'uPlot', {
    configurable: true,
    get: () => U,
    set: (v) => { U = new Proxy(v, { construct: (target, args, newTarget) => { const u = Reflect.construct(target, args, newTarget); plots.push(u); return u } }) },
  })
  globalThis.__chartSeries = (id) => {
    const u = plots.filter((p) => p.root.isConnected && p.root.parentElement?.id === id).at(-1)
    if (!u) return null
    const height = u.over.getBoundingClientRect().height
    return u.series.slice(1).map((s, k) => {
      const values = u.data[k + 1]
      const ys = values.map((v) => (v === null || v === undefined ? null : u.valToPos(v, s.scale)))
      const present = values.filter((v) => v !== null && v !== undefined)
      return { label: s.label, scale: s.scale, axis: u.axes.some((a) => a.scale === s.scale && a.show !== false), max: present.length ? Math.max(...present) : null, height, ys }
    })
  }
  globalThis.__chartTexts = (id) => {
    const canvas = document.querySelector('#' + id + ' canvas')
    return canvas ? lists.get(canvas) ?? [] : null
  }
})()`

/** Pairs of texts on one canvas whose boxes overlap (a pixel of anti-aliasing allowed). */
function overlaps(texts: Drawn[]): string[] {
  const found: string[] = []
  for (let i = 0; i < texts.length; i++) {
    for (let j = i + 1; j < texts.length; j++) {
      const a = texts[i] as Drawn
      const b = texts[j] as Drawn
      if (Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1 && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1) found.push(`"${a.text}" and "${b.text}"`)
    }
  }
  return found
}

/** Where a series is drawn: its scale, whether an axis of that scale is shown, its highest value, the height of each value (CSS px from the plot's top). */
interface DrawnSeries {
  label: string
  scale: string
  axis: boolean
  max: number | null
  height: number
  ys: (number | null)[]
}

/** The local time of `iso` in `zone`, as the page's hover says it: `2026-11-23 19:12:00`. */
function localIn(zone: string, iso: string): string {
  const parts = Object.fromEntries(new Intl.DateTimeFormat('en-GB', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' }).formatToParts(new Date(iso)).map((p) => [p.type, p.value]))
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second}`
}

describe.skipIf(CHROMIUM === null)('the console reads right at a glance (1440 × 900)', () => {
  let sandbox: Sandbox
  let gw: TestGateway & { url: string }
  let adminUrl: string
  let browser: Browser
  /** The time axis's labels of each chart as drawn in the first zone, compared with the next. */
  const timeLabels = new Map<string, string[]>()

  beforeAll(async () => {
    ensureBuilt(`${SCRIPTS}console-page.js`)
    sandbox = await startSandbox()
    // The teams come from a file, as on a configured gateway: the page offers their reload.
    const file = join(SHOTS, 'config.yaml')
    writeFileSync(file, YAML)
    const env = { CONFIG_FILE: file, PLATFORM_BASE_URL: sandbox.url, ...sandboxLoginEnv(sandbox), ADMIN_TOKEN, LOG_LEVEL: 'info' }
    gw = await listen(await buildGateway(loadConfig({ env }), { configSource: { env }, consoleScriptsDir: SCRIPTS }))
    await gw.admin.listen({ host: '127.0.0.1', port: 0 })
    adminUrl = `http://127.0.0.1:${(gw.admin.server.address() as AddressInfo).port}`
    browser = await launchChromium(CHROMIUM as string)
    const res = await fetch(`${gw.url}${REPORT}`, { headers: { 'x-api-key': GROWTH_KEY } })
    await res.arrayBuffer()
    expect(res.status).toBe(200)
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
    await gw?.close()
    await sandbox?.close()
    console.info(`console glance: screenshots in ${SHOTS}`)
  })

  /** The page's answers: the cluster fixture, and this replica's status as of the fixture's now, with Redis up. */
  async function answer(request: HTTPRequest): Promise<void> {
    const path = new URL(request.url()).pathname
    if (path === '/admin/cluster') {
      await request.respond({ status: 200, contentType: 'application/json', headers: { 'cache-control': 'no-store' }, body: JSON.stringify(CLUSTER) })
      return
    }
    if (path === '/admin/status') {
      const real = await fetch(`${adminUrl}/admin/status`, { headers: { authorization: request.headers().authorization ?? '' } })
      const status = (await real.json()) as Record<string, unknown>
      if (real.status !== 200) return void (await request.respond({ status: real.status, contentType: 'application/json', body: JSON.stringify(status) }))
      const body = { ...status, at: new Date(NOW).toISOString(), redis: { state: 'ok', address: '127.0.0.1:6379', topology: 'single' } }
      await request.respond({ status: 200, contentType: 'application/json', headers: { 'cache-control': 'no-store' }, body: JSON.stringify(body) })
      return
    }
    await request.continue()
  }

  describe.each(['UTC', 'America/New_York'])('in a browser whose time zone is %s', (zone) => {
    let page: Page
    const shot = (name: string) => join(SHOTS, `${zone.replace('/', '-')}-${name}.png`)
    const text = (selector: string) => page.$eval(selector, (node) => (node as unknown as { innerText: string }).innerText)
    const until = (expression: string) => page.waitForFunction(expression, { timeout: 10_000, polling: 50 })
    const texts = (id: string) => page.evaluate(`globalThis.__chartTexts(${JSON.stringify(id)})`) as Promise<Drawn[] | null>

    beforeAll(async () => {
      page = await browser.newPage()
      await page.setViewport({ width: 1440, height: 900 })
      await page.emulateTimezone(zone)
      await page.evaluateOnNewDocument(RECORD_CANVAS_TEXT)
      await page.setRequestInterception(true)
      page.on('request', (request) => void answer(request))
      await page.goto(`${adminUrl}/console`, { waitUntil: 'networkidle0' })
      await page.type('#token', ADMIN_TOKEN)
      await page.keyboard.press('Enter')
      await until("document.querySelectorAll('#replicas tbody tr').length === 3")
      await until("(globalThis.__chartTexts('chart-requests') ?? []).length > 0")
      await page.evaluate('new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))')
      await page.screenshot({ path: shot('top') })
      await (await page.$('section[aria-labelledby="h-history"]'))?.screenshot({ path: shot('charts') })
      await page.type('#lookup-url', REPORT)
      await page.click('#lookup button[type=submit]')
      await until("document.getElementById('lookup-result').textContent.includes('Cached as')")
      await page.screenshot({ path: shot('page'), fullPage: true })
    }, 30_000)

    afterAll(async () => {
      await page?.close()
    })

    it('the browser runs in the zone asked', async () => {
      expect(await page.evaluate('Intl.DateTimeFormat().resolvedOptions().timeZone')).toBe(zone)
    })

    it('offers the reload of the teams, as a gateway whose teams come from a file does', async () => {
      expect(await page.$eval('#reload', (n) => (n as unknown as { disabled: boolean }).disabled)).toBe(false)
      expect(await text('#reload-note')).toBe('')
    })

    it('shows every instant in UTC with its date, and no 12-hour time', async () => {
      const body = await text('body')
      expect(body).not.toMatch(/\d\s?(AM|PM|am|pm)\b/)
      // The look-up's cache key is no time: its keyed hash (base64url, a new one each run) after
      // `rgw:report:v1:` reads as one where it starts with two digits ('v1:04x').
      const bare = body.replace(INSTANT, '').replace(/\brgw:[\w:-]+/g, '').match(TIME_OF_DAY) ?? []
      expect(bare).toEqual([])
      expect(await text('#updated')).toContain('Updated 2026-11-24 00:20:00 UTC')
      expect(await text('#replicas')).toContain('2026-11-24 00:12:00 UTC')
      // The look-up's freshness windows: each instant with its date.
      expect(await text('#lookup-result')).toMatch(/stale until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC, served on platform errors until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/)
    })

    it('gives the browser\'s own time of every instant on hover', async () => {
      const times = (await page.$$eval('time', (nodes) => nodes.map((n) => ({ datetime: n.getAttribute('datetime'), title: n.getAttribute('title'), text: n.textContent })))) as { datetime: string | null; title: string | null; text: string }[]
      expect(times.length).toBeGreaterThan(5)
      for (const t of times) {
        expect(t.datetime, t.text).toMatch(/^\d{4}-\d\d-\d\dT/)
        expect(t.title, t.text).toBe(`${localIn(zone, t.datetime as string)} in this browser's time zone (${zone})`)
      }
      // The chart's cursor says the bucket's time in UTC and in this browser's zone.
      await page.$eval('#chart-requests', (node) => node.scrollIntoView({ block: 'center' }))
      const box = await page.$eval('#chart-requests .u-over', (node) => {
        const r = node.getBoundingClientRect()
        return { x: r.x, y: r.y, width: r.width, height: r.height }
      })
      await page.mouse.move(box.x + box.width * 0.75, box.y + box.height / 2)
      await until("/UTC/.test(document.querySelector('#chart-requests .u-legend .u-series .u-value')?.textContent ?? '')")
      const at = await text('#chart-requests .u-legend .u-series .u-value')
      expect(at).toMatch(/^2026-11-24 00:1\d:\d0 UTC/)
      if (zone !== 'UTC') expect(at).toMatch(/2026-11-23 19:1\d:\d0 in this browser's time zone/)
    })

    it('draws no two labels of a chart over each other, the time in UTC, counts in whole numbers', async () => {
      for (const id of CHARTS) {
        const drawn = (await texts(id)) as Drawn[]
        expect(drawn.length, id).toBeGreaterThan(0)
        expect(overlaps(drawn), id).toEqual([])
        const axes = ((await page.$eval(`#${id}`, (n) => (n as unknown as { dataset: { axes: string } }).dataset.axes)) ?? '').split(' | ')
        expect(axes[0], id).toBe('Time (UTC)')
        const ticks = drawn.filter((t) => !t.rotated && !axes.includes(t.text))
        const time = ticks.filter((t) => t.align === 'center').map((t) => t.text)
        // Times of day in UTC, 24-hour, the date under the first and under midnight.
        expect(time.filter((t) => /^\d\d:\d\d$/.test(t)).length, `${id}: ${time.join(', ')}`).toBeGreaterThanOrEqual(4)
        for (const t of time) expect(t, id).toMatch(/^(\d\d:\d\d|\d{4}-\d\d-\d\d)$/)
        expect(time, id).toContain('2026-11-24')
        if (timeLabels.has(id)) expect(time, id).toEqual(timeLabels.get(id))
        else timeLabels.set(id, time)
        // The count axes (every axis but ms and %) say whole numbers.
        const left = ticks.filter((t) => t.align === 'right').map((t) => t.text)
        const right = ticks.filter((t) => t.align === 'left').map((t) => t.text)
        expect(left.length, id).toBeGreaterThanOrEqual(3)
        for (const [values, axis] of [[left, axes[1]], [right, axes[2]]] as const) {
          if (!axis || /\((ms|%)[,)]/.test(axis)) continue
          for (const v of values) expect(v, `${id} ${axis}: ${values.join(', ')}`).toMatch(/^\d+$/)
        }
      }
      await (await page.$('#chart-platform'))?.screenshot({ path: shot('chart-platform') })
      await (await page.$('#chart-inflight'))?.screenshot({ path: shot('chart-inflight') })
    })

    it('keeps its labels apart over every window: 5 minutes, 15 minutes, the hour, fitted to the data', async () => {
      for (const [window, buckets] of [['5m', 30], ['15m', 90], ['1h', 360], ['fit', 151]] as const) {
        await page.select('#chart-window', window)
        await until(`document.getElementById('chart-requests').dataset.buckets === '${buckets}'`)
        await page.evaluate('new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))')
        for (const id of CHARTS) {
          const drawn = (await texts(id)) as Drawn[]
          expect(overlaps(drawn), `${id} over ${window}`).toEqual([])
          for (const t of drawn.filter((d) => d.align === 'center' && !d.rotated && !d.text.startsWith('Time'))) expect(t.text, `${id} over ${window}`).toMatch(/^(\d\d:\d\d|\d{4}-\d\d-\d\d)$/)
        }
        if (window === '5m') await (await page.$('section[aria-labelledby="h-history"]'))?.screenshot({ path: shot('charts-5m') })
      }
    })

    it('draws each series on an axis that shows it: none flattened on a border, none hidden under another', async () => {
      const legends: Record<string, string[]> = {}
      for (const id of CHARTS) {
        const series = (await page.evaluate(`globalThis.__chartSeries(${JSON.stringify(id)})`)) as DrawnSeries[]
        legends[id] = series.map((s) => s.label)
        for (const s of series) {
          expect(s.axis, `${id}: ${s.label} has an axis`).toBe(true)
          if (s.max === null || s.max <= 0) continue
          // Its highest value is drawn clear of the bottom border (5 % of the plot at least) and below the top one.
          const peak = Math.min(...(s.ys.filter((y) => y !== null) as number[]))
          expect(1 - peak / s.height, `${id}: ${s.label} (highest ${s.max}) drawn at ${Math.round(100 - (100 * peak) / s.height)} % of the plot`).toBeGreaterThanOrEqual(0.05)
          expect(peak, `${id}: ${s.label} on the top border`).toBeGreaterThan(2)
        }
        // Two series on different axes never drawn one over the other all along.
        for (const a of series) {
          for (const b of series) {
            if (a.label >= b.label || a.scale === b.scale) continue
            const both = a.ys.flatMap((y, i) => (y === null || b.ys[i] === null || b.ys[i] === undefined ? [] : [Math.abs(y - (b.ys[i] as number))]))
            if (both.length > 0) expect(Math.max(...both), `${id}: ${a.label} drawn over ${b.label}`).toBeGreaterThan(2)
          }
        }
      }
      // The limit in force with the calls in flight (calls), the latency floor with the latencies (ms).
      expect(legends['chart-inflight']).toEqual(['In flight', 'Waiting', 'Limit in force'])
      expect(legends['chart-platform']).toEqual(['Platform calls', 'p50 latency', 'p99 latency', 'Latency floor'])
    })

    it('fits the default window to the data\'s age: 25 minutes of data, the last 25 minutes', async () => {
      expect(await page.$eval('#chart-window', (n) => (n as unknown as { value: string }).value)).toBe('fit')
      expect(await text('#chart-window option:checked')).toBe('since the data starts (25 min)')
      expect(await page.$eval('#chart-requests', (n) => (n as unknown as { dataset: { buckets: string } }).dataset.buckets)).toBe('151')
      expect(await text('#chart-requests-summary')).toMatch(/^Last 25 min: /)
    })

    it('says the latencies and the floor of one bucket, the newest with timed calls, and when: never the floor of a replica gone 8 minutes ago', async () => {
      const platform = await text('#chart-platform-summary')
      expect(platform).toMatch(/^Last 25 min: \d+ platform calls; in the 10 s from 2026-11-24 00:20:00 UTC: latency p50 [\d.]+ ms, p99 \d+ ms, floor –\.$/)
      expect(platform).not.toContain('4017.9')
      expect(await text('#chart-inflight-summary')).toMatch(/^Newest reading, in the 10 s from 2026-11-24 00:20:00 UTC: \d in flight of a limit of 4, \d waiting\.$/)
      expect(await text('#chart-hits-summary')).toMatch(/^In the 10 s from 2026-11-24 00:20:00 UTC, the newest with report reads: [\d.]+ % of them answered by the cache\.$/)
    })

    it('reads a crashed replica whose replacement is ready as replaced: the banner green, the gone replica in grey with its hour', async () => {
      expect(await page.$eval('#health', (n) => n.className)).toBe('health ok')
      const health = await text('#health')
      expect(health).toMatch(/^All is well: 2 replicas ready/)
      expect(health).toContain(`replica ${FIXTURE_IDS.crashed} crashed (no clean stop, last seen 2026-11-24 00:12:00 UTC) and was replaced by ${FIXTURE_IDS.replacement}`)
      const row = `#replicas tr[data-gone="vanished"]`
      expect(await text(row)).toMatch(new RegExp(`${FIXTURE_IDS.crashed}[\\s\\S]*gone: no clean stop, last seen 2026-11-24 00:12:00 UTC; replaced by ${FIXTURE_IDS.replacement}`))
      // Its last announcement's calls (3 in flight, 2 waiting) are of 8 minutes ago: none now, and its uptime is how long it ran.
      const cells = await page.$$eval(`${row} td`, (nodes) => nodes.map((n) => n.textContent))
      expect([cells[1], cells[4], cells[5]]).toEqual(['ran 17 min', '–', '–'])
      // Grey: every text of its row in the page's muted colour, none in red.
      const muted = await page.evaluate("getComputedStyle(document.querySelector('.muted')).color")
      const colours = await page.$$eval(`${row} th, ${row} td, ${row} span`, (nodes) => {
        const style = (globalThis as unknown as { getComputedStyle: (node: unknown) => { color: string } }).getComputedStyle
        return [...new Set(nodes.map((n) => style(n).color))]
      })
      expect(colours).toEqual([muted])
      await (await page.$('#health'))?.screenshot({ path: shot('health') })
    })
  })
})
