// `npm run bench`: the report gateway's benchmark (issue 3, item 12).
//
// The same report (a ~4 KB JSON body, ~0.8 KB gzip) asked, on loopback only, of:
//   - a bare node:http server sending the gateway's stored bytes (the ceiling of any
//     Node gateway on one core),
//   - nginx proxy_cache (proxy_cache_lock on) in front of a tiny upstream that sends
//     the same bytes (a missing nginx is reported, not fatal),
//   - for reference, a minimal Fastify 5 + lru-cache server sending the same bytes,
//   - the gateway: L1 hits, L2-only hits (Redis, L1 off), misses against the platform
//     sandbox at 50 ms latency, and 200 concurrent identical misses (stampede), in one
//     process and in two processes sharing one Redis; and the same stampede on nginx.
// Every server under test runs in its own process pinned to core 0; the load
// generator (wrk, and this process for the stampedes) runs on core 1, with the
// sandbox, Redis and nginx's upstream. Throughput runs are repeated in alternating
// order and reported as medians; before each run the script waits (bounded) for other
// processes on the machine to go quiet, and it records the server's CPU time per
// request, which other load moves much less than req/s. One Markdown table goes to
// stdout and to bench/results.md.
//
// Flags: --quick (1 round of 3 s, written to .bench/results-quick.md)
//        --profile[=l1|l2|miss] (no table: that scenario once with node --cpu-prof on
//        the gateway, summarized; the profile is kept in .bench/)
//        --only=fairness (the fairness scenario alone, written to bench/results-fairness.md)
// Every process started here is stopped at the end, on error and on SIGINT/SIGTERM.

import { spawn, spawnSync, execFileSync } from 'node:child_process'
import { createWriteStream, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, copyFileSync } from 'node:fs'
import { cpus, tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { randomBytes } from 'node:crypto'
import { gunzipSync } from 'node:zlib'
import { Agent, Client, request } from 'undici'
import { summarizeProfile } from './profile-summary.mjs'
import { freePort } from '../scripts/free-port.mjs'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const BENCH = join(ROOT, 'bench')
const flags = new Set(process.argv.slice(2))
const QUICK = flags.has('--quick')
// --profile or --profile=l1|l2|miss
const PROFILE = [...flags].find((f) => f === '--profile' || f.startsWith('--profile='))?.split('=')[1] ?? (flags.has('--profile') ? 'l1' : null)
const ONLY = [...flags].find((f) => f.startsWith('--only='))?.split('=')[1] ?? null
if (ONLY !== null && ONLY !== 'fairness') throw new Error(`--only=${ONLY}: the scenario that runs alone is fairness`)

const SERVER_CORE = '0'
const LOAD_CORE = '1'
const DURATION_S = QUICK ? 3 : 6
const WARMUP_S = 2
const ROUNDS = QUICK ? 1 : 3
const CONNECTIONS = 50
const PLATFORM_LATENCY_MS = 50
const STAMPEDE_CALLERS = 200
const STAMPEDE_ROUNDS = QUICK ? 1 : 3
const TIME_LIMIT_MS = 6 * 60_000

// The report: 36 days by date for one advertiser, ~4 KB of JSON.
const REPORT_PATH = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2025-01-01&dateTo=2025-02-05&byDate=1'
const REPORT_ROUTE = '/api/v1/report/campaigns/get'

const started = performance.now()
const tmp = mkdtempSync(join(tmpdir(), 'rgw-bench-'))
/** pid -> { name, child, exited } of every process started here (each leads its own process group). */
const children = new Map()
const log = (...parts) => process.stderr.write(`[bench ${((performance.now() - started) / 1000).toFixed(1).padStart(5)}s] ${parts.join(' ')}\n`)

// ---------------------------------------------------------------- processes

/**
 * Starts a process in its own process group, its output in tmp/<name>.log, and
 * resolves once a line matches `ready` (or at once without one).
 */
function launch(name, cmd, argv, { env = {}, ready = null, timeoutMs = 15_000 } = {}) {
  const logPath = join(tmp, `${name}.log`)
  const out = createWriteStream(logPath)
  const child = spawn(cmd, argv, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  const entry = { name, child, exited: new Promise((resolve) => child.once('exit', resolve)), logPath }
  child.once('spawn', () => children.set(child.pid, entry))
  entry.exited.then(() => children.delete(child.pid))
  return new Promise((resolve, reject) => {
    let buffered = ''
    let done = false
    const timer = setTimeout(() => finish(new Error(`${name} did not start within ${timeoutMs} ms`)), timeoutMs)
    const finish = (err, line) => {
      if (done) return
      done = true
      clearTimeout(timer)
      if (err) {
        let tail = ''
        try {
          tail = readFileSync(logPath, 'utf8').slice(-2000)
        } catch {
          // no output yet
        }
        reject(new Error(`${err.message}${tail ? `\n--- ${name} output ---\n${tail}` : ''}`))
      } else resolve({ ...entry, line })
    }
    const onData = (chunk) => {
      out.write(chunk)
      if (done || !ready) return
      buffered += chunk.toString('utf8')
      const lines = buffered.split('\n')
      buffered = lines.pop() ?? ''
      for (const line of lines) if (ready.test(line)) return finish(null, line)
    }
    child.stdout.on('data', onData)
    child.stderr.on('data', onData)
    child.once('error', (err) => finish(new Error(`${name}: ${err.message}`)))
    child.once('exit', (code, signal) => finish(new Error(`${name} exited (${signal ?? code}) before it was ready`)))
    if (!ready) child.once('spawn', () => finish(null, ''))
  })
}

/** Runs a command to its end (registered, so a cleanup also stops it); resolves with its stdout. */
function runToEnd(name, cmd, argv, timeoutMs) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    const entry = { name, child, exited: new Promise((r) => child.once('exit', r)) }
    child.once('spawn', () => children.set(child.pid, entry))
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (c) => (stdout += c))
    child.stderr.on('data', (c) => (stderr += c))
    const timer = setTimeout(() => killGroup(child.pid, 'SIGKILL'), timeoutMs)
    child.once('error', (err) => {
      clearTimeout(timer)
      reject(new Error(`${name}: ${err.message}`))
    })
    child.once('exit', (code, signal) => {
      clearTimeout(timer)
      children.delete(child.pid)
      if (code === 0) resolve(stdout)
      else reject(new Error(`${name} failed (${signal ?? code}): ${stderr.slice(-1000) || stdout.slice(-1000)}`))
    })
  })
}

