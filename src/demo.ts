import type { Config, TeamConfig } from './config.js'
import { DEFAULT_CREDENTIAL, overridden, type Setting } from './config.js'
import { randomBytes } from 'node:crypto'
import { hashApiKey, newApiKey } from './access/api-keys.js'
import type { Sandbox } from './sandbox/sandbox.js'
import { systemClock } from './clock.js'
import { hostPort } from './host-port.js'

// The bundled sandbox's token route (sandbox/oauth-route.ts): the demo's login goes there,
// whatever PLATFORM_TOKEN_URL says (a path the sandbox does not serve left the demo without
// a token; an absolute URL sent the sandbox's login to another server).
const SANDBOX_TOKEN_PATH = '/oauth/token'

/** The name of demo mode's team for the run, or of the first free name after it (`demo-2`, …). */
export const DEMO_TEAM = 'demo'
/** The name the demo's admin token goes by in audit lines. */
export const DEMO_ADMIN = 'demo'

/**
 * Demo mode (contract, "Running"): the bundled sandbox stands in for the platform, the
 * gateway logs in to it with the password grant, one team key is made for the run, and
 * the cache stays in memory (never Redis). Without an admin token configured, one is
 * made for the run too (an operator's), so that the console it prints opens. The team for
 * the run joins the configured teams (DEMO=1 runs whatever else is set): it never takes
 * the place of one, so it is named `demo` unless a configured team is, then `demo-2`, ….
 */
export function demoConfig(config: Config, sandbox: Sandbox): { config: Config; key: string; team: string; adminToken: string | null } {
  const key = newApiKey()
  const adminToken = config.admin.tokens.length === 0 ? randomBytes(32).toString('base64url') : null
  const team: TeamConfig = {
    name: freeName(DEMO_TEAM, new Set(config.teams.map((t) => t.name))),
    keys: [{ hash: hashApiKey(key), id: 'demo', lineage: 'demo', replaces: null, successor: null, graceUntil: null, expiresAt: null, createdAt: systemClock.now() }],
    advertisers: null,
    write: true,
    refresh: true,
    credential: DEFAULT_CREDENTIAL,
    rateLimit: null,
    weight: 1,
    maxConcurrent: null,
    queue: null,
    platformSecondsPerDay: null,
    webhook: null,
  }
  const { username, password, clientId, clientSecret } = sandbox.credentials
  return {
    key,
    team: team.name,
    adminToken,
    config: {
      ...config,
      demo: true,
      admin: adminToken === null ? config.admin : { ...config.admin, tokens: [{ name: DEMO_ADMIN, hash: hashApiKey(adminToken), role: 'operator' }] },
      platform: { ...config.platform, baseUrl: sandbox.url },
      // The sandbox's longest report is the gateway's bound too: a longer range is the
      // gateway's own 400 before any platform call, never the sandbox's 422 passed on.
      cache: { ...config.cache, maxRangeDays: maxRangeDays(config, sandbox) },
      // The demo's cache lives in memory: Redis, were it configured, is left alone.
      redis: { ...config.redis, url: null, sentinels: null, cluster: null },
      credentials: {
        ...config.credentials,
        [DEFAULT_CREDENTIAL]: {
          name: DEFAULT_CREDENTIAL,
          baseUrl: sandbox.url,
          token: null,
          tokenFile: null,
          login: { username, password, clientId, clientSecret, tokenUrl: SANDBOX_TOKEN_PATH, grantType: config.platform.grantType },
        },
      },
      teams: [...config.teams, team],
      warnings: [...config.warnings, ...setAside(config)],
      secrets: [...config.secrets, password, clientSecret, ...(adminToken === null ? [] : [adminToken])],
      settings: demoSettings(config, sandbox, adminToken),
    },
  }
}

/**
 * What demo mode sets aside of the configuration (DEMO=1 with a real installation's
 * settings), said at the start: Redis, and the platform with its credential.
 */
function setAside(config: Config): string[] {
  const parts = [
    ...(config.redis.url !== null || config.redis.sentinels !== null || config.redis.cluster !== null ? ['the configured Redis (the cache is in memory)'] : []),
    ...(config.platform.baseUrl !== null ? ['the configured platform (PLATFORM_BASE_URL and its credential: the bundled sandbox and its login stand in)'] : []),
  ]
  return parts.length === 0 ? [] : [`DEMO=1: demo mode sets aside ${parts.join(' and ')}; unset DEMO to use ${parts.length === 1 ? 'it' : 'them'}`]
}

/** The configured range bound, or the sandbox's where that is shorter. */
function maxRangeDays(config: Config, sandbox: Sandbox): number {
  return Math.min(config.cache.maxRangeDays, sandbox.maxReportDays)
}

/**
 * The settings in force (GET /admin/config) as demo mode runs them: the sandbox's address
 * and login, its range bound where it is the shorter, the admin token made for the run, and
 * a configured Redis set aside (none), each of source `demo`.
 */
function demoSettings(config: Config, sandbox: Sandbox, adminToken: string | null): Setting[] {
  const set: [string, unknown, string][] = [
    ['platform.baseUrl', sandbox.url, 'demo mode: the bundled sandbox'],
    ...(['username', 'password', 'clientId', 'clientSecret'] as const).map((field): [string, unknown, string] => [`platform.${field}`, sandbox.credentials[field], 'demo mode: the bundled sandbox\'s login']),
  ]
  if (maxRangeDays(config, sandbox) !== config.cache.maxRangeDays) set.push(['cache.maxRangeDays', sandbox.maxReportDays, 'demo mode: the bundled sandbox\'s longest report range'])
  if (adminToken !== null) set.push(['admin.token', adminToken, 'demo mode: the admin token printed at the start'])
  // A configured Redis is set aside (the cache is in memory): none is in force.
  for (const [setting, value] of [['redis.url', config.redis.url], ['redis.sentinels', config.redis.sentinels], ['redis.cluster', config.redis.cluster]] as const) {
    if (value !== null) set.push([setting, null, 'demo mode: set aside, the cache is in memory'])
  }
  return set.reduce<Setting[]>((all, [setting, value, from]) => overridden(all, setting, value, 'demo', from), [...config.settings])
}

/** `name`, or `name-2`, `name-3`, … the first that is not `taken`. */
function freeName(name: string, taken: ReadonlySet<string>): string {
  let n = 1
  while (taken.has(n === 1 ? name : `${name}-${n}`)) n++
  return n === 1 ? name : `${name}-${n}`
}

/** The origin at which a caller on this machine reaches a listener bound to `host`:`port`: a wildcard's by its loopback, an IPv6 address in brackets (hostPort). */
export function reachableOrigin(host: string, port: number): string {
  return `http://${hostPort(host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host, port)}`
}

/** The ready curl line of the demo's banner, to the proxy listener bound at `host`:`port`. */
export function demoCurl(host: string, port: number, key: string, advertiserId: number): string {
  const today = new Date(systemClock.now())
  const to = today.toISOString().slice(0, 10)
  const from = new Date(today.getTime() - 6 * 86_400_000).toISOString().slice(0, 10)
  return `curl -s -i -H 'x-api-key: ${key}' '${reachableOrigin(host, port)}/api/v1/report/campaigns/get?advertiserId=${advertiserId}&dateFrom=${from}&dateTo=${to}&byDate=1&byCampaign=1'`
}
