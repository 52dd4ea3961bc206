/**
 * The Helm chart (helm/report-gateway). There is no helm binary where the suite runs,
 * so test/helpers/render-chart.ts renders the templates with the subset of Go templates
 * and Sprig they use (it fails on anything outside that subset), after checking the
 * values against values.schema.json as helm does. Real helm renders the same manifests;
 * `helm lint helm/report-gateway` and `helm template` remain the check where helm exists.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, it, expect } from 'vitest'
import { parse, parseAllDocuments } from 'yaml'
import { Ajv } from 'ajv'
import { mergeValues as merge, renderChart, renderString, validateValues, TemplateError, type Manifest, type RenderOptions, type RenderedChart, type Values } from '../helpers/render-chart.js'
import { loadConfigFrom } from '../helpers/load-config.js'
import { needTool, TOOLS } from '../helpers/missing-tools.js'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const CHART = join(ROOT, 'helm/report-gateway')
const read = (path: string) => readFileSync(join(CHART, path), 'utf8')

// The contract's variables ("Configuration"), each secret one also as *_FILE.
const CONTRACT_ENV = new Set([
  'HOST',
  'PORT',
  'ADMIN_HOST',
  'ADMIN_PORT',
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
const IMAGE = 'registry.internal/ads/report-gateway'
/** The platform's address every install names (platform.baseUrl is required). */
const PLATFORM = 'https://dsp-api.example.com'

/** The chart as `helm install --set image.repository=<IMAGE> --set platform.baseUrl=<PLATFORM>` renders it, with more values. */
function install(options: RenderOptions = {}): RenderedChart {
  return renderChart(CHART, { ...options, values: merge({ image: { repository: IMAGE }, platform: { baseUrl: PLATFORM } }, options.values ?? {}) })
}

const SECRETS = {
  platformToken: 'plat-token-4f1c9a0e7b2d',
  adminToken: 'admin-token-93bd2e1f07aa',
  gatewaySecret: 'gateway-secret-5e8a1c77d3f9',
}

const TEAMS = {
  growth: { keys: [`sha256:${'a'.repeat(64)}`], advertisers: [101, 102], write: false, rateLimit: { max: 600, window: '1m' } },
}

/** Everything optional switched on: a Secret from values, Redis, HPA, ServiceMonitor, teams. */
const FULL: Values = {
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

// ---------------------------------------------------------------- shapes used below

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
interface Deployment extends Manifest {
  spec: {
    replicas?: number
    selector: { matchLabels: Record<string, string> }
    template: { metadata: { labels: Record<string, string>; annotations: Record<string, string> }; spec: PodSpec }
  }
}
interface Service extends Manifest {
  spec: { type: string; selector: Record<string, string>; ports: { name: string; port: number; targetPort: string | number }[] }
}

function all(chart: RenderedChart, kind: string): Manifest[] {
  return chart.manifests.filter((m) => m.kind === kind)
}
function one<T extends Manifest>(chart: RenderedChart, kind: string, name?: string): T {
  const found = all(chart, kind).filter((m) => name === undefined || m.metadata.name === name)
  expect(found, `exactly one ${kind}${name ? ` ${name}` : ''}`).toHaveLength(1)
  return found[0] as T
}
function gateway(chart: RenderedChart): Container {
  const containers = one<Deployment>(chart, 'Deployment').spec.template.spec.containers
  expect(containers.map((c) => c.name)).toEqual(['gateway'])
  return containers[0]!
}
function envOf(chart: RenderedChart): Map<string, EnvVar> {
  return new Map(gateway(chart).env.map((e) => [e.name, e]))
}
function services(chart: RenderedChart): { proxy: Service; admin: Service } {
  const list = all(chart, 'Service') as Service[]
  const proxy = list.find((s) => s.metadata.labels?.['app.kubernetes.io/component'] === 'proxy')
  const admin = list.find((s) => s.metadata.labels?.['app.kubernetes.io/component'] === 'admin')
  expect(proxy, 'proxy Service').toBeDefined()
  expect(admin, 'admin Service').toBeDefined()
  return { proxy: proxy!, admin: admin! }
}
function decode(secret: Manifest): Record<string, string> {
  const data = (secret as Manifest & { data: Record<string, string> }).data
  return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]))
}
function durationSeconds(text: string): number {
  const m = /^(\d+)(ms|s|m)$/.exec(text)
  if (!m) throw new Error(`not a duration: ${text}`)
  return Number(m[1]) / (m[2] === 'ms' ? 1000 : m[2] === 'm' ? 1 / 60 : 1)
}

/**
 * The files the pod sees (ConfigMap and Secret volumes at their mount paths), so the
 * gateway's own loader can be run against the rendered Deployment.
 */
function podFiles(chart: RenderedChart, externalSecrets: Record<string, Record<string, string>> = {}): Map<string, string> {
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
const POD_IP = '10.42.7.19'

function gatewayConfigFrom(chart: RenderedChart, externalSecrets: Record<string, Record<string, string>> = {}) {
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
  return loadConfigFrom(env, Object.fromEntries(files))
}

// ---------------------------------------------------------------- Chart.yaml and values

describe('Chart.yaml', () => {
  const chart = parse(read('Chart.yaml')) as Record<string, unknown>
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string }

  it('is a v2 application chart named after the package, with a SemVer version', () => {
    expect(chart.apiVersion).toBe('v2')
    expect(chart.type).toBe('application')
    expect(chart.name).toBe(pkg.name)
    expect(String(chart.version)).toMatch(/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/)
    expect(typeof chart.description).toBe('string')
  })

  it("deploys the package's version by default (appVersion = package.json version)", () => {
    expect(chart.appVersion).toBe(pkg.version)
  })
})

