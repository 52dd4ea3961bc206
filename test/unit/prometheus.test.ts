/**
 * The chart's PromQL: the PrometheusRule (monitoring.prometheusRule) and the Grafana
 * dashboard (helm/report-gateway/dashboards/report-gateway.json).
 *
 * - Every series and label they name exists in src/observe/metrics.ts (plus the target labels
 *   the ServiceMonitor adds), so a renamed metric breaks this test, not an alert at 3 am.
 * - `promtool check rules` on the rendered rule's groups, and `promtool test rules` with
 *   synthetic series: each alert fires when it should, with the labels it should, and
 *   stays quiet otherwise. promtool comes from Debian's `prometheus` package (.ci/run
 *   installs it); without it these are skipped and the run's last line says so
 *   (helpers/missing-tools.ts), which with CI=true fails the run (as for redis-server).
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { stringify } from 'yaml'
import { CHART, RUNBOOK, ruleGroups, type Group } from '../helpers/prometheus-rules.js'
import { needTool, TOOLS } from '../helpers/missing-tools.js'
import { ALERTS } from '../helpers/chart-manifests.js'
import { createMetrics } from '../../src/observe/metrics.js'

// ---------------------------------------------------------------- names against src/observe/metrics.ts

/** Labels Prometheus adds to every scraped series (ServiceMonitor targets). */
const TARGET_LABELS = ['namespace', 'job', 'pod', 'instance', 'service', 'container', 'endpoint']

/** Every series name the gateway exposes, with the labels it may carry. */
function seriesCatalogue(): Map<string, Set<string>> {
  const catalogue = new Map<string, Set<string>>()
  for (const metric of createMetrics().registry.getMetricsAsArray()) {
    const m = metric as unknown as { name: string; type: string; labelNames?: string[] }
    const labels = [...(m.labelNames ?? []), ...TARGET_LABELS]
    if (m.type === 'histogram') {
      catalogue.set(`${m.name}_bucket`, new Set([...labels, 'le']))
      catalogue.set(`${m.name}_sum`, new Set(labels))
      catalogue.set(`${m.name}_count`, new Set(labels))
    } else {
      catalogue.set(m.name, new Set(labels))
    }
  }
  return catalogue
}

/** Problems of one PromQL expression: unknown series, and labels none of its series carry. */
function checkExpr(expr: string, catalogue: Map<string, Set<string>>, extraLabels: string[] = []): string[] {
  const problems: string[] = []
  const names = [...new Set(expr.match(/\bgateway_[a-z0-9_]+/g) ?? [])]
  if (names.length === 0) problems.push('names no gateway series')
  const allowed = new Set<string>(extraLabels)
  for (const name of names) {
    const labels = catalogue.get(name)
    if (!labels) problems.push(`unknown series ${name}`)
    else for (const l of labels) allowed.add(l)
  }
  const used = new Set<string>()
  for (const [, inner] of expr.matchAll(/\{([^}]*)\}/g)) {
    for (const [, label] of inner!.matchAll(/([A-Za-z_]\w*)\s*(?:=~|!~|!=|=)\s*"/g)) used.add(label!)
  }
  for (const [, list] of expr.matchAll(/\b(?:by|without)\s*\(([^)]*)\)/g)) {
    for (const label of list!.split(',').map((l) => l.trim()).filter(Boolean)) used.add(label)
  }
  for (const label of used) if (!allowed.has(label)) problems.push(`label ${label} is on none of ${names.join(', ')}`)
  return problems
}

