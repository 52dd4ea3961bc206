import { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Writable } from 'node:stream'
import { stringify } from 'yaml'
import type { Config } from '../../src/config.js'
import { createGateway, type Gateway, type GatewayDeps } from '../../src/compose.js'
import type { Sandbox } from '../../src/sandbox/sandbox.js'
import { hashApiKey } from '../../src/access/api-keys.js'
import { loadConfigFrom } from './load-config.js'

export interface LogCapture {
  lines: string[]
  stream: Writable
  /** Every captured line parsed as JSON. */
  records(): Record<string, unknown>[]
  text(): string
  /** Each line's place among the lines every capture of this process took, in the order they were written (a line's `time` is a millisecond several lines share). */
  order: number[]
}

let captured = 0

export function captureLogs(): LogCapture {
  const lines: string[] = []
  const order: number[] = []
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (!line) continue
        lines.push(line)
        order.push(captured++)
      }
      done()
    },
  })
  return { lines, stream, records: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>), text: () => lines.join('\n'), order }
}

/** Team keys used across the suites; plaintext here, hashed in the config. */
export const KEYS = {
  all: 'rgw_test_all_teams_key_000000000000000000000',
  growth: 'rgw_test_growth_key_1111111111111111111111111',
  writer: 'rgw_test_writer_key_2222222222222222222222222',
  limited: 'rgw_test_limited_key_33333333333333333333333',
}

/** The test teams: `all` (every advertiser, may force refreshes), `growth` (101, 102), `writer` (101, writes), `limited` (3 calls a minute). */
export const TEAMS_YAML = `
teams:
  all:
    keys: ["${hashApiKey(KEYS.all)}"]
    advertisers: ["*"]
    refresh: true
  growth:
    keys: ["${hashApiKey(KEYS.growth)}"]
    advertisers: [101, 102]
  writer:
    keys: ["${hashApiKey(KEYS.writer)}"]
    advertisers: [101]
    write: true
  limited:
    keys: ["${hashApiKey(KEYS.limited)}"]
    advertisers: ["*"]
    rateLimit: { max: 3, window: 1m }
`

/**
 * `teamsYaml` with team `limited`'s window set to `window`. A window is a fixed stretch of the
 * clock (floor(now / window)): one of 10000d began in October 2024 and ends in February 2052,
 * so a test's calls all fall in it, where a minute's may end between them.
 */
export function withLimitedWindow(window: string, teamsYaml = TEAMS_YAML): string {
  const from = 'rateLimit: { max: 3, window: 1m }'
  if (!teamsYaml.includes(from)) throw new Error('withLimitedWindow: team limited has no window of 1m here')
  return teamsYaml.replace(from, `rateLimit: { max: 3, window: ${window} }`)
}

/**
 * TEAMS_YAML followed by further settings of the config file (`platform`, `redis`,
 * `cache`, ...), given as the values the file holds once parsed.
 */
export function teamsYamlWith(settings: Record<string, unknown>): string {
  return `${TEAMS_YAML}${stringify(settings)}`
}

/** Key of team `prying` that PRYING_TEAMS_YAML adds: read-only and one advertiser (101), all an attacker needs. */
export const PRYING_KEY = 'rgw_test_prying_key_777777777777777777777777'

/** TEAMS_YAML plus team `prying` (PRYING_KEY). */
export const PRYING_TEAMS_YAML = `${TEAMS_YAML.trimEnd()}
  prying:
    keys: ["${hashApiKey(PRYING_KEY)}"]
    advertisers: [101]
`

/** Key of team `uploader` that withUploader adds: every advertiser, and write, so that its bodies of any type are passed on. */
export const UPLOADER_KEY = 'rgw_test_uploader_key_88888888888888888888888'

/** `teamsYaml` (TEAMS_YAML by default, its `teams:` last) plus team `uploader` (UPLOADER_KEY). */
export function withUploader(teamsYaml = TEAMS_YAML): string {
  return `${teamsYaml.trimEnd()}\n  uploader:\n    keys: ["${hashApiKey(UPLOADER_KEY)}"]\n    advertisers: ["*"]\n    write: true\n`
}

/** The report route most suites read: campaign statistics, cached by the gateway. */
export const REPORT_PATH = '/api/v1/report/campaigns/get'

/** A week of advertiser 101 on REPORT_PATH by date, and the same week by campaign: two reports, two cache entries. */
export const WEEK_BY_DATE = 'advertiserId=101&byDate=1&dateFrom=2026-02-01&dateTo=2026-02-07'
export const WEEK_BY_CAMPAIGN = 'advertiserId=101&byCampaign=1&dateFrom=2026-02-01&dateTo=2026-02-07'

/**
 * TEAMS_YAML with team `all` allowed every seat and the whole queue of its credential
 * (a team's bulkhead is bounded by the credential's): for tests of credential-wide
 * mechanics that one team drives alone.
 */
export const WHOLE_SHARE_TEAMS_YAML = TEAMS_YAML.replace('    refresh: true\n  growth:', '    refresh: true\n    maxConcurrent: 1000\n    queue: 1000000\n  growth:')