describe('values.yaml and values.schema.json', () => {
  const defaults = parse(read('values.yaml')) as Values
  const schema = JSON.parse(read('values.schema.json')) as Record<string, unknown>

  it('is a draft-07 schema that ajv compiles', () => {
    expect(schema.$schema).toBe('http://json-schema.org/draft-07/schema#')
    expect(() => new Ajv({ strictTypes: false }).compile(schema)).not.toThrow()
  })

  it('accepts the defaults', () => {
    expect(validateValues(CHART, defaults)).toEqual([])
  })

  it('accepts a production-like set of values', () => {
    const values = install({ values: FULL }).values
    expect(validateValues(CHART, values)).toEqual([])
  })

  it('accepts a password login in place of a ready token', () => {
    const keys = { platformToken: '', platformUsername: 'username', platformPassword: 'password', platformClientId: 'client-id', platformClientSecret: 'client-secret' }
    expect(validateValues(CHART, merge(defaults, { secrets: { keys } }))).toEqual([])
  })

  const invalid: [string, Values][] = [
    ['a misspelt top-level key', { replicas: 3 }],
    ['no replicas', { replicaCount: 0 }],
    ['replicas as a string', { replicaCount: 'two' }],
    ['an unknown pull policy', { image: { pullPolicy: 'Sometimes' } }],
    ['an unknown log level', { logLevel: 'verbose' }],
    ['a base URL with a path', { platform: { baseUrl: 'https://dsp-api.example.com/api/v1' } }],
    ['a base URL without scheme', { platform: { baseUrl: 'dsp-api.example.com' } }],
    ['a Redis URL of another scheme', { redis: { url: 'http://redis:6379' } }],
    ['both a Redis URL and a Redis Secret', { redis: { url: 'redis://redis:6379', existingSecret: { name: 'redis' } } }],
    ['a privileged port (the gateway runs without capabilities)', { ports: { http: 80 } }],
    ['a gateway secret in the config file', { config: { gatewaySecret: 'x' } }],
    ['a platform token in the config file', { config: { platform: { token: 'x' } } }],
    ['a platform password in the config file', { config: { platform: { password: 'x' } } }],
    ['an admin token in the config file', { config: { admin: { token: 'x' } } }],
    ['a token file and a password login at once', { secrets: { keys: { platformUsername: 'username', platformPassword: 'p', platformClientId: 'c', platformClientSecret: 's' } } }],
    ['half a password login', { secrets: { keys: { platformToken: '', platformUsername: 'username' } } }],
    ['an admin token the gateway would refuse (under 16 characters)', { secrets: { values: { adminToken: 'short' } } }],
    ['a Secret key with a slash', { secrets: { keys: { adminToken: 'admin/token' } } }],
    ['running as root allowed', { securityContext: { runAsNonRoot: false } }],
    ['a termination grace period set by hand (it is derived)', { terminationGracePeriodSeconds: 60 }],
    ['no margin between the grace period and SIGKILL', { terminationGraceMarginSeconds: 0 }],
    ['a margin shorter than the 2 s the gateway takes to exit after its grace', { terminationGraceMarginSeconds: 2 }],
    ['shutdownGrace in the config file (it comes from shutdownGraceSeconds)', { config: { shutdownGrace: '20s' } }],
    ['an admin host with a space', { adminHost: '0.0.0.0 ' }],
    ['a PrometheusRule alert without severity', { monitoring: { prometheusRule: { alerts: { redisDown: { severity: null } } } } }],
    ['an unknown alert', { monitoring: { prometheusRule: { alerts: { diskFull: { enabled: true, for: '5m', severity: 'warning' } } } } }],
    ['an error ratio above 1', { monitoring: { prometheusRule: { alerts: { platformErrors: { ratio: 5 } } } } }],
    ['a `for` that is no Prometheus duration', { monitoring: { prometheusRule: { alerts: { tokenRefused: { for: '2 minutes' } } } } }],
    ['a rule selector with braces', { monitoring: { selector: '{job="x"}' } }],
    ['a runbook URL with an anchor', { monitoring: { runbookUrl: 'https://example.com/ops.md#top' } }],
    ['an image repository with a tag', { image: { repository: 'registry.internal/report-gateway:0.1.0' } }],
    ['an image repository with a scheme', { image: { repository: 'https://registry.internal/report-gateway' } }],
    ['a team key in plaintext (only sha256: hashes)', { teams: { growth: { keys: ['rgw_pasted_plaintext_key'], advertisers: ['*'] } } }],
    ['a team without advertisers', { teams: { growth: { keys: [] } } }],
    ['a team name with a space', { teams: { 'growth team': { keys: [], advertisers: ['*'] } } }],
    ['teams in values and an existing teams Secret at once', { teams: TEAMS, teamsSecret: { existingSecret: 'gateway-teams' } }],
    ['a teams Secret key with a slash', { teamsSecret: { key: 'teams/teams.yaml' } }],
    ['a dashboard label key with a space', { monitoring: { dashboard: { labelKey: 'grafana dashboard' } } }],
    ['an admin namespace label without a value', { networkPolicy: { ingress: { adminNamespaceLabel: { value: null } } } }],
    ['an admin namespace label key with a space', { networkPolicy: { ingress: { adminNamespaceLabel: { key: 'team name' } } } }],
    ['a platform CIDR that is no CIDR', { networkPolicy: { egress: { platform: { cidrs: ['dsp-api.example.com'] } } } }],
    ['no platform port', { networkPolicy: { egress: { platform: { ports: [] } } } }],
    ['a tracing endpoint without a scheme', { tracing: { endpoint: 'otel-collector:4318' } }],
    ['a gRPC tracing protocol', { tracing: { protocol: 'grpc' } }],
    ['a sampler ratio over 1', { tracing: { samplerRatio: '2' } }],
    ['a resource attribute with a comma', { tracing: { resourceAttributes: { team: 'a,b' } } }],
    ['a collector token in values (only from a Secret)', { tracing: { headers: 'authorization=Bearer x' } }],
    ['a cache warm without advertisers', { cacheWarm: { enabled: true, apiKeySecret: { name: 'warm-key' } } }],
    ['a cache warm without its key Secret', { cacheWarm: { enabled: true, advertisers: [101] } }],
    ['a cache warm schedule of four fields', { cacheWarm: { schedule: '0 5 * *' } }],
    ['an advertiser that is not a positive integer', { cacheWarm: { advertisers: ['101'] } }],
    ['an unknown Service type', { service: { type: 'ExternalName' } }],
    ['a PDB percentage without %', { podDisruptionBudget: { maxUnavailable: '50' } }],
  ]
  it.each(invalid)('rejects %s', (_what, override) => {
    expect(validateValues(CHART, merge(defaults, override))).not.toEqual([])
  })

  it('is checked before rendering, as helm does', () => {
    expect(() => install({ values: { logLevel: 'verbose' } })).toThrow(/schema/)
  })

  it('has no image of its own: without image.repository rendering fails, naming the value', () => {
    const message = "image.repository is required: the gateway's image in your registry, built from the repository's Dockerfile (--set image.repository=<registry>/report-gateway)"
    expect(() => renderChart(CHART)).toThrow(message)
    expect(() => renderChart(CHART, { values: { image: { digest: `sha256:${'0'.repeat(64)}` } } })).toThrow(message)
    expect(() => install()).not.toThrow()
  })

  it('needs the platform\'s address: without platform.baseUrl (nor config.platform.baseUrl) rendering fails, naming the value', () => {
    const message = "platform.baseUrl is required: the platform's address, an http(s) origin (--set platform.baseUrl=https://<platform host>); without it every pod would stop at start naming PLATFORM_BASE_URL (exit 78)"
    expect(() => renderChart(CHART, { values: { image: { repository: IMAGE } } })).toThrow(message)
    expect(() => install({ values: { platform: { baseUrl: '' } } })).toThrow(message)
    expect(() => install({ values: { platform: { baseUrl: null } } })).toThrow(message)
    // Set in the config file instead, it reaches the gateway from there.
    const fromConfig = install({ values: { platform: { baseUrl: '' }, config: { platform: { baseUrl: PLATFORM } } } })
    expect(gateway(fromConfig).env?.some((e) => e.name === 'PLATFORM_BASE_URL')).toBe(false)
    expect(gatewayConfigFrom(fromConfig, { 'rgw-report-gateway': { 'platform-token': 'tok', 'admin-token': SECRETS.adminToken, 'gateway-secret': SECRETS.gatewaySecret } }).platform.baseUrl).toBe(PLATFORM)
  })

  it('holds no placeholder address that would be deployed as it is (no example.* host, no /example/ path)', () => {
    const strings = (v: unknown): string[] => (typeof v === 'string' ? [v] : v && typeof v === 'object' ? Object.values(v).flatMap(strings) : [])
    for (const file of ['values.yaml', 'values-production.yaml']) {
      expect(strings(parse(read(file))).filter((v) => /\bexample\.[a-z]|\/example\//i.test(v)), file).toEqual([])
    }
  })

  it('comments every value', () => {
    const lines = read('values.yaml').split('\n')
    const bare = lines
      .map((line, i) => ({ line, i }))
      .filter(({ line, i }) => /^\s*[\w.-]+:/.test(line) && !line.includes('#') && !/^\s*#/.test(lines[i - 1] ?? ''))
      .map(({ line, i }) => `${i + 1}: ${line.trim()}`)
    expect(bare).toEqual([])
  })
})

// ---------------------------------------------------------------- rendered manifests

describe('rendered with the defaults', () => {
  const chart = install()

  it('renders valid YAML of the expected kinds', () => {
    for (const [file, text] of Object.entries(chart.files)) {
      if (file === 'NOTES.txt') continue
      for (const doc of parseAllDocuments(text)) expect(doc.errors, file).toEqual([])
    }
    expect(chart.manifests.map((m) => m.kind).sort()).toEqual(
      ['ConfigMap', 'Deployment', 'Pod', 'PodDisruptionBudget', 'Secret', 'Service', 'Service', 'ServiceAccount'].sort(),
    )
  })

  it('names and labels every resource the standard way', () => {
    for (const m of chart.manifests) {
      expect(m.metadata.name, m.kind).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/)
      expect(m.metadata.name.length, m.kind).toBeLessThanOrEqual(63)
      expect(m.metadata.namespace, m.kind).toBe('reports')
      expect(m.metadata.labels, m.kind).toMatchObject({
        'app.kubernetes.io/name': 'report-gateway',
        'app.kubernetes.io/instance': 'rgw',
        'app.kubernetes.io/version': '0.1.0',
        'app.kubernetes.io/managed-by': 'Helm',
        'helm.sh/chart': 'report-gateway-0.2.0',
      })
    }
  })

  it('runs the appVersion image, with the replica count and a zero-downtime rollout', () => {
    const deployment = one<Deployment>(chart, 'Deployment')
    expect(gateway(chart).image).toBe(`${IMAGE}:0.1.0`)
    expect(deployment.spec.replicas).toBe(2)
    expect(deployment.spec).toMatchObject({ strategy: { rollingUpdate: { maxUnavailable: 0 } } })
  })

  it('selects its own pods everywhere (Deployment, Services, PDB, spread)', () => {
    const deployment = one<Deployment>(chart, 'Deployment')
    const selector = deployment.spec.selector.matchLabels
    expect(selector).toEqual({ 'app.kubernetes.io/name': 'report-gateway', 'app.kubernetes.io/instance': 'rgw' })
    expect(deployment.spec.template.metadata.labels).toMatchObject(selector)
    const { proxy, admin } = services(chart)
    expect(proxy.spec.selector).toEqual(selector)
    expect(admin.spec.selector).toEqual(selector)
    expect(one(chart, 'PodDisruptionBudget').spec).toMatchObject({ maxUnavailable: 1, selector: { matchLabels: selector } })
    expect(deployment.spec.template.spec).toMatchObject({ topologySpreadConstraints: [{ labelSelector: { matchLabels: selector } }] })
  })

  it('listens on 8080 (proxy) and 8081 (admin), and the Services point at those ports', () => {
    const container = gateway(chart)
    const ports = Object.fromEntries(container.ports.map((p) => [p.name, p.containerPort]))
    expect(ports).toEqual({ http: 8080, admin: 8081 })
    const env = envOf(chart)
    expect(env.get('PORT')?.value).toBe('8080')
    expect(env.get('ADMIN_PORT')?.value).toBe('8081')

    const { proxy, admin } = services(chart)
    expect(proxy.spec.ports).toEqual([{ name: 'http', port: 8080, targetPort: 'http', protocol: 'TCP' }])
    expect(admin.spec.ports).toEqual([{ name: 'admin', port: 8081, targetPort: 'admin', protocol: 'TCP' }])
    for (const svc of [proxy, admin]) {
      for (const p of svc.spec.ports) expect(Object.keys(ports), `${svc.metadata.name} targets a named container port`).toContain(p.targetPort)
    }
  })

  it('keeps the admin listener off the public Service: its own ClusterIP Service', () => {
    const { proxy, admin } = services(chart)
    expect(proxy.spec.ports.map((p) => p.targetPort)).not.toContain('admin')
    expect(admin.spec.type).toBe('ClusterIP')
    const exposed = services(install({ values: { service: { type: 'LoadBalancer' } } }))
    expect(exposed.proxy.spec.type).toBe('LoadBalancer')
    expect(exposed.admin.spec.type).toBe('ClusterIP')
  })

  it('binds the proxy to every pod interface and the admin listener to the pod IP only', () => {
    const env = envOf(chart)
    expect(env.get('HOST')?.value).toBe('0.0.0.0')
    // Services, Prometheus and the kubelet's probes all connect to the pod IP.
    expect(env.get('ADMIN_HOST')).toEqual({ name: 'ADMIN_HOST', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } })
    expect(chart.notes).toContain('kubectl port-forward')
  })

  it('binds the admin listener where adminHost says, e.g. 0.0.0.0 for kubectl port-forward', () => {
    const other = install({ values: { adminHost: '0.0.0.0', platform: { baseUrl: 'https://dsp-api.example.com' }, secrets: { create: true, values: SECRETS } } })
    expect(envOf(other).get('ADMIN_HOST')).toEqual({ name: 'ADMIN_HOST', value: '0.0.0.0' })
    expect(gatewayConfigFrom(other).admin.host).toBe('0.0.0.0')
    expect(other.notes).not.toContain('kubectl port-forward')
  })

  it('probes liveness on /healthz and readiness on /readyz, on the admin port', () => {
    const container = gateway(chart)
    const adminPort = container.ports.find((p) => p.name === 'admin')!.containerPort
    expect(adminPort).toBe(8081)
    expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'admin' })
    expect(container.startupProbe.httpGet).toEqual({ path: '/healthz', port: 'admin' })
    expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'admin' })
  })

  it('sets only contract variables, with the defaults expected', () => {
    const names = gateway(chart).env.map((e) => e.name)
    expect(new Set(names).size, 'no variable twice').toBe(names.length)
    for (const name of names) expect(CONTRACT_ENV, name).toContain(name)
    expect(names.sort()).toEqual(
      ['ADMIN_HOST', 'ADMIN_PORT', 'ADMIN_TOKEN_FILE', 'CONFIG_FILE', 'GATEWAY_SECRET_FILE', 'HOST', 'LOG_LEVEL', 'PLATFORM_BASE_URL', 'PLATFORM_TOKEN_FILE', 'PORT', 'TEAMS_FILE'].sort(),
    )
    expect(envOf(chart).get('LOG_LEVEL')?.value).toBe('info')
    expect(envOf(chart).get('PLATFORM_BASE_URL')?.value).toBe(PLATFORM)
  })

  it('points the *_FILE variables into the mounted Secret, mounted whole so updates reach the pod', () => {
    const env = envOf(chart)
    expect(env.get('PLATFORM_TOKEN_FILE')?.value).toBe('/var/run/secrets/report-gateway/platform-token')
    expect(env.get('ADMIN_TOKEN_FILE')?.value).toBe('/var/run/secrets/report-gateway/admin-token')
    expect(env.get('GATEWAY_SECRET_FILE')?.value).toBe('/var/run/secrets/report-gateway/gateway-secret')

    const spec = one<Deployment>(chart, 'Deployment').spec.template.spec
    const volume = spec.volumes.find((v) => v.name === 'secrets')
    expect(volume?.secret).toMatchObject({ secretName: 'rgw-report-gateway' })
    // items would pin the keys; subPath would freeze the file at pod start (no rotation).
    expect(volume?.secret?.items).toBeUndefined()
    const mount = gateway(chart).volumeMounts.find((m) => m.name === volume?.name)
    expect(mount).toMatchObject({ mountPath: '/var/run/secrets/report-gateway', readOnly: true })
    expect(mount?.subPath).toBeUndefined()
  })

  it('mounts the config file from the ConfigMap at CONFIG_FILE', () => {
    const configFile = envOf(chart).get('CONFIG_FILE')?.value
    expect(configFile).toBe('/etc/report-gateway/config.yaml')
    const files = podFiles(chart)
    // Nothing but the shutdownGrace the pod's grace period is derived from.
    expect(parse(files.get(configFile!)!)).toEqual({ shutdownGrace: '10s' })
  })

  it('runs as a non-root user with a read-only root filesystem and no capabilities', () => {
    const spec = one<Deployment>(chart, 'Deployment').spec.template.spec
    expect(spec.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } })
    expect(spec.securityContext.runAsUser).toBeGreaterThan(0)
    const sc = gateway(chart).securityContext
    expect(sc).toMatchObject({ runAsNonRoot: true, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false })
    expect(sc.capabilities?.drop).toEqual(['ALL'])
    expect(sc.capabilities?.add).toBeUndefined()
    expect(sc.privileged).toBeUndefined()
    expect(spec.automountServiceAccountToken).toBe(false)
    // A read-only root needs somewhere writable for node's temporary files.
    const tmp = gateway(chart).volumeMounts.find((m) => m.mountPath === '/tmp')
    expect(spec.volumes.find((v) => v.name === tmp?.name)?.emptyDir).toBeDefined()
  })

  it("gives the pod longer to stop than the preStop sleep plus the gateway's shutdownGrace", () => {
    const spec = one<Deployment>(chart, 'Deployment').spec.template.spec
    const command = gateway(chart).lifecycle?.preStop?.exec?.command
    expect(command?.[0]).toBe('sleep')
    const sleep = Number(command?.[1])
    expect(sleep).toBe(5)
    // The grace the gateway itself uses: what its loader reads from the rendered config file.
    const config = gatewayConfigFrom(chart, { 'rgw-report-gateway': { 'platform-token': 'tok', 'admin-token': SECRETS.adminToken, 'gateway-secret': SECRETS.gatewaySecret } })
    expect(config.shutdownGraceMs).toBe(10_000)
    const defaults = parse(readFileSync(join(ROOT, 'config/default.yaml'), 'utf8')) as { shutdownGrace: string }
    expect(config.shutdownGraceMs / 1000, "the chart's default is the gateway's").toBe(durationSeconds(defaults.shutdownGrace))
    // 5 (preStop) + 10 (shutdownGrace) + 5 (margin)
    expect(spec.terminationGracePeriodSeconds).toBe(20)
    expect(spec.terminationGracePeriodSeconds).toBeGreaterThan(sleep + config.shutdownGraceMs / 1000)
  })

  it('mounts the teams (none yet) from their own Secret at TEAMS_FILE', () => {
    const teamsFile = envOf(chart).get('TEAMS_FILE')?.value
    expect(teamsFile).toBe('/etc/report-gateway-teams/teams.yaml')
    expect(parse(podFiles(chart).get(teamsFile!)!)).toEqual({ teams: {} })
  })

  it('uses the ServiceAccount and ConfigMap it creates', () => {
    const spec = one<Deployment>(chart, 'Deployment').spec.template.spec
    expect(spec.serviceAccountName).toBe(one(chart, 'ServiceAccount').metadata.name)
    const configVolume = spec.volumes.find((v) => v.configMap)
    expect(configVolume?.configMap?.name).toBe(one(chart, 'ConfigMap').metadata.name)
  })

  it('names the settings ConfigMap apart from the one that held the teams, so that pods of the previous chart keep their teams while the upgrade replaces them', () => {
    // Under the old name, the upgrade would hand the old pods (no TEAMS_FILE) a config
    // file without teams, which they would reload as "no team": every key 401 until
    // they are gone. A ConfigMap Helm deletes stays mounted as it was.
    expect(one(chart, 'ConfigMap').metadata.name).toBe('rgw-report-gateway-settings')
  })

  it('gives helm test a pod that asks the proxy Service for /healthz', () => {
    const pod = one(chart, 'Pod')
    expect(pod.metadata.annotations?.['helm.sh/hook']).toBe('test')
    const { proxy } = services(chart)
    expect(JSON.stringify(pod.spec)).toContain(`http://${proxy.metadata.name}:${proxy.spec.ports[0]!.port}/healthz`)
  })

  it('starts a gateway: the rendered env, ConfigMap and Secret load with the real config loader', () => {
    const secret = { 'platform-token': 'tok', 'admin-token': SECRETS.adminToken, 'gateway-secret': SECRETS.gatewaySecret }
    const config = gatewayConfigFrom(chart, { 'rgw-report-gateway': secret })
    expect(config.demo).toBe(false)
    expect(config.platform.baseUrl).toBe(PLATFORM)
    expect(config.host).toBe('0.0.0.0')
    expect(config.port).toBe(8080)
    expect(config.admin).toMatchObject({ host: POD_IP, port: 8081, token: SECRETS.adminToken })
    expect(config.gatewaySecret).toBe(SECRETS.gatewaySecret)
    expect(config.logLevel).toBe('info')
  })

  it('lists the Secret keys to create in NOTES.txt', () => {
    expect(chart.notes).toMatch(/platform-token\s+\(PLATFORM_TOKEN_FILE\)/)
    expect(chart.notes).toContain('rollout restart deployment/rgw-report-gateway')
  })

  it('names the operations console in NOTES.txt, with the port-forward once adminHost allows it', () => {
    expect(chart.notes).toContain('Operations console')
    expect(chart.notes).not.toContain('port-forward deploy/')
    const open = install({ values: { adminHost: '0.0.0.0' } })
    expect(open.notes).toContain('kubectl -n reports port-forward deploy/rgw-report-gateway 8081:8081')
    expect(open.notes).toContain('http://127.0.0.1:8081/console')
  })
})