describe('the PromQL of the chart names what src/observe/metrics.ts exposes', () => {
  const catalogue = seriesCatalogue()

  it('knows the gateway metrics (the catalogue itself)', () => {
    for (const name of ['gateway_requests_total', 'gateway_request_duration_seconds_bucket', 'gateway_cache_requests_total', 'gateway_platform_calls_total', 'gateway_rate_limited_total', 'gateway_platform_token_seconds_left', 'gateway_platform_token_usable', 'gateway_redis_up']) {
      expect(catalogue.has(name), name).toBe(true)
    }
    expect(checkExpr('sum by (nope) (gateway_requests_total{route="x"})', catalogue)).toEqual(['label nope is on none of gateway_requests_total'])
    expect(checkExpr('gateway_request_total', catalogue)).toEqual(['unknown series gateway_request_total'])
  })

  it('in every alert of the PrometheusRule, and in its $labels', () => {
    for (const rule of ruleGroups().flatMap((g) => g.rules)) {
      expect(checkExpr(rule.expr, catalogue), rule.alert).toEqual([])
      // An annotation's $labels.x must be a label the alert keeps (its `by` list).
      const by = new Set([...rule.expr.matchAll(/\bby\s*\(([^)]*)\)/g)].flatMap(([, l]) => l!.split(',').map((s) => s.trim())))
      for (const text of Object.values(rule.annotations ?? {})) {
        for (const [, label] of text.matchAll(/\$labels\.(\w+)/g)) expect(by, `${rule.alert}: $labels.${label}`).toContain(label)
      }
    }
  })

  it('in every panel of the Grafana dashboard, and in its legends', () => {
    const dashboard = JSON.parse(readFileSync(join(CHART, 'dashboards/report-gateway.json'), 'utf8')) as {
      panels: { title: string; targets?: { expr: string; legendFormat?: string }[] }[]
      templating: { list: { name: string; definition?: string }[] }
    }
    let targets = 0
    for (const panel of dashboard.panels) {
      for (const target of panel.targets ?? []) {
        targets++
        expect(checkExpr(target.expr, catalogue), panel.title).toEqual([])
        const legendLabels = [...(target.legendFormat ?? '').matchAll(/\{\{\s*(\w+)\s*\}\}/g)].map(([, l]) => l!)
        const by = [...target.expr.matchAll(/\bby\s*\(([^)]*)\)/g)].flatMap(([, l]) => l!.split(',').map((s) => s.trim()))
        // Without an aggregation the series keep all their labels.
        const kept = by.length > 0 ? by : [...TARGET_LABELS, ...[...(catalogue.get(target.expr.match(/\bgateway_[a-z0-9_]+/)![0]) ?? [])]]
        for (const label of legendLabels) expect(kept, `${panel.title}: legend {{${label}}}`).toContain(label)
      }
    }
    expect(targets).toBeGreaterThan(10)
    for (const variable of dashboard.templating.list) {
      if (variable.definition) expect(checkExpr(variable.definition, catalogue), variable.name).toEqual([])
    }
  })
})

// ---------------------------------------------------------------- promtool

const promtool = { available: needTool(TOOLS.promtool, spawnSync('promtool', ['--version'], { stdio: 'ignore' }).status === 0, 'the PrometheusRule check') }

const work = mkdtempSync(join(tmpdir(), 'rgw-promtool-'))
afterAll(() => rmSync(work, { recursive: true, force: true }))

function runPromtool(args: string[]): { status: number | null; output: string } {
  const result = spawnSync('promtool', args, { cwd: work, encoding: 'utf8' })
  return { status: result.status, output: `${result.stdout}${result.stderr}` }
}

/** The rendered rule's spec.groups as a Prometheus rule file. */
function writeRuleFile(name: string, groups: Group[]): string {
  writeFileSync(join(work, name), stringify({ groups }))
  return name
}

const SEL = 'namespace="reports",job="rgw-report-gateway-admin"'
const TARGET = { namespace: 'reports', job: 'rgw-report-gateway-admin' }

interface AlertCase {
  eval_time: string
  alertname: string
  exp_alerts: { exp_labels: Record<string, string>; exp_annotations?: Record<string, string> }[]
}
interface TestGroup {
  name: string
  interval: string
  input_series: { series: string; values: string }[]
  alert_rule_test: AlertCase[]
}

const firing = (eval_time: string, alertname: string, ...labels: Record<string, string>[]): AlertCase => ({
  eval_time,
  alertname,
  exp_alerts: labels.map((l) => ({ exp_labels: l })),
})

