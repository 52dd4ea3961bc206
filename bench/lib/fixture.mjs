// What every scenario runs against: a Redis (when installed), the platform sandbox, the
// team keys, and a launcher of gateway processes (bench/gateway-server.mjs, each its own
// process on the server core). Also `startMainGateway`: the gateway exactly as `npm start`
// runs it (dist/main.js, environment plus a CONFIG_FILE).

import { randomBytes } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { stringify as toYaml } from 'yaml'
import { freePort } from '../../scripts/free-port.mjs'
import { http } from './http.mjs'
import { LOAD_CORE, ROOT, SERVER_CORE, launch, log, pin, stopProcess, tmp } from './processes.mjs'

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
    setLatency: (ms, maxMs = ms) => control('POST', '/latency', { ms, maxMs }),
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
 * B's (`teamBKey`, team "bench-b"), the admin token, the two teams as a config's `teams`,
 * and `startGateway`.
 */
export async function setUp(notes) {
  const redisUrl = await startRedis(notes)
  const sandbox = await startSandbox()
  const { hashApiKey } = await import('../../dist/access/api-keys.js')
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
  // The same two teams as a config's `teams`, with the gateway's defaults for everything
  // bench/gateway-server.mjs sets (no rate limit, no share), for startMainGateway.
  const teams = {
    bench: { keys: [gatewayEnv.BENCH_TEAM_KEY_HASH], advertisers: [100, 101, 102, 103] },
    'bench-b': { keys: [gatewayEnv.BENCH_TEAM_B_KEY_HASH], advertisers: [100, 101, 102, 103] },
  }
  return { redisUrl, sandbox, teamKey, teamBKey, adminToken, teams, startGateway, reportHeaders, purge, metrics, expectCache }
}

/**
 * The gateway as `npm start` runs it: `node dist/main.js` on the server core, set up by
 * the environment (HOST/PORT/ADMIN_HOST/ADMIN_PORT on 127.0.0.1, PLATFORM_BASE_URL,
 * PLATFORM_TOKEN, LOG_LEVEL, REDIS_URL when given) and a CONFIG_FILE written as YAML
 * from `config`. The gateway's other variables inherited from this shell (REDIS_URL,
 * ADMIN_TOKEN, DEMO, *_FILE, ...) are removed, so the set-up is exactly this one. Ready
 * once the admin listener (opened after the proxy's) answers /readyz 200, with Redis
 * connected when there is one. `env`: more variables (GATEWAY_SECRET, ADMIN_TOKEN).
 */
export async function startMainGateway(name, { platformUrl, platformToken, config, redisUrl = null, logLevel = 'warn', timeoutMs = 20_000, env: extraEnv = {}, root = ROOT }) {
  const { ENV_KEYS } = await import('../../dist/config/sources.js')
  const [port, adminPort] = [await freePort(), await freePort()]
  const configFile = join(tmp, `${name}.yaml`)
  writeFileSync(configFile, toYaml(config))
  const env = { DEMO: undefined }
  for (const k of ENV_KEYS) {
    env[k.env] = undefined
    env[`${k.env}_FILE`] = undefined
  }
  // OpenTelemetry's variables too: a shell's endpoint would turn tracing on.
  for (const k of Object.keys(process.env)) if (k.startsWith('OTEL_')) env[k] = undefined
  Object.assign(env, {
    HOST: '127.0.0.1',
    PORT: String(port),
    ADMIN_HOST: '127.0.0.1',
    ADMIN_PORT: String(adminPort),
    LOG_LEVEL: logLevel,
    PLATFORM_BASE_URL: platformUrl,
    PLATFORM_TOKEN: platformToken,
    CONFIG_FILE: configFile,
    // The gateway takes Redis only with GATEWAY_SECRET (as bench/gateway-server.mjs).
    ...(redisUrl ? { REDIS_URL: redisUrl, GATEWAY_SECRET: 'bench-gateway-secret-0123456789abcdef' } : {}),
    ...extraEnv,
  })
  // `root`: another build of the gateway (a baseline to compare with), run from its own folder.
  // BENCH_GATEWAY_NODE_FLAGS: node flags for the gateway alone (--cpu-prof --cpu-prof-dir=DIR to see where a trace's time goes).
  const nodeFlags = process.env.BENCH_GATEWAY_NODE_FLAGS?.split(' ').filter(Boolean) ?? []
  const [cmd, args] = pin(SERVER_CORE, process.execPath, [...nodeFlags, join(root, 'dist/main.js')])
  const p = await launch(name, cmd, args, { env })
  const gw = { ...p, pid: p.child.pid, url: `http://127.0.0.1:${port}`, admin: `http://127.0.0.1:${adminPort}`, port, adminPort, configFile }
  let exited = false
  void p.exited.then(() => (exited = true))
  const deadline = Date.now() + timeoutMs
  let last = ''
  while (!exited && Date.now() < deadline) {
    try {
      const r = await http('GET', `${gw.admin}/readyz`)
      // With Redis: ready once it is connected too (readyz answers 200 without it, degraded).
      if (r.status === 200 && (!redisUrl || r.json().redis === 'ok')) return gw
      last = `readyz ${r.status} ${r.body.toString('utf8').slice(0, 200)}`
    } catch (err) {
      last = err.code ?? err.message
    }
    await sleep(100)
  }
  let output = ''
  try {
    output = readFileSync(p.logPath, 'utf8').slice(-2000)
  } catch {
    // no output
  }
  await stopProcess(p)
  throw new Error(`${name} (node dist/main.js) ${exited ? 'exited' : `was not ready within ${timeoutMs} ms (${last})`}${output ? `\n--- ${name} output ---\n${output}` : ''}`)
}