describe('rendered with a Secret from values, Redis, autoscaling and a ServiceMonitor', () => {
  const chart = install({ values: FULL })

  it('adds the Secret, the HPA and the ServiceMonitor', () => {
    expect(chart.manifests.map((m) => m.kind).sort()).toEqual(
      ['ConfigMap', 'Deployment', 'HorizontalPodAutoscaler', 'Pod', 'PodDisruptionBudget', 'Secret', 'Secret', 'Service', 'Service', 'ServiceAccount', 'ServiceMonitor'].sort(),
    )
  })

  it('leaves the replica count to the HPA, which scales the Deployment', () => {
    expect(one<Deployment>(chart, 'Deployment').spec.replicas).toBeUndefined()
    expect(one(chart, 'HorizontalPodAutoscaler').spec).toMatchObject({
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'rgw-report-gateway' },
      minReplicas: 3,
      maxReplicas: 12,
    })
  })

  it('holds the secret values in the Secret under the keys the *_FILE variables name', () => {
    const secret = one(chart, 'Secret', 'rgw-report-gateway')
    const data = decode(secret)
    expect(data).toEqual({ 'platform-token': SECRETS.platformToken, 'admin-token': SECRETS.adminToken, 'gateway-secret': SECRETS.gatewaySecret })
    const dir = '/var/run/secrets/report-gateway'
    const env = envOf(chart)
    for (const name of ['PLATFORM_TOKEN_FILE', 'ADMIN_TOKEN_FILE', 'GATEWAY_SECRET_FILE']) {
      const path = env.get(name)?.value ?? ''
      expect(path.startsWith(`${dir}/`), name).toBe(true)
      expect(Object.keys(data), name).toContain(path.slice(dir.length + 1))
    }
    expect(one<Deployment>(chart, 'Deployment').spec.template.spec.volumes.find((v) => v.name === 'secrets')?.secret?.secretName).toBe(secret.metadata.name)
  })

  it('puts no secret value in the Deployment, only file paths and Secret references', () => {
    const text = JSON.stringify(one(chart, 'Deployment'))
    for (const value of Object.values(SECRETS)) {
      expect(text).not.toContain(value)
      expect(text).not.toContain(Buffer.from(value).toString('base64'))
    }
    for (const e of gateway(chart).env) {
      if (/TOKEN|SECRET|PASSWORD|USERNAME|CLIENT_ID/.test(e.name)) expect(e.name, 'a secret variable carries a path').toMatch(/_FILE$/)
      if (e.name === 'REDIS_URL') expect(e).toEqual({ name: 'REDIS_URL', valueFrom: { secretKeyRef: { name: 'redis-credentials', key: 'url' } } })
    }
  })

  it('sets only contract variables, now with the platform and Redis', () => {
    const names = gateway(chart).env.map((e) => e.name)
    for (const name of names) expect(CONTRACT_ENV, name).toContain(name)
    expect(names).toContain('PLATFORM_BASE_URL')
    expect(names).toContain('REDIS_URL')
    expect(envOf(chart).get('PLATFORM_BASE_URL')?.value).toBe('https://dsp-api.example.com')
  })

  it('scrapes /metrics on the admin Service only', () => {
    const monitor = one(chart, 'ServiceMonitor') as Manifest & {
      spec: { selector: { matchLabels: Record<string, string> }; endpoints: { port: string; path: string }[]; namespaceSelector: { matchNames: string[] } }
    }
    expect(monitor.apiVersion).toBe('monitoring.coreos.com/v1')
    expect(monitor.metadata.labels).toMatchObject({ release: 'kube-prometheus-stack' })
    expect(monitor.spec.endpoints).toEqual([expect.objectContaining({ port: 'admin', path: '/metrics' })])
    expect(monitor.spec.namespaceSelector.matchNames).toEqual(['reports'])
    const { proxy, admin } = services(chart)
    const matches = (svc: Service) => Object.entries(monitor.spec.selector.matchLabels).every(([k, v]) => svc.metadata.labels?.[k] === v)
    expect(matches(admin)).toBe(true)
    expect(matches(proxy)).toBe(false)
    expect(admin.spec.ports.map((p) => p.name)).toContain('admin')
  })

  it('writes values `config` to the config file, with shutdownGrace from shutdownGraceSeconds', () => {
    const files = podFiles(chart)
    expect(parse(files.get('/etc/report-gateway/config.yaml')!)).toEqual({ ...(FULL.config as Values), shutdownGrace: '10s' })
  })

  it('puts the teams in a Secret of their own, mounted whole at TEAMS_FILE, and not in the settings ConfigMap', () => {
    const secret = one(chart, 'Secret', 'rgw-report-gateway-teams')
    expect(secret.metadata.labels).toMatchObject({ 'app.kubernetes.io/instance': 'rgw' })
    expect(Object.keys(decode(secret))).toEqual(['teams.yaml'])
    expect(parse(decode(secret)['teams.yaml']!)).toEqual({ teams: TEAMS })
    expect(envOf(chart).get('TEAMS_FILE')?.value).toBe('/etc/report-gateway-teams/teams.yaml')
    const volume = one<Deployment>(chart, 'Deployment').spec.template.spec.volumes.find((v) => v.secret?.secretName === secret.metadata.name)
    // items would pin the keys; subPath would freeze the file at pod start (no reload).
    expect(volume?.secret?.items).toBeUndefined()
    const mount = gateway(chart).volumeMounts.find((m) => m.name === volume?.name)
    expect(mount).toMatchObject({ mountPath: '/etc/report-gateway-teams', readOnly: true })
    expect(mount?.subPath).toBeUndefined()
    // Neither the settings ConfigMap nor the pod template holds a team or a key hash.
    const configMap = JSON.stringify(one(chart, 'ConfigMap'))
    expect(configMap).not.toContain('growth')
    expect(configMap).not.toContain('a'.repeat(64))
    expect(JSON.stringify(one(chart, 'Deployment'))).not.toContain('a'.repeat(64))
  })

  it('starts a gateway with the platform, Redis, the team and every secret from the Secret', () => {
    const config = gatewayConfigFrom(chart, { 'redis-credentials': { url: 'redis://:pw@redis-master:6379/0' } })
    expect(config.demo).toBe(false)
    expect(config.platform.baseUrl).toBe('https://dsp-api.example.com')
    expect(config.redis.url).toBe('redis://:pw@redis-master:6379/0')
    expect(config.admin.token).toBe(SECRETS.adminToken)
    expect(config.gatewaySecret).toBe(SECRETS.gatewaySecret)
    expect(config.credentials.default).toMatchObject({ tokenFile: '/var/run/secrets/report-gateway/platform-token' })
    expect(config.teams.map((t) => t.name)).toEqual(['growth'])
    expect(config.cache.ttl.recentMs).toBe(2 * 60_000)
  })

  it('fails to render when a Secret key in use has no value', () => {
    expect(() => install({ values: { secrets: { create: true, values: { ...SECRETS, adminToken: '' } } } })).toThrow(/secrets\.values\.adminToken is required/)
  })
})

