/**
 * The Helm chart rendered with values other than the defaults: a Secret from values,
 * Redis, autoscaling and a ServiceMonitor; the other choices an install makes; the
 * optional objects; the termination grace the chart derives; values-production.yaml.
 * How the chart is rendered without helm: helm-chart.test.ts.
 */
import { describe, it, expect } from 'vitest'
import { parse, stringify } from 'yaml'
import { mergeValues as merge, renderChart, validateValues, type Manifest, type Values } from '../helpers/render-chart.js'
import { CHART, CHART_VERSION, chartFile, CONTRACT_ENV, IMAGE, install, SECRETS, TEAMS, FULL, type Deployment, type Service, all, one, gateway, envOf, services, decode, podFiles, gatewayConfigFrom, type NetworkPolicy } from '../helpers/chart-manifests.js'
import { configProblems, loadConfigFrom, loadConfigYaml } from '../helpers/load-config.js'
import { ConfigError } from '../../src/config.js'
import { ENV_KEYS } from '../../src/config/sources.js'
import { webhookHostsAdvice } from '../../src/config/webhook-hosts.js'

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

  // The ServiceMonitor selects the admin Service: without it, the Prometheus Operator finds no
  // target, nothing of the gateway's is scraped and every alert is blind, the install green.
  it('refuses a ServiceMonitor without the admin Service it scrapes', () => {
    const render = (values: Values) => () => install({ values: merge(FULL, values) })
    expect(render({ adminService: { enabled: false } })).toThrow(
      'serviceMonitor.enabled: the ServiceMonitor scrapes /metrics through the admin Service, and adminService.enabled is false: nothing would be scraped; set adminService.enabled=true, or serviceMonitor.enabled=false',
    )
    expect(render({ adminService: { enabled: false }, serviceMonitor: { enabled: false } })).not.toThrow()
  })

  // The Prometheus Operator skips a ServiceMonitor whose scrapeTimeout is longer than its
  // interval ("scrapeTimeout greater than scrapeInterval"): nothing of the gateway's scraped,
  // every alert blind, a warning in the operator's log alone.
  it('refuses a scrapeTimeout longer than the interval, as the Prometheus Operator skips such a ServiceMonitor', () => {
    const monitor = (serviceMonitor: Values) => () => install({ values: merge(FULL, { serviceMonitor }) })
    expect(monitor({ interval: '5s' })).toThrow('serviceMonitor.scrapeTimeout: 10s is longer than serviceMonitor.interval (5s)')
    expect(monitor({ interval: '1m', scrapeTimeout: '90s' })).toThrow('serviceMonitor.scrapeTimeout: 90s is longer than serviceMonitor.interval (1m)')
    expect(monitor({ interval: '500ms', scrapeTimeout: '1s' })).toThrow('serviceMonitor.scrapeTimeout: 1s is longer than serviceMonitor.interval (500ms)')
    for (const fine of [{ interval: '10s' }, { interval: '1m', scrapeTimeout: '60s' }, { interval: '1h', scrapeTimeout: '59m' }, { interval: '5s', scrapeTimeout: '5000ms' }]) {
      expect(monitor(fine), JSON.stringify(fine)).not.toThrow()
    }
    expect(() => install({ values: { serviceMonitor: { enabled: false, interval: '5s' } } })).not.toThrow()
  })

  it('writes values `config` to the config file, with shutdownDrain and shutdownGrace from shutdownDrainSeconds and shutdownGraceSeconds', () => {
    const files = podFiles(chart)
    expect(parse(files.get('/etc/report-gateway/config.yaml')!)).toEqual({ ...(FULL.config as Values), shutdownDrain: '5s', shutdownGrace: '10s' })
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

  // The chart would make the Secret a name given as existingSecret names: one made outside
  // Helm then fails the install (it exists), or, adopted, is overwritten by secrets.values.
  it('fails to render with secrets.create beside secrets.existingSecret, naming both', () => {
    expect(() => install({ values: { secrets: { create: true, existingSecret: 'gateway-secrets', values: SECRETS } } })).toThrow(/secrets\.create and secrets\.existingSecret: both set/)
    expect(one<Manifest>(install({ values: { secrets: { create: true, values: SECRETS } } }), 'Secret', 'rgw-report-gateway').kind).toBe('Secret')
  })

  // A choice between two values is told at render with both names and what to do: helm prints
  // where a schema's `not` failed (`/secrets/keys: must NOT be valid`), never its description.
  it.each([
    ['a password login on the Secret beside the default platformToken key', { secrets: { existingSecret: 'rgw', keys: { platformUsername: 'username', platformPassword: 'password', platformClientId: 'client-id', platformClientSecret: 'client-secret' } } },
      'secrets.keys.platformToken and secrets.keys.platformUsername: both set, and the platform token comes from one of them (the gateway stops at start on both, exit 78): for the password login set secrets.keys.platformToken="" (it names the key "platform-token"), or clear the four login keys'],
    ['three of the four login keys', { secrets: { existingSecret: 'rgw', keys: { platformToken: '', platformUsername: 'username', platformPassword: 'password', platformClientId: 'client-id' } } },
      'secrets.keys: the password login needs all four keys: platformUsername, platformPassword, platformClientId, platformClientSecret; not set: platformClientSecret'],
    ['redis.url beside redis.existingSecret', { redis: { url: 'redis://redis:6379', existingSecret: { name: 'redis-credentials' } } },
      'redis.url and redis.existingSecret.name: both set, and REDIS_URL comes from one of them: keep redis.url for a URL without a password, or redis.existingSecret alone'],
    ['teams beside teamsSecret.existingSecret', { teams: TEAMS, teamsSecret: { existingSecret: 'gateway-teams' } },
      'teams and teamsSecret.existingSecret: both set; the existing Secret gateway-teams holds the teams itself, and the chart makes no Secret of teams: put the teams in that Secret and leave teams empty, or clear teamsSecret.existingSecret'],
  ])('fails to render with %s, naming both values and what to do', (_what, values, message) => {
    expect(() => install({ values })).toThrow(message)
  })

  // The Secret files are mounted 0440, readable by their owner (root) and fsGroup alone: a pod
  // with no fsGroup (a value's null removes the default), or one of another form, cannot read
  // them, and the gateway stops at start.
  it.each([
    ['fsGroup null (removed)', { podSecurityContext: { fsGroup: null } }],
    ['podSecurityContext null', { podSecurityContext: null }],
  ])('fails to render with %s, naming podSecurityContext.fsGroup', (_what, values) => {
    expect(() => install({ values: values as Values })).toThrow(/podSecurityContext\.fsGroup: required/)
  })

  it.each([['a string', ''], ['0 (root)', 0], ['a fraction', 1000.5]])('refuses fsGroup as %s in the schema', (_what, fsGroup) => {
    expect(validateValues(CHART, merge(parse(chartFile('values.yaml')) as Values, { podSecurityContext: { fsGroup } } as Values))).not.toEqual([])
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
    expect(checksum(merge(FULL, { shutdownDrainSeconds: 15 }))).not.toBe(base)
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

  // With secrets.create, a value the gateway reads at start alone (GATEWAY_SECRET, its fallback,
  // a login's values, the Sentinel password) changed by helm upgrade rolls the pods: left
  // running, each kept the old value until some later restart (a crash, a node drain), and
  // replicas with two gateway secrets each read the other's records as absent.
  it('rolls the pods when a secret value read at start alone changes (secrets.create), not the platform or admin tokens, which are re-read', () => {
    const template = (values: Values) => one<Deployment>(install({ values }), 'Deployment').spec.template
    const base = template(FULL)
    expect(template(merge(FULL, { secrets: { values: { gatewaySecret: 'gateway-secret-rotated-0123' } } }))).not.toEqual(base)
    const withFallback = merge(FULL, { secrets: { keys: { gatewaySecretFallback: 'gateway-secret-next' }, values: { gatewaySecretFallback: 'gateway-secret-next-0123456789' } } })
    expect(template(merge(withFallback, { secrets: { values: { gatewaySecretFallback: 'gateway-secret-next-9876543210' } } }))).not.toEqual(template(withFallback))
    const login = merge(FULL, { secrets: { keys: { platformToken: '', platformUsername: 'platform-username', platformPassword: 'platform-password', platformClientId: 'platform-client-id', platformClientSecret: 'platform-client-secret' }, values: { platformUsername: 'reports@example.com', platformPassword: 'pw-1', platformClientId: '42', platformClientSecret: 'cs-1' } } })
    expect(template(merge(login, { secrets: { values: { platformPassword: 'pw-2' } } }))).not.toEqual(template(login))
    expect(template(merge(FULL, { secrets: { values: { adminToken: 'admin-token-rotated-0123' } } }))).toEqual(base)
    // The pod template holds no value of the Secret.
    const text = JSON.stringify(template(login))
    for (const value of ['pw-1', 'cs-1', SECRETS.gatewaySecret]) expect(text).not.toContain(value)
  })

  it('refuses teams under `config` (they would land in the settings), saying where they go', () => {
    expect(() => install({ values: { config: { teams: TEAMS } } })).toThrow(
      'config.teams: the teams are no longer part of the config file; move them to the top-level value `teams` (TEAMS_FILE, a Secret of their own that the pods re-read without a restart)',
    )
    // An empty mapping is no team: dropped from the settings rather than refused.
    expect(parse(podFiles(install({ values: { config: { teams: {} } } })).get('/etc/report-gateway/config.yaml')!)).toEqual({ shutdownDrain: '5s', shutdownGrace: '10s', jobs: { resultsRoom: '64MiB' } })
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

  it("refuses to render a config.platform.timeout not below config.server.connectionTimeout, with the gateway's own message", () => {
    const refused: Values[] = [
      { platform: { timeout: '3m' } },
      { server: { connectionTimeout: '30s' } },
      { platform: { timeout: 150_000 }, server: { connectionTimeout: '150s' } },
      { platform: { timeout: '1d' }, server: { connectionTimeout: '23h' } },
      { platform: { timeout: '2000ms' }, server: { connectionTimeout: '2s' } },
    ]
    for (const config of refused) {
      const problem = configProblems(stringify(config)).find((p) => p.startsWith('server.connectionTimeout:'))
      expect(problem, JSON.stringify(config)).toBeDefined()
      expect(() => install({ values: { config } }), JSON.stringify(config)).toThrow(problem)
    }
    for (const config of [{ platform: { timeout: '90s' } }, { platform: { timeout: '2h' }, server: { connectionTimeout: '1d' } }, { platform: { timeout: 1999 }, server: { connectionTimeout: '2s' } }]) {
      expect(gatewayConfigFrom(install({ values: { config, secrets: { create: true, values: SECRETS } } })).server.connectionTimeoutMs, JSON.stringify(config)).toBeGreaterThan(0)
    }
  })

  /**
   * What the chart says of team dash's webhook the gateway refuses at start with `gateway`
   * (its refusal, then what to do): the refusal, that every pod would stop, and what to do
   * in the gateway's words, its list named as the values name it.
   */
  const chartWords = (gateway: string): string => {
    const advice = `; ${webhookHostsAdvice('dash')}`
    expect(gateway.endsWith(advice), gateway).toBe(true)
    return `${gateway.slice(0, -advice.length)}; every pod would stop at start with this (exit 78): ${webhookHostsAdvice('dash', 'config.jobs.webhookHosts')}`
  }

  it("refuses to render a team's webhook while config.jobs.webhookHosts is empty, naming the team and the value, as the gateway would stop at start", () => {
    const webhook = { url: 'https://hooks.dash.svc.cluster.local/reports', secret: `whsec_${'A'.repeat(32)}` }
    const dash = { keys: [`sha256:${'d'.repeat(64)}`], advertisers: [103] }
    const teams = { ...TEAMS, dash: { ...dash, webhook } }
    const problem = configProblems(stringify({ teams })).find((p) => p.startsWith('teams.dash.webhook.url:'))
    expect(problem).toBe(`teams.dash.webhook.url: jobs.webhookHosts is empty: webhooks are off; ${webhookHostsAdvice('dash')}`)
    for (const config of [{}, { jobs: { webhookHosts: [] } }, { jobs: { webhookTimeout: '5s' } }]) {
      expect(() => install({ values: { teams, config } }), JSON.stringify(config)).toThrow(chartWords(problem!))
    }
    expect(chartWords(problem!)).toBe("teams.dash.webhook.url: jobs.webhookHosts is empty: webhooks are off; every pod would stop at start with this (exit 78): list the webhook's host in config.jobs.webhookHosts, or remove teams.dash.webhook")
    // Listed, the pods start with the team's webhook; a team without one, or with null, needs no host.
    const listed = gatewayConfigFrom(install({ values: { teams, config: { jobs: { webhookHosts: ['hooks.dash.svc.cluster.local'] } }, secrets: { create: true, values: SECRETS } } }))
    expect(listed.teams.find((t) => t.name === 'dash')?.webhook?.url).toBe(webhook.url)
    expect(() => install({ values: { teams: { ...TEAMS, dash: { ...dash, webhook: null } } } })).not.toThrow()
    expect(() => install({ values: { teams: TEAMS } })).not.toThrow()
  })

  it("refuses to render a team's webhook whose host is not in a non-empty config.jobs.webhookHosts, as the gateway would at start; a host it cannot read as the gateway does is left to the gateway", () => {
    const dash = { keys: [`sha256:${'d'.repeat(64)}`], advertisers: [103] }
    const secret = `whsec_${'A'.repeat(32)}`
    // The gateway's own refusal of the webhook, or null where it starts.
    const gatewaySays = (url: string, webhookHosts: string[]): string | null => {
      try {
        loadConfigYaml(stringify({ teams: { dash: { ...dash, webhook: { url, secret } } }, jobs: { webhookHosts } }))
        return null
      } catch (err) {
        return (err as { problems?: string[] }).problems?.find((p) => p.startsWith('teams.dash.webhook.url:')) ?? null
      }
    }
    const chartSays = (url: string, webhookHosts: string[]): string | null => {
      try {
        install({ values: { teams: { ...TEAMS, dash: { ...dash, webhook: { url, secret } } }, config: { jobs: { webhookHosts } } } })
        return null
      } catch (err) {
        return (err as Error).message
      }
    }
    const cases: { url: string; hosts: string[]; refused: boolean }[] = [
      { url: 'https://hooks.dash.svc.cluster.local/reports', hosts: ['hooks.other.example'], refused: true },
      { url: 'http://hooks.dash.svc.cluster.local?to=reports', hosts: ['hooks.other.example', 'dash.svc.cluster.local'], refused: true },
      { url: 'https://10.0.0.7/reports', hosts: ['10.0.0.8'], refused: true },
      { url: 'https://hooks.example./reports', hosts: ['hooks.example'], refused: true },
      // Listed: names compared whatever their case, and whatever the port.
      { url: 'https://Hooks.Dash.svc.cluster.local:8443/reports', hosts: ['hooks.other.example', 'hooks.dash.SVC.cluster.local'], refused: false },
      // Hosts a URL parser rewrites (IDNA, IPv4 in other spellings) or reads otherwise than Go's: the gateway's to judge.
      { url: 'https://bücher.example/reports', hosts: ['xn--bcher-kva.example'], refused: false },
      { url: 'https://0x0a.0.0.7/reports', hosts: ['10.0.0.7'], refused: false },
      { url: 'https://10.0.0.7./reports', hosts: ['10.0.0.7'], refused: false },
      { url: 'https://[::1]:8443/reports', hosts: ['[::1]'], refused: false },
      { url: 'https://hooks.other.example\\@hooks.dash.svc.cluster.local/', hosts: ['hooks.dash.svc.cluster.local'], refused: false },
    ]
    for (const { url, hosts, refused } of cases) {
      const gateway = gatewaySays(url, hosts)
      const chart = chartSays(url, hosts)
      // Never refused at render where the gateway starts; refused with the gateway's words where it is.
      if (chart !== null) expect(chart, url).toBe(chartWords(gateway!))
      expect(chart !== null, `${url} ${JSON.stringify(hosts)}: ${chart ?? 'rendered'}`).toBe(refused)
    }
    expect(gatewaySays('https://hooks.other.example\\@hooks.dash.svc.cluster.local/', ['hooks.dash.svc.cluster.local'])).toBe(`teams.dash.webhook.url: hooks.other.example is not in jobs.webhookHosts; ${webhookHostsAdvice('dash')}`)
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

  it('takes an all-digit image.tag as helm reads it, a number (--set image.tag=20261201, or unquoted in a values file), and renders it as written, quoted', () => {
    const chart = install({ values: { image: { tag: 20261201 }, cacheWarm: { enabled: true, advertisers: [101], apiKeySecret: { name: 'warm-key' } } } })
    expect(gateway(chart).image).toBe(`${IMAGE}:20261201`)
    const lines = Object.values(chart.files).flatMap((text) => text.split('\n')).filter((line) => /^\s*image:/.test(line))
    expect(lines.map((line) => line.trim())).toEqual(Array(lines.length).fill(`image: "${IMAGE}:20261201"`))
    expect(lines.length).toBeGreaterThanOrEqual(3)
    // A tag YAML reads as a fraction (1.10 is the number 1.1) cannot be written back as given: refused, naming the value.
    expect(() => install({ values: { image: { tag: 1.1 } } })).toThrow(/\/image\/tag/)
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

describe('optional objects', () => {
  it('are all off by default: no PrometheusRule, dashboard, NetworkPolicy or CronJob', () => {
    const defaults = parse(chartFile('values.yaml')) as Values & {
      monitoring: { prometheusRule: { enabled: boolean }; dashboard: { enabled: boolean } }
      networkPolicy: { enabled: boolean }
      cacheWarm: { enabled: boolean }
    }
    expect([defaults.monitoring.prometheusRule.enabled, defaults.monitoring.dashboard.enabled, defaults.networkPolicy.enabled, defaults.cacheWarm.enabled]).toEqual([false, false, false, false])
    const kinds = install().manifests.map((m) => m.kind)
    for (const kind of ['PrometheusRule', 'NetworkPolicy', 'CronJob', 'ServiceMonitor', 'Ingress']) expect(kinds, kind).not.toContain(kind)
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
      expect(m.metadata.labels, m.kind).toMatchObject({ 'app.kubernetes.io/name': 'report-gateway', 'app.kubernetes.io/instance': 'rgw', 'helm.sh/chart': `report-gateway-${CHART_VERSION}` })
    }
  })
})

describe('the Ingress', () => {
  const ingress = {
    enabled: true,
    className: 'nginx',
    annotations: { 'nginx.ingress.kubernetes.io/proxy-read-timeout': '60' },
    hosts: [{ host: 'reports.example.com', paths: [{ path: '/', pathType: 'Prefix' }] }, { host: 'reports.internal', paths: [{ path: '/api', pathType: 'Prefix' }, { path: '/openapi.json', pathType: 'Exact' }] }],
    tls: [{ secretName: 'reports-tls', hosts: ['reports.example.com'] }],
  }

  it('leads every host and path to the proxy Service\'s http port, never to the admin Service', () => {
    const chart = install({ values: { ingress } })
    const made = one<Manifest & { spec: { ingressClassName?: string; tls?: unknown; rules: { host: string; http: { paths: { path: string; pathType: string; backend: { service: { name: string; port: { name: string } } } }[] } }[] } }>(chart, 'Ingress')
    expect(made.apiVersion).toBe('networking.k8s.io/v1')
    expect(made.metadata).toMatchObject({ name: 'rgw-report-gateway', namespace: 'reports', annotations: ingress.annotations })
    expect(made.metadata.labels).toMatchObject({ 'app.kubernetes.io/name': 'report-gateway', 'app.kubernetes.io/instance': 'rgw' })
    expect(made.spec.ingressClassName).toBe('nginx')
    expect(made.spec.tls).toEqual(ingress.tls)
    expect(made.spec.rules.map((r) => [r.host, r.http.paths.map((p) => `${p.pathType} ${p.path}`)])).toEqual([
      ['reports.example.com', ['Prefix /']],
      ['reports.internal', ['Prefix /api', 'Exact /openapi.json']],
    ])
    const { proxy, admin } = services(chart)
    for (const path of made.spec.rules.flatMap((r) => r.http.paths)) {
      expect(path.backend.service.name).toBe(proxy.metadata.name)
      expect(path.backend.service.name).not.toBe(admin.metadata.name)
      expect(proxy.spec.ports.map((p) => p.name)).toContain(path.backend.service.port.name)
    }
  })

  it('leaves the class to the cluster\'s default when none is named', () => {
    const made = one<Manifest & { spec: Record<string, unknown> }>(install({ values: { ingress: { ...ingress, className: '', tls: [] } } }), 'Ingress')
    expect(made.spec).not.toHaveProperty('ingressClassName')
    expect(made.spec).not.toHaveProperty('tls')
  })

  it('refuses an enabled Ingress without a host, and a path that is no absolute path', () => {
    expect(() => install({ values: { ingress: { enabled: true } } })).toThrow(/ingress/)
    expect(() => install({ values: { ingress: { ...ingress, hosts: [{ host: 'reports.example.com', paths: [{ path: 'api', pathType: 'Prefix' }] }] } } })).toThrow(/ingress/)
  })
})

describe('terminationGracePeriodSeconds (derived)', () => {
  const grace = (values: Values) => {
    const chart = install({ values })
    const config = parse(podFiles(chart).get('/etc/report-gateway/config.yaml')!) as { shutdownDrain: string; shutdownGrace: string }
    return { period: one<Deployment>(chart, 'Deployment').spec.template.spec.terminationGracePeriodSeconds, shutdownDrain: config.shutdownDrain, shutdownGrace: config.shutdownGrace, preStop: gateway(chart).lifecycle?.preStop }
  }

  it('is preStopSleepSeconds + shutdownDrainSeconds + shutdownGraceSeconds + terminationGraceMarginSeconds', () => {
    expect(grace({})).toMatchObject({ period: 20, shutdownDrain: '5s', shutdownGrace: '10s' })
    expect(grace({ preStopSleepSeconds: 10, shutdownDrainSeconds: 15, shutdownGraceSeconds: 30, terminationGraceMarginSeconds: 7 })).toMatchObject({ period: 62, shutdownDrain: '15s', shutdownGrace: '30s' })
    expect(grace({ shutdownGraceSeconds: 45 })).toMatchObject({ period: 55, shutdownGrace: '45s' })
    expect(grace({ shutdownDrainSeconds: 0 })).toMatchObject({ period: 15, shutdownDrain: '0s' })
  })

  it('has no preStop hook by default (the drain answers instead), and a sleep when one is asked for', () => {
    expect(grace({}).preStop).toBeUndefined()
    const g = grace({ preStopSleepSeconds: 3 })
    expect(g.preStop).toEqual({ exec: { command: ['sleep', '3'] } })
    expect(g.period).toBe(3 + 5 + 10 + 5)
  })

  it("is what the gateway's loader reads as its shutdownDrain and shutdownGrace", () => {
    const chart = install({ values: merge(FULL, { shutdownDrainSeconds: 8, shutdownGraceSeconds: 25 }) })
    const config = gatewayConfigFrom(chart, { 'redis-credentials': { url: 'redis://redis:6379' } })
    expect(config.shutdownDrainMs).toBe(8000)
    expect(config.shutdownGraceMs).toBe(25_000)
    expect(one<Deployment>(chart, 'Deployment').spec.template.spec.terminationGracePeriodSeconds).toBe(8 + 25 + 5)
  })
})

describe('values-production.yaml', () => {
  const production = parse(chartFile('values-production.yaml')) as Values
  // What the example leaves to each installation (docs/operations/deploy.md).
  const yours = { image: { repository: IMAGE }, platform: { baseUrl: 'https://dsp-api.example.com' } }
  const chart = renderChart(CHART, { values: merge(production, yours) })

  it('meets the schema and turns on the NetworkPolicy, the alerts, the dashboard and the ServiceMonitor', () => {
    expect(validateValues(CHART, merge(parse(chartFile('values.yaml')) as Values, production))).toEqual([])
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
    const lines = chartFile('values-production.yaml').split('\n')
    const bare = lines
      .map((line, i) => ({ line, i }))
      .filter(({ line, i }) => /^\s*[\w.-]+:\s*\S/.test(line) && !line.includes('#') && !/^\s*#/.test(lines[i - 1] ?? ''))
      .map(({ line, i }) => `${i + 1}: ${line.trim()}`)
    expect(bare).toEqual([])
  })
})

describe('values an operator sets that the cluster would take and the pods could not honour', () => {
  it('mounts the Secret for any one key of secrets.keys set alone: each *_FILE names a file the pod has', () => {
    const none = Object.fromEntries(Object.keys(SECRETS).map((k) => [k, '']))
    const variables: Record<string, string> = {
      platformToken: 'PLATFORM_TOKEN_FILE',
      adminToken: 'ADMIN_TOKEN_FILE',
      adminViewerToken: 'ADMIN_VIEWER_TOKEN_FILE',
      adminTokens: 'ADMIN_TOKENS_FILE',
      gatewaySecret: 'GATEWAY_SECRET_FILE',
      gatewaySecretFallback: 'GATEWAY_SECRET_FALLBACK_FILE',
      platformUsername: 'PLATFORM_USERNAME_FILE',
      platformPassword: 'PLATFORM_PASSWORD_FILE',
      platformClientId: 'PLATFORM_CLIENT_ID_FILE',
      platformClientSecret: 'PLATFORM_CLIENT_SECRET_FILE',
      redisSentinelPassword: 'REDIS_SENTINEL_PASSWORD_FILE',
    }
    const keys = Object.keys(parse(chartFile('values.yaml')).secrets.keys as Record<string, string>)
    expect(keys.sort()).toEqual(Object.keys(variables).sort())
    // The four of a password login go together (the schema refuses fewer); the Sentinels'
    // password goes with Sentinels, and so with Redis and its GATEWAY_SECRET.
    const login = ['platformUsername', 'platformPassword', 'platformClientId', 'platformClientSecret']
    const sentinel = ['redisSentinelPassword', 'gatewaySecret']
    for (const set of [...keys.filter((k) => !login.includes(k) && k !== 'redisSentinelPassword').map((k) => [k]), login, sentinel]) {
      const config = set === sentinel ? { redis: { sentinels: [{ host: 'redis-sentinel', port: 26379 }] } } : {}
      const chart = install({ values: { config, secrets: { existingSecret: 'gateway-secrets', keys: { ...none, ...Object.fromEntries(set.map((k) => [k, k])) } } } })
      const files = podFiles(chart, { 'gateway-secrets': Object.fromEntries(set.map((k) => [k, `${k}-value-0123456789`])) })
      for (const key of set) {
        const path = envOf(chart).get(variables[key]!)?.value
        expect(path, key).toBe(`/var/run/secrets/report-gateway/${key}`)
        expect(files.get(path!), `${variables[key]} names a file outside the pod's mounts`).toBe(`${key}-value-0123456789`)
      }
    }
  })

  it('refuses an HPA without a CPU request: it scales on CPU utilization, a percent of the request', () => {
    // null takes the default's request out, as in helm.
    expect(() => install({ values: { autoscaling: { enabled: true }, resources: { requests: { cpu: null } } } })).toThrow(/resources\.requests\.cpu/)
    expect(() => install({ values: { autoscaling: { enabled: true }, resources: { requests: null } } })).toThrow(/resources\.requests\.cpu/)
    expect(() => install({ values: { autoscaling: { enabled: true }, resources: { requests: { cpu: '250m' } } } })).not.toThrow()
    expect(() => install({ values: { resources: { requests: null } } })).not.toThrow()
  })

  it('refuses an HPA whose minReplicas is above its maxReplicas', () => {
    expect(() => install({ values: { autoscaling: { enabled: true, minReplicas: 5, maxReplicas: 2 } } })).toThrow(/autoscaling\.minReplicas/)
  })

  it('refuses extraEnv that names a variable the chart sets (the last of two wins in the pod, but the ports, probes and Services follow the values)', () => {
    for (const name of ['HOST', 'PORT', 'ADMIN_HOST', 'ADMIN_PORT', 'LOG_LEVEL', 'CONFIG_FILE', 'TEAMS_FILE', 'PLATFORM_BASE_URL', 'PLATFORM_TOKEN_FILE', 'ADMIN_TOKEN_FILE', 'GATEWAY_SECRET_FILE']) {
      expect(() => install({ values: { extraEnv: [{ name, value: '9000' }] } }), name).toThrow(new RegExp(`extraEnv: ${name} is set by the chart`))
    }
    // A variable the chart leaves unset may come from extraEnv.
    expect(envOf(install({ values: { config: { credentials: { eu: {} } }, extraEnv: [{ name: 'PLATFORM_TOKEN_URL', value: '/auth/token' }, { name: 'CREDENTIAL_EU_TOKEN_FILE', value: '/var/run/secrets/report-gateway/eu-token' }] } })).get('PLATFORM_TOKEN_URL')?.value).toBe('/auth/token')
  })

  it('refuses a CREDENTIAL_* variable of extraEnv that no credential of config.credentials reads, as every pod would stop at start (exit 78)', () => {
    const eu = { name: 'CREDENTIAL_EU_WEST_TOKEN_FILE', value: '/var/run/secrets/report-gateway/eu-token' }
    const fromSecret = { name: 'CREDENTIAL_EU_WEST_PASSWORD', valueFrom: { secretKeyRef: { name: 'eu', key: 'password' } } }
    expect(() => install({ values: { extraEnv: [eu] } })).toThrow(/extraEnv: CREDENTIAL_EU_WEST_TOKEN_FILE is a variable of no credential under config\.credentials \(none declared\); the gateway would refuse it at start/)
    expect(() => install({ values: { config: { credentials: { eu: {} } }, extraEnv: [eu] } })).toThrow(/extraEnv: CREDENTIAL_EU_WEST_TOKEN_FILE is a variable of no credential under config\.credentials \(eu\)/)
    expect(() => install({ values: { config: { credentials: { 'eu-west': {} } }, extraEnv: [{ name: 'CREDENTIAL_EU_WEST_TOKEN_URL', value: '/oauth' }] } })).toThrow(/CREDENTIAL_EU_WEST_TOKEN_URL is a variable of no credential/)
    const env = envOf(install({ values: { config: { credentials: { 'eu-west': {} } }, extraEnv: [eu, fromSecret, { name: 'CREDENTIAL_GONE_TOKEN', value: '' }] } }))
    expect(env.get('CREDENTIAL_EU_WEST_PASSWORD')).toEqual(fromSecret)
  })

  it('refuses an extraEnv value that is not a string (--set extraEnv[0].value=8 reads a number) at the schema, naming it: Kubernetes would refuse the Deployment at apply, far from the value', () => {
    for (const value of [8, 0.5, true]) expect(() => install({ values: { extraEnv: [{ name: 'UV_THREADPOOL_SIZE', value }] } }), String(value)).toThrow(/\/extraEnv\/0\/value/)
    expect(envOf(install({ values: { extraEnv: [{ name: 'UV_THREADPOOL_SIZE', value: '8' }] } })).get('UV_THREADPOOL_SIZE')).toEqual({ name: 'UV_THREADPOOL_SIZE', value: '8' })
    // A value from elsewhere (valueFrom) is still taken.
    const fromSecret = { name: 'EXTRA_TOKEN', valueFrom: { secretKeyRef: { name: 'extra', key: 'token' } } }
    expect(envOf(install({ values: { extraEnv: [fromSecret] } })).get('EXTRA_TOKEN')).toEqual(fromSecret)
  })

  // A secret the docs take from a Secret (a *_FILE of secrets.keys, or valueFrom.secretKeyRef)
  // never stands in the Deployment as a plain value, readable by whoever may read it: neither
  // one of the gateway's secret variables nor a named credential's.
  it('refuses a plain extraEnv value for a secret variable (the Deployment would hold it), and a variable whose *_FILE the chart sets (the gateway stops at start on both, exit 78)', () => {
    const secretNames = ENV_KEYS.filter((key) => key.secret).map((key) => key.env)
    expect(secretNames).toEqual(expect.arrayContaining(['PLATFORM_TOKEN', 'GATEWAY_SECRET', 'ADMIN_TOKEN', 'REDIS_SENTINEL_PASSWORD']))
    const noFiles = { secrets: { keys: { platformToken: 'platform-token', adminToken: '', gatewaySecret: '' } } }
    for (const name of [...secretNames, 'CREDENTIAL_EU_TOKEN', 'CREDENTIAL_EU_PASSWORD', 'CREDENTIAL_EU_CLIENT_SECRET']) {
      const values = { ...noFiles, config: { credentials: { eu: {} } }, extraEnv: [{ name, value: 's3cret-0123456789abcdef' }] }
      expect(() => install({ values }), name).toThrow(new RegExp(`extraEnv: ${name} holds a secret`))
      // From a Secret it is taken (unless the chart sets its *_FILE).
      if (name !== 'PLATFORM_TOKEN') expect(() => install({ values: { ...values, extraEnv: [{ name, valueFrom: { secretKeyRef: { name: 'x', key: 'y' } } }] } }), name).not.toThrow()
    }
    // A Redis URL holding a password, as redis.url refuses it.
    expect(() => install({ values: { ...noFiles, extraEnv: [{ name: 'REDIS_URL', value: 'redis://:s3cret@redis-master:6379/0' }] } })).toThrow(/extraEnv: REDIS_URL holds a secret/)
    // PLATFORM_TOKEN beside the chart's PLATFORM_TOKEN_FILE: the gateway refuses the two at once.
    expect(() => install({ values: { extraEnv: [{ name: 'PLATFORM_TOKEN', valueFrom: { secretKeyRef: { name: 'x', key: 'y' } } }] } })).toThrow(/extraEnv: PLATFORM_TOKEN beside PLATFORM_TOKEN_FILE/)
  })

  // Step 2 of changing the gateway secret swaps two keys (docs/operations/deploy.md): one
  // left unchanged names the same file twice, and every pod stopped at start (exit 78), or,
  // with secrets.create, the Secret held one key twice (helm: "mapping key already defined").
  it('refuses two secrets.keys naming one key of the Secret, and with secrets.create a fallback or viewer token equal to the one beside it (the gateway stops at start on both, exit 78)', () => {
    const redis = { redis: { url: 'redis://redis-master:6379/0' } }
    expect(() => install({ values: { ...redis, secrets: { keys: { gatewaySecret: 'gateway-secret-next', gatewaySecretFallback: 'gateway-secret-next' } } } }))
      .toThrow(/secrets\.keys\.gatewaySecret and secrets\.keys\.gatewaySecretFallback both name the key "gateway-secret-next" of the Secret.*step 2 swaps the two keys/)
    expect(() => install({ values: { ...redis, secrets: { create: true, values: { ...SECRETS, gatewaySecretFallback: 'next-secret-0123456789abcdef' }, keys: { gatewaySecretFallback: 'gateway-secret' } } } }))
      .toThrow(/secrets\.keys\.gatewaySecret and secrets\.keys\.gatewaySecretFallback both name the key "gateway-secret"/)
    expect(() => install({ values: { secrets: { keys: { adminViewerToken: 'admin-token' } } } })).toThrow(/secrets\.keys\.adminToken and secrets\.keys\.adminViewerToken both name the key "admin-token"/)
    expect(() => install({ values: { secrets: { keys: { adminToken: 'platform-token' } } } })).toThrow(/secrets\.keys\.adminToken and secrets\.keys\.platformToken both name the key "platform-token"/)
    expect(() => install({ values: { ...redis, secrets: { create: true, values: { ...SECRETS, gatewaySecretFallback: SECRETS.gatewaySecret }, keys: { gatewaySecretFallback: 'gateway-secret-next' } } } }))
      .toThrow(/secrets\.values\.gatewaySecretFallback: the same as secrets\.values\.gatewaySecret/)
    expect(() => install({ values: { secrets: { create: true, values: { ...SECRETS, adminViewerToken: SECRETS.adminToken }, keys: { adminViewerToken: 'viewer-token' } } } }))
      .toThrow(/secrets\.values\.adminViewerToken: the same as secrets\.values\.adminToken/)
    // Steps 1 and 2 as deploy.md writes them render.
    expect(() => install({ values: { ...redis, secrets: { keys: { gatewaySecretFallback: 'gateway-secret-next' } } } })).not.toThrow()
    expect(() => install({ values: { ...redis, secrets: { keys: { gatewaySecret: 'gateway-secret-next', gatewaySecretFallback: 'gateway-secret' } } } })).not.toThrow()
  })

  // Values without secrets.create make no Secret: the pods waited for one made outside Helm.
  it('refuses secrets.values without secrets.create, naming the Secret the pods would wait for', () => {
    expect(() => install({ values: { secrets: { values: SECRETS } } })).toThrow(/secrets\.values\.adminToken is set but secrets\.create is false: the chart makes no Secret from it, and the pods would wait for the Secret rgw-report-gateway made outside Helm/)
    expect(() => install({ values: { secrets: { existingSecret: 'gateway-secrets', values: { gatewaySecret: 'x'.repeat(32) } } } })).toThrow(/secrets\.values\.gatewaySecret is set .* the Secret gateway-secrets made outside Helm/)
  })

  // The gateway takes a variable over the config file: a setting of `config` the chart's env
  // also gives was ignored in silence (config.logLevel: debug logged at info).
  it.each([
    ['config.host', { config: { host: '127.0.0.1' } }, /config\.host: the chart sets HOST/],
    ['config.port', { config: { port: 9000 } }, /config\.port: the chart sets PORT from ports\.http, which the gateway takes over the config file \(config would be ignored\); set ports\.http instead/],
    ['config.logLevel', { config: { logLevel: 'debug' } }, /config\.logLevel: the chart sets LOG_LEVEL from the value logLevel, .*; set logLevel instead/],
    ['config.admin.host', { config: { admin: { host: '0.0.0.0' } } }, /config\.admin\.host: .*set adminHost instead/],
    ['config.admin.port', { config: { admin: { port: 9001 } } }, /config\.admin\.port: .*set ports\.admin instead/],
    ['config.platform.baseUrl beside platform.baseUrl', { config: { platform: { baseUrl: 'https://other.example.com' } } }, /config\.platform\.baseUrl: the chart sets PLATFORM_BASE_URL/],
    ['config.platform.tokenUrl beside platform.tokenUrl', { platform: { tokenUrl: '/oauth/token' }, config: { platform: { tokenUrl: '/auth/token' } } }, /config\.platform\.tokenUrl: the chart sets PLATFORM_TOKEN_URL/],
    ['config.platform.tokenFile beside secrets.keys.platformToken', { config: { platform: { tokenFile: '/x/token' } } }, /config\.platform\.tokenFile: the chart sets PLATFORM_TOKEN_FILE/],
    ['config.redis.url beside redis.url', { redis: { url: 'redis://redis-master:6379/0' }, config: { redis: { url: 'redis://other:6379/0' } } }, /config\.redis\.url: the chart sets REDIS_URL/],
  ])('refuses %s, which a variable of the chart overrides', (_what, values, message) => {
    expect(() => install({ values: values as Values })).toThrow(message)
  })

  it('takes config.platform.baseUrl, tokenUrl and redis.url when the values leave them unset', () => {
    expect(() => install({ values: { platform: { baseUrl: '' }, config: { platform: { baseUrl: 'https://dsp-api.example.com', tokenUrl: '/auth/token' }, redis: { url: 'redis://redis-master:6379/0' } } } })).not.toThrow()
  })

  it('refuses the same port for both listeners', () => {
    expect(() => install({ values: { ports: { http: 8080, admin: 8080 } } })).toThrow(/ports\.admin/)
  })
})

describe("an operator's Redis topologies: Sentinel and Cluster, over TLS, with an ACL user", () => {
  // The URL with the ACL user's password lives in a Secret made outside Helm; so do the
  // gateway's own secrets (secrets.existingSecret), the Sentinels' password among them.
  const urlSecret = { 'redis-credentials': { url: 'rediss://report-gateway:acl-pw-7f3a@redis.redis.svc:6379/0' } }
  const gatewaySecret = { 'gateway-secrets': { 'platform-token': 'tok', 'admin-token': SECRETS.adminToken, 'gateway-secret': SECRETS.gatewaySecret, 'sentinel-password': 'sentinel-pw-0c9e' } }
  const external = { ...urlSecret, ...gatewaySecret }
  const common: Values = {
    replicaCount: 4,
    redis: { existingSecret: { name: 'redis-credentials', key: 'url' } },
    secrets: { existingSecret: 'gateway-secrets' },
    ingress: { enabled: true, className: 'nginx', hosts: [{ host: 'reports.example.com', paths: [{ path: '/', pathType: 'Prefix' }] }], tls: [{ secretName: 'reports-tls', hosts: ['reports.example.com'] }] },
    resources: { requests: { cpu: '50m', memory: '128Mi' }, limits: { memory: '448Mi' } },
    teams: TEAMS,
  }
  const sentinel: Values = merge(common, {
    secrets: { keys: { redisSentinelPassword: 'sentinel-password' } },
    config: { redis: { sentinels: [{ host: 'redis-sentinel-0.redis-sentinel.redis.svc', port: 26379 }, { host: 'redis-sentinel-1.redis-sentinel.redis.svc', port: 26379 }], sentinelName: 'mymaster', sentinelTls: true, tlsServername: 'redis-0.redis-headless.redis.svc.cluster.local' } },
  })
  const cluster: Values = merge(common, { config: { redis: { cluster: [{ host: 'redis-cluster-0.redis-cluster-headless.redis.svc', port: 6379 }], tlsServername: 'redis-0.redis-headless.redis.svc.cluster.local', keyPrefix: 'reports:' } } })

  it('render, and load as the pods would: four replicas, the Sentinels or the Cluster, the ACL user and TLS from the URL, the Sentinels\' password from its file', () => {
    const s = install({ values: sentinel })
    expect(one<Deployment>(s, 'Deployment').spec.replicas).toBe(4)
    const fromSentinels = gatewayConfigFrom(s, external)
    expect(fromSentinels.redis).toMatchObject({ url: urlSecret['redis-credentials'].url, sentinelTls: true, sentinelPassword: 'sentinel-pw-0c9e', tlsServername: 'redis-0.redis-headless.redis.svc.cluster.local' })
    expect(fromSentinels.redis.sentinels).toHaveLength(2)
    const c = install({ values: cluster })
    expect(gatewayConfigFrom(c, external).redis).toMatchObject({ url: urlSecret['redis-credentials'].url, keyPrefix: 'reports:', cluster: [{ host: 'redis-cluster-0.redis-cluster-headless.redis.svc', port: 6379 }] })
    for (const chart of [s, c]) {
      expect(one(chart, 'Ingress')).toBeDefined()
      expect((gateway(chart) as unknown as { resources: unknown }).resources).toEqual(common.resources)
      expect(JSON.stringify(chart.manifests)).not.toContain('acl-pw-7f3a')
    }
  })

  /** The problems the gateway stops with (exit 78) for `config` and these variables. */
  function gatewayProblems(config: Values, env: Record<string, string> = {}): string[] {
    try {
      loadConfigFrom({ PLATFORM_BASE_URL: 'https://dsp-api.example.com', PLATFORM_TOKEN: 'tok', GATEWAY_SECRET: SECRETS.gatewaySecret, CONFIG_FILE: '/c.yaml', ...env }, { '/c.yaml': stringify(config) })
    } catch (err) {
      if (err instanceof ConfigError) return err.problems
      throw err
    }
    return []
  }

  it('refuse, at the install, the Redis settings with which every pod would stop at start, with the gateway\'s message', () => {
    const sentinels = [{ host: 'redis-sentinel-0', port: 26379 }]
    const nodes = [{ host: 'redis-cluster-0', port: 6379 }]
    // Each: the values, the variables the pods would get, the gateway's problem, and what the
    // chart says: the value it names, then the gateway's words ('' for them alone, after "config.").
    const cases: [Values, Record<string, string>, string, string][] = [
      [{ redis: { url: 'redis://redis:6379' }, config: { redis: { sentinels, cluster: nodes } } }, { REDIS_URL: 'redis://redis:6379' }, 'redis: set sentinels or cluster, not both', ''],
      [{ redis: { url: 'rediss://redis:6379' }, config: { redis: { sentinelTls: true } } }, { REDIS_URL: 'rediss://redis:6379' }, 'redis.sentinelTls: set, but no Sentinels are: set redis.sentinels (with redis.sentinelName), or remove redis.sentinelTls', ''],
      [{ redis: { url: 'redis://redis:6379' }, config: { redis: { sentinels, sentinelTls: true } } }, { REDIS_URL: 'redis://redis:6379' }, 'redis.sentinelTls: set, but Redis is not reached over TLS: set REDIS_URL (redis.url) to a rediss:// URL, or remove redis.sentinelTls', ''],
      [{ redis: { url: 'redis://redis:6379' }, config: { redis: { tlsServername: 'redis.redis.svc.cluster.local' } } }, { REDIS_URL: 'redis://redis:6379' }, 'redis.tlsServername: set, but Redis is not reached over TLS: set REDIS_URL (redis.url) to a rediss:// URL, or remove redis.tlsServername', ''],
      [{ config: { redis: { sentinels, tlsServername: 'redis.redis.svc.cluster.local' } } }, {}, 'redis.tlsServername: set, but Redis is not reached over TLS: set REDIS_URL (redis.url) to a rediss:// URL, or remove redis.tlsServername', ''],
      [{ redis: { url: 'redis://redis:6379' }, secrets: { keys: { redisSentinelPassword: 'sentinel-password' } } }, { REDIS_URL: 'redis://redis:6379', REDIS_SENTINEL_PASSWORD: 'sentinel-pw-0c9e' }, 'REDIS_SENTINEL_PASSWORD: set, but no Sentinels are: set redis.sentinels (with redis.sentinelName), or remove REDIS_SENTINEL_PASSWORD', 'secrets.keys.redisSentinelPassword: REDIS_SENTINEL_PASSWORD: set, but no Sentinels are'],
      [{ redis: { url: 'redis://redis:6379/2' }, config: { redis: { cluster: nodes } } }, { REDIS_URL: 'redis://redis:6379/2' }, 'REDIS_URL (redis.url): names database 2, but a Redis Cluster has database 0 alone', 'redis.url: names a database other than 0, but a Redis Cluster has database 0 alone'],
      [{ redis: { url: 'redis://redis:6379' }, config: { redis: { cluster: nodes, keyPrefix: '{reports}:' } } }, { REDIS_URL: 'redis://redis:6379' }, 'redis.keyPrefix: holds "{", but a Redis Cluster hashes a key by', 'config.redis.keyPrefix: holds a brace, but a Redis Cluster hashes a key by'],
    ]
    for (const [values, env, problem, said] of cases) {
      expect(gatewayProblems((values.config ?? {}) as Values, env).join('\n'), JSON.stringify(values)).toContain(problem)
      const installed = merge(values, { secrets: { create: true, values: { ...SECRETS, redisSentinelPassword: 'sentinel-pw-0c9e' } } })
      expect(() => install({ values: installed }), JSON.stringify(values)).toThrow(said || `config.${problem}`)
    }
  })

  it("leaves to the gateway what hangs on a URL the values do not hold (redis.existingSecret): TLS settings render beside it", () => {
    const values = merge(common, { config: { redis: { tlsServername: 'redis-0.redis-headless.redis.svc.cluster.local' } } })
    expect(gatewayConfigFrom(install({ values }), external).redis.tlsServername).toBe('redis-0.redis-headless.redis.svc.cluster.local')
  })
})
