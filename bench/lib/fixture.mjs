// What every scenario runs against: a Redis (when installed), the platform sandbox, the
// team keys, and a launcher of gateway processes (bench/gateway-server.mjs, each its own
// process on the server core).

import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { freePort } from '../../scripts/free-port.mjs'
import { http } from './http.mjs'
import { LOAD_CORE, SERVER_CORE, launch, log, pin } from './processes.mjs'

// The report: 36 days by date for one advertiser, ~4 KB of JSON.
export const REPORT_PATH = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2025-01-01&dateTo=2025-02-05&byDate=1'
export const REPORT_ROUTE = '/api/v1/report/campaigns/get'

export async function startRedis(notes) {
  try {
    const port = await freePort()
    const [cmd, args] = pin(LOAD_CORE, 'redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--loglevel', 'warning'])
    await launch('redis', cmd, args, { ready: /Ready to accept connections|Server initialized/ })
    await sleep(100)
    return `redis://127.0.0.1:${port}`
  } catch (err) {
    notes.push(`Redis scenarios skipped: redis-server did not start (${err.message.split('\n')[0]}).`)
    log(notes.at(-1))
    return null
  }
}

/** The sandbox on the load core, with its control calls. */
export async function startSandbox() {
  const port = await freePort()
  const [cmd, args] = pin(LOAD_CORE, process.execPath, ['dist/sandbox/main.js'])
  await launch('sandbox', cmd, args, { env: { HOST: '127.0.0.1', PORT: String(port), SANDBOX_LATENCY_MS: '0' }, ready: /platform sandbox listening/ })
  const url = `http://127.0.0.1:${port}`
  const control = async (method, path, json) => {
    const r = await http(method, `${url}/__sandbox${path}`, { json })
    if (r.status >= 300) throw new Error(`sandbox ${method} ${path}: ${r.status} ${r.body}`)
    return r.status === 204 ? null : r.json()
  }
  const token = (await control('POST', '/tokens', { accountId: 100 })).access_token
  return {
    url,
    token,
    control,
    setLatency: (ms) => control('POST', '/latency', { ms }),
    setRouteFailure: (path, mode) => control('POST', '/route-failure', { path, ...mode }),
    clearRouteFailures: () => control('DELETE', '/route-failure'),
    clearCalls: () => control('DELETE', '/requests'),
    calls: async (path = REPORT_ROUTE) => (await control('GET', `/requests/count?path=${encodeURIComponent(path)}`)).count,
    resetConcurrency: () => control('DELETE', '/concurrency'),
    concurrency: () => control('GET', '/concurrency'),
  }
}

/**
 * The shared set-up: Redis, the sandbox, team A's key (`teamKey`, team "bench") and team
 * B's (`teamBKey`, team "bench-b"), the admin token, and `startGateway`.
 */
export async function setUp(notes) {
  const redisUrl = await startRedis(notes)
  const sandbox = await startSandbox()
  const { hashApiKey } = await import('../../dist/teams/api-keys.js')
  const teamKey = `rgw_${randomBytes(32).toString('base64url')}`
  const teamBKey = `rgw_${randomBytes(32).toString('base64url')}`
  const adminToken = randomBytes(24).toString('base64url')
  const gatewayEnv = {
    BENCH_PLATFORM_URL: sandbox.url,
    BENCH_PLATFORM_TOKEN: sandbox.token,
    BENCH_TEAM_KEY_HASH: hashApiKey(teamKey),
    BENCH_TEAM_B_KEY_HASH: hashApiKey(teamBKey),
    BENCH_ADMIN_TOKEN: adminToken,
  }
  /**
   * A gateway process. `config`: settings merged over bench/gateway-server.mjs's config;
   * `platformUrl`/`platformToken`: another platform than the sandbox.
   */
  const startGateway = async (name, { redis = false, l1 = true, prefix = `rgwbench-${name}:`, nodeFlags = [], extraEnv = {}, config, platformUrl, platformToken } = {}) => {
    const env = {
      ...gatewayEnv,
      BENCH_L1: l1 ? 'on' : 'off',
      BENCH_KEY_PREFIX: prefix,
      ...(redis ? { BENCH_REDIS_URL: redisUrl } : {}),
      ...(config ? { BENCH_CONFIG: JSON.stringify(config) } : {}),
      ...(platformUrl ? { BENCH_PLATFORM_URL: platformUrl } : {}),
      ...(platformToken ? { BENCH_PLATFORM_TOKEN: platformToken } : {}),
      ...extraEnv,
    }
    const [cmd, args] = pin(SERVER_CORE, process.execPath, [...nodeFlags, 'bench/gateway-server.mjs'])
    const p = await launch(name, cmd, args, { env, ready: /^READY / })
    const info = JSON.parse(p.line.slice('READY '.length))
    return { ...p, url: `http://127.0.0.1:${info.port}`, admin: `http://127.0.0.1:${info.adminPort}` }
  }
  const reportHeaders = (key = teamKey) => ({ 'x-api-key': key, 'accept-encoding': 'gzip' })
  const purge = async (gw) => {
    const r = await http('DELETE', `${gw.admin}/admin/cache`, { headers: { authorization: `Bearer ${adminToken}` } })
    if (r.status >= 300) throw new Error(`purge on ${gw.name}: ${r.status} ${r.body}`)
  }
  const metrics = async (gw) => (await http('GET', `${gw.admin}/metrics`)).body.toString('utf8')
  const expectCache = async (gw, want) => {
    const r = await http('GET', `${gw.url}${REPORT_PATH}`, { headers: reportHeaders() })
    if (r.status !== 200 || r.headers['x-cache'] !== want) throw new Error(`${gw.name}: expected 200 x-cache ${want}, got ${r.status} ${r.headers['x-cache']}: ${r.body.toString('utf8').slice(0, 300)}`)
    return r
  }
  return { redisUrl, sandbox, teamKey, teamBKey, adminToken, startGateway, reportHeaders, purge, metrics, expectCache }
}