// Synthetic series for every alert (interval 1m): one case that fires, one that must not.
const TESTS: TestGroup[] = [
  {
    name: 'GatewayTokenRefused: one replica without a usable token, for longer than 2m',
    interval: '1m',
    input_series: [
      { series: `gateway_platform_token_usable{${SEL},pod="a",credential="default"}`, values: '1 1 0x10' },
      { series: `gateway_platform_token_usable{${SEL},pod="b",credential="default"}`, values: '1x12' },
      { series: `gateway_platform_token_usable{${SEL},pod="a",credential="partner"}`, values: '1x12' },
    ],
    alert_rule_test: [
      firing('3m', 'GatewayTokenRefused'),
      firing('6m', 'GatewayTokenRefused', { severity: 'critical', ...TARGET, credential: 'default' }),
    ],
  },
  {
    name: 'GatewayTokenExpiringSoon / GatewayTokenExpiryImminent: 20 days, 5 days and 60 days left',
    interval: '1m',
    input_series: [
      { series: `gateway_platform_token_seconds_left{${SEL},pod="a",credential="default"}`, values: '1728000-60x40' },
      { series: `gateway_platform_token_seconds_left{${SEL},pod="a",credential="partner"}`, values: '432000-60x40' },
      { series: `gateway_platform_token_seconds_left{${SEL},pod="a",credential="other"}`, values: '5184000-60x40' },
    ],
    alert_rule_test: [
      firing('10m', 'GatewayTokenExpiringSoon'),
      firing('20m', 'GatewayTokenExpiringSoon', { severity: 'warning', ...TARGET, credential: 'default' }, { severity: 'warning', ...TARGET, credential: 'partner' }),
      firing('20m', 'GatewayTokenExpiryImminent', { severity: 'critical', ...TARGET, credential: 'partner' }),
    ],
  },
  {
    name: 'GatewayPlatformErrors: 10% of report calls fail',
    interval: '1m',
    input_series: [
      { series: `gateway_platform_calls_total{${SEL},pod="a",outcome="entry"}`, values: '0+85x40' },
      { series: `gateway_platform_calls_total{${SEL},pod="a",outcome="pass"}`, values: '0+5x40' },
      { series: `gateway_platform_calls_total{${SEL},pod="a",outcome="GW_UPSTREAM"}`, values: '0+7x40' },
      { series: `gateway_platform_calls_total{${SEL},pod="a",outcome="GW_UPSTREAM_TIMEOUT"}`, values: '0+3x40' },
    ],
    alert_rule_test: [firing('5m', 'GatewayPlatformErrors'), firing('25m', 'GatewayPlatformErrors', { severity: 'warning', ...TARGET })],
  },
  {
    // A team that reads no reports, the platform down: its proxied calls alone fail.
    name: 'GatewayPlatformErrors: only proxied calls, 20% of them failing',
    interval: '1m',
    input_series: [
      { series: `gateway_platform_calls_total{${SEL},pod="a",call="proxy",outcome="pass"}`, values: '0+8x40' },
      { series: `gateway_platform_calls_total{${SEL},pod="a",call="proxy",outcome="GW_UPSTREAM"}`, values: '0+2x40' },
    ],
    alert_rule_test: [firing('5m', 'GatewayPlatformErrors'), firing('25m', 'GatewayPlatformErrors', { severity: 'warning', ...TARGET })],
  },
  {
    name: 'GatewayPlatformErrors: 2% of report calls fail (below 5%)',
    interval: '1m',
    input_series: [
      { series: `gateway_platform_calls_total{${SEL},pod="a",outcome="entry"}`, values: '0+98x40' },
      { series: `gateway_platform_calls_total{${SEL},pod="a",outcome="GW_UPSTREAM"}`, values: '0+2x40' },
    ],
    alert_rule_test: [firing('25m', 'GatewayPlatformErrors')],
  },
  {
    name: 'GatewayPlatformErrors: no report calls at all (no ratio)',
    interval: '1m',
    input_series: [
      { series: `gateway_platform_calls_total{${SEL},pod="a",outcome="entry"}`, values: '5x40' },
      { series: `gateway_platform_calls_total{${SEL},pod="a",outcome="GW_UPSTREAM"}`, values: '1x40' },
    ],
    alert_rule_test: [firing('25m', 'GatewayPlatformErrors')],
  },
  {
    name: 'GatewayRedisDown: one of two replicas keeps Redis out',
    interval: '1m',
    input_series: [
      { series: `gateway_redis_up{${SEL},pod="a"}`, values: '1 1 0x20' },
      { series: `gateway_redis_up{${SEL},pod="b"}`, values: '1x22' },
    ],
    alert_rule_test: [firing('4m', 'GatewayRedisDown'), firing('10m', 'GatewayRedisDown', { severity: 'warning', ...TARGET })],
  },
  {
    name: 'GatewayRedisReadOnly: one of two replicas finds Redis refusing writes for longer than 5m; a 3m refusal on another stays quiet',
    interval: '1m',
    input_series: [
      { series: `gateway_redis_writable{${SEL},pod="a"}`, values: '1 1 0x20' },
      { series: `gateway_redis_writable{${SEL},pod="b"}`, values: '1x22' },
    ],
    alert_rule_test: [firing('4m', 'GatewayRedisReadOnly'), firing('10m', 'GatewayRedisReadOnly', { severity: 'warning', ...TARGET })],
  },
  {
    name: 'GatewayRedisReadOnly: a refusal shorter than 5m',
    interval: '1m',
    input_series: [{ series: `gateway_redis_writable{${SEL},pod="a"}`, values: '1 1 0 0 0 1x20' }],
    alert_rule_test: [firing('5m', 'GatewayRedisReadOnly'), firing('10m', 'GatewayRedisReadOnly')],
  },
  {
    name: 'GatewayRedisUnverified: forged entries keep coming on one replica for 40m; no message fails',
    interval: '1m',
    input_series: [
      { series: `gateway_redis_unverified_total{${SEL},pod="a",what="entry"}`, values: '0+2x40' },
      { series: `gateway_redis_unverified_total{${SEL},pod="b",what="entry"}`, values: '0x40' },
      { series: `gateway_redis_unverified_total{${SEL},pod="a",what="message"}`, values: '0x40' },
    ],
    alert_rule_test: [firing('10m', 'GatewayRedisUnverified'), firing('30m', 'GatewayRedisUnverified', { severity: 'warning', ...TARGET, what: 'entry' })],
  },
  {
    name: 'GatewayRedisUnverified: a burst of 3 minutes after a GATEWAY_SECRET rotation, then none',
    interval: '1m',
    input_series: [{ series: `gateway_redis_unverified_total{${SEL},pod="a",what="entry"}`, values: '0 50 100 150 150x60' }],
    alert_rule_test: [firing('5m', 'GatewayRedisUnverified'), firing('20m', 'GatewayRedisUnverified'), firing('40m', 'GatewayRedisUnverified')],
  },
  {
    name: 'GatewayCacheHitRatioLow: one read in three from the cache; BYPASS does not count',
    interval: '1m',
    input_series: [
      { series: `gateway_cache_requests_total{${SEL},pod="a",result="HIT",tier="l1"}`, values: '0+20x100' },
      { series: `gateway_cache_requests_total{${SEL},pod="a",result="STALE",tier="l2"}`, values: '0+10x100' },
      { series: `gateway_cache_requests_total{${SEL},pod="a",result="MISS",tier="platform"}`, values: '0+60x100' },
      { series: `gateway_cache_requests_total{${SEL},pod="a",result="BYPASS",tier="platform"}`, values: '0+600x100' },
    ],
    alert_rule_test: [firing('20m', 'GatewayCacheHitRatioLow'), firing('80m', 'GatewayCacheHitRatioLow', { severity: 'warning', ...TARGET })],
  },
  {
    name: 'GatewayCacheHitRatioLow: 90% of the reads from the cache',
    interval: '1m',
    input_series: [
      { series: `gateway_cache_requests_total{${SEL},pod="a",result="HIT",tier="l1"}`, values: '0+90x100' },
      { series: `gateway_cache_requests_total{${SEL},pod="a",result="MISS",tier="platform"}`, values: '0+10x100' },
    ],
    alert_rule_test: [firing('80m', 'GatewayCacheHitRatioLow')],
  },
  {
    name: 'GatewayCacheHitRatioLow: no hits, but only a trickle of reads (2 a minute)',
    interval: '1m',
    input_series: [{ series: `gateway_cache_requests_total{${SEL},pod="a",result="MISS",tier="platform"}`, values: '0+2x100' }],
    alert_rule_test: [firing('80m', 'GatewayCacheHitRatioLow')],
  },
  {
    name: 'GatewayTeamRateLimited: growth refused 0.5/s, bi 0.05/s',
    interval: '1m',
    input_series: [
      { series: `gateway_rate_limited_total{${SEL},pod="a",team="growth"}`, values: '0+20x60' },
      { series: `gateway_rate_limited_total{${SEL},pod="b",team="growth"}`, values: '0+10x60' },
      { series: `gateway_rate_limited_total{${SEL},pod="a",team="bi"}`, values: '0+3x60' },
    ],
    alert_rule_test: [firing('10m', 'GatewayTeamRateLimited'), firing('40m', 'GatewayTeamRateLimited', { severity: 'warning', ...TARGET, team: 'growth' })],
  },
  {
    name: 'GatewayLatencyHigh: p99 of report requests near 10s; proxy fast; unmatched routes not watched',
    interval: '1m',
    input_series: [
      ...histogram('report', { '0.1': 10, '0.5': 20, '1': 30, '2.5': 40, '5': 90, '10': 100, '+Inf': 100 }),
      ...histogram('proxy', { '0.1': 100, '0.5': 100, '1': 100, '2.5': 100, '5': 100, '10': 100, '+Inf': 100 }),
      ...histogram('unmatched', { '0.1': 0, '0.5': 0, '1': 0, '2.5': 0, '5': 0, '10': 0, '+Inf': 100 }),
    ],
    alert_rule_test: [firing('8m', 'GatewayLatencyHigh'), firing('20m', 'GatewayLatencyHigh', { severity: 'warning', ...TARGET, route: 'report' })],
  },
  {
    name: 'GatewayConfigReloadRefused: one of two replicas refuses its files for longer than 2m',
    interval: '1m',
    input_series: [
      { series: `gateway_config_last_reload_successful{${SEL},pod="a"}`, values: '1 1 0x10' },
      { series: `gateway_config_last_reload_successful{${SEL},pod="b"}`, values: '1x12' },
    ],
    alert_rule_test: [
      firing('3m', 'GatewayConfigReloadRefused'),
      firing('6m', 'GatewayConfigReloadRefused', { severity: 'critical', ...TARGET, pod: 'a' }),
    ],
  },
  {
    name: 'GatewayApiKeyExpiresSoon: a key with 14 days and 30 minutes left, one expired, one with 60 days; two replicas',
    interval: '1m',
    input_series: [
      { series: `gateway_api_key_expiry_seconds{${SEL},pod="a",team="growth",key="growth-2026"}`, values: '1211400-60x120' },
      { series: `gateway_api_key_expiry_seconds{${SEL},pod="b",team="growth",key="growth-2026"}`, values: '1211400-60x120' },
      { series: `gateway_api_key_expiry_seconds{${SEL},pod="a",team="ops",key="ops-old"}`, values: '-3600-60x120' },
      { series: `gateway_api_key_expiry_seconds{${SEL},pod="a",team="ops",key="ops-2027"}`, values: '5184000-60x120' },
    ],
    alert_rule_test: [
      // ops-old is below 14 days from the start, growth-2026 from minute 30: each fires an hour later.
      firing('50m', 'GatewayApiKeyExpiresSoon'),
      firing('70m', 'GatewayApiKeyExpiresSoon', { severity: 'warning', ...TARGET, team: 'ops', key: 'ops-old' }),
      firing('95m', 'GatewayApiKeyExpiresSoon', { severity: 'warning', ...TARGET, team: 'growth', key: 'growth-2026' }, { severity: 'warning', ...TARGET, team: 'ops', key: 'ops-old' }),
    ],
  },
  {
    name: 'GatewayPlatformPaused: credential default paused once a minute, bi once in 10 minutes',
    interval: '1m',
    input_series: [
      { series: `gateway_platform_pauses_total{${SEL},pod="a",credential="default"}`, values: '0+1x60' },
      { series: `gateway_platform_pauses_total{${SEL},pod="a",credential="bi"}`, values: '0+0.1x60' },
    ],
    alert_rule_test: [firing('10m', 'GatewayPlatformPaused'), firing('40m', 'GatewayPlatformPaused', { severity: 'warning', ...TARGET, credential: 'default' })],
  },
  {
    name: 'GatewayPlatformCallsRefused: queue_full 0.5/s and deadline 0.2/s on default, paused 0.01/s',
    interval: '1m',
    input_series: [
      { series: `gateway_platform_refused_total{${SEL},pod="a",credential="default",reason="queue_full"}`, values: '0+30x60' },
      { series: `gateway_platform_refused_total{${SEL},pod="a",credential="default",reason="deadline"}`, values: '0+12x60' },
      { series: `gateway_platform_refused_total{${SEL},pod="a",credential="default",reason="paused"}`, values: '0+0.6x60' },
    ],
    alert_rule_test: [
      firing('5m', 'GatewayPlatformCallsRefused'),
      firing('40m', 'GatewayPlatformCallsRefused', { severity: 'warning', ...TARGET, credential: 'default', reason: 'deadline' }, { severity: 'warning', ...TARGET, credential: 'default', reason: 'queue_full' }),
    ],
  },
  {
    name: 'GatewayPlatformQueueHigh: 80 calls queued on one replica for 20 minutes, 10 on another credential',
    interval: '1m',
    input_series: [
      { series: `gateway_platform_queued_calls{${SEL},pod="a",credential="default"}`, values: '80x30' },
      { series: `gateway_platform_queued_calls{${SEL},pod="b",credential="bi"}`, values: '10x30' },
    ],
    alert_rule_test: [firing('5m', 'GatewayPlatformQueueHigh'), firing('20m', 'GatewayPlatformQueueHigh', { severity: 'warning', ...TARGET, credential: 'default' })],
  },
  {
    name: 'GatewayRedisClockSkew: replica a 30 s ahead of Redis for 20 minutes, b 0.4 s behind, c 8 s behind for 5 minutes only',
    interval: '1m',
    input_series: [
      { series: `gateway_redis_clock_offset_seconds{${SEL},pod="a"}`, values: '0 0 -30x20' },
      { series: `gateway_redis_clock_offset_seconds{${SEL},pod="b"}`, values: '0.4x22' },
      { series: `gateway_redis_clock_offset_seconds{${SEL},pod="c"}`, values: '0 8x5 0x16' },
    ],
    alert_rule_test: [
      firing('8m', 'GatewayRedisClockSkew'),
      firing('15m', 'GatewayRedisClockSkew', { severity: 'warning', ...TARGET, pod: 'a' }),
    ],
  },
  {
    name: 'GatewayRedisClockSkew: replicas 3 s ahead and 4.5 s behind Redis (within 5 s)',
    interval: '1m',
    input_series: [
      { series: `gateway_redis_clock_offset_seconds{${SEL},pod="a"}`, values: '-3x30' },
      { series: `gateway_redis_clock_offset_seconds{${SEL},pod="b"}`, values: '4.5x30' },
    ],
    alert_rule_test: [firing('25m', 'GatewayRedisClockSkew')],
  },
  {
    // growth's series appears with its first suspension (no sample before: the counter starts
    // at a team's first suspension), which increase() alone misses; bi was suspended before
    // the hour the alert looks back over.
    name: 'GatewayTeamSuspended: growth suspended at minute 70 (its series appears) and again at 111; bi suspended long before',
    interval: '1m',
    input_series: [
      { series: `gateway_team_suspensions_total{${SEL},pod="a",team="growth"}`, values: '_x70 1x40 2x100' },
      { series: `gateway_team_suspensions_total{${SEL},pod="b",team="bi"}`, values: '2x250' },
    ],
    alert_rule_test: [
      firing('65m', 'GatewayTeamSuspended'),
      firing('70m', 'GatewayTeamSuspended', { severity: 'critical', ...TARGET, team: 'growth' }),
      firing('129m', 'GatewayTeamSuspended', { severity: 'critical', ...TARGET, team: 'growth' }),
      firing('165m', 'GatewayTeamSuspended', { severity: 'critical', ...TARGET, team: 'growth' }),
      firing('175m', 'GatewayTeamSuspended'),
    ],
  },
  {
    name: 'GatewayTeamSuspended: two teams suspended before the hour looked back over, no suspension since',
    interval: '1m',
    input_series: [
      { series: `gateway_team_suspensions_total{${SEL},pod="a",team="growth"}`, values: '1x200' },
      { series: `gateway_team_suspensions_total{${SEL},pod="b",team="bi"}`, values: '3x200' },
    ],
    alert_rule_test: [firing('61m', 'GatewayTeamSuspended'), firing('120m', 'GatewayTeamSuspended'), firing('190m', 'GatewayTeamSuspended')],
  },
  {
    // Two replicas scraped for 20 minutes, then none (both down, or the scrape lost them):
    // quiet while one is scraped, then firing after 5 minutes with none (a series is stale
    // 5 minutes after its last sample), with the selector's labels.
    name: 'GatewayAbsent: both replicas scraped, then one, then none',
    interval: '1m',
    input_series: [
      { series: `gateway_build_info{${SEL},pod="a",version="1.0.0",commit="unknown",node="v24"}`, values: '1x20' },
      { series: `gateway_build_info{${SEL},pod="b",version="1.0.0",commit="unknown",node="v24"}`, values: '1x10' },
      { series: `gateway_build_info{namespace="other",job="rgw-report-gateway-admin",pod="c",version="1.0.0",commit="unknown",node="v24"}`, values: '1x60' },
    ],
    alert_rule_test: [
      firing('15m', 'GatewayAbsent'),
      firing('27m', 'GatewayAbsent'),
      firing('32m', 'GatewayAbsent', { severity: 'critical', ...TARGET }),
    ],
  },
]