/** Keys of the teams on named credentials that credentialTeams() adds. */
export const CREDENTIAL_KEYS = {
  partner: 'rgw_test_partner_key_444444444444444444444444',
  agency: 'rgw_test_agency_key_5555555555555555555555555',
}

const CREDENTIAL_TEAMS = {
  partner: `
  partner-team:
    keys: ["${hashApiKey(CREDENTIAL_KEYS.partner)}"]
    advertisers: ["*"]
    credential: partner`,
  agency: `
  agency-team:
    keys: ["${hashApiKey(CREDENTIAL_KEYS.agency)}"]
    advertisers: [101]
    credential: agency`,
}

/**
 * TEAMS_YAML plus, for each named credential, a team that uses it: `partner-team`
 * (every advertiser, CREDENTIAL_KEYS.partner) and `agency-team` (101, CREDENTIAL_KEYS.agency).
 */
export function credentialTeams(...names: (keyof typeof CREDENTIAL_KEYS)[]): string {
  return `${TEAMS_YAML.trimEnd()}${names.map((n) => CREDENTIAL_TEAMS[n]).join('')}
credentials:
${names.map((n) => `  ${n}: {}`).join('\n')}
`
}

/** The GATEWAY_SECRET a test's Redis comes with unless it names its own (the gateway refuses Redis without one). */
export const TEST_GATEWAY_SECRET = 'rgw-test-gateway-secret-000000000000'

/** `env` with TEST_GATEWAY_SECRET when it configures Redis (REDIS_URL, or Sentinel or Cluster in `yaml`) and says nothing of a secret. */
export function withTestSecret(env: Record<string, string>, yaml = ''): Record<string, string> {
  const redis = env.REDIS_URL !== undefined || /^\s+(sentinels|cluster):/m.test(yaml)
  return redis && !('GATEWAY_SECRET' in env) && !('GATEWAY_SECRET_FILE' in env) ? { ...env, GATEWAY_SECRET: TEST_GATEWAY_SECRET } : env
}

/**
 * A config as main.ts would load it, from an environment and an inline config file;
 * the default team set above unless `yaml` is given. Redis comes with a secret
 * (withTestSecret); `GATEWAY_SECRET: ''` asks for none.
 */
export function testConfig(env: Record<string, string>, yaml: string = TEAMS_YAML): Config {
  return loadConfigFrom({ LOG_LEVEL: 'info', CONFIG_FILE: '/virtual/config.yaml', ...withTestSecret(env, yaml) }, { '/virtual/config.yaml': yaml }, { disk: true })
}

/**
 * The environment of a password login with the sandbox's demo credentials;
 * `prefix` `CREDENTIAL_<NAME>_` for a named credential.
 */
export function sandboxLoginEnv(sandbox: Pick<Sandbox, 'credentials'>, prefix = 'PLATFORM_'): Record<string, string> {
  const { username, password, clientId, clientSecret } = sandbox.credentials
  return {
    [`${prefix}USERNAME`]: username,
    [`${prefix}PASSWORD`]: password,
    [`${prefix}CLIENT_ID`]: String(clientId),
    [`${prefix}CLIENT_SECRET`]: clientSecret,
  }
}

export interface TestGateway extends Gateway {
  logs: LogCapture
  /** Once listen() started the proxy listener: http://127.0.0.1:<port> and the port. */
  url?: string
  port?: number
}

/** Builds and starts a gateway (no listening port); close it in afterEach/afterAll. */
export async function buildGateway(config: Config, deps: GatewayDeps = {}): Promise<TestGateway> {
  return startGateway(await composeGateway(config, deps))
}

/** A gateway composed with its logs captured, not started: for a test of what its start does (startGateway). */
export async function composeGateway(config: Config, deps: GatewayDeps = {}): Promise<TestGateway> {
  const logs = captureLogs()
  const gateway = await createGateway(config, { logStream: logs.stream, ...deps })
  return Object.assign(gateway, { logs })
}

/** Starts a composed gateway, as buildGateway does. */
export async function startGateway(gateway: TestGateway): Promise<TestGateway> {
  await gateway.start()
  await gateway.proxy.ready()
  await gateway.admin.ready()
  return gateway
}

/**
 * Closes a gateway whose test is over. The connections its callers keep alive are idle
 * then, and closed at once, as Node closes idle connections: the gentle close gives each
 * idle one a moment (src/http/server.ts) for a caller still sending, and a test that is
 * over sends nothing more. A test of the close itself calls close().
 */
export async function closeAfterTest(gw: Gateway): Promise<void> {
  for (const app of [gw.proxy, gw.admin]) Server.prototype.closeIdleConnections.call(app.server)
  await gw.close()
}

/** Starts the proxy listener of a gateway on a free loopback port. */
export async function listen(gw: TestGateway): Promise<TestGateway & { url: string; port: number }> {
  await gw.proxy.listen({ host: '127.0.0.1', port: 0 })
  const { port } = gw.proxy.server.address() as AddressInfo
  return Object.assign(gw, { port, url: `http://127.0.0.1:${port}` })
}