function killGroup(pid, signal) {
  try {
    process.kill(-pid, signal)
  } catch {
    // already gone
  }
}

async function stopProcess(entry, graceMs = 4000) {
  killGroup(entry.child.pid, 'SIGTERM')
  const exited = await Promise.race([entry.exited.then(() => true), sleep(graceMs).then(() => false)])
  if (!exited) killGroup(entry.child.pid, 'SIGKILL')
}

let cleaning = null
function cleanup() {
  cleaning ??= (async () => {
    await Promise.all([...children.values()].map((e) => stopProcess(e)))
    rmSync(tmp, { recursive: true, force: true })
  })()
  return cleaning
}
process.on('exit', () => {
  for (const pid of children.keys()) killGroup(pid, 'SIGKILL')
})
let interrupted = false
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    interrupted = true
    log(`${signal}: stopping every process started by the benchmark`)
    void cleanup().finally(() => process.exit(130))
  })
}

function pin(core, cmd, argv) {
  return canPin ? ['taskset', ['-c', core, cmd, ...argv]] : [cmd, argv]
}

// ---------------------------------------------------------------- HTTP helpers

async function http(method, url, { headers = {}, json } = {}) {
  const res = await request(url, {
    method,
    headers: json === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: json === undefined ? undefined : JSON.stringify(json),
  })
  const body = Buffer.from(await res.body.arrayBuffer())
  return { status: res.statusCode, headers: res.headers, body, json: () => JSON.parse(body.toString('utf8')) }
}

