/**
 * The Helm chart (helm/report-gateway). There is no helm binary where the suite runs,
 * so test/helpers/render-chart.ts renders the templates with the subset of Go templates
 * and Sprig they use (it fails on anything outside that subset), after checking the
 * values against values.schema.json as helm does. Real helm renders the same manifests;
 * `helm lint helm/report-gateway` and `helm template` remain the check where helm exists.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, it, expect } from 'vitest'
import { parse, parseAllDocuments } from 'yaml'
import { Ajv } from 'ajv'
import { mergeValues as merge, renderChart, renderString, validateValues, TemplateError, type Manifest, type RenderedChart, type Values } from '../helpers/render-chart.js'
import { loadConfig, DEFAULT_CONFIG_PATH } from '../../src/config.js'

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
  'LOG_LEVEL',
])

const SECRETS = {
  platformToken: 'plat-token-4f1c9a0e7b2d',
  adminToken: 'admin-token-93bd2e1f07aa',
  gatewaySecret: 'gateway-secret-5e8a1c77d3f9',
}

/** Everything optional switched on: a Secret from values, Redis, HPA, ServiceMonitor, teams. */
const FULL: Values = {
  platform: { baseUrl: 'https://dsp-api.example.com' },
  redis: { existingSecret: { name: 'redis-credentials', key: 'url' } },
  secrets: { create: true, values: SECRETS },
  autoscaling: { enabled: true, minReplicas: 3, maxReplicas: 12 },
  serviceMonitor: { enabled: true, labels: { release: 'kube-prometheus-stack' } },
  config: {
    teams: {
      growth: { keys: [`sha256:${'a'.repeat(64)}`], advertisers: [101, 102], write: false, rateLimit: { max: 600, window: '1m' } },
    },
    cache: { ttl: { recent: '2m' } },
  },
}

// ---------------------------------------------------------------- shapes used below

interface EnvVar {
  name: string
  value?: string
  valueFrom?: { secretKeyRef?: { name: string; key: string } }
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

function gatewayConfigFrom(chart: RenderedChart, externalSecrets: Record<string, Record<string, string>> = {}) {
  const files = podFiles(chart, externalSecrets)
  const env: Record<string, string> = {}
  for (const e of gateway(chart).env) {
    if (e.value !== undefined) env[e.name] = e.value
    const ref = e.valueFrom?.secretKeyRef
    if (ref) env[e.name] = externalSecrets[ref.name]?.[ref.key] ?? ''
  }
  return loadConfig({
    env,
    readFile: (path) => {
      const text = files.get(path)
      if (text !== undefined) return text
      if (path === DEFAULT_CONFIG_PATH) return readFileSync(path, 'utf8')
      throw Object.assign(new Error(`no such file in the pod: ${path}`), { code: 'ENOENT' })
    },
  })
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
    const values = renderChart(CHART, { values: FULL }).values
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
    ['a grace period shorter than the gateway needs', { terminationGracePeriodSeconds: 5 }],
    ['an unknown Service type', { service: { type: 'ExternalName' } }],
    ['a PDB percentage without %', { podDisruptionBudget: { maxUnavailable: '50' } }],
  ]
  it.each(invalid)('rejects %s', (_what, override) => {
    expect(validateValues(CHART, merge(defaults, override))).not.toEqual([])
  })

  it('is checked before rendering, as helm does', () => {
    expect(() => renderChart(CHART, { values: { logLevel: 'verbose' } })).toThrow(/schema/)
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
  const chart = renderChart(CHART)

  it('renders valid YAML of the expected kinds', () => {
    for (const [file, text] of Object.entries(chart.files)) {
      if (file === 'NOTES.txt') continue
      for (const doc of parseAllDocuments(text)) expect(doc.errors, file).toEqual([])
    }
    expect(chart.manifests.map((m) => m.kind).sort()).toEqual(
      ['ConfigMap', 'Deployment', 'Pod', 'PodDisruptionBudget', 'Service', 'Service', 'ServiceAccount'].sort(),
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
        'helm.sh/chart': 'report-gateway-0.1.0',
      })
    }
  })

  it('runs the appVersion image, with the replica count and a zero-downtime rollout', () => {
    const deployment = one<Deployment>(chart, 'Deployment')
    expect(gateway(chart).image).toBe('ghcr.io/example/report-gateway:0.1.0')
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
    const exposed = services(renderChart(CHART, { values: { service: { type: 'LoadBalancer' } } }))
    expect(exposed.proxy.spec.type).toBe('LoadBalancer')
    expect(exposed.admin.spec.type).toBe('ClusterIP')
  })

