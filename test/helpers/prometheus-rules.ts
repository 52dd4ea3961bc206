import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { mergeValues, renderChart, type Manifest, type Values } from './render-chart.js'

// The chart's PrometheusRule, rendered as an installation with Redis gets it: the alerts
// test/unit/prometheus.test.ts checks with synthetic series and
// test/slow/alerts-from-scrapes.test.ts with a real gateway's.

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
export const CHART = join(ROOT, 'helm/report-gateway')

export interface AlertRule {
  alert: string
  expr: string
  for?: string
  labels?: Record<string, string>
  annotations?: Record<string, string>
}
export interface Group {
  name: string
  rules: AlertRule[]
}

/** Where an installation publishes docs/operations/alerts.md (monitoring.runbookUrl). */
export const RUNBOOK = 'https://git.ads.internal/platform/report-gateway/blob/main/docs/operations/alerts.md'

/** The rendered rule's spec.groups, the chart's values merged under `values`. */
export function ruleGroups(values: Values = {}): Group[] {
  // With Redis: the Redis alerts are only rendered for a gateway that uses Redis.
  const base = { image: { repository: 'registry.internal/ads/report-gateway' }, platform: { baseUrl: 'https://dsp-api.example.com' }, redis: { url: 'redis://redis:6379' }, monitoring: { runbookUrl: RUNBOOK, prometheusRule: { enabled: true } } }
  const chart = renderChart(CHART, { values: mergeValues(base, values) })
  const rule = chart.manifests.find((m) => m.kind === 'PrometheusRule') as (Manifest & { spec: { groups: Group[] } }) | undefined
  if (!rule) throw new Error('no PrometheusRule rendered')
  return rule.spec.groups
}