describe('rendered with other choices', () => {
  it('rolls the pods when the settings change (checksum/config), not when the teams or a secret value change', () => {
    const template = (values: Values) => one<Deployment>(install({ values }), 'Deployment').spec.template
    const checksum = (values: Values) => template(values).metadata.annotations['checksum/config']
    const base = checksum(FULL)
    expect(base).toMatch(/^[a-f0-9]{64}$/)
    expect(checksum(merge(FULL, { config: { cache: { ttl: { recent: '3m' } } } }))).not.toBe(base)
    expect(checksum(merge(FULL, { shutdownGraceSeconds: 40 }))).not.toBe(base)
    // A key added or revoked reaches the pods through the mounted teams Secret, which the
    // gateway re-reads; a restart would defeat the no-restart reload. The pod template
    // (its annotations included) is the same whatever the teams are.
    const late = { late: { keys: [`sha256:${'c'.repeat(64)}`], advertisers: ['*'] } }
    for (const teams of [{ ...TEAMS, ...late }, late, {}]) {
      const changed = { ...FULL, teams }
      expect(one(install({ values: changed }), 'Secret', 'rgw-report-gateway-teams')).not.toEqual(one(install({ values: FULL }), 'Secret', 'rgw-report-gateway-teams'))
      expect(template(changed)).toEqual(template(FULL))
    }
    // Rotation: a new token in the Secret is read from the file; the pods stay.
    const rotated = merge(FULL, { secrets: { values: { platformToken: 'plat-token-rotated' } } })
    expect(one(install({ values: rotated }), 'Deployment')).toEqual(one(install({ values: FULL }), 'Deployment'))
  })

  it('refuses teams under `config` (they would land in the settings), saying where they go', () => {
    expect(() => install({ values: { config: { teams: TEAMS } } })).toThrow(
      'config.teams: the teams are no longer part of the config file; move them to the top-level value `teams` (TEAMS_FILE, a Secret of their own that the pods re-read without a restart)',
    )
    // An empty mapping is no team: dropped from the settings rather than refused.
    expect(parse(podFiles(install({ values: { config: { teams: {} } } })).get('/etc/report-gateway/config.yaml')!)).toEqual({ shutdownGrace: '10s' })
  })

  it('mounts an existing teams Secret by name (made outside Helm) and renders none', () => {
    const chart = install({ values: { teamsSecret: { existingSecret: 'gateway-teams', key: 'teams' } } })
    expect(all(chart, 'Secret')).toEqual([])
    const volume = one<Deployment>(chart, 'Deployment').spec.template.spec.volumes.find((v) => v.secret?.secretName === 'gateway-teams')
    expect(volume).toBeDefined()
    expect(gateway(chart).volumeMounts.find((m) => m.name === volume?.name)?.mountPath).toBe('/etc/report-gateway-teams')
    expect(envOf(chart).get('TEAMS_FILE')?.value).toBe('/etc/report-gateway-teams/teams')
    expect(chart.notes).toContain('kubectl -n reports create secret generic gateway-teams --from-file=teams=./teams.yaml')
    const teams = `teams:\n  growth:\n    keys: ["sha256:${'a'.repeat(64)}"]\n    advertisers: [101]\n`
    const config = gatewayConfigFrom(install({ values: { platform: { baseUrl: 'https://dsp-api.example.com' }, teamsSecret: { existingSecret: 'gateway-teams', key: 'teams' } } }), {
      'rgw-report-gateway': { 'platform-token': 'tok', 'admin-token': SECRETS.adminToken, 'gateway-secret': SECRETS.gatewaySecret },
      'gateway-teams': { teams },
    })
    expect(config.teams.map((t) => t.name)).toEqual(['growth'])
  })

  it('wires ADMIN_TOKENS_FILE from the Secret when secrets.keys.adminTokens is set, and refuses a plaintext token there', () => {
    const lines = `alice:sha256:${'b'.repeat(64)}\n# bob left\n`
    const values = merge(FULL, { secrets: { keys: { adminTokens: 'admin-tokens' }, values: { adminTokens: lines } } })
    const chart = install({ values })
    expect(envOf(chart).get('ADMIN_TOKENS_FILE')?.value).toBe('/var/run/secrets/report-gateway/admin-tokens')
    const secret = one<Manifest & { data: Record<string, string> }>(chart, 'Secret', 'rgw-report-gateway')
    expect(Buffer.from(secret.data['admin-tokens']!, 'base64').toString('utf8')).toBe(lines)
    expect(envOf(install({ values: FULL })).has('ADMIN_TOKENS_FILE')).toBe(false)
    expect(() => install({ values: merge(values, { secrets: { values: { adminTokens: 'alice:correct-horse-battery' } } }) })).toThrow(/adminTokens/)
  })

  it('gives a token a role: ADMIN_VIEWER_TOKEN_FILE from secrets.keys.adminViewerToken, :viewer lines in adminTokens; a line without one stays an operator', () => {
    const lines = `alice:sha256:${'b'.repeat(64)}\ncarol:sha256:${'c'.repeat(64)}:viewer\ndave:sha256:${'d'.repeat(64)}:operator\n`
    const viewer = 'viewer-token-6b1d0c44e2a9'
    const values = merge(FULL, { secrets: { keys: { adminTokens: 'admin-tokens', adminViewerToken: 'admin-viewer-token' }, values: { adminTokens: lines, adminViewerToken: viewer } } })
    const chart = install({ values })
    expect(envOf(chart).get('ADMIN_VIEWER_TOKEN_FILE')?.value).toBe('/var/run/secrets/report-gateway/admin-viewer-token')
    const secret = one<Manifest & { data: Record<string, string> }>(chart, 'Secret', 'rgw-report-gateway')
    expect(Buffer.from(secret.data['admin-viewer-token']!, 'base64').toString('utf8')).toBe(viewer)
    const roles = gatewayConfigFrom(chart).admin.tokens.map((t) => `${t.name}:${t.role}`)
    expect(roles).toEqual(['admin:operator', 'viewer:viewer', 'alice:operator', 'carol:viewer', 'dave:operator'])
    expect(envOf(install({ values: FULL })).has('ADMIN_VIEWER_TOKEN_FILE')).toBe(false)
    expect(() => install({ values: merge(values, { secrets: { values: { adminTokens: `carol:sha256:${'c'.repeat(64)}:admin` } } }) })).toThrow(/adminTokens/)
    expect(() => install({ values: merge(values, { secrets: { values: { adminViewerToken: 'short' } } }) })).toThrow(/adminViewerToken/)
  })

  it('uses an existing Secret by name and drops the variables of unused keys', () => {
    const chart = install({ values: { secrets: { existingSecret: 'gateway-secrets', keys: { gatewaySecret: '' } } } })
    expect(all(chart, 'Secret').map((s) => s.metadata.name)).toEqual(['rgw-report-gateway-teams'])
    expect(one<Deployment>(chart, 'Deployment').spec.template.spec.volumes.find((v) => v.name === 'secrets')?.secret?.secretName).toBe('gateway-secrets')
    const names = [...envOf(chart).keys()]
    expect(names).toContain('PLATFORM_TOKEN_FILE')
    expect(names).not.toContain('GATEWAY_SECRET_FILE')
  })

  it('configures a password login through the four *_FILE variables', () => {
    const keys = { platformToken: '', platformUsername: 'username', platformPassword: 'password', platformClientId: 'client-id', platformClientSecret: 'client-secret' }
    const chart = install({
      values: {
        platform: { baseUrl: 'https://dsp-api.example.com', tokenUrl: '/oauth/token', grantType: 'platform_dsp' },
        secrets: { create: true, keys, values: { ...SECRETS, platformUsername: 'reports@example.com', platformPassword: 'pw', platformClientId: '42', platformClientSecret: 'cs' } },
      },
    })
    const names = [...envOf(chart).keys()]
    expect(names).not.toContain('PLATFORM_TOKEN_FILE')
    for (const n of ['PLATFORM_USERNAME_FILE', 'PLATFORM_PASSWORD_FILE', 'PLATFORM_CLIENT_ID_FILE', 'PLATFORM_CLIENT_SECRET_FILE', 'PLATFORM_TOKEN_URL', 'PLATFORM_GRANT_TYPE']) {
      expect(names).toContain(n)
    }
    const config = gatewayConfigFrom(chart)
    expect(config.credentials.default?.login).toMatchObject({ username: 'reports@example.com', password: 'pw', clientId: 42, clientSecret: 'cs' })
  })

  it('refuses to render Redis without a GATEWAY_SECRET key, saying how to make one', () => {
    const message = /secrets\.keys\.gatewaySecret: required with Redis .*openssl rand -base64 32/
    expect(() => install({ values: { redis: { url: 'redis://redis-master:6379/0' }, secrets: { keys: { gatewaySecret: '' } } } })).toThrow(message)
    expect(() => install({ values: { redis: { existingSecret: { name: 'redis-credentials', key: 'url' } }, secrets: { keys: { gatewaySecret: '' } } } })).toThrow(message)
    expect(() => install({ values: { config: { redis: { cluster: [{ host: 'c1', port: 7000 }] } }, secrets: { keys: { gatewaySecret: '' } } } })).toThrow(message)
    expect(() => install({ values: { redis: { url: 'redis://redis-master:6379/0' } } })).not.toThrow()
    expect(() => install({ values: { redis: { url: 'redis://redis-master:6379/0' }, secrets: { create: true, values: { ...SECRETS, gatewaySecret: '' } } } })).toThrow(/secrets\.values\.gatewaySecret is required/)
  })

  it('passes a plain Redis URL as a value', () => {
    const env = envOf(install({ values: { redis: { url: 'redis://redis-master:6379/0' } } }))
    expect(env.get('REDIS_URL')).toEqual({ name: 'REDIS_URL', value: 'redis://redis-master:6379/0' })
  })

  it('moves the listeners together with their Services and probes', () => {
    const chart = install({ values: { ports: { http: 9080, admin: 9081 } } })
    const env = envOf(chart)
    expect(env.get('PORT')?.value).toBe('9080')
    expect(env.get('ADMIN_PORT')?.value).toBe('9081')
    expect(Object.fromEntries(gateway(chart).ports.map((p) => [p.name, p.containerPort]))).toEqual({ http: 9080, admin: 9081 })
    expect(gateway(chart).readinessProbe.httpGet.port).toBe('admin')
  })

  it('pins the image by digest when one is given', () => {
    const digest = `sha256:${'0'.repeat(64)}`
    expect(gateway(install({ values: { image: { digest } } })).image).toBe(`${IMAGE}@${digest}`)
    expect(gateway(install({ values: { image: { tag: '0.2.0' } } })).image).toBe(`${IMAGE}:0.2.0`)
  })

  it('names resources after the release, without repeating the chart name, within 63 characters', () => {
    expect(one(install({ releaseName: 'report-gateway' }), 'Deployment').metadata.name).toBe('report-gateway')
    expect(one(install({ values: { fullnameOverride: 'rgw' } }), 'Deployment').metadata.name).toBe('rgw')
    const long = install({ releaseName: 'a-very-long-release-name-that-goes-on-and-on-and-on-x' })
    // Services and the rest are DNS labels (63); the helm test Pod's name may be longer (253).
    for (const m of long.manifests) expect(m.metadata.name.length, `${m.kind} ${m.metadata.name}`).toBeLessThanOrEqual(m.kind === 'Pod' ? 253 : 63)
  })

  it('traces only when tracing.endpoint is set: the standard OTEL_* variables, the collector\'s headers from a Secret, loaded by the real config loader', () => {
    expect([...envOf(install()).keys()].filter((name) => name.startsWith('OTEL_'))).toEqual([])
    const traced = install({
      values: {
        tracing: {
          endpoint: 'http://otel-collector.observability:4318',
          protocol: 'http/json',
          sampler: 'parentbased_traceidratio',
          samplerRatio: '0.1',
          resourceAttributes: { 'deployment.environment.name': 'production', 'cloud.region': 'eu-west-1' },
          headersSecret: { name: 'otlp-collector', key: 'headers' },
        },
      },
    })
    const env = envOf(traced)
    expect(Object.fromEntries([...env].filter(([name]) => name.startsWith('OTEL_')).map(([name, e]) => [name, e.value ?? e.valueFrom]))).toEqual({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel-collector.observability:4318',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'report-gateway',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.1',
      OTEL_RESOURCE_ATTRIBUTES: 'cloud.region=eu-west-1,deployment.environment.name=production',
      OTEL_EXPORTER_OTLP_HEADERS: { secretKeyRef: { name: 'otlp-collector', key: 'headers' } },
    })
    const secrets = { 'rgw-report-gateway': { 'platform-token': 'tok', 'admin-token': SECRETS.adminToken, 'gateway-secret': SECRETS.gatewaySecret }, 'otlp-collector': { headers: 'authorization=Bearer%20collector-token-77' } }
    const config = gatewayConfigFrom(traced, secrets)
    expect(config.tracing).toMatchObject({
      url: 'http://otel-collector.observability:4318/v1/traces',
      protocol: 'http/json',
      headers: { authorization: 'Bearer collector-token-77' },
      serviceName: 'report-gateway',
      resourceAttributes: { 'cloud.region': 'eu-west-1', 'deployment.environment.name': 'production' },
      sampler: 'parentbased_traceidratio',
      samplerRatio: 0.1,
    })
    expect(config.secrets).toContain('Bearer collector-token-77')
  })

  it('leaves out the PDB, the admin Service and the ServiceAccount when switched off', () => {
    const chart = install({ values: { podDisruptionBudget: { enabled: false }, adminService: { enabled: false }, serviceAccount: { create: false } } })
    expect(all(chart, 'PodDisruptionBudget')).toEqual([])
    expect(all(chart, 'ServiceAccount')).toEqual([])
    expect(all(chart, 'Service')).toHaveLength(1)
    expect(one<Deployment>(chart, 'Deployment').spec.template.spec.serviceAccountName).toBe('default')
  })
})

