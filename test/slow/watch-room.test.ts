import { expect, it } from 'vitest'
import { KEYS, REPORT_PATH } from '../helpers/build-gateway.js'
import { loadConfig } from '../../src/config.js'
import { useConfigMaps } from '../helpers/config-map.js'
import { stringify } from 'yaml'
import { TEAMS_YAML } from '../helpers/build-gateway.js'
import { fakeClock, onRealTimers } from '../helpers/clock.js'
import { useGateways, useSandbox } from '../helpers/fixtures.js'
import { waitFor } from '../helpers/wait.js'
import { BUDGET_EVERY_MS } from '../../src/reports/refresh-ahead.js'

// A replica watches the reports asked for refresh ahead in 16 MiB (report-cache.ts
// WATCHED_BYTES), a watch as big as its URL. One team's misses with long URLs (14 KB each,
// within the 16 KiB head Node reads), one watch each, would push out another team's watch of
// its popular report, least recently asked first, were the watches one LRU of every team's:
// that report would not be refreshed ahead, and its team's next read after the freshness would be STALE,
// its refresh a platform wait it would not have alone. Each configured team has an even part
// of the watches once they are full, a watch counting on the team whose ask began it.

const FRESH_S = 60
const REPORT = `${REPORT_PATH}?advertiserId=102&byDate=1&dateFrom=2026-01-01&dateTo=2026-01-07`
// Asks in one freshness that qualify a lone report for refresh ahead (as report-cache.test.ts).
const POPULAR = 15
// Misses of URLs of 14 KB: their watches, about 30 KB each, fill the 16 MiB more than once.
const FLOOD = 700
const LONG = 'x'.repeat(14_000)

const sandbox = useSandbox()
const gateways = useGateways()
const configMap = useConfigMaps()

it("one team's many long misses leave another team's popular report refreshed ahead", async () => {
  const clock = fakeClock()
  const file = configMap(`${TEAMS_YAML}${stringify({ cache: { ttl: { recent: `${FRESH_S}s`, settled: `${FRESH_S}s` }, refreshAhead: true } })}`)
  const env = { LOG_LEVEL: 'info', CONFIG_FILE: file.path, PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }
  const gw = await gateways.build(loadConfig({ env }), { clock: onRealTimers(clock.now), timers: clock.timers, configSource: { env } })
  const ask = async (url: string, key: string) => (await gw.proxy.inject({ method: 'GET', url, headers: { 'x-api-key': key } })).headers['x-cache']
  const refreshes = async () => Number((await gw.admin.inject({ method: 'GET', url: '/metrics' })).body.match(/gateway_cache_refresh_ahead_total\{outcome="completed"\} (\d+)/)?.[1] ?? 0)
  // growth reads its report over and over: a refresh ahead is due before it expires.
  expect(await ask(REPORT, KEYS.growth)).toBe('MISS')
  clock.advance(25_000)
  for (let i = 2; i <= POPULAR; i++) {
    if (i === POPULAR) clock.advance(BUDGET_EVERY_MS)
    expect(await ask(REPORT, KEYS.growth)).toBe('HIT')
  }
  // all: misses of distinct long URLs (a parameter the platform ignores), each watched.
  for (let n = 0; n < FLOOD; n++) expect(await ask(`${REPORT_PATH}?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-07&bust=${n}${LONG}`, KEYS.all)).toBe('MISS')
  clock.advance(FRESH_S * 1000 - 25_000 - BUDGET_EVERY_MS - 1)
  await waitFor('the refresh ahead of growth\'s report', async () => (await refreshes()) === 1, 15_000)
  clock.advance(2)
  expect(await ask(REPORT, KEYS.growth)).toBe('HIT')
}, 180_000)
