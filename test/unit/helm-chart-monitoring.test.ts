/**
 * The chart's monitoring: the PrometheusRule (each alert, its thresholds, its runbook_url)
 * and the Grafana dashboard. How the chart is rendered without helm: helm-chart.test.ts.
 */
import { describe, it, expect } from 'vitest'
import { mergeValues as merge, type Manifest, type Values } from '../helpers/render-chart.js'
import { chartFile, install, one, services, ALERTS, RUNBOOK, REDIS_ALERTS, type PrometheusRule, rulesOf, alertOf } from '../helpers/chart-manifests.js'

describe('PrometheusRule (monitoring.prometheusRule)', () => {
  const WITH_REDIS = { redis: { url: 'redis://redis:6379' } }
  /** The chart with Redis and its PrometheusRule on: `rule` on top of that, `monitoring` beside it. */
  const withRule = (rule: Values = {}, monitoring: Values = {}) => install({ values: { ...WITH_REDIS, monitoring: { ...monitoring, prometheusRule: { enabled: true, ...rule } } } })
  const chart = withRule({}, { runbookUrl: RUNBOOK })

  it('is a Prometheus Operator PrometheusRule with one group of the gateway alerts', () => {
    const rule = one<PrometheusRule>(chart, 'PrometheusRule')
    expect(rule.apiVersion).toBe('monitoring.coreos.com/v1')
    expect(rule.metadata.name).toBe('rgw-report-gateway')
    expect(rule.spec.groups.map((g) => g.name)).toEqual(['report-gateway'])
    expect(rulesOf(chart).map((r) => r.alert)).toEqual(ALERTS)
  })

  it('gives every alert a severity, a summary, a description and a runbook_url to docs/operations/alerts.md#alert-<name>', () => {
    for (const rule of rulesOf(chart)) {
      expect(Object.keys(rule.annotations).sort(), rule.alert).toEqual(['description', 'runbook_url', 'summary'])
      expect(rule.annotations.runbook_url, rule.alert).toBe(`${RUNBOOK}#alert-${rule.alert.toLowerCase()}`)
      expect(rule.labels.severity, rule.alert).toMatch(/^(critical|warning)$/)
      expect(rule.for, rule.alert).toMatch(/^\d+[smh]$/)
      expect(rule.annotations.summary.length, rule.alert).toBeGreaterThan(10)
      expect(rule.annotations.description.length, rule.alert).toBeGreaterThan(rule.annotations.summary.length)
    }
    expect(alertOf(chart, 'GatewayTokenRefused').labels.severity).toBe('critical')
    expect(alertOf(chart, 'GatewayTokenExpiryImminent').labels.severity).toBe('critical')
    expect(alertOf(chart, 'GatewayTokenExpiringSoon').labels.severity).toBe('warning')
    expect(alertOf(chart, 'GatewayConfigReloadRefused')).toMatchObject({ for: '2m', labels: { severity: 'critical' } })
    expect(alertOf(chart, 'GatewayConfigReloadRefused').expr).toMatch(/^min by \(namespace, job, pod\) \(gateway_config_last_reload_successful\{.*\}\) == 0$/)
  })

  it("sends GatewayConfigReloadRefused to the log line the chart's pods write: they read CONFIG_FILE and TEAMS_FILE", () => {
    const env = new Map(one<Manifest & { spec: { template: { spec: { containers: { env: { name: string }[] }[] } } } }>(chart, 'Deployment').spec.template.spec.containers[0]!.env.map((e) => [e.name, e]))
    expect(env.has('CONFIG_FILE') && env.has('TEAMS_FILE')).toBe(true)
    // src/access/team-reload.ts names the files in use; test/slow/team-reload.test.ts checks this line.
    const logged = 'CONFIG_FILE and TEAMS_FILE reload refused: the running teams stay'
    const description = alertOf(chart, 'GatewayConfigReloadRefused').annotations.description
    expect(description).toContain('TEAMS_FILE')
    const quoted = [...description.matchAll(/"([^"]+)"/g)].map((m) => m[1]!)
    expect(quoted.length).toBeGreaterThan(0)
    for (const phrase of quoted) expect(logged).toContain(phrase)
  })

  it("sends GatewayConfigReloadRefused to the pod's status too, where the problems are kept: teamsReload.refused", () => {
    expect(alertOf(chart, 'GatewayConfigReloadRefused').annotations.description).toContain('teamsReload.refused of its GET /admin/status')
  })

  it('leaves runbook_url out while monitoring.runbookUrl is empty (the default), and says so in NOTES.txt', () => {
    const bare = withRule()
    for (const rule of rulesOf(bare)) expect(Object.keys(rule.annotations).sort(), rule.alert).toEqual(['description', 'summary'])
    expect(bare.notes).toContain('monitoring.runbookUrl is empty: the alerts carry no runbook_url')
    expect(chart.notes).not.toContain('monitoring.runbookUrl is empty')
    expect(install().notes).not.toContain('monitoring.runbookUrl is empty')
  })

  it("leaves Prometheus' own template markers in the annotations for Prometheus", () => {
    expect(alertOf(chart, 'GatewayTokenRefused').annotations.summary).toContain('{{ $labels.credential }}')
    expect(alertOf(chart, 'GatewayTeamRateLimited').annotations.description).toContain('{{ $labels.team }}')
    expect(alertOf(chart, 'GatewayTokenExpiringSoon').annotations.description).toContain('{{ $value | humanizeDuration }}')
  })

  it("selects this release's series: its namespace and the job of the admin Service the ServiceMonitor scrapes", () => {
    const { admin } = services(chart)
    const selector = `namespace="reports",job="${admin.metadata.name}"`
    for (const rule of rulesOf(chart)) expect(rule.expr, rule.alert).toContain(selector)
    const custom = withRule({}, { selector: 'job="gateway"' })
    for (const rule of rulesOf(custom)) {
      expect(rule.expr, rule.alert).toContain('{job="gateway"')
      expect(rule.expr, rule.alert).not.toContain('namespace="reports"')
    }
  })

  it('alerts on the metrics of src/observe/metrics.ts, as the brief names them', () => {
    const exprs = Object.fromEntries(rulesOf(chart).map((r) => [r.alert, r.expr.replace(/\s+/g, ' ')]))
    expect(exprs.GatewayTokenRefused).toMatch(/^min by \(namespace, job, credential\) \(gateway_platform_token_usable\{[^}]*\}\) == 0$/)
    expect(exprs.GatewayTokenExpiringSoon).toMatch(/gateway_platform_token_seconds_left\{[^}]*\}\) < 30 \* 86400$/)
    expect(exprs.GatewayTokenExpiryImminent).toMatch(/gateway_platform_token_seconds_left\{[^}]*\}\) < 7 \* 86400$/)
    expect(exprs.GatewayPlatformErrors).toContain('gateway_platform_calls_total{namespace="reports",job="rgw-report-gateway-admin",outcome=~"GW_.*"}[5m]')
    expect(exprs.GatewayPlatformErrors).toMatch(/\) > 0\.05$/)
    expect(exprs.GatewayRedisDown).toMatch(/gateway_redis_up\{[^}]*\} == 0\) > 0$/)
    expect(exprs.GatewayRedisReadOnly).toMatch(/^count by \(namespace, job\) \(gateway_redis_writable\{namespace="reports",job="rgw-report-gateway-admin"\} == 0\) > 0$/)
    expect(exprs.GatewayRedisUnverified).toMatch(/^sum by \(namespace, job, what\) \(increase\(gateway_redis_unverified_total\{namespace="reports",job="rgw-report-gateway-admin"\}\[10m\]\)\) > 0$/)
    expect(alertOf(chart, 'GatewayRedisReadOnly')).toMatchObject({ for: '5m', labels: { severity: 'warning' } })
    expect(alertOf(chart, 'GatewayRedisUnverified')).toMatchObject({ for: '15m', labels: { severity: 'warning' } })
    expect(exprs.GatewayCacheHitRatioLow).toContain('result=~"HIT|STALE"}[30m]')
    expect(exprs.GatewayCacheHitRatioLow).toMatch(/\) < 0\.5 and .*\) > 0\.05$/)
    expect(exprs.GatewayTeamRateLimited).toMatch(/^sum by \(namespace, job, team\) \(rate\(gateway_rate_limited_total\{[^}]*\}\[10m\]\)\) > 0\.1$/)
    expect(exprs.GatewayApiKeyExpiresSoon).toBe('min by (namespace, job, team, key) (gateway_api_key_expiry_seconds{namespace="reports",job="rgw-report-gateway-admin"}) < 14 * 86400')
    expect(alertOf(chart, 'GatewayApiKeyExpiresSoon')).toMatchObject({ for: '1h', labels: { severity: 'warning' } })
    expect(alertOf(chart, 'GatewayApiKeyExpiresSoon').annotations.summary).toBe('API key {{ $labels.key }} of team {{ $labels.team }} expires within 14 days')
    expect(alertOf(chart, 'GatewayApiKeyExpiresSoon').annotations.description).toContain('npm run keys -- new --team TEAM --id ID --expires 90d')
    expect(exprs.GatewayRedisClockSkew).toBe('max by (namespace, job, pod) (abs(gateway_redis_clock_offset_seconds{namespace="reports",job="rgw-report-gateway-admin"})) > 5')
    expect(alertOf(chart, 'GatewayRedisClockSkew')).toMatchObject({ for: '10m', labels: { severity: 'warning' } })
    expect(alertOf(chart, 'GatewayRedisClockSkew').annotations.description).toContain('NTP')
    // A team's series appears with its first suspension, which increase() alone misses (it needs two samples).
    expect(exprs.GatewayTeamSuspended).toBe('sum by (namespace, job, team) ( (gateway_team_suspensions_total{namespace="reports",job="rgw-report-gateway-admin"} unless gateway_team_suspensions_total{namespace="reports",job="rgw-report-gateway-admin"} offset 1h) or increase(gateway_team_suspensions_total{namespace="reports",job="rgw-report-gateway-admin"}[1h]) ) > 0')
    expect(alertOf(chart, 'GatewayTeamSuspended')).toMatchObject({ for: '0m', labels: { severity: 'critical' } })
    expect(alertOf(chart, 'GatewayTeamSuspended').annotations.summary).toContain('{{ $labels.team }}')
    expect(alertOf(chart, 'GatewayTeamSuspended').annotations.description).toContain('DELETE /admin/suspensions/{{ $labels.team }}')
    expect(exprs.GatewayLatencyHigh).toMatch(/^histogram_quantile\(0\.99, sum by \(namespace, job, route, le\) \(rate\(gateway_request_duration_seconds_bucket\{[^}]*,route=~"report\|proxy"\}\[5m\]\)\)\) > 2\.5$/)
  })

  it('takes every threshold, window, for: and severity from values', () => {
    const tuned = withRule({
      alerts: {
        tokenRefused: { for: '1m', severity: 'page' },
        tokenExpiringSoon: { days: 45, for: '1h' },
        tokenExpiryImminent: { days: 10 },
        platformErrors: { ratio: 0.2, window: '15m', errorOutcomes: 'GW_UPSTREAM.*' },
        cacheHitRatioLow: { ratio: 0.7, window: '1h', minRequestsPerSecond: 1 },
        teamRateLimited: { perSecond: 2, window: '5m' },
        latencyHigh: { seconds: 1, window: '10m', routes: 'report' },
        redisReadOnly: { for: '2m', severity: 'critical' },
        redisUnverified: { unverified: 20, window: '30m', for: '5m', severity: 'critical' },
        apiKeyExpiresSoon: { days: 30, for: '6h', severity: 'critical' },
        redisClockSkew: { seconds: 2.5, for: '30m', severity: 'critical' },
        teamSuspended: { window: '6h', for: '1m', severity: 'page' },
      },
    })
    expect(alertOf(tuned, 'GatewayTokenRefused')).toMatchObject({ for: '1m', labels: { severity: 'page' } })
    expect(alertOf(tuned, 'GatewayTokenExpiringSoon').for).toBe('1h')
    expect(alertOf(tuned, 'GatewayTokenExpiringSoon').expr).toMatch(/< 45 \* 86400$/)
    expect(alertOf(tuned, 'GatewayTokenExpiringSoon').annotations.summary).toContain('within 45 days')
    expect(alertOf(tuned, 'GatewayTokenExpiryImminent').expr).toMatch(/< 10 \* 86400$/)
    const errors = alertOf(tuned, 'GatewayPlatformErrors').expr
    expect(errors).toContain('outcome=~"GW_UPSTREAM.*"}[15m]')
    expect(errors).toMatch(/> 0\.2$/)
    const hits = alertOf(tuned, 'GatewayCacheHitRatioLow').expr.replace(/\s+/g, ' ')
    expect(hits).toContain('[1h]')
    expect(hits).toMatch(/< 0\.7 and .* > 1$/)
    expect(alertOf(tuned, 'GatewayTeamRateLimited').expr).toMatch(/\[5m\]\)\) > 2$/)
    expect(alertOf(tuned, 'GatewayLatencyHigh').expr).toMatch(/route=~"report"\}\[10m\]\)\)\) > 1$/)
    expect(alertOf(tuned, 'GatewayRedisReadOnly')).toMatchObject({ for: '2m', labels: { severity: 'critical' } })
    expect(alertOf(tuned, 'GatewayRedisUnverified')).toMatchObject({ for: '5m', labels: { severity: 'critical' } })
    expect(alertOf(tuned, 'GatewayRedisUnverified').expr).toMatch(/\[30m\]\)\) > 20$/)
    expect(alertOf(tuned, 'GatewayApiKeyExpiresSoon')).toMatchObject({ for: '6h', labels: { severity: 'critical' } })
    expect(alertOf(tuned, 'GatewayApiKeyExpiresSoon').expr).toMatch(/< 30 \* 86400$/)
    expect(alertOf(tuned, 'GatewayApiKeyExpiresSoon').annotations.summary).toContain('within 30 days')
    expect(alertOf(tuned, 'GatewayRedisClockSkew')).toMatchObject({ for: '30m', labels: { severity: 'critical' } })
    expect(alertOf(tuned, 'GatewayRedisClockSkew').expr).toMatch(/\)\) > 2\.5$/)
    expect(alertOf(tuned, 'GatewayRedisClockSkew').annotations.summary).toContain('2.5 s')
    expect(alertOf(tuned, 'GatewayTeamSuspended')).toMatchObject({ for: '1m', labels: { severity: 'page' } })
    expect(alertOf(tuned, 'GatewayTeamSuspended').expr.replace(/\s+/g, ' ')).toMatch(/ offset 6h\) or increase\(.*\[6h\]\) \) > 0$/)
  })

  it('leaves out disabled alerts, and adds alert labels, rule labels and another namespace', () => {
    const other = withRule({
      namespace: 'monitoring',
      labels: { release: 'kube-prometheus-stack' },
      alertLabels: { team: 'ads-platform' },
      alerts: { cacheHitRatioLow: { enabled: false }, teamRateLimited: { enabled: false } },
    })
    const rule = one<PrometheusRule>(other, 'PrometheusRule')
    expect(rule.metadata.namespace).toBe('monitoring')
    expect(rule.metadata.labels).toMatchObject({ release: 'kube-prometheus-stack' })
    expect(rulesOf(other).map((r) => r.alert)).toEqual(ALERTS.filter((a) => a !== 'GatewayCacheHitRatioLow' && a !== 'GatewayTeamRateLimited'))
    for (const r of rulesOf(other)) expect(r.labels, r.alert).toEqual({ severity: r.labels.severity, team: 'ads-platform' })
    // The series still come from the release namespace.
    for (const r of rulesOf(other)) expect(r.expr, r.alert).toContain('namespace="reports"')
  })

  it('alerts on Redis only for a gateway that uses Redis (without it, gateway_redis_up and gateway_redis_writable are 0)', () => {
    const alerts = (values: Values) => rulesOf(install({ values: merge({ monitoring: { prometheusRule: { enabled: true } } }, values) })).map((r) => r.alert)
    expect(alerts({})).toEqual(ALERTS.filter((a) => !REDIS_ALERTS.includes(a)))
    expect(alerts({ redis: { existingSecret: { name: 'redis' } } })).toEqual(expect.arrayContaining(REDIS_ALERTS))
    expect(alerts({ config: { redis: { sentinels: [{ host: 'sentinel', port: 26379 }] } } })).toEqual(expect.arrayContaining(REDIS_ALERTS))
    expect(alerts({ ...WITH_REDIS, monitoring: { prometheusRule: { alerts: { redisReadOnly: { enabled: false }, redisUnverified: { enabled: false } } } } })).toEqual(ALERTS.filter((a) => a !== 'GatewayRedisReadOnly' && a !== 'GatewayRedisUnverified'))
  })
})