async function waitForHttp(url, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs
  let last = null
  while (Date.now() < deadline) {
    try {
      const res = await http('GET', url)
      if (res.status < 500) return
      last = new Error(`status ${res.status}`)
    } catch (err) {
      last = err
    }
    await sleep(100)
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms (${last?.message ?? ''})`)
}

// ---------------------------------------------------------------- other work on the machine

// The machine is shared: other processes may use either core while we measure. Before
// each measured run we wait (a bounded time) for a quiet moment, and during it we count
// the CPU time used by processes that are not ours ("foreign" load, in cores).
const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' })) || 100
  } catch {
    return 100
  }
})()
const GATE_FOREIGN_CORES = 0.15
const GATE_MAX_WAIT_MS = 12_000
const GATE_BUDGET_MS = QUICK ? 5_000 : 15_000
let gateBudgetMs = GATE_BUDGET_MS

/** pid -> { ppid, ticks }: CPU time (user + system, with reaped children) of every process. */
function procTable() {
  const procs = new Map()
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8')
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      procs.set(Number(d), { ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]) })
    } catch {
      // the process ended while we read
    }
  }
  return procs
}

/** CPU ticks of a process and all its live descendants (nginx: master and worker). */
function treeTicks(procs, root) {
  let ticks = 0
  const queue = [root]
  const seen = new Set()
  while (queue.length) {
    const pid = queue.pop()
    if (seen.has(pid)) continue
    seen.add(pid)
    ticks += procs.get(pid)?.ticks ?? 0
    for (const [child, p] of procs) if (p.ppid === pid) queue.push(child)
  }
  return ticks
}

function cpuSnapshot(serverPid = null) {
  let busy = 0
  try {
    // user nice system idle iowait irq softirq steal: busy without idle, iowait, irq, softirq
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number)
    busy = f[0] + f[1] + f[2] + (f[7] ?? 0)
  } catch {
    return null
  }
  const procs = procTable()
  // Ours: this process with its reaped children and every live descendant.
  return { at: performance.now(), busy, ours: treeTicks(procs, process.pid), server: serverPid ? treeTicks(procs, serverPid) : null }
}

/** Cores' worth of CPU used by processes that are not ours between two snapshots. */
function foreignCores(a, b) {
  if (!a || !b) return null
  const seconds = (b.at - a.at) / 1000
  return Math.max(0, (b.busy - a.busy - (b.ours - a.ours)) / CLK_TCK / seconds)
}

/** Waits (within the time budget) until other processes use less than GATE_FOREIGN_CORES. */
async function quietMoment() {
  const until = performance.now() + Math.min(GATE_MAX_WAIT_MS, gateBudgetMs)
  let last = null
  for (;;) {
    const a = cpuSnapshot()
    await sleep(400)
    last = foreignCores(a, cpuSnapshot())
    if (last === null || last < GATE_FOREIGN_CORES || performance.now() >= until) break
  }
  return last
}

// ---------------------------------------------------------------- measurements

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}
const percentile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((q / 100) * sorted.length) - 1))]

let teamKey = ''

/** One wrk run from core 1; the same request headers for every target. */
async function wrk(url, { seconds, script = 'wrk-fixed.lua', scriptArgs = [] }) {
  const argv = ['-t1', `-c${CONNECTIONS}`, `-d${seconds}s`, '--timeout', '5s', '-s', join(BENCH, script)]
  argv.push('-H', `x-api-key: ${teamKey}`, '-H', 'accept-encoding: gzip', url)
  if (scriptArgs.length) argv.push('--', ...scriptArgs)
  const [cmd, args] = pin(LOAD_CORE, 'wrk', argv)
  const out = await runToEnd('wrk', cmd, args, (seconds + 30) * 1000)
  const line = out.split('\n').find((l) => l.startsWith('WRK_JSON '))
  if (!line) throw new Error(`wrk printed no result:\n${out}`)
  const r = JSON.parse(line.slice('WRK_JSON '.length))
  const errors = r.err_connect + r.err_read + r.err_write + r.err_status + r.err_timeout
  return {
    requests: r.requests,
    rps: r.requests / (r.duration_us / 1e6),
    p50: r.p50_us / 1000,
    p99: r.p99_us / 1000,
    errors,
    errorDetail: errors ? `connect ${r.err_connect}, read ${r.err_read}, write ${r.err_write}, non-2xx ${r.err_status}, timeout ${r.err_timeout}` : '',
  }
}

/**
 * `callers` requests for one URL, all started together from this process (core 1), on
 * connections opened beforehand. Latency of each: from its dispatch to its last byte.
 */
async function stampede(groups, path, { before, countCalls }) {
  const clients = []
  for (const { origin, callers, warmPath } of groups) {
    for (let i = 0; i < callers; i += 1) clients.push({ client: new Client(origin, { pipelining: 1, keepAliveTimeout: 60_000 }), warmPath })
  }
  try {
    // Open every connection first, so the stampede measures waiting, not TCP handshakes.
    await Promise.all(clients.map(({ client, warmPath }) => client.request({ method: 'GET', path: warmPath }).then((r) => r.body.dump())))
    await before()
    const headers = { 'x-api-key': teamKey, 'accept-encoding': 'gzip' }
    const results = await Promise.all(
      clients.map(({ client }) => {
        const t0 = performance.now()
        return client.request({ method: 'GET', path, headers }).then(async (r) => {
          await r.body.dump()
          return { ms: performance.now() - t0, status: r.statusCode, cache: String(r.headers['x-cache-status'] ?? r.headers['x-cache'] ?? '-') }
        })
      }),
    )
    await sleep(200)
    const calls = await countCalls()
    const sorted = results.map((r) => r.ms).sort((a, b) => a - b)
    const statuses = {}
    for (const r of results) statuses[`${r.status} ${r.cache}`] = (statuses[`${r.status} ${r.cache}`] ?? 0) + 1
    return { calls, min: sorted[0], p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted[sorted.length - 1], statuses, ok: results.every((r) => r.status === 200) }
  } finally {
    await Promise.all(clients.map(({ client }) => client.close().catch(() => undefined)))
  }
}

// ---------------------------------------------------------------- formatting

const fmtInt = (n) => Math.round(n).toLocaleString('en-US')
const fmtMs = (ms) => (ms >= 100 ? `${ms.toFixed(0)} ms` : ms >= 10 ? `${ms.toFixed(1)} ms` : `${ms.toFixed(2)} ms`)
const fmtX = (x) => (x === null || x === undefined || !Number.isFinite(x) ? '—' : `${x.toFixed(2)}×`)

function metricValue(text, name, labels) {
  let total = 0
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) total += Number(line.slice(line.lastIndexOf(' ') + 1))
  }
  return total
}

// ---------------------------------------------------------------- main

let canPin = false

async function main() {
  const limit = setTimeout(() => {
    log(`over the time limit of ${TIME_LIMIT_MS / 1000} s: stopping`)
    void cleanup().finally(() => process.exit(1))
  }, TIME_LIMIT_MS)

  // ---- cores
  const cores = cpus().length
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' })
    canPin = cores >= 2
  } catch {
    canPin = false
  }
  if (canPin) execFileSync('taskset', ['-a', '-p', '-c', LOAD_CORE, String(process.pid)], { stdio: 'ignore' })
  else log(`WARNING: cannot pin (${cores} cores, taskset ${cores >= 2 ? 'missing' : 'n/a'}): numbers are not comparable`)
  try {
    execFileSync('wrk', ['-v'], { stdio: 'ignore' })
  } catch (err) {
    if (err.code === 'ENOENT') throw new Error('wrk is not installed (apt-get install -y wrk)')
  }

  const notes = []
  const loadAtStart = loadAverage()

  // ---- Redis (optional: the L2 scenarios need it)
  let redisUrl = null
  try {
    const port = await freePort()
    const [cmd, args] = pin(LOAD_CORE, 'redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--loglevel', 'warning'])
    await launch('redis', cmd, args, { ready: /Ready to accept connections|Server initialized/ })
    redisUrl = `redis://127.0.0.1:${port}`
    await sleep(100)
  } catch (err) {
    notes.push(`Redis scenarios skipped: redis-server did not start (${err.message.split('\n')[0]}).`)
    log(notes.at(-1))
  }

  // ---- platform sandbox
  const sandboxPort = await freePort()
  {
    const [cmd, args] = pin(LOAD_CORE, process.execPath, ['dist/sandbox/main.js'])
    await launch('sandbox', cmd, args, { env: { HOST: '127.0.0.1', PORT: String(sandboxPort), SANDBOX_LATENCY_MS: '0' }, ready: /platform sandbox listening/ })
  }
  const sandbox = `http://127.0.0.1:${sandboxPort}`
  const platformToken = (await http('POST', `${sandbox}/__sandbox/tokens`, { json: { accountId: 100 } })).json().access_token
  const setLatency = async (ms) => {
    const r = await http('POST', `${sandbox}/__sandbox/latency`, { json: { ms } })
    if (r.status !== 200) throw new Error(`sandbox latency: ${r.status}`)
  }
  const clearPlatformCalls = () => http('DELETE', `${sandbox}/__sandbox/requests`)
  const platformCalls = async () => (await http('GET', `${sandbox}/__sandbox/requests/count?path=${encodeURIComponent(REPORT_ROUTE)}`)).json().count

  // ---- the team key and the gateways (each its own process on core 0)
  const { hashApiKey } = await import('../dist/teams/api-keys.js')
  teamKey = `rgw_${randomBytes(32).toString('base64url')}`
  const adminToken = randomBytes(24).toString('base64url')
  const gatewayEnv = {
    BENCH_PLATFORM_URL: sandbox,
    BENCH_PLATFORM_TOKEN: platformToken,
    BENCH_TEAM_KEY_HASH: hashApiKey(teamKey),
    BENCH_ADMIN_TOKEN: adminToken,
  }
  const startGateway = async (name, { redis = false, l1 = true, prefix = `rgwbench-${name}:`, nodeFlags = [], extraEnv = {} } = {}) => {
    const env = { ...gatewayEnv, BENCH_L1: l1 ? 'on' : 'off', BENCH_KEY_PREFIX: prefix, ...(redis ? { BENCH_REDIS_URL: redisUrl } : {}), ...extraEnv }
    const [cmd, args] = pin(SERVER_CORE, process.execPath, [...nodeFlags, 'bench/gateway-server.mjs'])
    const p = await launch(name, cmd, args, { env, ready: /^READY / })
    const info = JSON.parse(p.line.slice('READY '.length))
    return { ...p, url: `http://127.0.0.1:${info.port}`, admin: `http://127.0.0.1:${info.adminPort}` }
  }
  const reportHeaders = () => ({ 'x-api-key': teamKey, 'accept-encoding': 'gzip' })
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

  if (PROFILE) return profileGateway(PROFILE, { startGateway, expectCache, limit, redisUrl, setLatency })
  if (ONLY === 'fairness') {
    const section = await fairness({ startGateway, setLatency, sandbox })
    process.stdout.write(`\n${section}`)
    writeFileSync(join(BENCH, 'results-fairness.md'), `# Benchmark results (npm run bench -- --only=fairness)\n\n${section}`)
    log('written to bench/results-fairness.md')
    clearTimeout(limit)
    return
  }

  const gwL1 = await startGateway('gw-l1')
  const gwMiss = await startGateway('gw-miss')
  const gwL2 = redisUrl ? await startGateway('gw-l2', { redis: true, l1: false }) : null
  const gwShared = redisUrl
    ? [await startGateway('gw-shared-a', { redis: true, prefix: 'rgwbench-shared:' }), await startGateway('gw-shared-b', { redis: true, prefix: 'rgwbench-shared:' })]
    : null

  // ---- the stored bytes: what the gateway keeps for the report, checked against the platform
  const missed = await expectCache(gwL1, 'MISS')
  const hit = await expectCache(gwL1, 'HIT')
  if (hit.headers['content-encoding'] !== 'gzip') throw new Error('the gateway did not answer gzip to accept-encoding: gzip')
  if (!hit.body.equals(missed.body)) throw new Error('a HIT sent other bytes than the MISS')
  const platformBody = (await http('GET', `${sandbox}${REPORT_PATH}`, { headers: { authorization: `Bearer ${platformToken}` } })).body
  if (!gunzipSync(hit.body).equals(platformBody)) throw new Error('the cached body is not byte-for-byte the platform body')
  const bodyFile = join(tmp, 'report.json.gz')
  writeFileSync(bodyFile, hit.body)
  const bodyInfo = `${platformBody.length.toLocaleString('en-US')} bytes of JSON, ${hit.body.length.toLocaleString('en-US')} bytes gzip`
  log(`report: ${bodyInfo}`)

  // ---- the bare node server (core 0) and nginx's tiny upstream (core 1)
  const bare = await (async () => {
    const [cmd, args] = pin(SERVER_CORE, process.execPath, ['bench/bare-server.mjs'])
    const p = await launch('bare', cmd, args, { env: { BENCH_BODY_FILE: bodyFile }, ready: /^READY / })
    return { url: `http://127.0.0.1:${JSON.parse(p.line.slice(6)).port}`, pid: p.child.pid }
  })()
  const fastifyMin = await (async () => {
    const [cmd, args] = pin(SERVER_CORE, process.execPath, ['bench/fastify-min-server.mjs'])
    const p = await launch('fastify-min', cmd, args, { env: { BENCH_BODY_FILE: bodyFile }, ready: /^READY / })
    return { url: `http://127.0.0.1:${JSON.parse(p.line.slice(6)).port}`, pid: p.child.pid }
  })()
  const origin = await (async () => {
    const [cmd, args] = pin(LOAD_CORE, process.execPath, ['bench/bare-server.mjs'])
    const p = await launch('origin', cmd, args, { env: { BENCH_BODY_FILE: bodyFile, BENCH_LATENCY_MS: String(PLATFORM_LATENCY_MS) }, ready: /^READY / })
    return `http://127.0.0.1:${JSON.parse(p.line.slice(6)).port}`
  })()
  const originCalls = async () => (await http('GET', `${origin}/__count`)).json().count
  const clearOriginCalls = () => http('DELETE', `${origin}/__count`)

  // ---- nginx (optional)
  let nginx = null
  const nginxVersion = versionOf('nginx', ['-v'])
  if (nginxVersion) {
    try {
      nginx = await startNginx({ origin, platformToken })
      const first = await http('GET', `${nginx.url}${REPORT_PATH}`, { headers: reportHeaders() })
      const second = await http('GET', `${nginx.url}${REPORT_PATH}`, { headers: reportHeaders() })
      if (first.status !== 200 || second.headers['x-cache-status'] !== 'HIT' || !second.body.equals(hit.body)) {
        throw new Error(`nginx does not cache the report (${first.status}, ${second.status} ${second.headers['x-cache-status']})`)
      }
    } catch (err) {
      notes.push(`nginx scenarios skipped: ${err.message.split('\n')[0]}`)
      log(notes.at(-1))
      nginx = null
    }
  } else {
    notes.push('nginx scenarios skipped: nginx is not installed (apt-get install -y nginx).')
    log(notes.at(-1))
  }

  await setLatency(PLATFORM_LATENCY_MS)
  if (gwL2) {
    await expectCache(gwL2, 'MISS')
    await expectCache(gwL2, 'HIT')
  }

  // ---- throughput scenarios
  let missOffset = 0
  const targets = [
    { id: 'bare', label: 'bare node:http, same stored bytes', url: `${bare.url}${REPORT_PATH}`, pid: bare.pid, calls: null },
    nginx && { id: 'nginx', label: 'nginx proxy_cache hits', url: `${nginx.url}${REPORT_PATH}`, pid: nginx.pid, calls: [clearOriginCalls, originCalls] },
    { id: 'fastify', label: 'reference: minimal Fastify 5 + lru-cache, same bytes', url: `${fastifyMin.url}${REPORT_PATH}`, pid: fastifyMin.pid, calls: null },
    { id: 'l1', label: 'gateway L1 hits (memory only)', url: `${gwL1.url}${REPORT_PATH}`, pid: gwL1.child.pid, calls: [clearPlatformCalls, platformCalls], check: () => expectCache(gwL1, 'HIT') },
    gwL2 && { id: 'l2', label: 'gateway L2-only hits (Redis, L1 off)', url: `${gwL2.url}${REPORT_PATH}`, pid: gwL2.child.pid, calls: [clearPlatformCalls, platformCalls], check: () => expectCache(gwL2, 'HIT') },
    { id: 'miss', label: `gateway misses, platform ${PLATFORM_LATENCY_MS} ms (every request a new report)`, url: `${gwMiss.url}/`, pid: gwMiss.child.pid, script: 'wrk-misses.lua', miss: true, calls: [clearPlatformCalls, platformCalls] },
  ].filter(Boolean)
  const runs = Object.fromEntries(targets.map((t) => [t.id, []]))
  const measure = async (t, seconds, record) => {
    await t.check?.()
    const scriptArgs = t.miss ? [String(missOffset)] : []
    if (t.calls) await t.calls[0]()
    if (record) {
      const waitStart = performance.now()
      await quietMoment()
      gateBudgetMs -= performance.now() - waitStart
    }
    const before = cpuSnapshot(t.pid)
    const r = await wrk(t.url, { seconds, script: t.script, scriptArgs })
    const after = cpuSnapshot(t.pid)
    r.foreign = foreignCores(before, after)
    // CPU time of the server under test per request: unlike req/s, barely moved by other load.
    r.cpuUs = before && after && t.pid ? ((after.server - before.server) / CLK_TCK / r.requests) * 1e6 : null
    if (t.miss) missOffset += r.requests + CONNECTIONS + 100
    if (t.calls) {
      await sleep(t.miss ? PLATFORM_LATENCY_MS * 4 : 50)
      r.calls = await t.calls[1]()
    }
    if (r.errors) throw new Error(`${t.label}: ${r.errors} errors (${r.errorDetail})`)
    if (record) {
      runs[t.id].push(r)
      log(`${t.id.padEnd(7)} ${fmtInt(r.rps).padStart(7)} req/s  p50 ${fmtMs(r.p50)}  p99 ${fmtMs(r.p99)}${r.calls !== undefined ? `  platform calls ${r.calls}` : ''}  server CPU ${r.cpuUs?.toFixed(1) ?? '?'} µs/req  (other load ${r.foreign?.toFixed(2) ?? '?'} cores)`)
    }
    return r
  }
  log(`warm-up: ${WARMUP_S} s per target`)
  for (const t of targets) await measure(t, WARMUP_S, false)
  for (let round = 0; round < ROUNDS; round += 1) {
    // Alternate the order, so slow drift of the machine does not favour one target.
    const order = targets.map((_, i) => targets[(i + round) % targets.length])
    log(`round ${round + 1}/${ROUNDS}: ${order.map((t) => t.id).join(', ')} (${DURATION_S} s each, -c ${CONNECTIONS})`)
    for (const t of order) await measure(t, DURATION_S, true)
  }

  // The hit runs were what they say: count the gateways' own cache results.
  const l1Metrics = await metrics(gwL1)
  const l1Hits = metricValue(l1Metrics, 'gateway_cache_requests_total', { result: 'HIT', tier: 'l1' })
  let l2Hits = null
  let l2FromL1 = null
  if (gwL2) {
    const m = await metrics(gwL2)
    l2Hits = metricValue(m, 'gateway_cache_requests_total', { result: 'HIT', tier: 'l2' })
    l2FromL1 = metricValue(m, 'gateway_cache_requests_total', { result: 'HIT', tier: 'l1' })
  }

  // ---- stampedes: 200 concurrent identical misses
  const stampedes = {}
  const runStampede = async (id, make) => {
    stampedes[id] = []
    for (let round = 0; round < STAMPEDE_ROUNDS; round += 1) {
      const waitStart = performance.now()
      await quietMoment()
      gateBudgetMs -= performance.now() - waitStart
      const r = await make(round)
      stampedes[id].push(r)
      log(`${id}: ${r.calls} platform call(s), min ${fmtMs(r.min)}, p50 ${fmtMs(r.p50)}, p99 ${fmtMs(r.p99)}, max ${fmtMs(r.max)}; ${Object.entries(r.statuses).map(([k, v]) => `${v}× ${k}`).join(', ')}`)
      if (!r.ok) throw new Error(`${id}: some callers did not get a 200: ${JSON.stringify(r.statuses)}`)
    }
  }
  await runStampede('stampede-gw', () =>
    stampede([{ origin: gwL1.url, callers: STAMPEDE_CALLERS, warmPath: '/healthz' }], REPORT_PATH, {
      before: async () => {
        await purge(gwL1)
        await clearPlatformCalls()
      },
      countCalls: platformCalls,
    }),
  )
  if (gwShared) {
    await runStampede('stampede-gw2', () =>
      stampede(
        gwShared.map((gw) => ({ origin: gw.url, callers: STAMPEDE_CALLERS / 2, warmPath: '/healthz' })),
        REPORT_PATH,
        {
          before: async () => {
            await purge(gwShared[0]) // L2, and every replica's L1 through the purge channel
            await sleep(100)
            await clearPlatformCalls()
          },
          countCalls: platformCalls,
        },
      ),
    )
  }
  if (nginx) {
    await runStampede('stampede-nginx', (round) =>
      stampede([{ origin: nginx.url, callers: STAMPEDE_CALLERS, warmPath: '/healthz' }], `${REPORT_PATH}&stampede=${Date.now()}-${round}`, {
        before: clearOriginCalls,
        countCalls: originCalls,
      }),
    )
  }

  // ---- the table
  const agg = (id) => {
    const rs = runs[id]
    if (!rs?.length) return null
    return { rps: median(rs.map((r) => r.rps)), p50: median(rs.map((r) => r.p50)), p99: median(rs.map((r) => r.p99)), runs: rs }
  }
  const bareA = agg('bare')
  const nginxA = agg('nginx')
  const rows = []
  for (const t of targets) {
    const a = agg(t.id)
    let calls = '—'
    if (t.miss) calls = `${fmtInt(median(a.runs.map((r) => r.calls)))} / ${fmtInt(median(a.runs.map((r) => r.requests)))} req`
    else if (t.calls) calls = String(Math.max(...a.runs.map((r) => r.calls)))
    rows.push([t.label, fmtInt(a.rps), fmtMs(a.p50), fmtMs(a.p99), calls, fmtX(a.rps / bareA.rps), nginxA ? fmtX(a.rps / nginxA.rps) : 'n/a'])
  }
  const stampedeLabel = {
    'stampede-gw': `gateway stampede: ${STAMPEDE_CALLERS} identical misses, 1 process`,
    'stampede-gw2': `gateway stampede: ${STAMPEDE_CALLERS} identical misses, 2 processes, one Redis`,
    'stampede-nginx': `nginx stampede: ${STAMPEDE_CALLERS} identical misses (proxy_cache_lock)`,
  }
  const sAgg = (id) => {
    const rs = stampedes[id]
    if (!rs?.length) return null
    return { p50: median(rs.map((r) => r.p50)), p99: median(rs.map((r) => r.p99)), calls: rs.map((r) => r.calls), rs }
  }
  for (const id of Object.keys(stampedeLabel)) {
    const s = sAgg(id)
    if (!s) continue
    rows.push([stampedeLabel[id], '—', fmtMs(s.p50), fmtMs(s.p99), s.calls.join(', '), '—', '—'])
  }
  if (!nginx) rows.push(['nginx (not run: see the notes)', 'n/a', 'n/a', 'n/a', 'n/a', 'n/a', 'n/a'])

  const header = ['scenario', 'req/s', 'p50', 'p99', 'platform calls', '× bare node', '× nginx']
  const table = [
    `| ${header.join(' | ')} |`,
    `|${header.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n')

  // ---- targets
  const targetLines = []
  const cpuOf = (id) => median(runs[id].map((r) => r.cpuUs ?? NaN))
  const ratioTarget = (label, id, want) => {
    const a = agg(id)
    if (!a) return targetLines.push(`- n/a  ${label}: not measured`)
    const x = a.rps / bareA.rps
    const ok = x >= want
    const by = ok ? `${((x / want - 1) * 100).toFixed(0)} % above the target` : `short by ${(want - x).toFixed(2)}×: needs ${fmtInt(want * bareA.rps)} req/s, ${((want / x - 1) * 100).toFixed(0)} % more`
    const cpuX = cpuOf('bare') / cpuOf(id)
    targetLines.push(
      `- ${ok ? 'PASS' : 'MISS'} ${label}: ${fmtX(x)} the bare Node server's req/s (target ≥ ${want}×; ${by}). By server CPU per request: ${fmtX(cpuX)} (${cpuOf(id).toFixed(1)} vs ${cpuOf('bare').toFixed(1)} µs).`,
    )
  }
  ratioTarget('L1 hits', 'l1', 0.85)
  ratioTarget('L2-only hits', 'l2', 0.5)
  const sg = sAgg('stampede-gw')
  const oneCall = sg.calls.every((c) => c === 1)
  targetLines.push(`- ${oneCall ? 'PASS' : 'MISS'} stampede platform calls: ${sg.calls.join(', ')} in ${sg.calls.length} round(s) of ${STAMPEDE_CALLERS} (target: exactly 1)`)
  const budget = PLATFORM_LATENCY_MS + 10
  targetLines.push(
    `- ${sg.p50 <= budget ? 'PASS' : 'MISS'} stampede waiters' p50: ${fmtMs(sg.p50)} (target ≤ ${budget} ms = platform latency + 10 ms; ${sg.p50 <= budget ? `${fmtMs(budget - sg.p50)} to spare` : `${fmtMs(sg.p50 - budget)} over`})`,
  )
  const s2 = sAgg('stampede-gw2')
  if (s2) {
    const ok2 = s2.calls.every((c) => c === 1)
    targetLines.push(`- ${ok2 ? 'PASS' : 'MISS'} (optional) stampede over 2 processes and one Redis: platform calls ${s2.calls.join(', ')} (target: exactly 1); waiters' p50 ${fmtMs(s2.p50)} (≤ ${budget} ms: ${s2.p50 <= budget ? 'yes' : 'no'})`)
  }

  // ---- notes
  const elapsed = (performance.now() - started) / 1000
  const versions = {
    node: process.version,
    wrk: versionOf('wrk', ['-v'])?.replace(/ Copyright.*$/, '') ?? 'wrk',
    nginx: nginxVersion?.replace(/^nginx version: /, '') ?? 'not installed',
    redis: versionOf('redis-server', ['--version'])?.split(' ').find((p) => p.startsWith('v='))?.slice(2) ?? 'not installed',
  }
  const perRun = (id) => runs[id]?.map((r) => fmtInt(r.rps)).join(' / ')
  const foreign = Object.values(runs).flat().map((r) => r.foreign).filter((x) => typeof x === 'number')
  notes.unshift(
    `The report: \`GET ${REPORT_PATH}\` (${bodyInfo}); every target is sent \`x-api-key\` and \`accept-encoding: gzip\`, and answers the same gzip bytes.`,
    `Throughput rows: wrk -t1 -c${CONNECTIONS}, ${DURATION_S} s per run after a ${WARMUP_S} s warm-up, ${ROUNDS} run(s) per target in alternating order; each column is the median of the runs (req/s per run: ${targets.map((t) => `${t.id} ${perRun(t.id)}`).join('; ')}).`,
    `Server CPU time per request (µs, median of the runs; the server process tree's user + system time over wrk's completed requests; a measure that other load moves much less than req/s): ${targets.map((t) => `${t.id} ${median(runs[t.id].map((r) => r.cpuUs ?? NaN)).toFixed(1)}`).join(', ')}. As a ratio to the bare server: ${targets.filter((t) => !t.miss).map((t) => `${t.id} ${fmtX(median(runs.bare.map((r) => r.cpuUs ?? NaN)) / median(runs[t.id].map((r) => r.cpuUs ?? NaN)))}`).join(', ')}.`,
    `Other processes on the machine (not ours) used a median ${median(foreign).toFixed(2)} cores (max ${Math.max(...foreign).toFixed(2)}) during the measured runs; before each run (and each stampede) the script waited up to ${GATE_MAX_WAIT_MS / 1000} s (${GATE_BUDGET_MS / 1000} s in all) for them to use < ${GATE_FOREIGN_CORES} cores.`,
    `Pinning: ${canPin ? `every server under test (gateways, bare server, nginx master and worker) on core ${SERVER_CORE}; wrk, this script (stampede callers), the platform sandbox, Redis and nginx's upstream on core ${LOAD_CORE}` : 'NONE (taskset or a second core missing)'}; ${cores} cores (${cpus()[0]?.model ?? '?'}).`,
    `Platform calls: report requests the sandbox (or nginx's upstream) received during the measured runs. Misses: calls / wrk's completed requests; calls exceed requests by the ≤ ${CONNECTIONS} requests in flight when wrk stops. Hit counts from the gateways' own metrics: ${fmtInt(l1Hits)} L1 hits on the L1 gateway${l2Hits !== null ? `; ${fmtInt(l2Hits)} L2 hits and ${fmtInt(l2FromL1)} L1 hits on the L2-only gateway` : ''}.`,
    `Stampede rows: ${STAMPEDE_CALLERS} requests started together from one process on connections opened beforehand, after a purge (nginx: a new URL each round); latency from dispatch to last byte; p50/p99 are medians over ${STAMPEDE_ROUNDS} round(s); platform calls per round. The platform (sandbox, nginx's upstream) answers after ${PLATFORM_LATENCY_MS} ms. First caller answered after (median of the rounds): ${Object.keys(stampedeLabel).filter((id) => stampedes[id]).map((id) => `${id.replace('stampede-', '')} ${fmtMs(median(stampedes[id].map((r) => r.min)))}`).join(', ')}; the rest of the spread up to p50/p99 is the cost of answering the other callers.`,
    `Gateway setup: the compiled gateway (dist/) from bench/gateway-server.mjs, LOG_LEVEL=warn (no per-request log line is written), one team limited to advertisers 100-103 with a rate limit (counted on every request, too high to trip), the platform token from the sandbox. L1-only gateways have no Redis; the L2-only gateway has Redis and cache.l1MaxBytes: 0 (L1 off); the two-process stampede uses two gateways with L1 and one Redis.`,
    nginx && `nginx: worker_processes 1, access_log off, proxy_cache + proxy_cache_lock on, proxy_cache_valid 200 5m, proxy_ignore_headers Set-Cookie Cache-Control Expires Vary; its upstream is bench/bare-server.mjs sending the same gzip bytes after ${PLATFORM_LATENCY_MS} ms. nginx waiters poll the lock every 500 ms.`,
    `Versions: node ${versions.node}, ${versions.wrk}, nginx ${versions.nginx}, redis ${versions.redis}. Run took ${elapsed.toFixed(0)} s (without the build). Load average (1/5/15 min) at the start ${loadAtStart}, at the end ${loadAverage()}: other work on the machine shares both cores, so compare rows of one run, not runs.`,
  )

  const fairnessSection = await fairness({ startGateway, setLatency, sandbox })

  const out = [
    `## Benchmark (${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC${QUICK ? ', QUICK run: 1 round of 3 s, not for the README' : ''})`,
    '',
    table,
    '',
    'Targets:',
    '',
    ...targetLines,
    '',
    'Notes:',
    '',
    ...notes.filter(Boolean).map((n) => `- ${n}`),
    '',
    fairnessSection,
  ].join('\n')
  process.stdout.write(`\n${out}`)
  const resultFile = QUICK ? join(ROOT, '.bench', 'results-quick.md') : join(BENCH, 'results.md')
  mkdirSync(join(resultFile, '..'), { recursive: true })
  writeFileSync(resultFile, `# Benchmark results (npm run bench)\n\n${out}`)
  log(`written to ${resultFile.slice(ROOT.length)}`)
  clearTimeout(limit)
}

