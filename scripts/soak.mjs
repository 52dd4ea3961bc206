#!/usr/bin/env node
/**
 * `npm run soak -- --minutes N [--rate R] [--sample S]`: the gateway under a steady mixed
 * load for N minutes (default 1), to find what only time shows: leaks, slow drift,
 * errors that come once in thousands of requests.
 *
 * Starts, on free loopback ports: one redis-server, the platform sandbox
 * (dist/sandbox/main.js, 20 ms latency) and two gateway replicas (dist/main.js) sharing
 * both. Then sends R requests a second (default 30), open loop, alternating between
 * the replicas: report hits, report misses (a new report each), bad input (400, 401,
 * 403), campaign writes and proxied reads, and a team over its rate limit (200 or 429).
 * Every S seconds (default: a twentieth of the run, 5 to 60 s) it prints the answers by
 * status, p50/p99, and each replica's RSS and heap after a full GC (each replica runs
 * with --expose-gc and scripts/soak-probe.mjs, which collects and reports on SIGUSR2),
 * Redis's memory and the machine's load average. At the end: a summary, and the replicas are stopped with SIGTERM.
 *
 * Exits 1 on any answer outside the expected statuses (any 5xx included), any request
 * lost (connection error or no answer within 10 s), or a replica that does not exit 0.
 * Bounded: at most N x 60 x R requests, at most 64 in flight, the whole run at most N + 2
 * minutes. Every process it starts is stopped at the end, on error and on SIGINT/SIGTERM.
 * Needs `npm run build` (the npm script does it) and redis-server on PATH.
 */
import { spawn, spawnSync } from 'node:child_process'
import { createWriteStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, tmpdir, totalmem } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { clearInterval, setInterval } from 'node:timers'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { Redis } from 'ioredis'
import { Agent, request } from 'undici'
import { hashApiKey } from '../dist/teams/api-keys.js'
import { freePort } from './free-port.mjs'

const ROOT = fileURLToPath(new URL('../', import.meta.url))
const PROBE = pathToFileURL(join(ROOT, 'scripts/soak-probe.mjs')).href

const { values: args } = parseArgs({
  options: { minutes: { type: 'string', default: '1' }, rate: { type: 'string', default: '30' }, sample: { type: 'string' } },
})
const MINUTES = Number(args.minutes)
const RATE = Number(args.rate)
if (!(MINUTES > 0 && MINUTES <= 24 * 60) || !(RATE > 0 && RATE <= 2000)) {
  console.error('usage: npm run soak -- --minutes N [--rate R] [--sample S]   (0 < N <= 1440, 0 < R <= 2000)')
  process.exit(2)
}
const SAMPLE_S = Number(args.sample ?? Math.min(60, Math.max(5, Math.round((MINUTES * 60) / 20))))
const TOTAL = Math.floor(MINUTES * 60 * RATE)
const MAX_IN_FLIGHT = 64
const REQUEST_TIMEOUT_MS = 10_000
const HARD_LIMIT_MS = (MINUTES + 2) * 60_000
const PLATFORM_LATENCY_MS = 20

const KEYS = {
  reader: 'rgw_soak_reader_key_000000000000000000000000',
  writer: 'rgw_soak_writer_key_111111111111111111111111',
  limited: 'rgw_soak_limited_key_22222222222222222222222',
}
const LIMIT = { max: 20, window: '10s' }
const ADMIN_TOKEN = 'soak-admin-token-0123456789abcdef'
const REPORT = '/api/v1/report/campaigns/get'
const HOT = Array.from({ length: 12 }, (_, i) => `${REPORT}?advertiserId=${101 + (i % 3)}&byDate=1&dateFrom=2026-01-${String(1 + i).padStart(2, '0')}&dateTo=2026-01-${String(8 + i).padStart(2, '0')}`)
/** The n-th campaign the writer team creates: a month of its own, a budget that grows. */
const campaign = (n) => {
  const month = `2027-${String(1 + (n % 12)).padStart(2, '0')}`
  return { userId: 101, name: `Soak ${n}`, adDomain: 'example.com', clickUrl: `https://example.com/soak/${n}`, dates: { from: `${month}-01`, to: `${month}-28` }, country: 'KE', bid: 0.5, budget: { daily: 10, total: 100 + n }, creativeSetIds: [1] }
}