// ---------------------------------------------------------------- optional objects

/** The alerts of the PrometheusRule; docs/operations/alerts.md has a section #alert-<name in lower case> for each. */
const ALERTS = [
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
]
/** Where an installation publishes docs/operations/alerts.md (monitoring.runbookUrl). */
const RUNBOOK = 'https://git.ads.internal/platform/report-gateway/blob/main/docs/operations/alerts.md'
const REDIS_ALERTS = ['GatewayRedisDown', 'GatewayRedisReadOnly', 'GatewayRedisUnverified']

interface AlertRule {
  alert: string
  expr: string
  for: string
  labels: Record<string, string>
  annotations: { summary: string; description: string; runbook_url: string }
}
interface PrometheusRule extends Manifest {
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
interface NetworkPolicy extends Manifest {
  spec: { podSelector: { matchLabels: Record<string, string> }; policyTypes: string[]; ingress: PolicyRule[]; egress: PolicyRule[] }
}
interface CronJob extends Manifest {
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

const rulesOf = (chart: RenderedChart) => one<PrometheusRule>(chart, 'PrometheusRule').spec.groups.flatMap((g) => g.rules)
const alertOf = (chart: RenderedChart, name: string) => {
  const rule = rulesOf(chart).find((r) => r.alert === name)
  expect(rule, name).toBeDefined()
  return rule!
}
/** Do the labels match the selector (every key equal)? */
const selects = (selector: Record<string, string>, labels: Record<string, string> | undefined) =>
  Object.entries(selector).every(([k, v]) => labels?.[k] === v)

describe('optional objects', () => {
  it('are all off by default: no PrometheusRule, dashboard, NetworkPolicy or CronJob', () => {
    const defaults = parse(read('values.yaml')) as Values & {
      monitoring: { prometheusRule: { enabled: boolean }; dashboard: { enabled: boolean } }
      networkPolicy: { enabled: boolean }
      cacheWarm: { enabled: boolean }
    }
    expect([defaults.monitoring.prometheusRule.enabled, defaults.monitoring.dashboard.enabled, defaults.networkPolicy.enabled, defaults.cacheWarm.enabled]).toEqual([false, false, false, false])
    const kinds = install().manifests.map((m) => m.kind)
    for (const kind of ['PrometheusRule', 'NetworkPolicy', 'CronJob', 'ServiceMonitor']) expect(kinds, kind).not.toContain(kind)
    expect(kinds.filter((k) => k === 'ConfigMap'), 'only the config file').toHaveLength(1)
  })

  it('are named, namespaced and labelled the standard way when switched on', () => {
    const chart = install({
      values: {
        monitoring: { prometheusRule: { enabled: true }, dashboard: { enabled: true } },
        networkPolicy: { enabled: true },
        cacheWarm: { enabled: true, advertisers: [101], apiKeySecret: { name: 'warm-key' } },
      },
    })
    const added = chart.manifests.filter((m) => ['PrometheusRule', 'NetworkPolicy', 'CronJob'].includes(m.kind) || m.metadata.name.endsWith('-dashboard'))
    expect(added.map((m) => `${m.kind} ${m.metadata.name}`).sort()).toEqual(
      ['ConfigMap rgw-report-gateway-dashboard', 'CronJob rgw-report-gateway-cache-warm', 'NetworkPolicy rgw-report-gateway', 'PrometheusRule rgw-report-gateway'].sort(),
    )
    for (const m of added) {
      expect(m.metadata.namespace, m.kind).toBe('reports')
      expect(m.metadata.labels, m.kind).toMatchObject({ 'app.kubernetes.io/name': 'report-gateway', 'app.kubernetes.io/instance': 'rgw', 'helm.sh/chart': 'report-gateway-0.2.0' })
    }
  })
})

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
  const file = read('dashboards/report-gateway.json')
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
    // Every query is limited to the chosen namespace and job.
    for (const p of panels) for (const t of p.targets ?? []) expect(t.expr, p.title).toContain('namespace="$namespace",job=~"$job"')
  })
})