/** Cumulative buckets growing by `perMinute[le]` each minute. */
function histogram(route: string, perMinute: Record<string, number>) {
  return Object.entries(perMinute).map(([le, n]) => ({ series: `gateway_request_duration_seconds_bucket{${SEL},pod="a",route="${route}",le="${le}"}`, values: `0+${n}x40` }))
}

describe.skipIf(!promtool.available)('promtool on the rendered PrometheusRule', () => {
  it('passes `promtool check rules` (PromQL, durations, annotation templates)', () => {
    const file = writeRuleFile('rules.yaml', ruleGroups())
    const { status, output } = runPromtool(['check', 'rules', file])
    expect(output).toContain(`SUCCESS: ${ALERTS.length} rules found`)
    expect(status, output).toBe(0)
  })

  it('passes `promtool check rules` with tuned values, alert labels and another selector', () => {
    const groups = ruleGroups({
      monitoring: {
        selector: 'job=~"gateway|report-gateway-admin",cluster="eu-1"',
        prometheusRule: {
          alertLabels: { team: 'ads-platform' },
          alerts: { tokenExpiringSoon: { days: 14.5 }, platformErrors: { errorOutcomes: 'GW_UPSTREAM|GW_UPSTREAM_TIMEOUT', window: '1h' }, latencyHigh: { seconds: 0.75, routes: 'report' } },
        },
      },
    })
    const { status, output } = runPromtool(['check', 'rules', writeRuleFile('tuned.yaml', groups)])
    expect(status, output).toBe(0)
  })

  it('passes `promtool test rules`: every alert fires on its condition with the expected labels, and not otherwise', () => {
    // Annotations are left out here (promtool would compare their text in full); `check
    // rules` above parses their templates, and the next test renders one for real.
    const groups = ruleGroups().map((g) => ({ ...g, rules: g.rules.map(({ annotations: _annotations, ...rule }) => rule) }))
    const covered = new Set(TESTS.flatMap((t) => t.alert_rule_test.map((c) => c.alertname)))
    expect([...covered].sort()).toEqual(groups.flatMap((g) => g.rules.map((r) => r.alert)).sort())
    // promtool evaluates every rule of a test's rule files at each minute up to its last
    // eval_time, though a case checks only the alert it names: each test gets a file of its
    // own with the rules of the alerts it names (a third of the CPU of one file with all of them),
    // and one promtool process runs them all.
    const files = TESTS.map((test, i) => {
      const named = new Set(test.alert_rule_test.map((c) => c.alertname))
      const rules = writeRuleFile(`rules-bare-${i}.yaml`, groups.map((g) => ({ ...g, rules: g.rules.filter((r) => named.has(r.alert)) })).filter((g) => g.rules.length > 0))
      writeFileSync(join(work, `tests-${i}.yaml`), stringify({ rule_files: [rules], evaluation_interval: '1m', tests: [test] }))
      return `tests-${i}.yaml`
    })
    const { status, output } = runPromtool(['test', 'rules', ...files])
    expect(status, output).toBe(0)
    expect(output.match(/^\s*SUCCESS$/gm), output).toHaveLength(TESTS.length)
  })

  it('fills in the annotations: GatewayTokenRefused names the credential and links its runbook', () => {
    writeRuleFile('rules-full.yaml', ruleGroups())
    const test = {
      ...TESTS[0]!,
      alert_rule_test: [
        {
          eval_time: '6m',
          alertname: 'GatewayTokenRefused',
          exp_alerts: [
            {
              exp_labels: { severity: 'critical', ...TARGET, credential: 'default' },
              exp_annotations: {
                summary: 'The platform refuses the token of credential default',
                description:
                  "The platform refuses the gateway's token for credential default (reports/rgw-report-gateway-admin). Calls that need the platform answer 502 GW_PLATFORM_AUTH; cached reports are still served. Put a new token in place: update the Secret, PUT /admin/token, or POST /admin/token/refresh for a password login.",
                runbook_url: `${RUNBOOK}#alert-gatewaytokenrefused`,
              },
            },
          ],
        },
      ],
    }
    writeFileSync(join(work, 'tests-full.yaml'), stringify({ rule_files: ['rules-full.yaml'], evaluation_interval: '1m', tests: [test] }))
    const { status, output } = runPromtool(['test', 'rules', 'tests-full.yaml'])
    expect(status, output).toBe(0)
  })

  it('fails a broken rule (the check is real)', () => {
    const broken = ruleGroups().map((g) => ({ ...g, rules: [{ ...g.rules[0]!, expr: 'min by (credential (gateway_platform_token_usable) == 0' }] }))
    const { status } = runPromtool(['check', 'rules', writeRuleFile('broken.yaml', broken)])
    expect(status).not.toBe(0)
  })
})