  it('binds both listeners to every pod interface, so Services, probes and Prometheus reach them', () => {
    const env = envOf(chart)
    expect(env.get('HOST')?.value).toBe('0.0.0.0')
    expect(env.get('ADMIN_HOST')?.value).toBe('0.0.0.0')
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
      ['ADMIN_HOST', 'ADMIN_PORT', 'ADMIN_TOKEN_FILE', 'CONFIG_FILE', 'GATEWAY_SECRET_FILE', 'HOST', 'LOG_LEVEL', 'PLATFORM_TOKEN_FILE', 'PORT'].sort(),
    )
    expect(envOf(chart).get('LOG_LEVEL')?.value).toBe('info')
  })

  it('points the *_FILE variables into the mounted Secret, mounted whole so updates reach the pod', () => {
    const env = envOf(chart)
    expect(env.get('PLATFORM_TOKEN_FILE')?.value).toBe('/var/run/secrets/report-gateway/platform-token')
    expect(env.get('ADMIN_TOKEN_FILE')?.value).toBe('/var/run/secrets/report-gateway/admin-token')
    expect(env.get('GATEWAY_SECRET_FILE')?.value).toBe('/var/run/secrets/report-gateway/gateway-secret')

    const spec = one<Deployment>(chart, 'Deployment').spec.template.spec
    const volume = spec.volumes.find((v) => v.secret)
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
    expect(parse(files.get(configFile!)!)).toEqual({})
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
    expect(sleep).toBeGreaterThan(0)
    const defaults = parse(readFileSync(join(ROOT, 'config/default.yaml'), 'utf8')) as { shutdownGrace: string }
    const grace = durationSeconds(defaults.shutdownGrace)
    expect(spec.terminationGracePeriodSeconds).toBeGreaterThan(sleep + grace)
  })

  it('uses the ServiceAccount and ConfigMap it creates', () => {
    const spec = one<Deployment>(chart, 'Deployment').spec.template.spec
    expect(spec.serviceAccountName).toBe(one(chart, 'ServiceAccount').metadata.name)
    const configVolume = spec.volumes.find((v) => v.configMap)
    expect(configVolume?.configMap?.name).toBe(one(chart, 'ConfigMap').metadata.name)
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
    expect(config.host).toBe('0.0.0.0')
    expect(config.port).toBe(8080)
    expect(config.admin).toMatchObject({ host: '0.0.0.0', port: 8081, token: SECRETS.adminToken })
    expect(config.gatewaySecret).toBe(SECRETS.gatewaySecret)
    expect(config.logLevel).toBe('info')
  })

  it('warns in NOTES.txt about demo mode and lists the Secret keys to create', () => {
    expect(chart.notes).toContain('DEMO MODE')
    expect(chart.notes).toMatch(/platform-token\s+\(PLATFORM_TOKEN_FILE\)/)
    expect(chart.notes).toContain('rollout restart deployment/rgw-report-gateway')
  })
})

