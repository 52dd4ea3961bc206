/**
 * What the chart tests share (test/unit/helm-chart*.test.ts): the chart as an install
 * renders it, the values every install names, the shapes of the manifests they read, and
 * the files and configuration the pod would see, read by the gateway's own loader.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect } from 'vitest'
import { mergeValues as merge, renderChart, type Manifest, type RenderOptions, type RenderedChart, type Values } from './render-chart.js'
import { loadConfigFrom } from './load-config.js'

export const ROOT = fileURLToPath(new URL('../../', import.meta.url))
export const CHART = join(ROOT, 'helm/report-gateway')
/** A file of the chart, as text. */
export const chartFile = (path: string) => readFileSync(join(CHART, path), 'utf8')
/** The chart's version (Chart.yaml), as its `helm.sh/chart` label names it. */
export const CHART_VERSION = /^version: (\S+)$/m.exec(chartFile('Chart.yaml'))?.[1] ?? ''

// The contract's variables ("Configuration"), each secret one also as *_FILE.
export const CONTRACT_ENV = new Set([
  'HOST',
  'PORT',
  'ADMIN_HOST',
  'ADMIN_PORT',
  'ADMIN_HOSTS',
  'ADMIN_TOKEN_FILE',
  'ADMIN_VIEWER_TOKEN_FILE',
  'ADMIN_TOKENS_FILE',
  'GATEWAY_SECRET_FILE',
  'PLATFORM_BASE_URL',
  'PLATFORM_TOKEN_FILE',
  'PLATFORM_USERNAME_FILE',
  'PLATFORM_PASSWORD_FILE',
  'PLATFORM_CLIENT_ID_FILE',
  'PLATFORM_CLIENT_SECRET_FILE',
  'PLATFORM_TOKEN_URL',
  'PLATFORM_GRANT_TYPE',
  'REDIS_URL',
  'CONFIG_FILE',
  'TEAMS_FILE',
  'LOG_LEVEL',
  // OpenTelemetry's standard variables (contract, "Configuration": traces).
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_PROTOCOL',
  'OTEL_EXPORTER_OTLP_HEADERS',
  'OTEL_SERVICE_NAME',
  'OTEL_RESOURCE_ATTRIBUTES',
  'OTEL_TRACES_SAMPLER',
  'OTEL_TRACES_SAMPLER_ARG',
])

/** The image every install names: the chart has none of its own (image.repository is required). */
export const IMAGE = 'registry.internal/ads/report-gateway'
/** The platform's address every install names (platform.baseUrl is required). */
export const PLATFORM = 'https://dsp-api.example.com'

/** The chart as `helm install --set image.repository=<IMAGE> --set platform.baseUrl=<PLATFORM>` renders it, with more values. */
export function install(options: RenderOptions = {}): RenderedChart {
  return renderChart(CHART, { ...options, values: merge({ image: { repository: IMAGE }, platform: { baseUrl: PLATFORM } }, options.values ?? {}) })
}

export const SECRETS = {
  platformToken: 'plat-token-4f1c9a0e7b2d',
  adminToken: 'admin-token-93bd2e1f07aa',
  gatewaySecret: 'gateway-secret-5e8a1c77d3f9',
}

export const TEAMS = {
  growth: { keys: [`sha256:${'a'.repeat(64)}`], advertisers: [101, 102], write: false, rateLimit: { max: 600, window: '1m' } },
}

/** Everything optional switched on: a Secret from values, Redis, HPA, ServiceMonitor, teams. */
export const FULL: Values = {
  platform: { baseUrl: 'https://dsp-api.example.com' },
  redis: { existingSecret: { name: 'redis-credentials', key: 'url' } },
  secrets: { create: true, values: SECRETS },
  autoscaling: { enabled: true, minReplicas: 3, maxReplicas: 12 },
  serviceMonitor: { enabled: true, labels: { release: 'kube-prometheus-stack' } },
  teams: TEAMS,
  config: {
    cache: { ttl: { recent: '2m' } },
  },
}