// ---------------------------------------------------------------- windows against the scrape interval

/** Milliseconds of a Prometheus duration (one unit: 30s, 5m, 1h, 1d, 1w, 1y). */
function durationMs(text: string): number {
  const m = /^(\d+)(ms|s|m|h|d|w|y)$/.exec(text)
  if (!m) throw new Error(`not a Prometheus duration: ${text}`)
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000, y: 31_536_000_000 }[m[2] as 'ms']
  return Number(m[1]) * unit
}

/** The windows of every rate() and increase() of the rendered rules, by alert. */
function windows(groups: Group[]): { alert: string; window: string }[] {
  return groups.flatMap((g) => g.rules.flatMap((r) => [...r.expr.matchAll(/\b(?:rate|increase)\([^[]*\[([^\]]+)\]/g)].map(([, window]) => ({ alert: r.alert, window: window! }))))
}

/** Every alert with a window, at `window`. */
const windowed = (window: string) => Object.fromEntries(['platformErrors', 'redisUnverified', 'cacheHitRatioLow', 'teamRateLimited', 'latencyHigh', 'platformPaused', 'platformRefused', 'teamSuspended'].map((a) => [a, { window }]))

const monitored = (interval: string, alerts: Record<string, unknown> = {}) => ({ serviceMonitor: { enabled: true, interval, scrapeTimeout: '5s' }, monitoring: { prometheusRule: { alerts } } })

describe('the alerts\' rate() and increase() windows against the ServiceMonitor\'s scrape interval', () => {
  it('hold four scrapes at least for every interval the schema allows: a shorter window is refused at render, naming the alert, the window and the interval', () => {
    // A window of fewer than four scrapes is empty or jumps with one scrape missed (rate() needs two samples in it).
    for (const interval of ['10s', '15s', '30s', '1m', '75s', '76s', '2m', '5m', '15m', '1h']) {
      let groups: Group[]
      try {
        groups = ruleGroups(monitored(interval))
      } catch (err) {
        expect(String(err)).toMatch(/^.*monitoring\.prometheusRule\.alerts\.\w+\.window: \d+\w+ is shorter than 4 × serviceMonitor\.interval/)
        expect(String(err)).toContain(`serviceMonitor.interval (${interval})`)
        expect(windows(ruleGroups()).some((w) => durationMs(w.window) < 4 * durationMs(interval)), `${interval} refused though every window holds four scrapes`).toBe(true)
        continue
      }
      for (const w of windows(groups)) expect(durationMs(w.window), `${w.alert} at interval ${interval}`).toBeGreaterThanOrEqual(4 * durationMs(interval))
    }
    // The chart's default interval takes the default windows; the shortest (5m) allows 75s at most.
    expect(windows(ruleGroups(monitored('30s'))).length).toBeGreaterThan(0)
    expect(() => ruleGroups(monitored('76s'))).toThrow(/alerts\.latencyHigh\.window: 5m is shorter than 4 × serviceMonitor\.interval \(76s\): 304s at least/)
  })

  it('refuses a window set shorter than four scrapes of the default interval, in any unit Prometheus reads, and takes one lengthened to match a longer interval', () => {
    expect(() => ruleGroups(monitored('30s', { teamRateLimited: { window: '90s' } }))).toThrow(/alerts\.teamRateLimited\.window: 90s is shorter than 4 × serviceMonitor\.interval \(30s\): 120s at least/)
    expect(() => ruleGroups(monitored('6h', { ...windowed('1d'), teamSuspended: { window: '23h' } }))).toThrow(/alerts\.teamSuspended\.window: 23h is shorter than 4 × serviceMonitor\.interval \(6h\): 86400s at least/)
    expect(windows(ruleGroups(monitored('6h', windowed('1d')))).map((w) => w.window)).toEqual(windows(ruleGroups()).map(() => '1d'))
    expect(windows(ruleGroups(monitored('1h', windowed('1w')))).map((w) => w.window)).toEqual(windows(ruleGroups()).map(() => '1w'))
    // A disabled alert's window is not checked; without the chart's ServiceMonitor the interval is not the chart's to know.
    expect(() => ruleGroups(monitored('30s', { teamRateLimited: { enabled: false, window: '90s' } }))).not.toThrow()
    expect(() => ruleGroups({ serviceMonitor: { enabled: false, interval: '5m' } })).not.toThrow()
  })
})

describe.skipIf(!promtool.available)('promtool on a window of four scrapes', () => {
  it('fires GatewayPlatformErrors with its window at four times a 2m scrape interval, one scrape missed', () => {
    const groups = ruleGroups(monitored('2m', windowed('8m'))).map((g) => ({ ...g, rules: g.rules.filter((r) => r.alert === 'GatewayPlatformErrors').map(({ annotations: _annotations, ...rule }) => rule) }))
    writeRuleFile('rules-2m.yaml', groups)
    const test = {
      name: 'GatewayPlatformErrors scraped every 2m, a scrape missed',
      interval: '2m',
      input_series: [
        { series: `gateway_platform_calls_total{${SEL},pod="a",outcome="entry"}`, values: '0+180x6 _ 1260+180x20' },
        { series: `gateway_platform_calls_total{${SEL},pod="a",outcome="GW_UPSTREAM"}`, values: '0+20x6 _ 140+20x20' },
      ],
      alert_rule_test: [firing('30m', 'GatewayPlatformErrors', { severity: 'warning', ...TARGET })],
    }
    writeFileSync(join(work, 'tests-2m.yaml'), stringify({ rule_files: ['rules-2m.yaml'], evaluation_interval: '1m', tests: [test] }))
    const { status, output } = runPromtool(['test', 'rules', 'tests-2m.yaml'])
    expect(status, output).toBe(0)
  })
})