// One cycle of 20 requests: 9 hits, 3 misses, 4 from the rate-limited team, 2 bad, 1 write, 1 proxied read.
const CYCLE = ['hit', 'hit', 'miss', 'hit', 'limited', 'bad', 'hit', 'write', 'hit', 'limited', 'miss', 'hit', 'read', 'limited', 'hit', 'bad', 'hit', 'miss', 'limited', 'hit']
const BAD = [
  { what: 'bad date', path: `${REPORT}?advertiserId=101&byDate=1&dateFrom=2026-13-01&dateTo=2026-01-08`, key: KEYS.reader, expect: [400] },
  { what: 'no key', path: HOT[0], key: null, expect: [401] },
  { what: 'unknown key', path: HOT[0], key: 'rgw_soak_unknown_key_9999999999999999999999', expect: [401] },
  { what: 'advertiser out of scope', path: HOT[1], key: KEYS.writer, expect: [403] },
]
let misses = 0

/** The i-th request of the run: what it is, and the statuses it may be answered with. */
function requestFor(i) {
  const kind = CYCLE[i % CYCLE.length]
  const round = Math.floor(i / CYCLE.length)
  switch (kind) {
    case 'hit':
      return { kind, method: 'GET', path: HOT[i % HOT.length], key: KEYS.reader, expect: [200] }
    case 'miss': {
      // A week never asked before: advertiser by advertiser, day by day back from 2025-12-31.
      const n = misses++
      const from = new Date(Date.UTC(2025, 11, 31) - Math.floor(n / 3) * 86_400_000 - 7 * 86_400_000)
      const to = new Date(from.getTime() + 6 * 86_400_000)
      const day = (d) => d.toISOString().slice(0, 10)
      return { kind, method: 'GET', path: `${REPORT}?advertiserId=${101 + (n % 3)}&byCampaign=1&dateFrom=${day(from)}&dateTo=${day(to)}`, key: KEYS.reader, expect: [200] }
    }
    case 'limited':
      return { kind, method: 'GET', path: HOT[i % HOT.length], key: KEYS.limited, expect: [200, 429] }
    case 'bad': {
      const bad = BAD[round % BAD.length]
      return { kind: `bad (${bad.what})`, method: 'GET', path: bad.path, key: bad.key, expect: bad.expect }
    }
    case 'write':
      return { kind, method: 'POST', path: '/api/v1/campaign/banner/create', key: KEYS.writer, body: campaign(round), expect: [201] }
    default:
      return { kind: 'read', method: 'POST', path: '/api/v1/campaign/get', key: KEYS.reader, body: { userId: 101 }, expect: [200] }
  }
}

// ---------------------------------------------------------------- processes

const tmp = mkdtempSync(join(tmpdir(), 'rgw-soak-'))
const children = new Set()
const started = performance.now()
const log = (line) => process.stderr.write(`[soak ${((performance.now() - started) / 1000).toFixed(0).padStart(4)}s] ${line}\n`)

/** The environment of the parent, less anything that would point a child elsewhere. */
const baseEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(PLATFORM_|CREDENTIAL_|REDIS_|ADMIN_|GATEWAY_SECRET|CONFIG_FILE|DEMO|PORT|HOST)/.test(k)))

function launch(name, cmd, argv, env = {}) {
  const out = createWriteStream(join(tmp, `${name}.log`))
  const child = spawn(cmd, argv, { cwd: ROOT, env: { ...baseEnv, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  const proc = { name, child, memory: [], onMemory: null, exited: new Promise((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code))) }
  children.add(proc)
  void proc.exited.then(() => children.delete(proc))
  child.stdout.pipe(out)
  let partial = ''
  child.stderr.on('data', (chunk) => {
    out.write(chunk)
    const lines = (partial + chunk.toString('utf8')).split('\n')
    partial = lines.pop() ?? ''
    for (const line of lines) if (line.startsWith('SOAK-MEM ')) proc.onMemory?.(JSON.parse(line.slice(9)))
  })
  return proc
}

function tail(proc) {
  try {
    return readFileSync(join(tmp, `${proc.name}.log`), 'utf8').slice(-3000)
  } catch {
    return ''
  }
}

async function until(what, proc, check, ms = 60_000) {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (proc.child.exitCode !== null || proc.child.signalCode !== null) throw new Error(`${proc.name} exited at start:\n${tail(proc)}`)
    if (await check().catch(() => false)) return
    await sleep(100)
  }
  throw new Error(`${what} not ready within ${ms} ms:\n${tail(proc)}`)
}

async function stopAll() {
  await Promise.all(
    [...children].map(async (proc) => {
      proc.child.kill('SIGTERM')
      const done = await Promise.race([proc.exited.then(() => true), sleep(5000).then(() => false)])
      if (!done) proc.child.kill('SIGKILL')
    }),
  )
}

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    log(`${signal}: stopping every process the soak started`)
    void stopAll().finally(() => process.exit(130))
  })
}
process.on('exit', () => {
  for (const proc of children) proc.child.kill('SIGKILL')
  rmSync(tmp, { recursive: true, force: true })
})

