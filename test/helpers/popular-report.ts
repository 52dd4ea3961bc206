import { expect } from 'vitest'
import { stringify } from 'yaml'
import { KEYS, REPORT_PATH, TEAMS_YAML } from './build-gateway.js'
import { loadConfig } from '../../src/config.js'
import { useConfigMaps } from './config-map.js'
import { fakeClock, onRealTimers } from './clock.js'
import { useGateways, useSandbox } from './fixtures.js'
import { BUDGET_EVERY_MS } from '../../src/reports/refresh-ahead.js'

/** growth's report, read over and over by popularReport. */
export const POPULAR_REPORT = `${REPORT_PATH}?advertiserId=102&byDate=1&dateFrom=2026-01-01&dateTo=2026-01-07`
// Asks in one freshness that qualify a lone report for refresh ahead (as report-cache.test.ts).
const POPULAR = 15
/** Where popularReport leaves the gateway's clock: after the asks that made the report popular. */
export const POPULAR_AT_MS = 25_000 + BUDGET_EVERY_MS

type Ask = (url: string, key: string) => Promise<unknown>

/**
 * A gateway of TEAMS_YAML on a fake clock, refresh ahead on and every copy fresh `freshS`, and a
 * report (`report`, default POPULAR_REPORT) asked enough in its first freshness that a refresh
 * ahead is due before it expires: `before` asks first (nothing: no ask), then the team of
 * `filler` (default growth) fills the copy (a MISS) and growth asks it until it is popular; the
 * clock at POPULAR_AT_MS. `ask` answers x-cache; `refreshes`, the refreshes ahead of an outcome
 * so far. The fixtures are the test file's.
 */
export function usePopularReport(freshS: number) {
  const sandbox = useSandbox()
  const gateways = useGateways()
  const configMap = useConfigMaps()
  return async ({ report = POPULAR_REPORT, filler = KEYS.growth, before }: { report?: string; filler?: string; before?: (ask: Ask) => Promise<void> } = {}) => {
    const clock = fakeClock()
    const file = configMap(`${TEAMS_YAML}${stringify({ cache: { ttl: { recent: `${freshS}s`, settled: `${freshS}s` }, refreshAhead: true } })}`)
    const env = { LOG_LEVEL: 'info', CONFIG_FILE: file.path, PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }
    const gw = await gateways.build(loadConfig({ env }), { clock: onRealTimers(clock.now), timers: clock.timers, configSource: { env } })
    const ask: Ask = async (url, key) => (await gw.proxy.inject({ method: 'GET', url, headers: { 'x-api-key': key } })).headers['x-cache']
    const refreshes = async (outcome: 'started' | 'completed') =>
      Number(new RegExp(`gateway_cache_refresh_ahead_total\\{outcome="${outcome}"\\} (\\d+)`).exec((await gw.admin.inject({ method: 'GET', url: '/metrics' })).body)?.[1] ?? 0)
    await before?.(ask)
    expect(await ask(report, filler)).toBe('MISS')
    clock.advance(25_000)
    for (let i = 2; i <= POPULAR; i++) {
      if (i === POPULAR) clock.advance(BUDGET_EVERY_MS)
      expect(await ask(report, KEYS.growth)).toBe('HIT')
    }
    return { clock, ask, refreshes }
  }
}

/** `key`'s misses of `count` report shapes of advertiser 101, each a work class of its own (a page size 2^i × a page 2^j: access/page-class.ts), every one answered. */
export async function askShapes(ask: Ask, key: string, count: number): Promise<void> {
  let shapes = 0
  for (let i = 0; shapes < count; i++) {
    for (let j = 0; j < 24 && shapes < count; j++, shapes++) {
      expect(await ask(`${REPORT_PATH}?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-07&per_page=${2 ** i}&page=${2 ** j}`, key)).toBe('MISS')
    }
  }
}