describe('NetworkPolicy (networkPolicy)', () => {
  const render = (values: Values = {}) => install({ values: merge({ networkPolicy: { enabled: true } }, values) })
  const policy = (chart: RenderedChart) => one<NetworkPolicy>(chart, 'NetworkPolicy')
  const chart = render()
  const egressTo = (chart: RenderedChart, port: number) => policy(chart).spec.egress.filter((r) => r.ports.some((p) => p.port === port))

  it("selects the gateway's pods only: not the helm test Pod, not the cache-warm Job", () => {
    const np = policy(chart)
    expect(np.apiVersion).toBe('networking.k8s.io/v1')
    expect(np.spec.policyTypes).toEqual(['Ingress', 'Egress'])
    const selector = np.spec.podSelector.matchLabels
    expect(selects(selector, one<Deployment>(chart, 'Deployment').spec.template.metadata.labels)).toBe(true)
    expect(selects(selector, one(chart, 'Pod').metadata.labels)).toBe(false)
    // The component label is on the pods only: the Deployment's selector is immutable.
    expect(one<Deployment>(chart, 'Deployment').spec.selector.matchLabels['app.kubernetes.io/component']).toBeUndefined()
  })

  it('lets any pod of the namespace reach the proxy port, and only the monitoring namespace the admin port', () => {
    const [proxy, admin, ...rest] = policy(chart).spec.ingress
    expect(rest).toEqual([])
    expect(proxy).toEqual({ from: [{ podSelector: {} }], ports: [{ port: 8080, protocol: 'TCP' }] })
    expect(admin).toEqual({ from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }], ports: [{ port: 8081, protocol: 'TCP' }] })
  })

  it('follows the ports and takes more peers and another monitoring namespace label', () => {
    const ingress = { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } } }
    const other = render({
      ports: { http: 9080, admin: 9081 },
      networkPolicy: { ingress: { proxyFrom: [ingress], adminNamespaceLabel: { key: 'example.com/monitoring', value: 'true' }, adminFrom: [{ podSelector: { matchLabels: { app: 'ops' } } }] } },
    })
    const [proxy, admin] = policy(other).spec.ingress
    expect(proxy).toEqual({ from: [{ podSelector: {} }, ingress], ports: [{ port: 9080, protocol: 'TCP' }] })
    expect(admin).toEqual({
      from: [{ namespaceSelector: { matchLabels: { 'example.com/monitoring': 'true' } } }, { podSelector: { matchLabels: { app: 'ops' } } }],
      ports: [{ port: 9081, protocol: 'TCP' }],
    })
  })

  it('lets the gateway reach cluster DNS (UDP and TCP 53) and the platform on 443, and nothing else without Redis', () => {
    const egress = policy(chart).spec.egress
    expect(egress).toHaveLength(2)
    expect(egressTo(chart, 53)).toEqual([
      {
        to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } }, podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } }],
        ports: [
          { port: 53, protocol: 'UDP' },
          { port: 53, protocol: 'TCP' },
        ],
      },
    ])
    expect(egressTo(chart, 443)).toEqual([{ to: [{ ipBlock: { cidr: '0.0.0.0/0' } }], ports: [{ port: 443, protocol: 'TCP' }] }])
    expect(egressTo(chart, 6379)).toEqual([])
  })

  it("takes the platform's CIDRs and ports", () => {
    const other = render({ networkPolicy: { egress: { platform: { cidrs: ['203.0.113.0/24', '2001:db8::/32'], ports: [443, 8443] } } } })
    expect(egressTo(other, 8443)).toEqual([
      {
        to: [{ ipBlock: { cidr: '203.0.113.0/24' } }, { ipBlock: { cidr: '2001:db8::/32' } }],
        ports: [
          { port: 443, protocol: 'TCP' },
          { port: 8443, protocol: 'TCP' },
        ],
      },
    ])
    expect(egressTo(render({ networkPolicy: { egress: { platform: { cidrs: [] } } } }), 443)).toEqual([{ ports: [{ port: 443, protocol: 'TCP' }] }])
  })

  it('lets the gateway reach Redis on 6379 when Redis is configured, by selector or CIDR', () => {
    for (const values of [{ redis: { url: 'redis://redis:6379' } }, { redis: { existingSecret: { name: 'redis' } } }, { config: { redis: { url: 'redis://redis:6379' } } }]) {
      expect(egressTo(render(values), 6379), JSON.stringify(values)).toEqual([{ ports: [{ port: 6379, protocol: 'TCP' }] }])
    }
    const bySelector = render({
      redis: { url: 'redis://redis.redis.svc:6379' },
      networkPolicy: { egress: { redis: { podLabels: { 'app.kubernetes.io/name': 'redis' }, namespaceLabels: { 'kubernetes.io/metadata.name': 'redis' } } } },
    })
    expect(egressTo(bySelector, 6379)).toEqual([
      {
        ports: [{ port: 6379, protocol: 'TCP' }],
        to: [{ podSelector: { matchLabels: { 'app.kubernetes.io/name': 'redis' } }, namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'redis' } } }],
      },
    ])
    const byCidr = render({ redis: { url: 'rediss://10.0.0.5:6380' }, networkPolicy: { egress: { redis: { cidrs: ['10.0.0.5/32'], ports: [6380] } } } })
    expect(egressTo(byCidr, 6380)).toEqual([{ ports: [{ port: 6380, protocol: 'TCP' }], to: [{ ipBlock: { cidr: '10.0.0.5/32' } }] }])
  })

  it('adds the Sentinel port only when config.redis.sentinels is set', () => {
    expect(egressTo(render({ redis: { url: 'redis://redis:6379' } }), 26379)).toEqual([])
    const sentinels = render({ config: { redis: { sentinels: [{ host: 'sentinel-0', port: 26379 }], sentinelName: 'mymaster' } } })
    expect(egressTo(sentinels, 26379)).toEqual([
      {
        ports: [
          { port: 6379, protocol: 'TCP' },
          { port: 26379, protocol: 'TCP' },
        ],
      },
    ])
  })

  it('lets the gateway reach the OpenTelemetry collector only when tracing is on, by its pods or anywhere on its ports', () => {
    expect(egressTo(chart, 4318)).toEqual([])
    const tracing = { endpoint: 'http://otel-collector.observability:4318' }
    expect(egressTo(render({ tracing }), 4318)).toEqual([{ ports: [{ port: 4318, protocol: 'TCP' }] }])
    const bySelector = render({
      tracing,
      networkPolicy: { egress: { collector: { podLabels: { 'app.kubernetes.io/name': 'opentelemetry-collector' }, namespaceLabels: { 'kubernetes.io/metadata.name': 'observability' } } } },
    })
    expect(egressTo(bySelector, 4318)).toEqual([
      {
        ports: [{ port: 4318, protocol: 'TCP' }],
        to: [{ podSelector: { matchLabels: { 'app.kubernetes.io/name': 'opentelemetry-collector' } }, namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'observability' } } }],
      },
    ])
  })

  it('appends extra egress rules as given', () => {
    const extra = { to: [{ ipBlock: { cidr: '198.51.100.0/24' } }], ports: [{ port: 443, protocol: 'TCP' }] }
    expect(policy(render({ networkPolicy: { egress: { extra: [extra] } } })).spec.egress.at(-1)).toEqual(extra)
  })
})