interface EnvVar {
  name: string
  value?: string
  valueFrom?: { secretKeyRef?: { name: string; key: string }; fieldRef?: { fieldPath: string } }
}
interface Probe {
  httpGet: { path: string; port: string | number }
}
interface Container {
  name: string
  image: string
  ports: { name: string; containerPort: number }[]
  env: EnvVar[]
  startupProbe: Probe
  livenessProbe: Probe
  readinessProbe: Probe
  lifecycle?: { preStop?: { exec?: { command: string[] } } }
  securityContext: Record<string, unknown> & { capabilities?: { drop?: string[]; add?: string[] } }
  volumeMounts: { name: string; mountPath: string; subPath?: string; readOnly?: boolean }[]
}
interface Volume {
  name: string
  configMap?: { name: string }
  secret?: { secretName: string; items?: unknown[] }
  emptyDir?: object
}
interface PodSpec {
  serviceAccountName: string
  automountServiceAccountToken: boolean
  securityContext: Record<string, unknown>
  terminationGracePeriodSeconds: number
  containers: Container[]
  volumes: Volume[]
}
export interface Deployment extends Manifest {
  spec: {
    replicas?: number
    selector: { matchLabels: Record<string, string> }
    template: { metadata: { labels: Record<string, string>; annotations: Record<string, string> }; spec: PodSpec }
  }
}
export interface Service extends Manifest {
  spec: { type: string; selector: Record<string, string>; ports: { name: string; port: number; targetPort: string | number }[] }
}

export function all(chart: RenderedChart, kind: string): Manifest[] {
  return chart.manifests.filter((m) => m.kind === kind)
}
export function one<T extends Manifest>(chart: RenderedChart, kind: string, name?: string): T {
  const found = all(chart, kind).filter((m) => name === undefined || m.metadata.name === name)
  expect(found, `exactly one ${kind}${name ? ` ${name}` : ''}`).toHaveLength(1)
  return found[0] as T
}
export function gateway(chart: RenderedChart): Container {
  const containers = one<Deployment>(chart, 'Deployment').spec.template.spec.containers
  expect(containers.map((c) => c.name)).toEqual(['gateway'])
  return containers[0]!
}
export function envOf(chart: RenderedChart): Map<string, EnvVar> {
  return new Map(gateway(chart).env.map((e) => [e.name, e]))
}
export function services(chart: RenderedChart): { proxy: Service; admin: Service } {
  const list = all(chart, 'Service') as Service[]
  const proxy = list.find((s) => s.metadata.labels?.['app.kubernetes.io/component'] === 'proxy')
  const admin = list.find((s) => s.metadata.labels?.['app.kubernetes.io/component'] === 'admin')
  expect(proxy, 'proxy Service').toBeDefined()
  expect(admin, 'admin Service').toBeDefined()
  return { proxy: proxy!, admin: admin! }
}
export function decode(secret: Manifest): Record<string, string> {
  const data = (secret as Manifest & { data: Record<string, string> }).data
  return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]))
}
export function durationSeconds(text: string): number {
  const m = /^(\d+)(ms|s|m)$/.exec(text)
  if (!m) throw new Error(`not a duration: ${text}`)
  return Number(m[1]) / (m[2] === 'ms' ? 1000 : m[2] === 'm' ? 1 / 60 : 1)
}

/**
 * The files the pod sees (ConfigMap and Secret volumes at their mount paths), so the
 * gateway's own loader can be run against the rendered Deployment.
 */
export function podFiles(chart: RenderedChart, externalSecrets: Record<string, Record<string, string>> = {}): Map<string, string> {
  const files = new Map<string, string>()
  const container = gateway(chart)
  for (const volume of one<Deployment>(chart, 'Deployment').spec.template.spec.volumes) {
    const mount = container.volumeMounts.find((m) => m.name === volume.name)
    if (!mount) continue
    let content: Record<string, string> = {}
    if (volume.configMap) content = (one(chart, 'ConfigMap', volume.configMap.name) as Manifest & { data: Record<string, string> }).data
    if (volume.secret) {
      const rendered = all(chart, 'Secret').find((s) => s.metadata.name === volume.secret!.secretName)
      content = rendered ? decode(rendered) : (externalSecrets[volume.secret.secretName] ?? {})
    }
    for (const [key, text] of Object.entries(content)) files.set(`${mount.mountPath}/${key}`, text)
  }
  return files
}

