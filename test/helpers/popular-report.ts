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

/**
 * A gateway of TEAMS_YAML on a fake clock, refresh ahead on and every copy fresh `freshS`, and
 * growth's report (POPULAR_REPORT) asked enough in its first freshness that a refresh ahead is
 * due before it expires: the clock at POPULAR_AT_MS. `ask` answers x-cache; `refreshes`, the
 * refreshes ahead of an outcome so far. The fixtures are the test file's.
 */
export function usePopularReport(freshS: number) {
  const sandbox = useSandbox()
  const gateways = useGateways()
  const configMap = useConfigMaps()
  return async () => {
    const clock = fakeClock()
    const file = configMap(`${TEAMS_YAML}${stringify({ cache: { ttl: { recent: `${freshS}s`, settled: `${freshS}s` }, refreshAhead: true } })}`)
    const env = { LOG_LEVEL: 'info', CONFIG_FILE: file.path, PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }
    const gw = await gateways.build(loadConfig({ env }), { clock: onRealTimers(clock.now), timers: clock.timers, configSource: { env } })
    const ask = async (url: string, key: string) => (await gw.proxy.inject({ method: 'GET', url, headers: { 'x-api-key': key } })).headers['x-cache']
    const refreshes = async (outcome: 'started' | 'completed') =>
      Number(new RegExp(`gateway_cache_refresh_ahead_total\\{outcome="${outcome}"\\} (\\d+)`).exec((await gw.admin.inject({ method: 'GET', url: '/metrics' })).body)?.[1] ?? 0)
    expect(await ask(POPULAR_REPORT, KEYS.growth)).toBe('MISS')
    clock.advance(25_000)
    for (let i = 2; i <= POPULAR; i++) {
      if (i === POPULAR) clock.advance(BUDGET_EVERY_MS)
      expect(await ask(POPULAR_REPORT, KEYS.growth)).toBe('HIT')
    }
    return { clock, ask, refreshes }
  }
}