describe('rendered with a Secret from values, Redis, autoscaling and a ServiceMonitor', () => {
  const chart = renderChart(CHART, { values: FULL })

  it('adds the Secret, the HPA and the ServiceMonitor', () => {
    expect(chart.manifests.map((m) => m.kind).sort()).toEqual(
      ['ConfigMap', 'Deployment', 'HorizontalPodAutoscaler', 'Pod', 'PodDisruptionBudget', 'Secret', 'Service', 'Service', 'ServiceAccount', 'ServiceMonitor'].sort(),
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
    const secret = one(chart, 'Secret')
    const data = decode(secret)
    expect(data).toEqual({ 'platform-token': SECRETS.platformToken, 'admin-token': SECRETS.adminToken, 'gateway-secret': SECRETS.gatewaySecret })
    const dir = '/var/run/secrets/report-gateway'
    const env = envOf(chart)
    for (const name of ['PLATFORM_TOKEN_FILE', 'ADMIN_TOKEN_FILE', 'GATEWAY_SECRET_FILE']) {
      const path = env.get(name)?.value ?? ''
      expect(path.startsWith(`${dir}/`), name).toBe(true)
      expect(Object.keys(data), name).toContain(path.slice(dir.length + 1))
    }
    expect(one<Deployment>(chart, 'Deployment').spec.template.spec.volumes.find((v) => v.secret)?.secret?.secretName).toBe(secret.metadata.name)
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

  it('writes values `config` to the config file', () => {
    const files = podFiles(chart)
    expect(parse(files.get('/etc/report-gateway/config.yaml')!)).toEqual(FULL.config)
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
    expect(() => renderChart(CHART, { values: { secrets: { create: true, values: { ...SECRETS, adminToken: '' } } } })).toThrow(/secrets\.values\.adminToken is required/)
  })
})

describe('rendered with other choices', () => {
  it('rolls the pods when the config changes (checksum/config), not when a secret value changes', () => {
    const checksum = (values: Values) => one<Deployment>(renderChart(CHART, { values }), 'Deployment').spec.template.metadata.annotations['checksum/config']
    const base = checksum(FULL)
    expect(base).toMatch(/^[a-f0-9]{64}$/)
    expect(checksum(merge(FULL, { config: { cache: { ttl: { recent: '3m' } } } }))).not.toBe(base)
    expect(checksum(merge(FULL, { config: { teams: null } }))).not.toBe(base)
    // Rotation: a new token in the Secret is read from the file; the pods stay.
    const rotated = merge(FULL, { secrets: { values: { platformToken: 'plat-token-rotated' } } })
    expect(one(renderChart(CHART, { values: rotated }), 'Deployment')).toEqual(one(renderChart(CHART, { values: FULL }), 'Deployment'))
  })

  it('uses an existing Secret by name and drops the variables of unused keys', () => {
    const chart = renderChart(CHART, { values: { secrets: { existingSecret: 'gateway-secrets', keys: { gatewaySecret: '' } } } })
    expect(all(chart, 'Secret')).toEqual([])
    expect(one<Deployment>(chart, 'Deployment').spec.template.spec.volumes.find((v) => v.secret)?.secret?.secretName).toBe('gateway-secrets')
    const names = [...envOf(chart).keys()]
    expect(names).toContain('PLATFORM_TOKEN_FILE')
    expect(names).not.toContain('GATEWAY_SECRET_FILE')
  })

  it('configures a password login through the four *_FILE variables', () => {
    const keys = { platformToken: '', platformUsername: 'username', platformPassword: 'password', platformClientId: 'client-id', platformClientSecret: 'client-secret' }
    const chart = renderChart(CHART, {
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

  it('passes a plain Redis URL as a value', () => {
    const env = envOf(renderChart(CHART, { values: { redis: { url: 'redis://redis-master:6379/0' } } }))
    expect(env.get('REDIS_URL')).toEqual({ name: 'REDIS_URL', value: 'redis://redis-master:6379/0' })
  })

  it('moves the listeners together with their Services and probes', () => {
    const chart = renderChart(CHART, { values: { ports: { http: 9080, admin: 9081 } } })
    const env = envOf(chart)
    expect(env.get('PORT')?.value).toBe('9080')
    expect(env.get('ADMIN_PORT')?.value).toBe('9081')
    expect(Object.fromEntries(gateway(chart).ports.map((p) => [p.name, p.containerPort]))).toEqual({ http: 9080, admin: 9081 })
    expect(gateway(chart).readinessProbe.httpGet.port).toBe('admin')
  })

  it('pins the image by digest when one is given', () => {
    const digest = `sha256:${'0'.repeat(64)}`
    expect(gateway(renderChart(CHART, { values: { image: { digest } } })).image).toBe(`ghcr.io/example/report-gateway@${digest}`)
    expect(gateway(renderChart(CHART, { values: { image: { tag: '0.2.0' } } })).image).toBe('ghcr.io/example/report-gateway:0.2.0')
  })

  it('names resources after the release, without repeating the chart name, within 63 characters', () => {
    expect(one(renderChart(CHART, { releaseName: 'report-gateway' }), 'Deployment').metadata.name).toBe('report-gateway')
    expect(one(renderChart(CHART, { values: { fullnameOverride: 'rgw' } }), 'Deployment').metadata.name).toBe('rgw')
    const long = renderChart(CHART, { releaseName: 'a-very-long-release-name-that-goes-on-and-on-and-on-x' })
    // Services and the rest are DNS labels (63); the helm test Pod's name may be longer (253).
    for (const m of long.manifests) expect(m.metadata.name.length, `${m.kind} ${m.metadata.name}`).toBeLessThanOrEqual(m.kind === 'Pod' ? 253 : 63)
  })

  it('leaves out the PDB, the admin Service and the ServiceAccount when switched off', () => {
    const chart = renderChart(CHART, { values: { podDisruptionBudget: { enabled: false }, adminService: { enabled: false }, serviceAccount: { create: false } } })
    expect(all(chart, 'PodDisruptionBudget')).toEqual([])
    expect(all(chart, 'ServiceAccount')).toEqual([])
    expect(all(chart, 'Service')).toHaveLength(1)
    expect(one<Deployment>(chart, 'Deployment').spec.template.spec.serviceAccountName).toBe('default')
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

  it('fails on what helm fails on, and on anything outside the subset', () => {
    expect(() => renderString('{{ .a.b }}', {})).toThrow(/nil pointer/)
    expect(() => renderString('{{ required "need x" .x }}', {})).toThrow(TemplateError)
    expect(() => renderString('{{ lookup "v1" "Secret" "ns" "n" }}', {})).toThrow(/not supported/)
    expect(() => renderString('{{ if .a }}', {})).toThrow(/without end/)
  })
})
