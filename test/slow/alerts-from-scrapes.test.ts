/**
 * The chart's alerts on what a real gateway's /metrics says while things fail, not on
 * series written by hand (test/unit/prometheus.test.ts does that): a gateway on a real
 * Redis and the sandbox is scraped once per round of traffic, each scrape taken as one
 * minute of a Prometheus at interval 1m, while Redis is killed and comes back empty, Redis
 * refuses writes (maxmemory reached), the platform answers 500, the platform refuses the token until PUT /admin/token puts a
 * new one, the teams' CONFIG_FILE (a ConfigMap) is changed to one that does not validate until it is fixed,
 * and a team sends the admin token in a request (suspended: its series appears then, an hour of firing). `promtool test rules` then evaluates the rendered PrometheusRule on those
 * series: at the end of each phase every alert is checked, the ones the phase should fire
 * firing with their labels, every other one quiet, and after each recovery none.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { stringify } from 'yaml'
import { KEYS, TEAMS_YAML, TEST_GATEWAY_SECRET } from '../helpers/build-gateway.js'
import { useConfigMaps } from '../helpers/config-map.js'
import { loadConfig } from '../../src/config.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { distinctReport, proxyGet } from '../helpers/gateway-calls.js'
import { needTool, TOOLS } from '../helpers/missing-tools.js'
import { ruleGroups } from '../helpers/prometheus-rules.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

const promtool = needTool(TOOLS.promtool, spawnSync('promtool', ['--version'], { stdio: 'ignore' }).status === 0, 'the alerts on scraped series')
const { available: redis } = redisAvailability('the alerts on scraped series')
const ADMIN_TOKEN = 'alerts-admin-token-0123456789abcdef0123'
/** The labels the ServiceMonitor's target adds to every scraped series, as test/unit/prometheus.test.ts names them. */
const TARGET = { namespace: 'reports', job: 'rgw-report-gateway-admin' }
const TARGET_LABELS = `namespace="${TARGET.namespace}",job="${TARGET.job}",pod="a"`

/** One sample line of the text format: its series (name and labels) and its value. */
function samples(text: string): Map<string, string> {
  const out = new Map<string, string>()
  for (const line of text.split('\n')) {
    if (!line.startsWith('gateway_') || line.startsWith('gateway_process_')) continue
    const cut = line.lastIndexOf(' ')
    const series = line.slice(0, cut)
    const value = line.slice(cut + 1)
    const brace = series.indexOf('{')
    const withTarget = brace < 0 ? `${series}{${TARGET_LABELS}}` : `${series.slice(0, brace + 1)}${TARGET_LABELS},${series.slice(brace + 1)}`
    out.set(withTarget, value)
  }
  return out
}

/** promtool's input series: one value a minute per scrape, `_` where a scrape did not hold the series. */
function inputSeries(scrapes: Map<string, string>[]): { series: string; values: string }[] {
  const names = new Set(scrapes.flatMap((s) => [...s.keys()]))
  return [...names].map((series) => ({ series, values: scrapes.map((s) => (s.has(series) && s.get(series) !== 'NaN' ? s.get(series) : '_')).join(' ') }))
}

