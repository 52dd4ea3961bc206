import { expect, it } from 'vitest'
import { stringify } from 'yaml'
import { KEYS, REPORT_PATH, TEAMS_YAML } from '../helpers/build-gateway.js'
import { loadConfig } from '../../src/config.js'
import { useConfigMaps } from '../helpers/config-map.js'
import { fakeClock, onRealTimers } from '../helpers/clock.js'
import { useGateways, useSandbox } from '../helpers/fixtures.js'
import { waitFor } from '../helpers/wait.js'
import { BUDGET_EVERY_MS } from '../../src/reports/refresh-ahead.js'

// A team asks another team's popular report first, then floods its own part of the
// refresh-ahead watches (16 MiB, report-cache.ts WATCHED_BYTES, each configured team an even
// part once full). `writer` (advertiser 101 only, no rate limit) shares advertiser 101 with
// `growth`: it reads growth's dashboard report when its copy is new (the MISS that fills it
// and begins its watch); growth then asks it 14 times, all hits, making it popular. writer's
// 700 misses of long URLs fill its own part. Were a watch to count on the team whose ask began
// it, room would be made from writer's least recently asked watches, growth's among them, and
// growth's report not refreshed ahead (its first read after the freshness STALE, a platform
// call on its own path). A watch counts on the team that asked it last (team-parts-lru.ts
// `get` with a team): growth's asks make it growth's.

const FRESH_S = 60
const FLOOD = 700
const LONG = 'x'.repeat(14_000)
const DASHBOARD = `${REPORT_PATH}?advertiserId=101&byDate=1&dateFrom=2026-01-01&dateTo=2026-01-07`
const POPULAR = 15
const POPULAR_AT_MS = 25_000 + BUDGET_EVERY_MS

const sandbox = useSandbox()
const gateways = useGateways()
const configMap = useConfigMaps()

it("a team that asked another team's popular report first, then floods its own watches, leaves that report refreshed ahead", async () => {
  const clock = fakeClock()
  const file = configMap(`${TEAMS_YAML}${stringify({ cache: { ttl: { recent: `${FRESH_S}s`, settled: `${FRESH_S}s` }, refreshAhead: true } })}`)
  const env = { LOG_LEVEL: 'info', CONFIG_FILE: file.path, PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }
  const gw = await gateways.build(loadConfig({ env }), { clock: onRealTimers(clock.now), timers: clock.timers, configSource: { env } })
  const ask = async (url: string, key: string) => (await gw.proxy.inject({ method: 'GET', url, headers: { 'x-api-key': key } })).headers['x-cache']
  const refreshes = async (outcome: 'started' | 'completed') =>
    Number(new RegExp(`gateway_cache_refresh_ahead_total\\{outcome="${outcome}"\\} (\\d+)`).exec((await gw.admin.inject({ method: 'GET', url: '/metrics' })).body)?.[1] ?? 0)
  // writer asks growth's dashboard first: the copy's watch begins on writer's part.
  expect(await ask(DASHBOARD, KEYS.writer)).toBe('MISS')
  clock.advance(25_000)
  // growth makes it popular, as usePopularReport does (15 asks in the first freshness, here 14 of growth's).
  for (let i = 2; i <= POPULAR; i++) {
    if (i === POPULAR) clock.advance(BUDGET_EVERY_MS)
    expect(await ask(DASHBOARD, KEYS.growth)).toBe('HIT')
  }
  // writer: misses of distinct long URLs of its own advertiser (a parameter the platform ignores), each watched.
  for (let n = 0; n < FLOOD; n++) expect(await ask(`${REPORT_PATH}?advertiserId=101&dateFrom=2026-02-01&dateTo=2026-02-07&bust=${n}${LONG}`, KEYS.writer)).toBe('MISS')
  // The refresh ahead is due before the freshness ends: its timer runs within this advance (fake clock, synchronous).
  clock.advance(FRESH_S * 1000 - POPULAR_AT_MS - 1)
  const started = await refreshes('started')
  if (started === 1) await waitFor("the refresh ahead of growth's report", async () => (await refreshes('completed')) === 1)
  clock.advance(2)
  expect({ refreshAheadStarted: started, growthRead: await ask(DASHBOARD, KEYS.growth) }).toEqual({ refreshAheadStarted: 1, growthRead: 'HIT' })
}, 180_000)
