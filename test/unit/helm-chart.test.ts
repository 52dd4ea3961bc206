/**
 * The Helm chart (helm/report-gateway): Chart.yaml, values.yaml and its schema, and the
 * manifests of an install with the defaults. There is no helm binary where the suite runs,
 * so test/helpers/render-chart.ts renders the templates with the subset of Go templates
 * and Sprig they use (it fails on anything outside that subset), after checking the
 * values against values.schema.json as helm does. Real helm renders the same manifests;
 * `helm lint helm/report-gateway` and `helm template` remain the check where helm exists.
 * The other concerns of the chart each have a file: helm-chart-choices (values other than
 * the defaults, the production example), helm-chart-monitoring (alerts, dashboard),
 * helm-chart-network-policy, helm-chart-cache-warm, and render-chart (the renderer).
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it, expect } from 'vitest'
import { parse, parseAllDocuments, stringify } from 'yaml'
import { Ajv } from 'ajv'
import { mergeValues as merge, renderChart, validateValues, type Values } from '../helpers/render-chart.js'
import { currentDefinition, withGatewayConfig } from '../../scripts/chart-config-schema.mjs'
import { loadConfigYaml } from '../helpers/load-config.js'
import { ConfigError } from '../../src/config.js'
import { TEAM_NAME_PATTERN } from '../../src/config/names.js'
import { SETTING_FLOORS } from '../../src/config/floors.js'
import { FILE_FORBIDDEN } from '../../src/config/sources.js'
import { patternsOutsideRe2, schemaPatterns } from '../helpers/re2-patterns.js'
import { ROOT, CHART, CHART_VERSION, chartFile, CONTRACT_ENV, IMAGE, PLATFORM, install, SECRETS, FULL, type Deployment, one, gateway, envOf, services, durationSeconds, podFiles, POD_IP, gatewayConfigFrom, selects, type NetworkPolicy, type PodDisruptionBudget } from '../helpers/chart-manifests.js'

describe('Chart.yaml', () => {
  const chart = parse(chartFile('Chart.yaml')) as Record<string, unknown>
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string }

  it('is a v2 application chart named after the package, with a SemVer version', () => {
    expect(chart.apiVersion).toBe('v2')
    expect(chart.type).toBe('application')
    expect(chart.name).toBe(pkg.name)
    expect(String(chart.version)).toMatch(/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/)
    expect(typeof chart.description).toBe('string')
  })

  it('is versioned by its CHANGELOG: the version is the newest entry, which says what changed since the one before', () => {
    const changelog = chartFile('CHANGELOG.md')
    const versions = [...changelog.matchAll(/^## (\d+\.\d+\.\d+)$/gm)].map((m) => m[1])
    expect(versions[0]).toBe(String(chart.version))
    expect(versions).toContain('0.2.0')
    // Every version after 0.2.0 lists its changes.
    const newest = changelog.slice(changelog.indexOf(`## ${String(chart.version)}`)).split(/^## /m)[1] ?? ''
    expect(newest.match(/^- /gm)?.length ?? 0).toBeGreaterThan(0)
  })

  it("deploys the package's version by default (appVersion = package.json version)", () => {
    expect(chart.appVersion).toBe(pkg.version)
  })
})

describe('README.md (helm show readme)', () => {
  // What an operator holding the chart alone (helm pull, helm show readme) reads first: what
  // it deploys, the values without which rendering fails, and where the rest is.
  const readme = () => chartFile('README.md')

  it('names the values rendering fails without, the Secret the pods mount, and an install command', () => {
    const text = readme()
    for (const required of ['image.repository', 'platform.baseUrl', 'secrets.keys', 'teams', 'values-production.yaml']) expect(text).toContain(required)
    expect(text).toMatch(/helm upgrade --install report-gateway /)
  })

  it('names every top-level key of values.yaml, and links only files that exist', () => {
    const text = readme()
    for (const key of Object.keys(parse(chartFile('values.yaml')) as object)) expect(text, key).toContain(`\`${key}\``)
    for (const [, link] of text.matchAll(/\]\(([^)#]+)(?:#[^)]*)?\)/g)) {
      if (/^https?:/.test(link as string)) continue
      expect(() => readFileSync(join(CHART, link as string)), link).not.toThrow()
    }
  })
})

describe('values.yaml and values.schema.json', () => {
  const defaults = parse(chartFile('values.yaml')) as Values
  const schema = JSON.parse(chartFile('values.schema.json')) as Record<string, unknown>

  it('is a draft-07 schema that ajv compiles', () => {
    expect(schema.$schema).toBe('http://json-schema.org/draft-07/schema#')
    expect(() => new Ajv({ strictTypes: false }).compile(schema)).not.toThrow()
  })

  // helm reads values.schema.json with Go's regexp (RE2): a pattern using what RE2 lacks (a
  // look-ahead) fails every `helm install`, `template` and `lint` of the chart, whatever the values.
  it('holds only patterns RE2 reads as JavaScript does', () => {
    expect(schemaPatterns(schema).length).toBeGreaterThan(90)
    expect(patternsOutsideRe2(schema)).toEqual([])
  })

  // The teams' names are the gateway's (src/config/names.ts): the pattern is written here
  // again, as values.schema.json is a file helm reads as it is.
  it("checks the teams' names with the gateway's TEAM_NAME_PATTERN", () => {
    expect((schema.properties as Record<string, { propertyNames?: { pattern?: string } }>).teams!.propertyNames!.pattern).toBe(TEAM_NAME_PATTERN)
  })

  it('accepts the defaults', () => {
    expect(validateValues(CHART, defaults)).toEqual([])
  })

  it('accepts a production-like set of values', () => {
    const values = install({ values: FULL }).values
    expect(validateValues(CHART, values)).toEqual([])
  })

  it('accepts tokens read from a file with its line break (--set-file), and a token path of one /', () => {
    const values = { platform: { tokenUrl: '/oauth/token' }, secrets: { values: { platformToken: 'abc.def-0123456789\n', adminToken: 'admin-token-0123456789\n', adminViewerToken: 'viewer-token-0123456789' } } }
    expect(validateValues(CHART, merge(defaults, values))).toEqual([])
  })

  it('accepts a password login in place of a ready token', () => {
    const keys = { platformToken: '', platformUsername: 'username', platformPassword: 'password', platformClientId: 'client-id', platformClientSecret: 'client-secret' }
    expect(validateValues(CHART, merge(defaults, { secrets: { keys } }))).toEqual([])
  })

  it('accepts URLs without a user or password, in values and in the config file', () => {
    const urls = { platform: { baseUrl: 'https://dsp-api.example.com', tokenUrl: 'https://auth.example.com/oauth/token?realm=a@b' }, redis: { url: 'rediss://redis-master:6380/0' }, tracing: { endpoint: 'https://otel-collector:4318/v1' } }
    expect(validateValues(CHART, merge(defaults, urls))).toEqual([])
    expect(validateValues(CHART, merge(defaults, { config: { redis: { url: 'redis://redis-master:6379/0' }, platform: { baseUrl: 'https://dsp-api.example.com' } } }))).toEqual([])
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
    // A password in a plain value lands in the Deployment's env, readable by whoever may read the Deployment.
    ['a Redis URL with a password (it belongs in redis.existingSecret)', { redis: { url: 'redis://:s3cret@redis-master:6379/0' } }],
    ['a Redis URL with a user and password', { redis: { url: 'rediss://gateway:s3cret@redis-master:6380' } }],
    // After host:port the gateway takes /<database number> alone (exit 78 at start otherwise).
    ['a Redis URL with a query (ioredis options are not read from it)', { redis: { url: 'redis://redis-master:6379/0?tls=true' } }],
    ['a Redis URL with a path that is no database number', { redis: { url: 'redis://redis-master:6379/reports' } }],
    ['a Redis URL with an anchor', { redis: { url: 'redis://redis-master:6379/0#a' } }],
    ['an admin host in brackets, as a URL writes an IPv6 address (the gateway stops at start)', { adminHost: '[::1]' }],
    // `config` is checked against the gateway's own schema: what it refuses at start (exit 78) fails the install.
    ['a mistyped setting in config', { config: { cache: { ttl: { recnt: '2m' } } } }],
    ['a setting in config no gateway has', { config: { platfrom: { timeout: '30s' } } }],
    ['a duration the gateway cannot read in config', { config: { cache: { ttl: { recent: '2 min' } } } }],
    ['a size the gateway cannot read in config', { config: { cache: { l1MaxBytes: '64MB' } } }],
    ['a Sentinel without its port in config', { config: { redis: { sentinels: [{ host: 'redis-sentinel' }] } } }],
    ['a Cluster node as host:port text in config', { config: { redis: { cluster: ['redis-cluster-0:6379'] } } }],
    ['an empty Sentinel list in config', { config: { redis: { sentinels: [] } } }],
    ['a webhook host with its port in config (it equals no URL\'s host: the gateway stops at start)', { config: { jobs: { webhookHosts: ['hooks.example.org:8443'] } } }],
    ['a base URL with a user and password (the gateway refuses it at start)', { platform: { baseUrl: 'https://user:s3cret@dsp-api.example.com' } }],
    ['a token URL with a user and password', { platform: { tokenUrl: 'https://user:s3cret@auth.example.com/oauth/token' } }],
    // The gateway resolves a token path against the platform's address: `//oauth/token` names the host oauth (exit 78 at start).
    ['a token path that names a host (`//oauth/token`)', { platform: { tokenUrl: '//oauth/token' } }],
    ['a token path that names a host (`/\\oauth/token`)', { platform: { tokenUrl: '/\\oauth/token' } }],
    // A token no authorization header carries stops every pod at start (exit 78): `Bearer <token>`, a space, a typographic quote.
    ['a platform token pasted as a header (`Bearer <token>`)', { secrets: { values: { platformToken: 'Bearer abc.def-0123456789' } } }],
    ['a platform token with a typographic quote', { secrets: { values: { platformToken: 'abc.def-0123456789\u2019' } } }],
    ['an admin token pasted as a header (`Bearer <token>`)', { secrets: { values: { adminToken: 'Bearer admin-token-0123456789' } } }],
    ['a viewer token with a space inside', { secrets: { values: { adminViewerToken: 'viewer-token 0123456789' } } }],
    ['a tracing endpoint with a user and password (headers come from headersSecret)', { tracing: { endpoint: 'https://user:s3cret@otel-collector:4318' } }],
    ['a privileged port (the gateway runs without capabilities)', { ports: { http: 80 } }],
    ['a gateway secret in the config file', { config: { gatewaySecret: 'x' } }],
    ['a fallback gateway secret in the config file', { config: { gatewaySecretFallback: 'x' } }],
    ['a fallback gateway secret the gateway would refuse (under 16 characters)', { secrets: { values: { gatewaySecretFallback: 'short' } } }],
    ['a Redis URL with a password in the config file (a ConfigMap)', { config: { redis: { url: 'redis://:s3cret@redis-master:6379/0' } } }],
    ['a base URL with a password in the config file', { config: { platform: { baseUrl: 'https://user:s3cret@dsp-api.example.com' } } }],
    // The ConfigMap would hold the password; platform.tokenUrl's value is refused the same way.
    ['a token URL with a password in the config file', { config: { platform: { tokenUrl: 'https://user:s3cret@auth.example.com/oauth/token' } } }],
    ['a credential\'s base URL with a password in the config file (the gateway stops at start)', { config: { credentials: { eu: { baseUrl: 'https://user:s3cret@eu.dsp-api.example.com' } } } }],
    ['a credential\'s token URL with a password in the config file', { config: { credentials: { eu: { tokenUrl: 'https://user:s3cret@auth.example.com/oauth/token' } } } }],
    ['a platform token in the config file', { config: { platform: { token: 'x' } } }],
    ['a platform password in the config file', { config: { platform: { password: 'x' } } }],
    ['an admin token in the config file', { config: { admin: { token: 'x' } } }],
    ['a Redis Sentinel password in the config file (it comes from secrets.keys.redisSentinelPassword)', { config: { redis: { sentinelPassword: 'x' } } }],
    ['an admin token the gateway would refuse (under 16 characters)', { secrets: { values: { adminToken: 'short' } } }],
    ['a Secret key with a slash', { secrets: { keys: { adminToken: 'admin/token' } } }],
    ['running as root allowed', { securityContext: { runAsNonRoot: false } }],
    ['a termination grace period set by hand (it is derived)', { terminationGracePeriodSeconds: 60 }],
    ['no margin between the grace period and SIGKILL', { terminationGraceMarginSeconds: 0 }],
    ['a margin shorter than the 2 s the gateway takes to exit after its grace', { terminationGraceMarginSeconds: 2 }],
    ['shutdownGrace in the config file (it comes from shutdownGraceSeconds)', { config: { shutdownGrace: '20s' } }],
    ['shutdownDrain in the config file (it comes from shutdownDrainSeconds)', { config: { shutdownDrain: '20s' } }],
    ['a negative drain', { shutdownDrainSeconds: -1 }],
    // maxUnavailable 0 (as an integer or 0%) blocks every node drain for good.
    ['a PodDisruptionBudget that lets no pod go, in percent', { podDisruptionBudget: { enabled: true, maxUnavailable: '0%' } }],
    ['a PodDisruptionBudget past 100%', { podDisruptionBudget: { enabled: true, maxUnavailable: '101%' } }],
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
    ['"*" beside advertiser ids (the gateway stops at start)', { teams: { growth: { keys: [], advertisers: ['*', 101] } } }],
    ['an advertiser that is neither an id nor "*"', { teams: { growth: { keys: [], advertisers: ['all'] } } }],
    ['a team name with a space', { teams: { 'growth team': { keys: [], advertisers: ['*'] } } }],
    // A credential's name is a segment of /admin/credentials/{name}/token: the gateway refuses another at start.
    ['a credential name of 65 characters', { config: { credentials: { [`p${'a'.repeat(64)}`]: { baseUrl: 'https://partner.example.com' } } } }],
    ['a credential name in capitals', { config: { credentials: { Partner: { baseUrl: 'https://partner.example.com' } } } }],
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
    ['a cache warm URL with a user and password (the CronJob would show it; fetch refuses it)', { cacheWarm: { url: 'http://ops:s3cret@report-gateway.reports.svc:8080' } }],
    ['an advertiser that is not a positive integer', { cacheWarm: { advertisers: ['101'] } }],
    ['an unknown Service type', { service: { type: 'ExternalName' } }],
    ['a PDB percentage without %', { podDisruptionBudget: { maxUnavailable: '50' } }],
  ]
  it.each(invalid)('rejects %s', (_what, override) => {
    expect(validateValues(CHART, merge(defaults, override))).not.toEqual([])
  })

  // helm prints where the schema failed, not its description: the setting is named, not `config`.
  it.each(['shutdownDrain', 'shutdownGrace', 'gatewaySecret', 'gatewaySecretFallback'])('names config.%s in its refusal, not config alone', (key) => {
    const errors = validateValues(CHART, merge(defaults, { config: { [key]: key.startsWith('shutdown') ? '20s' : 'x'.repeat(32) } }))
    expect(errors).not.toEqual([])
    for (const error of errors) expect(error).toMatch(new RegExp(`^/config/${key}: `))
  })

  // Every value the gateway refuses in a config file (a secret) is refused under `config` too,
  // with a value its schema would otherwise take: the ConfigMap would hold it in plain text,
  // and every pod would stop at start (exit 78).
  it.each(FILE_FORBIDDEN.map((path) => [path.join('.'), path] as const))('refuses config.%s, a secret the gateway refuses in a config file', (_name, path) => {
    const config: Record<string, unknown> = {}
    let at = config
    for (const key of path.slice(0, -1)) at = (at[key] = {}) as Record<string, unknown>
    at[path[path.length - 1] as string] = 'v'.repeat(32)
    expect(validateValues(CHART, merge(defaults, { config }))).not.toEqual([])
  })

  it.each([
    ['/config/platform/tokenUrl', { platform: { tokenUrl: 'https://user:s3cret@auth.example.com/oauth/token' } }],
    ['/config/credentials/eu/baseUrl', { credentials: { eu: { baseUrl: 'https://user:s3cret@eu.dsp-api.example.com' } } }],
    ['/config/credentials/eu/tokenUrl', { credentials: { eu: { tokenUrl: 'https://user:s3cret@auth.example.com/oauth/token' } } }],
  ])('names %s in the refusal of a URL with a password under config, not config alone, and shows no password', (path, config) => {
    const errors = validateValues(CHART, merge(defaults, { config }))
    expect(errors.some((error) => error.startsWith(`${path}: `)), errors.join('; ')).toBe(true)
    for (const error of errors) expect(error).not.toContain('s3cret')
  })

  // The gateway takes a jobs.webhookHosts entry that a URL writes as it is written (in any case)
  // and stops at start (exit 78) on any other: the chart's schema refuses the same entries, so
  // that `helm install` fails on them instead of every pod.
  it('takes exactly the config.jobs.webhookHosts entries the gateway starts with: an IPv4 address as four decimal numbers, an IPv6 address compressed as a URL writes it', () => {
    // Which of `entries`, given as one list, each refuses: the gateway names each entry it stops on, helm each it fails on.
    // The gateway's load stops at its schema's refusals (an entry of no host's shape) before it
    // reads how a URL writes the others: those are loaded again.
    const gatewayRefusesAt = (entries: string[]): number[] => {
      try {
        loadConfigYaml(stringify({ jobs: { webhookHosts: entries } }))
        return []
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err
        return err.problems.map((p) => Number(/^jobs\.webhookHosts\.(\d+): /.exec(p)![1]))
      }
    }
    const gatewayRefuses = (entries: string[]): Set<number> => {
      const shape = new Set(gatewayRefusesAt(entries))
      const rest = [...entries.keys()].filter((i) => !shape.has(i))
      return new Set([...shape, ...gatewayRefusesAt(rest.map((i) => entries[i]!)).map((k) => rest[k]!)])
    }
    const chartRefuses = (entries: string[]): Set<number> => new Set(validateValues(CHART, merge(defaults, { config: { jobs: { webhookHosts: entries } } })).map((e) => Number(/^\/config\/jobs\/webhookHosts\/(\d+): /.exec(e)![1])))
    const disagreements = (entries: string[]): string[] => {
      const [gateway, chart] = [gatewayRefuses(entries), chartRefuses(entries)]
      return entries.flatMap((entry, i) => (gateway.has(i) === chart.has(i) ? [] : [`${entry}: the gateway ${gateway.has(i) ? 'refuses' : 'takes'} it, the chart ${chart.has(i) ? 'refuses' : 'takes'} it`]))
    }
    const taken = [
      'localhost', 'hooks.example.org', 'hooks.example.org.', 'HOOKS.Example.org', 'hooks_1.svc', '1.example', 'a.1e', 'a.0x1g', 'a.0x-1', 'a.0xg', '0a', '01x', 'x1', 'xn--ls8h',
      '10.0.0.1', '255.255.255.255', '0.0.0.0', '[::1]', '[::]', '[2001:db8::1]', '[2001:DB8::1]', '[1:0:0:1::1]', '[1::1:0:0:1]', '[::ffff:102:304]', '[1:2:3:4:5:6:7:8]', '[1:0:2:3:4:5:6:7]',
    ]
    // a URL writes these otherwise (the gateway says how) or not at all
    const refused = [
      '127.1', '0x7f.0.0.1', '010.0.0.1', '2130706433', '0x7f000001', '1.2.3.4.', '300.1.1.1', '1.2.3.256', '0x', '0', '1.2.3', 'a.123', 'a.123.', 'a.0x1', 'a.0x', 'a.08', 'a.0X1F',
      // no label ends with a hyphen, a last one of digits or 0x neither
      '1-', 'a.1-', 'a.1-.', '0-', 'a.01-', 'a.0x-', 'a.0x1-', 'a.0X1F-',
      '[0:0:0:0:0:0:0:1]', '[::0001]', '[::ffff:127.0.0.1]', '[1:0:0:0:0:0:0:1]', '[1::0:1]', '[0::1]', '[1:0:0:1:0:0:0:1]', '[1:0::1:2:3:4:5]', '[1::2:3:4:5:6:7]', '[1:2:3:4:5:6:7:8:9]', '[1::2::3]', '[:::]', '[12345::]',
    ]
    expect(gatewayRefuses([...taken, ...refused])).toEqual(new Set(refused.map((_, i) => taken.length + i)))
    expect(disagreements([...taken, ...refused])).toEqual([])
    // Every name of up to three characters of those that make a number or a label's end.
    const characters = [...'019afxXg-_.']
    const short = characters.flatMap((a) => ['', ...characters].flatMap((b) => ['', ...characters].map((c) => a + b + c)))
    expect(disagreements([...new Set(short)])).toEqual([])
    // Every zero pattern of eight pieces, each piece written in several ways, uncompressed and with each run of zeros compressed.
    const pieces = ['0', '00', '1', 'ab', '0ab', 'ABCD']
    const generated: string[] = []
    for (let mask = 0; mask < 256; mask++) {
      const parts = Array.from({ length: 8 }, (_, i) => ((mask >> i) & 1 ? pieces[(mask + i) % 2] : pieces[2 + ((mask * 3 + i) % 4)])!)
      generated.push(`[${parts.join(':')}]`)
      for (let from = 0; from < 8; from++) for (let to = from + 1; to <= 8; to++) if (parts.slice(from, to).every((p) => /^0+$/.test(p))) generated.push(`[${parts.slice(0, from).join(':')}::${parts.slice(to).join(':')}]`)
    }
    expect(disagreements(generated)).toEqual([])
  })

  // The gateway stops at start (exit 78) on a duration or size below its floor (config/floors.ts):
  // the chart refuses the same values at install, at the setting's own path, in every unit.
  it('refuses in `config` each duration and size the gateway refuses below its floor, and takes what it takes', () => {
    const units = { duration: { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }, size: { B: 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3 } }
    const problemsOf = (yaml: string): string[] => {
      try {
        loadConfigYaml(yaml)
        return []
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err
        return err.problems
      }
    }
    const disagreements: string[] = []
    for (const floor of SETTING_FLOORS) {
      // The floor and its neighbours in each unit, as a number and as text, with leading zeros too.
      const values = new Set<number | string>([0, floor.least - 1, floor.least, floor.least + 1, '0', `00${floor.least}`].filter((v) => typeof v === 'string' || v >= 0))
      for (const [unit, factor] of Object.entries(units[floor.kind])) {
        const at = Math.ceil(floor.least / factor)
        for (const n of [0, at - 1, at, at + 1, at * 10 - 1, at * 10]) if (n >= 0) values.add(`${n}${unit}`).add(`0${n}${unit}`)
      }
      for (const value of values) {
        const setting = floor.path.reduceRight<unknown>((inner, name) => ({ [name]: inner }), value)
        const gatewayRefuses = problemsOf(stringify(setting)).some((p) => p.startsWith(`${floor.path.join('.')}: `))
        const chartRefuses = validateValues(CHART, merge(defaults, { config: setting as Values })).some((e) => e.startsWith(`/config/${floor.path.join('/')}`))
        if (gatewayRefuses !== chartRefuses) disagreements.push(`${floor.path.join('.')}: ${JSON.stringify(value)}: the gateway ${gatewayRefuses ? 'refuses' : 'takes'} it, the chart ${chartRefuses ? 'refuses' : 'takes'} it`)
      }
    }
    expect(disagreements).toEqual([])
  })

  it("checks `config` against the gateway's own schema as it stands (run `npm run generate:chart-schema` after changing src/config/schema.ts or config/default.yaml)", async () => {
    expect(chartFile('values.schema.json')).toBe(withGatewayConfig(chartFile('values.schema.json'), await currentDefinition()))
  })

  it('accepts in `config` any part of the gateway\'s settings (the rest from config/default.yaml), and the names the gateway still takes with a warning', () => {
    const config = { cache: { ttl: { recent: '2m' }, l1MaxBytes: '32MiB' }, platform: { timeout: 20_000, permitLease: '10s', bufferBytes: '8MiB' }, redis: { sentinels: [{ host: 'redis-sentinel', port: 26379 }], sentinelName: 'mymaster' }, credentials: { partner: { baseUrl: 'https://partner.example.com' } } }
    expect(validateValues(CHART, merge(defaults, { config }))).toEqual([])
    expect(loadConfigYaml(stringify({ platform: config.platform })).warnings.join('\n')).toContain('platform.permitLease is renamed platform.seatLease')
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
      expect(strings(parse(chartFile(file))).filter((v) => /\bexample\.[a-z]|\/example\//i.test(v)), file).toEqual([])
    }
  })

  it('comments every value', () => {
    const lines = chartFile('values.yaml').split('\n')
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
        'app.kubernetes.io/instance': 'rgw',
        'app.kubernetes.io/version': '0.1.0',
        'app.kubernetes.io/managed-by': 'Helm',
        'app.kubernetes.io/part-of': 'report-gateway',
        'helm.sh/chart': `report-gateway-${CHART_VERSION}`,
      })
      // The helm test pod is no pod of the gateway's: it goes without the name its selectors read.
      if (m.kind !== 'Pod') expect(m.metadata.labels?.['app.kubernetes.io/name'], m.kind).toBe('report-gateway')
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

  it('names the admin Service\'s names in ADMIN_HOSTS, then adminHosts: the admin listener answers a Host of those names, IP addresses and localhost only', () => {
    const { admin } = services(chart)
    const svc = admin.metadata.name
    const ns = admin.metadata.namespace
    expect(svc).toMatch(/-admin$/)
    expect(envOf(chart).get('ADMIN_HOSTS')).toEqual({ name: 'ADMIN_HOSTS', value: `${svc},${svc}.${ns},${svc}.${ns}.svc,${svc}.${ns}.svc.cluster.local` })
    const more = install({ namespace: 'reports', values: { adminHosts: ['gw-admin.ops.example', 'metrics-proxy'], clusterDomain: 'k8s.internal' } })
    const moreSvc = services(more).admin.metadata.name
    expect(envOf(more).get('ADMIN_HOSTS')?.value).toBe(`${moreSvc},${moreSvc}.reports,${moreSvc}.reports.svc,${moreSvc}.reports.svc.k8s.internal,gw-admin.ops.example,metrics-proxy`)
    // Without the admin Service, adminHosts alone; with neither, no variable (IP addresses and localhost only).
    const noService = install({ values: { adminService: { enabled: false }, serviceMonitor: { enabled: false }, adminHosts: ['gw-admin.ops.example'] } })
    expect(envOf(noService).get('ADMIN_HOSTS')?.value).toBe('gw-admin.ops.example')
    expect(envOf(install({ values: { adminService: { enabled: false }, serviceMonitor: { enabled: false } } })).has('ADMIN_HOSTS')).toBe(false)
  })

  it('refuses an adminHosts entry that is no DNS name, and config.admin.hosts (which ADMIN_HOSTS would override)', () => {
    for (const name of ['gw-admin:8081', '*.ops.example', 'http://gw-admin']) expect(() => install({ values: { adminHosts: [name] } }), name).toThrow(/adminHosts/)
    expect(() => install({ values: { config: { admin: { hosts: ['gw-admin'] } } } })).toThrow(/config\.admin\.hosts: set the value adminHosts instead/)
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
      ['ADMIN_HOST', 'ADMIN_HOSTS', 'ADMIN_PORT', 'ADMIN_TOKEN_FILE', 'CONFIG_FILE', 'GATEWAY_SECRET_FILE', 'HOST', 'LOG_LEVEL', 'PLATFORM_BASE_URL', 'PLATFORM_TOKEN_FILE', 'PORT', 'TEAMS_FILE'].sort(),
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
    // Nothing but the shutdownDrain and shutdownGrace the pod's grace period is derived from, and
    // without Redis the bound of the report jobs' results the pod keeps in memory (test/integration/memory-fit.test.ts).
    expect(parse(files.get(configFile!)!)).toEqual({ shutdownDrain: '5s', shutdownGrace: '10s', jobs: { resultsRoom: '64MiB' } })
  })

  it("without Redis sets jobs.resultsRoom unless `config` sets it, an explicit null (the results bounded by jobs.resultBytesPerTeam alone) included", () => {
    const settings = (values: Values) => parse(podFiles(install({ values })).get('/etc/report-gateway/config.yaml')!) as { jobs?: Record<string, unknown> }
    expect(settings({ config: { jobs: { resultsRoom: '32MiB' } } }).jobs).toEqual({ resultsRoom: '32MiB' })
    expect(settings({ config: { jobs: { resultsRoom: null } } }).jobs).toEqual({ resultsRoom: null })
    expect(settings({ config: { jobs: { resultBytesPerTeam: '8MiB' } } }).jobs).toEqual({ resultBytesPerTeam: '8MiB', resultsRoom: '64MiB' })
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

  it("gives the pod longer to stop than the gateway's shutdownDrain plus its shutdownGrace, with no preStop sleep (the drain answers instead)", () => {
    const spec = one<Deployment>(chart, 'Deployment').spec.template.spec
    // SIGTERM at once: the gateway's drain (readiness 503, still answering) does what a preStop sleep did, and more.
    expect(gateway(chart).lifecycle?.preStop).toBeUndefined()
    // The drain and grace the gateway itself uses: what its loader reads from the rendered config file.
    const config = gatewayConfigFrom(chart, { 'rgw-report-gateway': { 'platform-token': 'tok', 'admin-token': SECRETS.adminToken, 'gateway-secret': SECRETS.gatewaySecret } })
    expect(config.shutdownDrainMs).toBe(5000)
    expect(config.shutdownGraceMs).toBe(10_000)
    const defaults = parse(readFileSync(join(ROOT, 'config/default.yaml'), 'utf8')) as { shutdownDrain: string; shutdownGrace: string }
    expect(config.shutdownDrainMs / 1000, "the chart's default is the gateway's").toBe(durationSeconds(defaults.shutdownDrain))
    expect(config.shutdownGraceMs / 1000, "the chart's default is the gateway's").toBe(durationSeconds(defaults.shutdownGrace))
    // 5 (shutdownDrain) + 10 (shutdownGrace) + 5 (margin)
    expect(spec.terminationGracePeriodSeconds).toBe(20)
    expect(spec.terminationGracePeriodSeconds).toBeGreaterThan((config.shutdownDrainMs + config.shutdownGraceMs) / 1000)
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

  it("keeps the helm test pod out of the Services', the PodDisruptionBudget's and the NetworkPolicy's selectors: a failed test leaves a pod nothing counts", () => {
    const labels = one(chart, 'Pod').metadata.labels
    expect(labels?.['app.kubernetes.io/component']).toBe('test')
    const { proxy, admin } = services(chart)
    expect(selects(proxy.spec.selector, labels), 'proxy Service').toBe(false)
    expect(selects(admin.spec.selector, labels), 'admin Service').toBe(false)
    expect(selects(one<PodDisruptionBudget>(chart, 'PodDisruptionBudget').spec.selector.matchLabels, labels), 'PodDisruptionBudget').toBe(false)
    expect(selects(one<Deployment>(chart, 'Deployment').spec.selector.matchLabels, labels), 'Deployment').toBe(false)
    const np = one<NetworkPolicy>(install({ values: { networkPolicy: { enabled: true } } }), 'NetworkPolicy')
    expect(selects(np.spec.podSelector.matchLabels, labels), 'NetworkPolicy').toBe(false)
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
    // POST /admin/reload reads the mounted file: it applies a teams change only once the kubelet has swapped it.
    expect(chart.notes).not.toMatch(/at once with POST \/admin\/reload/)
    expect(chart.notes.replace(/\s+/g, ' ')).toMatch(/POST \/admin\/reload reads the mounted file/)
  })

  it('warns in NOTES.txt of several replicas without Redis, naming report jobs, and not when config.redis names Sentinels or a Cluster', () => {
    const note = /several replicas without Redis/
    expect(chart.notes).toMatch(note)
    // A job's status and result are asked of whichever replica the Service picks: only the one that took it knows it.
    expect(chart.notes.replace(/\s+/g, ' ')).toMatch(/a report job .*404/)
    expect(install({ values: { redis: { url: 'redis://redis-master:6379/0' } } }).notes).not.toMatch(note)
    expect(install({ values: { config: { redis: { sentinels: [{ host: 'sentinel-0', port: 26379 }], sentinelName: 'mymaster' } } } }).notes).not.toMatch(note)
    expect(install({ values: { config: { redis: { cluster: [{ host: 'redis-0', port: 6379 }] } } } }).notes).not.toMatch(note)
    expect(install({ values: { replicaCount: 1 } }).notes).not.toMatch(note)
  })

  it('names the operations console in NOTES.txt, with the port-forward once adminHost allows it', () => {
    expect(chart.notes).toContain('Operations console')
    expect(chart.notes).not.toContain('port-forward deploy/')
    const open = install({ values: { adminHost: '0.0.0.0' } })
    expect(open.notes).toContain('kubectl -n reports port-forward deploy/rgw-report-gateway 8081:8081')
    expect(open.notes).toContain('http://127.0.0.1:8081/console')
  })
})