/** The pod IP the downward API hands the pod (status.podIP) in these tests. */
export const POD_IP = '10.42.7.19'

/** The gateway's config as a pod of `chart` loads it; `memoryLimit`: its container's, in bytes (default: this machine's). */
export function gatewayConfigFrom(chart: RenderedChart, externalSecrets: Record<string, Record<string, string>> = {}, memoryLimit?: () => number) {
  const files = podFiles(chart, externalSecrets)
  const env: Record<string, string> = {}
  for (const e of gateway(chart).env) {
    if (e.value !== undefined) env[e.name] = e.value
    const ref = e.valueFrom?.secretKeyRef
    if (ref) env[e.name] = externalSecrets[ref.name]?.[ref.key] ?? ''
    const field = e.valueFrom?.fieldRef?.fieldPath
    if (field) {
      expect(field, `${e.name} from the downward API`).toBe('status.podIP')
      env[e.name] = POD_IP
    }
  }
  return loadConfigFrom(env, Object.fromEntries(files), memoryLimit ? { memoryLimit } : {})
}

/** The alerts of the PrometheusRule; docs/operations/alerts.md has a section #alert-<name in lower case> for each. */
export const ALERTS = [
  'GatewayTokenRefused',
  'GatewayTokenExpiringSoon',
  'GatewayTokenExpiryImminent',
  'GatewayPlatformErrors',
  'GatewayRedisDown',
  'GatewayRedisReadOnly',
  'GatewayRedisUnverified',
  'GatewayCacheHitRatioLow',
  'GatewayTeamRateLimited',
  'GatewayLatencyHigh',
  'GatewayConfigReloadRefused',
  'GatewayApiKeyExpiresSoon',
  'GatewayPlatformPaused',
  'GatewayPlatformCallsRefused',
  'GatewayPlatformQueueHigh',
  'GatewayRedisClockSkew',
  'GatewayTeamSuspended',
  'GatewayAbsent',
]
/** Where an installation publishes docs/operations/alerts.md (monitoring.runbookUrl). */
export const RUNBOOK = 'https://git.ads.internal/platform/report-gateway/blob/main/docs/operations/alerts.md'
export const REDIS_ALERTS = ['GatewayRedisDown', 'GatewayRedisReadOnly', 'GatewayRedisUnverified', 'GatewayRedisClockSkew']

interface AlertRule {
  alert: string
  expr: string
  for: string
  labels: Record<string, string>
  annotations: { summary: string; description: string; runbook_url: string }
}
export interface PrometheusRule extends Manifest {
  spec: { groups: { name: string; rules: AlertRule[] }[] }
}
interface PolicyPeer {
  podSelector?: { matchLabels?: Record<string, string> }
  namespaceSelector?: { matchLabels?: Record<string, string> }
  ipBlock?: { cidr: string }
}
interface PolicyRule {
  from?: PolicyPeer[]
  to?: PolicyPeer[]
  ports: { port: number; protocol: string }[]
}
export interface PodDisruptionBudget extends Manifest {
  spec: { maxUnavailable?: number; selector: { matchLabels: Record<string, string> } }
}
export interface NetworkPolicy extends Manifest {
  spec: { podSelector: { matchLabels: Record<string, string> }; policyTypes: string[]; ingress: PolicyRule[]; egress: PolicyRule[] }
}
export interface CronJob extends Manifest {
  spec: {
    schedule: string
    timeZone?: string
    concurrencyPolicy: string
    jobTemplate: {
      spec: {
        backoffLimit: number
        template: {
          metadata: { labels: Record<string, string> }
          spec: PodSpec & { restartPolicy: string; containers: (Container & { command: string[]; args?: string[] })[] }
        }
      }
    }
  }
}

export const rulesOf = (chart: RenderedChart) => one<PrometheusRule>(chart, 'PrometheusRule').spec.groups.flatMap((g) => g.rules)
export const alertOf = (chart: RenderedChart, name: string) => {
  const rule = rulesOf(chart).find((r) => r.alert === name)
  expect(rule, name).toBeDefined()
  return rule!
}
/** Do the labels match the selector (every key equal)? */
export const selects = (selector: Record<string, string>, labels: Record<string, string> | undefined) =>
  Object.entries(selector).every(([k, v]) => labels?.[k] === v)
