import { expect, it } from 'vitest'
import { stringify } from 'yaml'
import { KEYS, REPORT_PATH, TEAMS_YAML } from '../helpers/build-gateway.js'
import { loadConfig } from '../../src/config.js'
import { useConfigMaps } from '../helpers/config-map.js'
import { fakeClock, onRealTimers } from '../helpers/clock.js'
import { useGateways, useSandbox } from '../helpers/fixtures.js'
import { BUDGET_EVERY_MS, UNKNOWN_LEAD_SHARE } from '../../src/reports/refresh-ahead.js'
import { LATENCY_CLASSES } from '../../src/reports/report-cache.js'

// A team teaches another team's work class first, on its own advertiser, then floods the
// class latencies of refresh ahead (LATENCY_CLASSES a replica). A class is a report's shape,
// not its account: `writer` (advertiser 101 only) asks one report of the shape of growth's
// dashboard on 101 before growth's first call of it (after a deploy, say), then 520 report
// shapes of its own (page size × page). Were a class to count on the team whose call first
// taught it, growth's calls of it would stay on writer's part and go with writer's flood, and
// growth's popular report be led by a fifth of its freshness (UNKNOWN_LEAD_SHARE): a platform
// call charged to growth per copy, 12 s of 60 early. Each team keeps its own classes' latencies
// (reports/class-latencies.ts), in its own part, whoever else calls the class.

const FRESH_S = 60
const GROWTH_REPORT = `${REPORT_PATH}?advertiserId=102&byDate=1&dateFrom=2026-01-01&dateTo=2026-01-07`
const POPULAR = 15
const POPULAR_AT_MS = 25_000 + BUDGET_EVERY_MS

const sandbox = useSandbox()
const gateways = useGateways()
const configMap = useConfigMaps()

it("a team that taught another team's work class first, then floods its own classes, leaves that team's popular report refreshed ahead as late as before", async () => {
  const clock = fakeClock()
  const file = configMap(`${TEAMS_YAML}${stringify({ cache: { ttl: { recent: `${FRESH_S}s`, settled: `${FRESH_S}s` }, refreshAhead: true } })}`)
  const env = { LOG_LEVEL: 'info', CONFIG_FILE: file.path, PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }
  const gw = await gateways.build(loadConfig({ env }), { clock: onRealTimers(clock.now), timers: clock.timers, configSource: { env } })
  const ask = async (url: string, key: string) => (await gw.proxy.inject({ method: 'GET', url, headers: { 'x-api-key': key } })).headers['x-cache']
  const refreshes = async (outcome: 'started' | 'completed') =>
    Number(new RegExp(`gateway_cache_refresh_ahead_total\\{outcome="${outcome}"\\} (\\d+)`).exec((await gw.admin.inject({ method: 'GET', url: '/metrics' })).body)?.[1] ?? 0)
  // writer: one report of growth's shape on its own advertiser, before growth's first call: the class counts on writer.
  expect(await ask(GROWTH_REPORT.replace('advertiserId=102', 'advertiserId=101'), KEYS.writer)).toBe('MISS')
  // growth's report made popular exactly as usePopularReport does (its miss teaches the class again, on writer's part).
  expect(await ask(GROWTH_REPORT, KEYS.growth)).toBe('MISS')
  clock.advance(25_000)
  for (let i = 2; i <= POPULAR; i++) {
    if (i === POPULAR) clock.advance(BUDGET_EVERY_MS)
    expect(await ask(GROWTH_REPORT, KEYS.growth)).toBe('HIT')
  }
  // writer: a shape of its own per page size × page, every one a miss answered (as latency-room.test.ts's flood).
  let shapes = 0
  for (let i = 0; shapes < LATENCY_CLASSES + 8; i++) {
    for (let j = 0; j < 24 && shapes < LATENCY_CLASSES + 8; j++, shapes++) {
      expect(await ask(`${REPORT_PATH}?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-07&per_page=${2 ** i}&page=${2 ** j}`, KEYS.writer)).toBe('MISS')
    }
  }
  // growth's next ask reads its refresh's start again, with the latency its class has now.
  expect(await ask(GROWTH_REPORT, KEYS.growth)).toBe('HIT')
  // Just past the point a fifth of the freshness before its end: the refresh ahead must not have started yet.
  clock.advance(FRESH_S * 1000 * (1 - UNKNOWN_LEAD_SHARE) - POPULAR_AT_MS + 1)
  expect({ refreshesAheadStartedWithAFifthOfTheFreshnessLeft: await refreshes('started') }).toEqual({ refreshesAheadStartedWithAFifthOfTheFreshnessLeft: 0 })
}, 180_000)
