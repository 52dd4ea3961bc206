import { expect, it } from 'vitest'
import { KEYS, REPORT_PATH, TEAMS_YAML } from '../helpers/build-gateway.js'
import { loadConfig } from '../../src/config.js'
import { useConfigMaps } from '../helpers/config-map.js'
import { stringify } from 'yaml'
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
const configMap = useConfigMaps()

const CACHE = stringify({ cache: { ttl: { recent: `${FRESH_S}s`, settled: `${FRESH_S}s` }, refreshAhead: true } })

/** A gateway refreshing ahead on a fake clock, its teams `teams` (in a file `reload` rewrites); a GET of REPORT by a key, and the usage rows' platform calls by team. */
async function setUp(teams = TEAMS_YAML) {
  const clock = fakeClock()
  const file = configMap(`${teams}${CACHE}`)
  const env = { LOG_LEVEL: 'info', CONFIG_FILE: file.path, PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN }
  const gw = await gateways.build(loadConfig({ env }), { clock: onRealTimers(clock.now), timers: clock.timers, configSource: { env } })
  const reload = (yaml: string) => {
    file.update(`${yaml}${CACHE}`)
    expect(gw.reloader.reload('admin').result).toBe('applied')
  }
  const ask = (key: string) => gw.proxy.inject({ method: 'GET', url: REPORT, headers: { 'x-api-key': key } })
  const refreshes = async (outcome: string) => Number((await gw.admin.inject({ method: 'GET', url: '/metrics' })).body.match(new RegExp(`gateway_cache_refresh_ahead_total\\{outcome="${outcome}"\\} (\\d+)`))?.[1] ?? 0)
  const calls = async (team: string) => {
    const rows = (JSON.parse((await gw.admin.inject({ method: 'GET', url: '/admin/usage', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).body) as { usage: { team: string; platformCalls: number }[] }).usage
    return rows.find((row) => row.team === team)?.platformCalls ?? 0
  }
  /**
   * The copy is asked POPULAR − 1 times from 25 s after its fill, each a HIT, the first asks
   * by `first` (one ask a key), the others by `key`; then (after `meanwhile`) the clock moves
   * to just before its freshness ends.
   */
  const askPopular = async (key: string, first: string[] = [], meanwhile = () => {}) => {
    clock.advance(25_000)
    for (let i = 2; i <= POPULAR; i++) {
      if (i === POPULAR) clock.advance(BUDGET_EVERY_MS)
      expect((await ask(first[i - 2] ?? key)).headers['x-cache']).toBe('HIT')
    }
    meanwhile()
    clock.advance(FRESH_S * 1000 - 25_000 - BUDGET_EVERY_MS - 1)
  }
  return { ask, refreshes, calls, askPopular, reload }
}

it("charges a refresh ahead to the team whose asks made the report popular, not to the team that filled the copy", async () => {
  const { ask, refreshes, calls, askPopular } = await setUp()
  // growth (101, 102) reads the report once: its MISS fills the copy.
  expect((await ask(KEYS.growth)).headers['x-cache']).toBe('MISS')
  // writer (101) reads it over and over, every answer a HIT.
  await askPopular(KEYS.writer)
  await waitFor('the refresh ahead', async () => (await refreshes('completed')) === 1)
  // growth: its own MISS alone; writer: the refresh its asks made (on main: growth 2, writer 0).
  expect({ growth: await calls('growth'), writer: await calls('writer') }).toEqual({ growth: 1, writer: 1 })
})

// A team past its platformSecondsPerDay is answered from the cache only, without a refresh
// (contract): a refresh ahead is one. Before, its asks of a popular copy had the copy
// refreshed ahead on its seats, over its day's bound, every freshness.
// writer's day: spent by its first platform call (a millisecond at least).
const WRITER_SPENT = TEAMS_YAML.replace('    write: true\n', '    write: true\n    platformSecondsPerDay: 0.0001\n')

it('makes no refresh ahead for a team past its platform-seconds of the day', async () => {
  const { ask, refreshes, calls, askPopular } = await setUp(WRITER_SPENT)
  // writer's MISS (a millisecond at least) spends its day.
  expect((await ask(KEYS.writer)).headers['x-cache']).toBe('MISS')
  await askPopular(KEYS.writer)
  // Its start is decided when it is due: started (on main), or passed by.
  await waitFor('the refresh ahead to be decided', async () => (await refreshes('started')) + (await refreshes('skipped')) === 1)
  expect({ started: await refreshes('started'), skipped: await refreshes('skipped') }).toEqual({ started: 0, skipped: 1 })
  expect(await calls('writer')).toBe(1)
})

// A copy shared by teams is refreshed for all its readers: the team past its day that asks it
// most is passed over, and the refresh is charged to the team that asked it most among those
// that may still spend. Before, that team's spent day skipped the refresh for every reader,
// the others' next reads after its freshness all STALE and refreshed by their own calls.
it('charges a refresh ahead to the team that asked most among those that may still spend', async () => {
  const { ask, refreshes, calls, askPopular } = await setUp(WRITER_SPENT)
  expect((await ask(KEYS.writer)).headers['x-cache']).toBe('MISS')
  // growth (101, 102) asks the copy 3 times, writer (101, past its day) the other 11.
  await askPopular(KEYS.writer, [KEYS.growth, KEYS.growth, KEYS.growth])
  await waitFor('the refresh ahead to be decided', async () => (await refreshes('started')) + (await refreshes('skipped')) === 1)
  // On main: started 0, skipped 1.
  expect({ started: await refreshes('started'), skipped: await refreshes('skipped') }).toEqual({ started: 1, skipped: 0 })
  await waitFor('the refresh ahead', async () => (await refreshes('completed')) === 1)
  expect({ growth: await calls('growth'), writer: await calls('writer') }).toEqual({ growth: 1, writer: 1 })
})

// At a tie among the teams that may still spend, the first to reach the count pays, as the
// watch's own team is kept at a tie: growth asks first, all reaches 2 asks first.
it('charges a refresh ahead, at a tie among the teams that may still spend, to the first to reach the count', async () => {
  const { ask, refreshes, calls, askPopular } = await setUp(WRITER_SPENT)
  expect((await ask(KEYS.writer)).headers['x-cache']).toBe('MISS')
  await askPopular(KEYS.writer, [KEYS.growth, KEYS.all, KEYS.all, KEYS.growth])
  await waitFor('the refresh ahead', async () => (await refreshes('completed')) === 1)
  expect({ all: await calls('all'), growth: await calls('growth'), writer: await calls('writer') }).toEqual({ all: 1, growth: 0, writer: 1 })
})

// A reload that removes the team a watch is charged to leaves the copy's refresh to the teams
// still configured that asked it: the one that asked most, or none. Before, the watch went on
// refreshing in the removed team's name (its seats, its usage) until another team asked more.
const WITHOUT_WRITER = TEAMS_YAML.replace(/ {2}writer:\n( {4}.*\n)+/, '')

it('charges the refresh ahead of a team a reload removed to the team still configured that asked the copy most', async () => {
  const { ask, refreshes, calls, askPopular, reload } = await setUp()
  expect(WITHOUT_WRITER).not.toContain('writer')
  expect((await ask(KEYS.writer)).headers['x-cache']).toBe('MISS')
  // writer asks the copy 11 times, growth 3: the watch is writer's, until the reload removes it.
  await askPopular(KEYS.writer, [KEYS.growth, KEYS.growth, KEYS.growth], () => reload(WITHOUT_WRITER))
  await waitFor('the refresh ahead', async () => (await refreshes('completed')) === 1)
  // On main: growth 0, writer 2.
  expect({ growth: await calls('growth'), writer: await calls('writer') }).toEqual({ growth: 1, writer: 1 })
})

it('makes no refresh ahead of a copy only a team a reload removed asked', async () => {
  const { ask, refreshes, calls, askPopular, reload } = await setUp()
  expect((await ask(KEYS.writer)).headers['x-cache']).toBe('MISS')
  await askPopular(KEYS.writer, [], () => reload(WITHOUT_WRITER))
  // The refresh was due within the clock's move: none started, none passed by (on main: started 1).
  expect({ started: await refreshes('started'), skipped: await refreshes('skipped') }).toEqual({ started: 0, skipped: 0 })
  expect(await calls('writer')).toBe(1)
})