/** First line a program prints about its version (stdout or stderr, whatever the exit code); null if it is missing. */
function versionOf(cmd, argv) {
  const r = spawnSync(cmd, argv, { encoding: 'utf8' })
  if (r.error) return null
  return `${r.stdout ?? ''}${r.stderr ?? ''}`.split('\n').find((l) => l.trim())?.trim() ?? cmd
}

function loadAverage() {
  try {
    return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')
  } catch {
    return '?'
  }
}

async function startNginx({ origin, platformToken }) {
  const dir = join(tmp, 'nginx')
  for (const sub of ['', 'cache', 'tmp', 'logs']) mkdirSync(join(dir, sub), { recursive: true })
  const port = await freePort()
  const user = process.getuid?.() === 0 ? `user ${userInfo().username};\n` : ''
  const conf = `${user}worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/tmp/body;
  proxy_temp_path ${dir}/tmp/proxy;
  fastcgi_temp_path ${dir}/tmp/fastcgi;
  uwsgi_temp_path ${dir}/tmp/uwsgi;
  scgi_temp_path ${dir}/tmp/scgi;
  keepalive_requests 10000000;
  keepalive_timeout 65s;
  proxy_cache_path ${dir}/cache levels=1:2 keys_zone=reports:10m max_size=256m inactive=10m use_temp_path=off;
  upstream platform {
    server ${origin.replace('http://', '')};
    keepalive 32;
  }
  server {
    listen 127.0.0.1:${port};
    location = /healthz { return 200 "ok\\n"; }
    location /api/v1/ {
      proxy_pass http://platform;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Authorization "Bearer ${platformToken}";
      proxy_set_header X-Api-Key "";
      proxy_set_header Cookie "";
      proxy_set_header Accept-Encoding "gzip";
      proxy_cache reports;
      proxy_cache_valid 200 5m;
      proxy_cache_lock on;
      proxy_cache_lock_timeout 10s;
      proxy_cache_lock_age 10s;
      proxy_ignore_headers Set-Cookie Cache-Control Expires Vary;
      proxy_hide_header Set-Cookie;
      add_header X-Cache-Status $upstream_cache_status;
    }
  }
}
`
  writeFileSync(join(dir, 'nginx.conf'), conf)
  const [cmd, args] = pin(SERVER_CORE, 'nginx', ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log'), '-g', 'daemon off;'])
  const p = await launch('nginx', cmd, args)
  const url = `http://127.0.0.1:${port}`
  try {
    await waitForHttp(`${url}/healthz`, 5000)
  } catch (err) {
    let errors = ''
    try {
      errors = readFileSync(join(dir, 'error.log'), 'utf8').slice(-500)
    } catch {
      // no error log
    }
    await stopProcess(p)
    throw new Error(`nginx did not start: ${err.message} ${errors}`)
  }
  return { url, pid: p.child.pid }
}

/** --profile[=l1|l2|miss]: one scenario with --cpu-prof on the gateway, summarized. */
async function profileGateway(scenario, { startGateway, expectCache, limit, redisUrl, setLatency }) {
  if (!['l1', 'l2', 'miss'].includes(scenario)) throw new Error(`--profile=${scenario}: use l1, l2 or miss`)
  if (scenario === 'l2' && !redisUrl) throw new Error('--profile=l2 needs redis-server')
  const profDir = join(tmp, 'prof')
  mkdirSync(profDir)
  const gw = await startGateway('gw-prof', { nodeFlags: ['--cpu-prof', `--cpu-prof-dir=${profDir}`], ...(scenario === 'l2' ? { redis: true, l1: false } : {}) })
  let url = `${gw.url}${REPORT_PATH}`
  let script
  let scriptArgs = []
  if (scenario === 'miss') {
    await setLatency(PLATFORM_LATENCY_MS)
    url = `${gw.url}/`
    script = 'wrk-misses.lua'
  } else {
    await expectCache(gw, 'MISS')
    await expectCache(gw, 'HIT')
  }
  const warm = await wrk(url, { seconds: WARMUP_S, script, scriptArgs })
  if (scenario === 'miss') scriptArgs = [String(warm.requests + 1000)]
  const r = await wrk(url, { seconds: 10, script, scriptArgs })
  log(`profiled ${scenario}: ${fmtInt(r.rps)} req/s, p50 ${fmtMs(r.p50)}, p99 ${fmtMs(r.p99)} (with the profiler on)`)
  await stopProcess(children.get(gw.child.pid) ?? gw, 10_000)
  const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'))
  if (!file) throw new Error('no .cpuprofile was written')
  const keep = join(ROOT, '.bench')
  mkdirSync(keep, { recursive: true })
  copyFileSync(join(profDir, file), join(keep, `gateway-${scenario}.cpuprofile`))
  // The measured 10 s run ended just before the process was stopped.
  process.stdout.write(`${summarizeProfile(JSON.parse(readFileSync(join(profDir, file), 'utf8')), { root: ROOT.replace(/\/$/, ''), lastSeconds: 10 })}\n`)
  log(`profile kept in .bench/gateway-${scenario}.cpuprofile (open it in Chrome DevTools > Performance)`)
  clearTimeout(limit)
}

// ---------------------------------------------------------------- fairness (issue #8)

const FAIRNESS_LATENCY_MS = 200
const FAIRNESS_IN_FLIGHT = 200
const FAIRNESS_B_CALLS = QUICK ? 8 : 20
const FAIRNESS_WARMUP_MS = 3000

/** The n-th distinct report (a miss): advertiser and a 36-day window moving one day every 4 requests; team B's also by campaign. */
function fairnessReport(i, team) {
  const day = (d) => new Date(Date.UTC(1990, 0, 1 + d)).toISOString().slice(0, 10)
  const first = Math.floor(i / 4)
  return `${REPORT_ROUTE}?advertiserId=${100 + (i % 4)}&dateFrom=${day(first)}&dateTo=${day(first + 35)}&byDate=1${team === 'b' ? '&byCampaign=1' : ''}`
}

/**
 * Team A keeps 200 distinct misses in flight against the sandbox at 200 ms; team B sends
 * one miss a second (open loop). B's latency and the platform's peak concurrency, with
 * the governor, with B's calls queued as team A's (what one queue without turns gives),
 * and without the governor (only the pool's connections bound the calls).
 */
async function fairness({ startGateway, setLatency, sandbox }) {
  const { hashApiKey } = await import('../dist/teams/api-keys.js')
  const keyB = `rgw_${randomBytes(32).toString('base64url')}`
  const setups = [
    { id: 'on', label: 'governor on (maxConcurrent 8, queue 200), B its own team', extraEnv: {}, bKey: keyB },
    { id: 'one-queue', label: 'governor on, B sent with team A\'s key (one queue, no turns)', extraEnv: {}, bKey: teamKey },
    { id: 'off', label: 'governor off (maxConcurrent 100000): only the pool\'s 64 connections bound the calls', extraEnv: { BENCH_MAX_CONCURRENT: '100000', BENCH_QUEUE: '100000' }, bKey: keyB },
  ]
  await setLatency(FAIRNESS_LATENCY_MS)
  let next = 0
  const rows = []
  for (const setup of setups) {
    const gw = await startGateway(`gw-fair-${setup.id}`, { extraEnv: { BENCH_TEAM_B_KEY_HASH: hashApiKey(keyB), ...setup.extraEnv } })
    const agent = new Agent({ connections: FAIRNESS_IN_FLIGHT + FAIRNESS_B_CALLS + 10, keepAliveTimeout: 60_000, headersTimeout: 60_000, bodyTimeout: 60_000 })
    const ask = async (path, key) => {
      const t0 = performance.now()
      try {
        const r = await request(`${gw.url}${path}`, { dispatcher: agent, headers: { 'x-api-key': key, 'accept-encoding': 'gzip' } })
        await r.body.dump()
        return { ms: performance.now() - t0, status: r.statusCode }
      } catch (err) {
        return { ms: performance.now() - t0, status: err.code ?? 'error' }
      }
    }
    let stop = false
    const a = { ok: 0, other: 0, okInWindow: 0 }
    let measuring = false
    // A closed loop of 200: each worker sends its next miss when the last is answered; bounded by `stop`.
    const workers = Array.from({ length: FAIRNESS_IN_FLIGHT }, async () => {
      while (!stop) {
        const r = await ask(fairnessReport(next++, 'a'), teamKey)
        if (r.status === 200) {
          a.ok += 1
          if (measuring) a.okInWindow += 1
        } else a.other += 1
      }
    })
    await sleep(FAIRNESS_WARMUP_MS)
    await http('DELETE', `${sandbox}/__sandbox/concurrency`)
    measuring = true
    const windowStart = performance.now()
    const bCalls = []
    for (let s = 0; s < FAIRNESS_B_CALLS; s++) {
      bCalls.push(ask(fairnessReport(next++, 'b'), setup.bKey))
      await sleep(1000)
    }
    const b = await Promise.all(bCalls)
    const windowS = (performance.now() - windowStart) / 1000
    measuring = false
    const { peak } = (await http('GET', `${sandbox}/__sandbox/concurrency`)).json()
    stop = true
    await Promise.all(workers)
    await agent.close()
    await stopProcess(children.get(gw.child.pid) ?? gw)
    const sorted = b.map((r) => r.ms).sort((x, y) => x - y)
    const bOk = b.filter((r) => r.status === 200).length
    const bOther = b.filter((r) => r.status !== 200).map((r) => r.status)
    rows.push([setup.label, `${bOk} / ${b.length}${bOther.length ? ` (${[...new Set(bOther)].join(', ')})` : ''}`, fmtMs(percentile(sorted, 50)), fmtMs(percentile(sorted, 99)), fmtInt(a.okInWindow / windowS), String(a.other), String(peak)])
    log(`fairness ${setup.id}: B p50 ${fmtMs(percentile(sorted, 50))}, p99 ${fmtMs(percentile(sorted, 99))}; A ${fmtInt(a.okInWindow / windowS)}/s (${a.other} not 200); platform peak ${peak}`)
  }
  await setLatency(PLATFORM_LATENCY_MS)
  const header = ['setup', 'B answered 200', 'B p50', 'B p99', 'A answers/s', 'A not 200', 'platform peak concurrency']
  return [
    `### Fairness (issue #8): team A keeps ${FAIRNESS_IN_FLIGHT} distinct misses in flight, team B sends one miss a second`,
    '',
    `| ${header.join(' | ')} |`,
    `|${header.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
    '',
    `Platform: the sandbox at ${FAIRNESS_LATENCY_MS} ms per call. Team A: ${FAIRNESS_IN_FLIGHT} callers in a closed loop, each asking its next distinct report when the last is answered; team B: ${FAIRNESS_B_CALLS} distinct reports, one a second (open loop), measured from dispatch to last byte. A ${FAIRNESS_WARMUP_MS / 1000} s warm-up fills the queue before B starts; the platform's peak concurrency (requests the sandbox answered at once) and A's answers/s are over B's window. One gateway process per setup (core 0), the load from this process (core 1).`,
    '',
  ].join('\n')
}

main()
  .then(() => cleanup())
  .then(() => process.exit(0))
  .catch(async (err) => {
    if (!interrupted) process.stderr.write(`\nbench failed: ${err.stack ?? err}\n`)
    await cleanup()
    process.exit(interrupted ? 130 : 1)
  })