describe('Grafana dashboard (monitoring.dashboard)', () => {
  const file = chartFile('dashboards/report-gateway.json')
  const chart = install({ values: { monitoring: { dashboard: { enabled: true } } } })
  const configMap = () => one(chart, 'ConfigMap', 'rgw-report-gateway-dashboard') as Manifest & { data: Record<string, string> }

  it('ships dashboards/report-gateway.json (loaded with .Files.Get) in a ConfigMap with the sidecar label', () => {
    const cm = configMap()
    expect(cm.metadata.labels).toMatchObject({ grafana_dashboard: '1' })
    expect(Object.keys(cm.data)).toEqual(['report-gateway.json'])
    expect(JSON.parse(cm.data['report-gateway.json']!)).toEqual(JSON.parse(file))
    expect(cm.data['report-gateway.json']).toBe(file.replace(/\n$/, ''))
  })

  it("takes the sidecar's label key and value, annotations and a namespace from values", () => {
    const other = install({
      values: { monitoring: { dashboard: { enabled: true, labelKey: 'grafana.example.com/dashboard', labelValue: 'gateways', namespace: 'monitoring', annotations: { grafana_folder: 'Gateways' } } } },
    })
    const cm = one(other, 'ConfigMap', 'rgw-report-gateway-dashboard')
    expect(cm.metadata.labels?.['grafana.example.com/dashboard']).toBe('gateways')
    expect(cm.metadata.labels?.grafana_dashboard).toBeUndefined()
    expect(cm.metadata.namespace).toBe('monitoring')
    expect(cm.metadata.annotations).toEqual({ grafana_folder: 'Gateways' })
  })

  it('is a Grafana dashboard with a data source variable and the panels the operators need', () => {
    const dashboard = JSON.parse(file) as {
      uid: string
      title: string
      templating: { list: { name: string; type: string }[] }
      panels: { type: string; title: string; datasource?: { uid: string }; targets?: { expr: string }[] }[]
    }
    expect(dashboard.uid).toBe('report-gateway')
    expect(dashboard.title).toBe('Report gateway')
    expect(dashboard.templating.list.map((v) => `${v.name}:${v.type}`)).toEqual(['datasource:datasource', 'namespace:query', 'job:query'])
    const panels = dashboard.panels.filter((p) => p.type !== 'row')
    for (const p of panels) expect(p.datasource?.uid, p.title).toBe('${datasource}')
    const exprs = (title: string) => {
      const panel = panels.find((p) => p.title === title)
      expect(panel, title).toBeDefined()
      return (panel!.targets ?? []).map((t) => t.expr).join('\n')
    }
    expect(exprs('Request rate by route and status')).toContain('sum by (route, status) (rate(gateway_requests_total{')
    expect(exprs('Latency p50 / p99 by route')).toMatch(/histogram_quantile\(0\.5,[\s\S]*histogram_quantile\(0\.99,/)
    expect(exprs('Cache results by tier')).toContain('sum by (result, tier) (rate(gateway_cache_requests_total{')
    expect(exprs('Cache hit ratio')).toContain('result=~"HIT|STALE"')
    expect(exprs('Platform calls by outcome')).toContain('gateway_platform_calls_total')
    expect(exprs('Platform error ratio')).toContain('outcome=~"GW_.*"')
    expect(exprs('Platform token seconds left')).toContain('gateway_platform_token_seconds_left')
    expect(exprs('Redis up by pod')).toContain('gateway_redis_up')
    expect(exprs('Rate-limited requests by team')).toContain('sum by (team) (rate(gateway_rate_limited_total{')
    // The governor on its own words (docs/governor.md): the seats, not the permits of the last release.
    expect(exprs('Limit in force, knee and seats held')).toMatch(/gateway_platform_concurrency_limit\{[\s\S]*gateway_platform_knee\{[\s\S]*gateway_platform_seats_held\{/)
    expect(exprs('Seats lost by credential')).toContain('gateway_platform_seats_lost_total{')
    expect(file).not.toMatch(/permit|slot/i)
    // Every query is limited to the chosen namespace and job.
    for (const p of panels) for (const t of p.targets ?? []) expect(t.expr, p.title).toContain('namespace="$namespace",job=~"$job"')
  })
})
