import { expect, it } from 'vitest'
import { KEYS, REPORT_PATH, teamsYamlWith, testConfig } from '../helpers/build-gateway.js'
import { fakeClock, onRealTimers } from '../helpers/clock.js'
import { useGateways, useSandbox } from '../helpers/fixtures.js'
import { waitFor } from '../helpers/wait.js'
import { BUDGET_EVERY_MS } from '../../src/reports/refresh-ahead.js'

// A refresh ahead is a platform call made because a report is asked often: it is charged
// to the team whose asks made it popular, never to a team that asked the copy once. Before,
// it was charged to the team whose ask began the copy's watch (its filler), so that another
// team of the same scope, reading that report over and over, had every refresh of it sent on
// the first team's seats and counted against its platform calls and platform-seconds of the
// day, while its own reads were all HITs that cost it nothing.

const ADMIN_TOKEN = 'refresh-charge-admin-token-0123456789'
const FRESH_S = 60
const REPORT = `${REPORT_PATH}?advertiserId=101&byDate=1&dateFrom=2026-01-01&dateTo=2026-01-07`
// Asks in one freshness that qualify a lone report for refresh ahead (as report-cache.test.ts).
const POPULAR = 15

const sandbox = useSandbox()
const gateways = useGateways()

it("charges a refresh ahead to the team whose asks made the report popular, not to the team that filled the copy", async () => {
  const clock = fakeClock()
  const yaml = teamsYamlWith({ cache: { ttl: { recent: `${FRESH_S}s`, settled: `${FRESH_S}s` }, refreshAhead: true } })
  const gw = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN }, yaml), { clock: onRealTimers(clock.now), timers: clock.timers })
  const ask = (key: string) => gw.proxy.inject({ method: 'GET', url: REPORT, headers: { 'x-api-key': key } })
  const metric = async (pattern: RegExp) => Number((await gw.admin.inject({ method: 'GET', url: '/metrics' })).body.match(pattern)?.[1] ?? 0)
  const usage = async () => (await gw.admin.inject({ method: 'GET', url: '/admin/usage', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).body
  // growth (101, 102) reads the report once: its MISS fills the copy.
  expect((await ask(KEYS.growth)).headers['x-cache']).toBe('MISS')
  // writer (101) reads it over and over, every answer a HIT.
  clock.advance(25_000)
  for (let i = 2; i <= POPULAR; i++) {
    if (i === POPULAR) clock.advance(BUDGET_EVERY_MS)
    expect((await ask(KEYS.writer)).headers['x-cache']).toBe('HIT')
  }
  clock.advance(FRESH_S * 1000 - 25_000 - BUDGET_EVERY_MS - 1)
  await waitFor('the refresh ahead', async () => (await metric(/gateway_cache_refresh_ahead_total\{outcome="completed"\} (\d+)/)) === 1)
  const calls = (JSON.parse(await usage()) as { usage: { team: string; platformCalls: number }[] }).usage
  const of = (team: string) => calls.find((row) => row.team === team)?.platformCalls
  // growth: its own MISS alone; writer: the refresh its asks made (on main: growth 2, writer 0).
  expect({ growth: of('growth'), writer: of('writer') }).toEqual({ growth: 1, writer: 1 })
})