describe.skipIf(!promtool || !redis)('the chart alerts on a real gateway scraped while Redis, the platform and the token fail', () => {
  const sandbox = useSandbox()
  const server = useRedis()
  const gateways = useGateways()
  const configMap = useConfigMaps()
  const work = mkdtempSync(join(tmpdir(), 'rgw-alerts-scraped-'))
  afterAll(() => rmSync(work, { recursive: true, force: true }))

  it('fires each alert of a failure while it lasts, and none once it has passed', { timeout: 120_000 }, async () => {
    // The teams in a ConfigMap's file, as the chart mounts it: a change of it is reloaded.
    const teams = configMap(TEAMS_YAML)
    const env = { CONFIG_FILE: teams.path, PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN, REDIS_URL: server.server.url, GATEWAY_SECRET: TEST_GATEWAY_SECRET, LOG_LEVEL: 'info' }
    const gw = await gateways.build(loadConfig({ env }), { configSource: { env } })
    const metric = async (line: RegExp) => line.exec((await gw.admin.inject({ method: 'GET', url: '/metrics' })).body)?.[1]
    const scrapes: Map<string, string>[] = []
    let report = 0
    /** `minutes` rounds of traffic (a new report, then it again twice), each scraped once. */
    const run = async (minutes: number) => {
      for (let i = 0; i < minutes; i++) {
        const path = distinctReport(++report)
        for (let n = 0; n < 3; n++) await proxyGet(gw, path)
        scrapes.push(samples((await gw.admin.inject({ method: 'GET', url: '/metrics' })).body))
      }
      return scrapes.length - 1
    }
    await waitFor('Redis in use', async () => (await metric(/^gateway_redis_up (\S+)$/m)) === '1')

    const calm = await run(6)

    await server.server.stop(true)
    await waitFor('the breaker to keep Redis out', async () => (await proxyGet(gw, distinctReport(++report)), (await metric(/^gateway_redis_up (\S+)$/m)) === '0'))
    const redisDown = await run(8)
    await server.server.restart()
    await waitFor('Redis in use again', async () => (await metric(/^gateway_redis_up (\S+)$/m)) === '1')
    const redisBack = await run(6)

    await server.client.config('SET', 'maxmemory', '1')
    await waitFor('Redis refusing writes', async () => (await proxyGet(gw, distinctReport(++report)), (await metric(/^gateway_redis_writable (\S+)$/m)) === '0'))
    const redisReadOnly = await run(7)
    await server.client.config('SET', 'maxmemory', '0')
    await waitFor('Redis taking writes', async () => (await proxyGet(gw, distinctReport(++report)), (await metric(/^gateway_redis_writable (\S+)$/m)) === '1'))
    const redisWritable = await run(6)

    sandbox.setFailure({ kind: 'status', status: 500 })
    const platformFailing = await run(14)
    sandbox.setFailure({ kind: 'none' })
    const platformBack = await run(10)

    sandbox.revokeAllTokens()
    await waitFor('the token refused', async () => (await proxyGet(gw, distinctReport(++report)), (await metric(/^gateway_platform_token_usable\{credential="default"\} (\S+)$/m)) === '0'))
    const tokenRefused = await run(6)
    const put = await gw.admin.inject({ method: 'PUT', url: '/admin/token', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { token: sandbox.issueToken() } })
    expect(put.statusCode, put.body).toBe(200)
    const tokenBack = await run(10)

    teams.update(`${TEAMS_YAML}  broken:\n    keys: ["sha256:not-hex"]\n    advertisers: [0]\n`)
    await waitFor('the reload refused', async () => (await metric(/^gateway_config_last_reload_successful (\S+)$/m)) === '0')
    const reloadRefused = await run(4)
    teams.update(TEAMS_YAML)
    await waitFor('the teams reloaded', async () => (await metric(/^gateway_config_last_reload_successful (\S+)$/m)) === '1')
    const reloadBack = await run(3)

    // Team growth sends the admin token in its x-request-id: refused 400, and the team is
    // suspended. Its series appears at the next scrape: the alert fires from there for an hour.
    const hit = await gw.proxy.inject({ method: 'GET', url: distinctReport(++report), headers: { 'x-api-key': KEYS.growth, 'x-request-id': `id-${ADMIN_TOKEN}` } })
    expect(hit.statusCode, hit.body).toBe(400)
    expect(await metric(/^gateway_team_suspensions_total\{team="growth"\} (\S+)$/m)).toBe('1')
    const suspended = await run(3)
    const suspendedLate = await run(56)
    const suspensionPast = await run(3)

    const groups = ruleGroups().map((g) => ({ ...g, rules: g.rules.map(({ annotations: _annotations, ...rule }) => rule) }))
    const alerts = groups.flatMap((g) => g.rules.map((r) => r.alert))
    const firing: Record<string, Record<string, Record<string, string>>> = {
      [calm]: {},
      [redisDown]: { GatewayRedisDown: { severity: 'warning', ...TARGET } },
      [redisBack]: {},
      [redisReadOnly]: { GatewayRedisReadOnly: { severity: 'warning', ...TARGET } },
      [redisWritable]: {},
      [platformFailing]: { GatewayPlatformErrors: { severity: 'warning', ...TARGET } },
      [platformBack]: {},
      [tokenRefused]: { GatewayTokenRefused: { severity: 'critical', ...TARGET, credential: 'default' } },
      [tokenBack]: {},
      [reloadRefused]: { GatewayConfigReloadRefused: { severity: 'critical', ...TARGET, pod: 'a' } },
      [reloadBack]: {},
      [suspended]: { GatewayTeamSuspended: { severity: 'critical', ...TARGET, team: 'growth' } },
      [suspendedLate]: { GatewayTeamSuspended: { severity: 'critical', ...TARGET, team: 'growth' } },
      [suspensionPast]: {},
    }
    const alert_rule_test = Object.entries(firing).flatMap(([minute, fired]) =>
      alerts.map((alertname) => ({ eval_time: `${minute}m`, alertname, exp_alerts: fired[alertname] ? [{ exp_labels: fired[alertname] }] : [] })),
    )
    writeFileSync(join(work, 'rules.yaml'), stringify({ groups }))
    const tests = { rule_files: ['rules.yaml'], evaluation_interval: '1m', tests: [{ interval: '1m', input_series: inputSeries(scrapes), alert_rule_test }] }
    writeFileSync(join(work, 'tests.yaml'), stringify(tests))
    const result = spawnSync('promtool', ['test', 'rules', 'tests.yaml'], { cwd: work, encoding: 'utf8' })
    expect(`${result.stdout}${result.stderr}`).toContain('SUCCESS')
    expect(result.status).toBe(0)
  })
})