describe('cache-warm CronJob (cacheWarm)', () => {
  const WARM = { enabled: true, advertisers: [101, 102], apiKeySecret: { name: 'warm-key' } }
  const render = (values: Values = {}) => install({ values: merge({ cacheWarm: WARM }, values) })
  const cronJob = (chart: RenderedChart) => one<CronJob>(chart, 'CronJob')
  const container = (chart: RenderedChart) => cronJob(chart).spec.jobTemplate.spec.template.spec.containers[0]!
  const env = (chart: RenderedChart) => new Map(container(chart).env.map((e) => [e.name, e]))
  const chart = render()

  it('runs once a day, never two runs at once, as the gateway image under the same security settings', () => {
    const job = cronJob(chart)
    expect(job.apiVersion).toBe('batch/v1')
    expect(job.metadata.name).toBe('rgw-report-gateway-cache-warm')
    expect(job.spec).toMatchObject({ schedule: '15 5 * * *', concurrencyPolicy: 'Forbid' })
    expect(job.spec.timeZone).toBeUndefined()
    const pod = job.spec.jobTemplate.spec.template.spec
    expect(pod.restartPolicy).toBe('Never')
    expect(pod.automountServiceAccountToken).toBe(false)
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true })
    expect(container(chart).image).toBe(gateway(chart).image)
    expect(container(chart).securityContext).toMatchObject({ runAsNonRoot: true, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false })
  })

  it("is no pod of the gateway's Services, PDB or NetworkPolicy", () => {
    const labels = cronJob(chart).spec.jobTemplate.spec.template.metadata.labels
    expect(labels['app.kubernetes.io/component']).toBe('cache-warm')
    expect(selects(one<Deployment>(chart, 'Deployment').spec.selector.matchLabels, labels)).toBe(false)
    const np = one<NetworkPolicy>(render({ networkPolicy: { enabled: true } }), 'NetworkPolicy')
    expect(selects(np.spec.podSelector.matchLabels, labels)).toBe(false)
  })

  it('runs node dist/cli/warm.js with the flags from values, and the key from the Secret as WARM_API_KEY', () => {
    const c = container(chart)
    expect(c.command.slice(0, 2)).toEqual(['sh', '-c'])
    expect(c.command[2]).toContain('exec node dist/cli/warm.js --advertisers "$WARM_ADVERTISERS" --from "$from" --to "$to" --url "$WARM_URL" "$@"')
    expect(c.args).toEqual(['--by-date', '--by-campaign'])
    expect(env(chart).get('WARM_API_KEY')).toEqual({ name: 'WARM_API_KEY', valueFrom: { secretKeyRef: { name: 'warm-key', key: 'api-key' } } })
    expect(env(chart).get('WARM_ADVERTISERS')?.value).toBe('101,102')
    expect(env(chart).get('WARM_FROM')?.value).toBe('7 days ago')
    expect(env(chart).get('WARM_TO')?.value).toBe('yesterday')
    // The chart's own proxy Service by default.
    const { proxy } = services(chart)
    expect(env(chart).get('WARM_URL')?.value).toBe(`http://${proxy.metadata.name}.reports.svc:${proxy.spec.ports[0]!.port}`)
    // No secret value in the manifest.
    expect(JSON.stringify(cronJob(chart))).not.toMatch(/rgw_[A-Za-z0-9]/)
  })

  it('takes the schedule, time zone, dates, splits, flags, URL and Secret from values', () => {
    const other = render({
      cacheWarm: {
        schedule: '0 */6 * * *',
        timeZone: 'Europe/Berlin',
        from: '2026-01-01',
        to: 'today',
        splits: 'campaigns',
        byDate: false,
        byCampaign: false,
        extraArgs: ['--concurrency', '2'],
        url: 'http://report-gateway.reports.svc:8080',
        apiKeySecret: { name: 'warm', key: 'key' },
      },
    })
    expect(cronJob(other).spec).toMatchObject({ schedule: '0 */6 * * *', timeZone: 'Europe/Berlin' })
    expect(container(other).args).toEqual(['--splits', 'campaigns', '--concurrency', '2'])
    const e = env(other)
    expect(e.get('WARM_URL')?.value).toBe('http://report-gateway.reports.svc:8080')
    expect(e.get('WARM_FROM')?.value).toBe('2026-01-01')
    expect(e.get('TZ')?.value).toBe('Europe/Berlin')
    expect(e.get('WARM_API_KEY')?.valueFrom?.secretKeyRef).toEqual({ name: 'warm', key: 'key' })
  })

  const gnuDate = needTool(TOOLS.gnuDate, spawnSync('date', ['-d', '2026-01-01', '+%F'], { encoding: 'utf8' }).stdout.trim() === '2026-01-01', 'the cache-warm script test')
  it.skipIf(!gnuDate)('turns relative dates into days when it runs and passes every flag as its own argument (GNU date)', () => {
    // A stand-in `node` that prints its arguments shows what the script would run.
    const dir = mkdtempSync(join(tmpdir(), 'rgw-warm-'))
    try {
      writeFileSync(join(dir, 'node'), '#!/bin/sh\nprintf "%s\\n" "$@"\n', { mode: 0o755 })
      const c = container(render({ cacheWarm: { splits: 'campaigns' } }))
      const run = (from: string, to: string) =>
        spawnSync(c.command[0]!, [...c.command.slice(1), ...(c.args ?? [])], {
          encoding: 'utf8',
          env: { PATH: `${dir}:${process.env.PATH ?? ''}`, TZ: 'UTC', WARM_ADVERTISERS: '101,102', WARM_FROM: from, WARM_TO: to, WARM_URL: 'http://gw:8080', WARM_API_KEY: 'k' },
        })
      const fixed = run('2026-03-01', '2026-03-07')
      expect(fixed.status, fixed.stderr).toBe(0)
      expect(fixed.stdout.trim().split('\n')).toEqual([
        'dist/cli/warm.js',
        '--advertisers',
        '101,102',
        '--from',
        '2026-03-01',
        '--to',
        '2026-03-07',
        '--url',
        'http://gw:8080',
        '--splits',
        'campaigns',
        '--by-date',
        '--by-campaign',
      ])
      const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10)
      const relative = run('7 days ago', 'yesterday')
      expect(relative.status, relative.stderr).toBe(0)
      const lines = relative.stdout.trim().split('\n')
      expect([lines[4], lines[6]]).toEqual([day(-7), day(-1)])
      // An unreadable date stops the job before warm.js runs.
      const bad = run('someday', 'yesterday')
      expect(bad.status).not.toBe(0)
      expect(bad.stdout).toBe('')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('refuses to render without advertisers or the key Secret', () => {
    // The schema refuses these first; the template's own check names the value too.
    expect(() => install({ values: { cacheWarm: { enabled: true, apiKeySecret: { name: 'k' } } } })).toThrow(/schema/)
    expect(() => install({ values: { cacheWarm: { enabled: true, advertisers: [101] } } })).toThrow(/schema/)
  })
})