// ---------------------------------------------------------------- measuring

const percentile = (sorted, p) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] : NaN)
const ms = (v) => (Number.isNaN(v) ? '—' : v < 10 ? `${v.toFixed(1)} ms` : `${Math.round(v)} ms`)
const mb = (bytes) => `${(bytes / 1048576).toFixed(1)}`

class Tally {
  statuses = new Map()
  latencies = []
  add(status, latency) {
    this.statuses.set(status, (this.statuses.get(status) ?? 0) + 1)
    if (latency !== null) this.latencies.push(latency)
  }
  count(filter = () => true) {
    let n = 0
    for (const [status, c] of this.statuses) if (filter(status)) n += c
    return n
  }
  sorted() {
    return Float64Array.from(this.latencies).sort()
  }
}

async function memoryOf(proc) {
  const reading = new Promise((resolve) => {
    proc.onMemory = resolve
    setTimeout(() => resolve(null), 5000)
  })
  proc.child.kill('SIGUSR2')
  const m = await reading
  proc.onMemory = null
  if (m) proc.memory.push(m)
  return m
}

// ---------------------------------------------------------------- run

async function main() {
  const redisVersion = spawnSync('redis-server', ['--version'], { encoding: 'utf8' }).stdout?.trim()
  if (!redisVersion) throw new Error('redis-server is not on PATH (apt-get install -y redis-server)')

  const redisPort = await freePort()
  const redis = launch('redis', 'redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', tmp])
  const redisClient = new Redis({ port: redisPort, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => 200 })
  redisClient.on('error', () => undefined)
  await until('redis-server', redis, async () => {
    if (redisClient.status === 'wait') await redisClient.connect()
    return (await redisClient.ping()) === 'PONG'
  })

  const sandboxPort = await freePort()
  const sandboxUrl = `http://127.0.0.1:${sandboxPort}`
  const sandbox = launch('sandbox', process.execPath, ['dist/sandbox/main.js'], { HOST: '127.0.0.1', PORT: String(sandboxPort), SANDBOX_LATENCY_MS: String(PLATFORM_LATENCY_MS), LOG_LEVEL: 'warn' })
  let platformToken = null
  await until('the sandbox', sandbox, async () => {
    const res = await request(`${sandboxUrl}/__sandbox/tokens`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ accountId: 100, ttlSeconds: 7 * 86_400 }) })
    platformToken = (await res.body.json()).access_token
    return typeof platformToken === 'string'
  })

  const configFile = join(tmp, 'gateway.yaml')
  writeFileSync(
    configFile,
    [
      'teams:',
      `  reader: { keys: ["${hashApiKey(KEYS.reader)}"], advertisers: ["*"] }`,
      `  writer: { keys: ["${hashApiKey(KEYS.writer)}"], advertisers: [101], write: true }`,
      `  limited: { keys: ["${hashApiKey(KEYS.limited)}"], advertisers: ["*"], rateLimit: { max: ${LIMIT.max}, window: ${LIMIT.window} } }`,
      '',
    ].join('\n'),
  )
  const replicas = []
  for (const name of ['replica-a', 'replica-b']) {
    const [port, adminPort] = [await freePort(), await freePort()]
    const proc = launch(name, process.execPath, ['--expose-gc', '--import', PROBE, 'dist/main.js'], {
      HOST: '127.0.0.1',
      PORT: String(port),
      ADMIN_HOST: '127.0.0.1',
      ADMIN_PORT: String(adminPort),
      ADMIN_TOKEN,
      PLATFORM_BASE_URL: sandboxUrl,
      PLATFORM_TOKEN: platformToken,
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      GATEWAY_SECRET: 'soak-gateway-secret-0123456789abcdef',
      CONFIG_FILE: configFile,
      LOG_LEVEL: 'warn',
    })
    await until(name, proc, async () => (await request(`http://127.0.0.1:${adminPort}/readyz`)).statusCode === 200)
    replicas.push({ name, proc, url: `http://127.0.0.1:${port}`, newReports: 0 })
  }

  const cpu = cpus()
  console.log(`# Soak: npm run soak -- --minutes ${MINUTES} --rate ${RATE}`)
  console.log(
    `machine: ${cpu.length} x ${cpu[0]?.model.trim() ?? 'cpu'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB; Node ${process.versions.node}; ${redisVersion.split(' ').slice(0, 3).join(' ')}`,
  )
  console.log(
    `load: ${TOTAL} requests at ${RATE}/s over 2 replicas (one Redis, one sandbox at ${PLATFORM_LATENCY_MS} ms); per 20: 9 report hits, 3 misses, 4 from a team limited to ${LIMIT.max}/${LIMIT.window}, 2 bad, 1 write, 1 proxied read`,
  )
  console.log('')
  console.log('| time | requests | 2xx | 400/401/403 | 429 | 5xx | lost | p50 | p99 | A rss / heap MB | B rss / heap MB | redis MB | load 1m |')
  console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|')

  const agent = new Agent({ connections: 32, keepAliveTimeout: 30_000, headersTimeout: REQUEST_TIMEOUT_MS, bodyTimeout: REQUEST_TIMEOUT_MS })
  const overall = new Tally()
  let interval = new Tally()
  const byKind = new Map()
  const xCache = new Map()
  const unexpected = []
  let inFlight = 0
  let sent = 0

  const send = async (i) => {
    const r = requestFor(i)
    const gw = replicas[i % 2]
    const headers = r.key ? { 'x-api-key': r.key } : {}
    if (r.body) headers['content-type'] = 'application/json'
    const t0 = performance.now()
    let status
    try {
      const res = await request(`${gw.url}${r.path}`, { method: r.method, headers, body: r.body ? JSON.stringify(r.body) : undefined, dispatcher: agent })
      await res.body.dump()
      status = res.statusCode
      if (r.kind === 'miss' && status === 200) gw.newReports++
      if (r.kind === 'hit' || r.kind === 'miss') {
        const c = `${r.kind}: ${res.headers['x-cache']}`
        xCache.set(c, (xCache.get(c) ?? 0) + 1)
      }
    } catch (err) {
      status = `lost (${err.code ?? err.name})`
    }
    const latency = typeof status === 'number' ? performance.now() - t0 : null
    overall.add(status, latency)
    interval.add(status, latency)
    const kind = byKind.get(r.kind) ?? new Tally()
    byKind.set(r.kind, kind)
    kind.add(status, latency)
    if (!r.expect.includes(status) && unexpected.length < 50) unexpected.push(`${r.kind} on ${gw.name}: ${r.method} ${r.path} -> ${status}`)
  }

  const report = async (final = false) => {
    const t = interval
    interval = new Tally()
    const sorted = t.sorted()
    const [a, b] = await Promise.all(
      replicas.map(async (gw) => {
        const m = await memoryOf(gw.proc)
        if (m) m.newReports = gw.newReports
        return m
      }),
    )
    const redisMemory = Number(/used_memory:(\d+)/.exec(await redisClient.info('memory').catch(() => ''))?.[1] ?? NaN)
    const mem = (m) => (m ? `${mb(m.rss)} / ${mb(m.heapUsed)}` : '—')
    const elapsed = (performance.now() - runStart) / 1000
    console.log(
      `| ${final ? 'end' : `${Math.round(elapsed)} s`} | ${t.count()} | ${t.count((s) => s >= 200 && s < 300)} | ${t.count((s) => s >= 400 && s < 429)} | ${t.count((s) => s === 429)} | ${t.count((s) => s >= 500)} | ${t.count((s) => typeof s === 'string')} | ${ms(percentile(sorted, 50))} | ${ms(percentile(sorted, 99))} | ${mem(a)} | ${mem(b)} | ${mb(redisMemory)} | ${loadavg()[0]?.toFixed(1)} |`,
    )
  }

  const runStart = performance.now()
  let sampling = Promise.resolve()
  const sampler = setInterval(() => {
    sampling = sampling.then(() => report())
  }, SAMPLE_S * 1000)
  for (let i = 0; i < TOTAL && performance.now() - started < HARD_LIMIT_MS; i++) {
    const wait = runStart + (i * 1000) / RATE - performance.now()
    if (wait > 0) await sleep(wait)
    while (inFlight >= MAX_IN_FLIGHT) await sleep(5)
    inFlight++
    sent++
    void send(i).finally(() => inFlight--)
  }
  while (inFlight > 0) await sleep(20)
  clearInterval(sampler)
  await sampling
  if (interval.count() > 0) await report(true)
  await agent.close()

  // ------------------------------------------------------------ summary
  const all = overall.sorted()
  const lost = overall.count((s) => typeof s === 'string')
  const fiveXX = overall.count((s) => typeof s === 'number' && s >= 500)
  console.log('')
  console.log(`requests: ${sent} in ${((performance.now() - runStart) / 1000).toFixed(0)} s; p50 ${ms(percentile(all, 50))}, p99 ${ms(percentile(all, 99))}, max ${ms(all[all.length - 1] ?? NaN)}; 5xx ${fiveXX}; lost ${lost}`)
  for (const [kind, t] of [...byKind].sort()) {
    const statuses = [...t.statuses].sort().map(([s, c]) => `${s}: ${c}`).join(', ')
    console.log(`  ${kind.padEnd(30)} ${statuses}   p50 ${ms(percentile(t.sorted(), 50))}, p99 ${ms(percentile(t.sorted(), 99))}`)
  }
  console.log(`  x-cache: ${[...xCache].sort().map(([k, c]) => `${k} ${c}`).join(', ')}`)
  for (const gw of replicas) {
    const m = gw.proc.memory
    if (m.length < 2) continue
    const first = m[0]
    const last = m[m.length - 1]
    const peak = Math.max(...m.map((x) => x.heapUsed))
    // Misses add reports to the replica's caches (bounded by size: cache.l1MaxBytes and the
    // memo of known URLs), so the heap grows with them until those bounds are reached.
    const added = last.newReports - first.newReports
    const perReport = added > 0 ? ((last.heapUsed - first.heapUsed) / added / 1024).toFixed(1) : '—'
    console.log(
      `  ${gw.name}: heap after GC ${mb(first.heapUsed)} MB at the first sample, ${mb(last.heapUsed)} MB at the end (peak ${mb(peak)}), ${perReport} KB per report it cached in between (${added}); external ${mb(first.external)} -> ${mb(last.external)} MB; RSS ${mb(first.rss)} -> ${mb(last.rss)} MB`,
    )
  }

  redisClient.disconnect()
  const exits = []
  for (const gw of replicas) {
    gw.proc.child.kill('SIGTERM')
    const code = await Promise.race([gw.proc.exited, sleep(15_000).then(() => 'no exit within 15 s')])
    exits.push(`${gw.name}: ${code}`)
    if (code !== 0) unexpected.push(`${gw.name} did not exit 0 on SIGTERM (${code}):\n${tail(gw.proc)}`)
  }
  console.log(`  shutdown (SIGTERM): ${exits.join(', ')}`)
  await stopAll()

  if (unexpected.length > 0 || lost > 0 || fiveXX > 0) {
    console.log(`\nFAILED: ${overall.count((s) => typeof s === 'string' || s >= 500)} lost or 5xx; unexpected answers (first ${unexpected.length}):`)
    for (const u of unexpected) console.log(`  ${u}`)
    return 1
  }
  console.log('\nOK: every request answered as expected; no 5xx, none lost')
  return 0
}

main().then(
  (code) => {
    process.exitCode = code
  },
  async (err) => {
    console.error(`soak: ${err.stack ?? err}`)
    await stopAll()
    // Open clients (Redis retrying) would keep the process alive.
    process.exit(1)
  },
)