describe('terminationGracePeriodSeconds (derived)', () => {
  const grace = (values: Values) => {
    const chart = install({ values })
    const config = parse(podFiles(chart).get('/etc/report-gateway/config.yaml')!) as { shutdownGrace: string }
    return { period: one<Deployment>(chart, 'Deployment').spec.template.spec.terminationGracePeriodSeconds, shutdownGrace: config.shutdownGrace, preStop: gateway(chart).lifecycle?.preStop }
  }

  it('is preStopSleepSeconds + shutdownGraceSeconds + terminationGraceMarginSeconds', () => {
    expect(grace({})).toMatchObject({ period: 20, shutdownGrace: '10s' })
    expect(grace({ preStopSleepSeconds: 10, shutdownGraceSeconds: 30, terminationGraceMarginSeconds: 7 })).toMatchObject({ period: 47, shutdownGrace: '30s' })
    expect(grace({ shutdownGraceSeconds: 45 })).toMatchObject({ period: 55, shutdownGrace: '45s' })
  })

  it('has no preStop hook without a sleep, and then is the grace plus the margin', () => {
    const g = grace({ preStopSleepSeconds: 0 })
    expect(g.preStop).toBeUndefined()
    expect(g.period).toBe(15)
  })

  it("is what the gateway's loader reads as its shutdownGrace", () => {
    const chart = install({ values: merge(FULL, { shutdownGraceSeconds: 25 }) })
    const config = gatewayConfigFrom(chart, { 'redis-credentials': { url: 'redis://redis:6379' } })
    expect(config.shutdownGraceMs).toBe(25_000)
    expect(one<Deployment>(chart, 'Deployment').spec.template.spec.terminationGracePeriodSeconds).toBe(5 + 25 + 5)
  })
})

describe('values-production.yaml', () => {
  const production = parse(read('values-production.yaml')) as Values
  // What the example leaves to each installation (docs/operations/deploy.md).
  const yours = { image: { repository: IMAGE }, platform: { baseUrl: 'https://dsp-api.example.com' } }
  const chart = renderChart(CHART, { values: merge(production, yours) })

  it('meets the schema and turns on the NetworkPolicy, the alerts, the dashboard and the ServiceMonitor', () => {
    expect(validateValues(CHART, merge(parse(read('values.yaml')) as Values, production))).toEqual([])
    const kinds = chart.manifests.map((m) => m.kind)
    for (const kind of ['NetworkPolicy', 'PrometheusRule', 'ServiceMonitor', 'HorizontalPodAutoscaler']) expect(kinds, kind).toContain(kind)
    expect(all(chart, 'ConfigMap').map((m) => m.metadata.name).sort()).toEqual(['rgw-report-gateway-dashboard', 'rgw-report-gateway-settings'])
  })

  it('leaves the image and the platform address to each installation: as it is, it does not render', () => {
    expect(() => renderChart(CHART, { values: production })).toThrow(/^image\.repository is required/)
    expect(() => renderChart(CHART, { values: merge(production, { image: yours.image }) })).toThrow(/^platform\.baseUrl is required/)
  })

  it('lets the gateway reach its Redis, by selector, and the ingress controller reach the proxy', () => {
    const np = one<NetworkPolicy>(chart, 'NetworkPolicy')
    const redis = np.spec.egress.find((r) => r.ports.some((p) => p.port === 6379))
    expect(redis?.to).toEqual([{ podSelector: { matchLabels: { 'app.kubernetes.io/name': 'redis' } }, namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'redis' } } }])
    expect(np.spec.ingress[0]?.from).toContainEqual({ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } } })
  })

  it('comments every value', () => {
    const lines = read('values-production.yaml').split('\n')
    const bare = lines
      .map((line, i) => ({ line, i }))
      .filter(({ line, i }) => /^\s*[\w.-]+:\s*\S/.test(line) && !line.includes('#') && !/^\s*#/.test(lines[i - 1] ?? ''))
      .map(({ line, i }) => `${i + 1}: ${line.trim()}`)
    expect(bare).toEqual([])
  })
})

// ---------------------------------------------------------------- the renderer itself

describe('the test renderer (subset of Go templates)', () => {
  it('trims whitespace at {{- and -}} like Go', () => {
    expect(renderString('a  \n  {{- "b" -}}  \n  c', {})).toBe('abc')
    expect(renderString('a {{/* comment */}} b', {})).toBe('a  b')
  })

  it('evaluates if / else if / else, with and range (maps in key order)', () => {
    const src = '{{ if .a }}A{{ else if .b }}B{{ else }}C{{ end }}'
    expect(renderString(src, { a: 1 })).toBe('A')
    expect(renderString(src, { b: 'x' })).toBe('B')
    expect(renderString(src, { a: 0, b: '' })).toBe('C')
    expect(renderString('{{ with .m }}{{ .x }}{{ end }}', { m: { x: 'y' } })).toBe('y')
    expect(renderString('{{ range $k, $v := .m }}{{ $k }}={{ $v }};{{ end }}', { m: { b: 2, a: 1 } })).toBe('a=1;b=2;')
    expect(renderString('{{ range .l }}[{{ . }}]{{ else }}none{{ end }}', { l: [] })).toBe('none')
  })

  it('includes defines and pipes through the functions the chart uses', () => {
    const helpers = '{{- define "n" -}}{{ .name | default "dflt" | trunc 3 }}{{- end }}'
    expect(renderString('{{ include "n" . | quote }}', {}, helpers)).toBe('"dfl"')
    expect(renderString('x:{{ toYaml .v | nindent 2 }}', { v: { b: 1, a: [1] } })).toBe('x:\n  a:\n    - 1\n  b: 1')
    expect(renderString('{{ printf "%s-%v" .a .b }}', { a: 'x', b: 8080 })).toBe('x-8080')
  })

  it('prints values as helm does', () => {
    expect(renderString('{{ .n }}', { n: 1000000 })).toBe('1e+06')
    expect(renderString('[{{ .missing }}]', {})).toBe('[]')
    expect(renderString('{{ printf "%s" .n }}', { n: 1 })).toBe('%!s(float64=1)')
  })

  it('reads chart files with .Files.Get, as helm does (not templates, "" for none)', () => {
    const files = install({ values: { monitoring: { dashboard: { enabled: true } } } })
    expect(files.files['dashboard-configmap.yaml']).toContain('"uid": "report-gateway"')
    const data = { Files: { Get: (name: unknown) => (name === 'a.txt' ? 'A' : '') } }
    expect(renderString('[{{ .Files.Get "a.txt" }}][{{ .Files.Get "b.txt" }}]', data)).toBe('[A][]')
    expect(renderString('{{ "a.txt" | .Files.Get | quote }}', data)).toBe('"A"')
  })

  it('runs add, join, deepCopy and set like Sprig', () => {
    expect(renderString('{{ add 5 10 .n }}', { n: 5 })).toBe('20')
    expect(renderString('{{ join "," .l }}', { l: [101, 102] })).toBe('101,102')
    const data = { m: { a: 1 } }
    expect(renderString('{{ $c := deepCopy .m }}{{ $_ := set $c "b" "x" }}{{ toYaml $c }}|{{ toYaml .m }}', data)).toBe('a: 1\nb: x|a: 1')
    expect(data.m).toEqual({ a: 1 })
  })

  it('fails on what helm fails on, and on anything outside the subset', () => {
    expect(() => renderString('{{ .a.b }}', {})).toThrow(/nil pointer/)
    expect(() => renderString('{{ required "need x" .x }}', {})).toThrow(TemplateError)
    expect(() => renderString('{{ if .x }}{{ fail "no x here" }}{{ end }}', { x: 1 })).toThrow('no x here')
    expect(renderString('{{ if .x }}{{ fail "no x here" }}{{ end }}ok', {})).toBe('ok')
    expect(() => renderString('{{ lookup "v1" "Secret" "ns" "n" }}', {})).toThrow(/not supported/)
    expect(() => renderString('{{ if .a }}', {})).toThrow(/without end/)
  })
})
