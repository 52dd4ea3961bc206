// Many gateway replicas in one process, for the scale scenario (bench/scenarios/scale.mjs):
// each a whole gateway of the compiled build (../dist/compose.js), with its own Redis
// connections, its own governor, seats, learned limit and report cache, sharing one Redis
// (standalone or Cluster) and one platform stand-in. Its callers ask reports never asked
// before (misses) through light-my-request's inject, spread over the replicas in turn, so
// the load costs no HTTP on this side. What it measures is what the replicas ask of Redis
// (the server's own INFO commandstats and INFO cpu, every node summed) per platform call,
// and the calls in flight at the platform against the limit in force, also while Redis
// is stopped (SIGSTOP) for a while; and, since every replica here shares one event loop
// (one core), how busy that loop was and the share of answers the limit rule could learn
// from: the limit learned here is a deployment's only where that share is.
//
// Input (environment):
//   BENCH_REPLICAS        how many replicas
//   BENCH_CALLERS         callers in a closed loop (a 503/429 waits its retry-after, 1 to 5 s)
//   BENCH_REDIS           JSON: { "url": "redis://…" } or { "cluster": [{ "host", "port" }, …] }
//   BENCH_REDIS_PIDS      JSON: the pids of the Redis servers, stopped together for the stall
//   BENCH_PLATFORM_URL    the stand-in (bench/dashboard-origin.mjs)
//   BENCH_WARM_S, BENCH_MEASURE_S, BENCH_STALL_S, BENCH_AFTER_S  the phases' lengths
// Output: one line `RESULT {…}` on stdout.

import { randomBytes } from 'node:crypto'
import { subscribe } from 'node:diagnostics_channel'
import { readFileSync } from 'node:fs'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import { http } from './lib/http.mjs'

const dist = new URL('../dist/', import.meta.url)
const { loadConfig } = await import(new URL('config.js', dist).href)
const { createGateway } = await import(new URL('compose.js', dist).href)
const { hashApiKey } = await import(new URL('access/api-keys.js', dist).href)
const { KneeEstimator } = await import(new URL('platform/governor/knee-estimator.js', dist).href)

const VIRTUAL_CONFIG = 'bench:scale-config.yaml'
const ROUTE = '/api/v1/report/campaigns/get'
const CREDENTIAL = 'default'

const num = (name) => {
  const v = Number(process.env[name])
  if (!Number.isFinite(v)) throw new Error(`scale-host: ${name} is not set`)
  return v
}
const replicas = num('BENCH_REPLICAS')
const callers = num('BENCH_CALLERS')
const phases = { warm: num('BENCH_WARM_S'), measure: num('BENCH_MEASURE_S'), stall: num('BENCH_STALL_S'), after: num('BENCH_AFTER_S') }
const redisSetup = JSON.parse(process.env.BENCH_REDIS)
const redisPids = JSON.parse(process.env.BENCH_REDIS_PIDS)
const platformUrl = process.env.BENCH_PLATFORM_URL

const teamKey = `rgw_${randomBytes(32).toString('base64url')}`
const config = {
  teams: { bench: { keys: [hashApiKey(teamKey)], advertisers: [100, 101, 102, 103] } },
  redis: { keyPrefix: `rgwbench-scale-${replicas}:`, ...(redisSetup.cluster ? { cluster: redisSetup.cluster } : {}) },
}
const env = {
  HOST: '127.0.0.1',
  PORT: '0',
  ADMIN_HOST: '127.0.0.1',
  ADMIN_PORT: '0',
  ADMIN_TOKEN: randomBytes(24).toString('base64url'),
  LOG_LEVEL: 'error',
  PLATFORM_BASE_URL: platformUrl,
  PLATFORM_TOKEN: 'scale-bench-platform-token',
  CONFIG_FILE: VIRTUAL_CONFIG,
  GATEWAY_SECRET: 'bench-gateway-secret-0123456789abcdef',
  ...(redisSetup.url ? { REDIS_URL: redisSetup.url } : {}),
}

/** Direct connections to every Redis server, for INFO and CONFIG RESETSTAT (not counted apart: a few commands a phase). */
const nodes = (redisSetup.cluster ?? [new URL(redisSetup.url)].map((u) => ({ host: u.hostname, port: Number(u.port) }))).map((n) => {
  const c = new Redis({ host: n.host, port: n.port, maxRetriesPerRequest: 1, lazyConnect: true })
  c.on('error', () => undefined)
  return c
})

/** Every node's INFO sections summed: commands by name, and CPU seconds (user + sys, main thread and children). */
async function redisStats() {
  const commands = {}
  let cpu = 0
  for (const node of nodes) {
    const info = await node.info('all')
    for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) commands[m[1]] = (commands[m[1]] ?? 0) + Number(m[2])
    for (const m of info.matchAll(/^used_cpu_(?:sys|user):([\d.]+)/gm)) cpu += Number(m[1])
  }
  return { commands, cpu }
}

const resetStats = () => Promise.all(nodes.map((n) => n.config('RESETSTAT')))

async function standIn(path, method = 'GET') {
  const r = await http(method, `${platformUrl}${path}`)
  return method === 'GET' ? r.json() : null
}

const day = (d) => new Date(Date.UTC(1990, 0, 1 + d)).toISOString().slice(0, 10)
let nextMiss = 0
function neverAsked() {
  const i = nextMiss++
  const first = Math.floor(i / 4)
  return `${ROUTE}?advertiserId=${100 + (i % 4)}&dateFrom=${day(first)}&dateTo=${day(first + 6)}&byDate=1`
}

// What the replicas send, counted as they send it (a script is one command here; INFO
// commandstats also counts what the script runs inside Redis). The measuring connections
// above are not counted.
const sent = { total: 0, byName: {} }
const measuring = new Set(nodes)
const sendCommand = Redis.prototype.sendCommand
Redis.prototype.sendCommand = function count(command, ...rest) {
  if (!measuring.has(this)) {
    sent.total += 1
    const name = command.name === 'evalsha' ? `evalsha ${command.args[0]}` : command.name
    sent.byName[name] = (sent.byName[name] ?? 0) + 1
  }
  return sendCommand.call(this, command, ...rest)
}
// The platform's answers each replica's limit rule was given (knee-estimator.ts), as they
// come: those it learns from (timed: the replica's event loop idle enough to know when the
// answer came, docs/governor.md "The gateway's own time") and those it takes as ends only.
// Here every replica shares one event loop, so an answer waits for every replica's work; a
// deployment's replica has a loop of its own. Overloads and cut calls are neither.
const timing = []
const ended = KneeEstimator.prototype.ended
KneeEstimator.prototype.ended = function countTimed(answer) {
  if (answer.outcome === 'ok') timing.push({ at: performance.now(), timed: answer.timed !== false })
  return ended.call(this, answer)
}
/** The share of the answers from `from` to `to` the limit rule learned from (null: none came), and how many came. */
const timedBetween = (from, to) => {
  const within = timing.filter((a) => a.at > from && a.at <= to)
  return { answers: within.length, timed: within.length > 0 ? within.filter((a) => a.timed).length / within.length : null }
}

/** The commands sent since `before`, a script named by the name the gateway defined it with. */
const sentSince = (before) => {
  const names = new Map()
  for (const gw of gateways) for (const [name, script] of Object.entries(gw.redis.client?.scriptsSet ?? {})) names.set(`evalsha ${script.sha}`, `evalsha ${name}`)
  const out = {}
  for (const [name, n] of Object.entries(sent.byName)) if (n > (before[name] ?? 0)) out[names.get(name) ?? name] = n - (before[name] ?? 0)
  return out
}

const gateways = []
// Each platform call says the highest limit in force on any replica as it is sent (a
// header the stand-in reads, bench/dashboard-origin.mjs): the calls in flight at the
// platform as it comes are judged against it (+ the replicas, as test/sim/checks.ts judges a
// seat taken), not against the limit of a later moment, which a cut lowers while the calls
// started before it are still in flight. While Redis is stopped, no call is sent under more
// than the limit in force when it stopped (`stallCap`): a limit learned during the stall
// does not raise the bound the stall is judged by.
let stallCap = Infinity
const limitNow = () => {
  let limit = 0
  for (const gw of gateways) limit = Math.max(limit, gw.governors.limitOf(CREDENTIAL) ?? 0)
  return limit
}
subscribe('undici:request:create', ({ request }) => {
  if (!request.path.startsWith(ROUTE)) return
  request.addHeader('x-bench-limit', String(Math.min(limitNow(), stallCap)))
})

async function main() {
  for (let i = 0; i < replicas; i += 1) {
    const c = loadConfig({ env, readFile: (path) => (path === VIRTUAL_CONFIG ? JSON.stringify(config) : readFileSync(path, 'utf8')) })
    const gw = await createGateway(c, { configSource: null })
    await gw.start()
    gateways.push(gw)
  }
  await Promise.all(nodes.map((n) => n.connect()))
  const deadline = performance.now() + 30_000
  for (const gw of gateways) {
    while ((await gw.admin.inject({ method: 'GET', url: '/readyz' })).json().redis !== 'ok') {
      if (performance.now() > deadline) throw new Error('scale-host: a replica did not reach Redis within 30 s')
      await sleep(50)
    }
  }

  // The callers: a closed loop of misses, each on one replica (as a keep-alive connection
  // through a Kubernetes Service stays on one pod).
  const answers = []
  let stopped = false
  const workers = Array.from({ length: callers }, async (_, i) => {
    const gw = gateways[i % gateways.length]
    while (!stopped) {
      const res = await gw.proxy.inject({ method: 'GET', url: neverAsked(), headers: { 'x-api-key': teamKey } })
      answers.push({ status: res.statusCode === 200 ? 200 : `${res.statusCode} ${res.json().code ?? ''}`.trim(), at: performance.now() })
      if (res.statusCode === 429 || res.statusCode === 503) await sleep(Math.min(5, Number(res.headers['retry-after']) || 1) * 1000)
    }
  })

  /** Each replica's governor of the credential, as its status view reads it (none before its first call). */
  const governors = () => gateways.flatMap((gw) => gw.governors.views().filter((g) => g.credential === CREDENTIAL))
  /** One second's sample: the stand-in's calls in flight (peak, mean, the most beyond the limit a call was sent under as it came), the limits in force and the replicas' own counts. */
  async function sample(t) {
    const load = await standIn('/__load')
    const gs = governors()
    const limits = gs.map((g) => g.limit)
    const floors = gs.map((g) => g.floorMs).filter((f) => f !== null)
    return {
      t,
      peak: load.peak,
      overLimit: load.overLimit,
      mean: load.meanInFlight,
      limitMin: Math.min(...limits),
      limitMax: Math.max(...limits),
      floorMin: floors.length ? Math.min(...floors) : null,
      floorMax: floors.length ? Math.max(...floors) : null,
      inFlight: gs.reduce((x, g) => x + g.inFlight, 0),
      held: gs.reduce((x, g) => x + g.seatsHeld, 0),
    }
  }
  async function phase(seconds, t0) {
    const samples = []
    const start = performance.now()
    for (let s = 1; s <= seconds; s += 1) {
      const wait = start + s * 1000 - performance.now()
      if (wait > 0) await sleep(wait)
      samples.push(await sample(t0 + s))
    }
    return samples
  }
  const answersBetween = (from, to) => {
    const within = answers.filter((a) => a.at > from && a.at <= to)
    const statuses = {}
    for (const a of within) statuses[a.status] = (statuses[a.status] ?? 0) + 1
    return statuses
  }

  await phase(phases.warm, -phases.warm)
  await standIn('/__count', 'DELETE')
  await standIn('/__load')
  await resetStats()
  const before = await redisStats()
  const sentBefore = { ...sent.byName }
  const measureFrom = performance.now()
  const loopBefore = performance.eventLoopUtilization()
  const measured = await phase(phases.measure, 0)
  const loopBusy = performance.eventLoopUtilization(loopBefore).utilization
  const after = await redisStats()
  const sentMeasured = sentSince(sentBefore)
  const calls = (await standIn('/__count')).count
  const measureTo = performance.now()

  // The stall: every Redis server stopped at once, then let go.
  stallCap = limitNow()
  for (const pid of redisPids) process.kill(pid, 'SIGSTOP')
  const stallFrom = performance.now()
  let stall
  try {
    stall = await phase(phases.stall, phases.measure)
  } finally {
    for (const pid of redisPids) process.kill(pid, 'SIGCONT')
    stallCap = Infinity
  }
  const stallTo = performance.now()
  const recovery = await phase(phases.after, phases.measure + phases.stall)
  const end = performance.now()
  stopped = true

  const commands = {}
  for (const [name, n] of Object.entries(after.commands)) {
    const d = n - (before.commands[name] ?? 0)
    if (d > 0) commands[name] = d
  }
  process.stdout.write(
    `RESULT ${JSON.stringify({
      replicas,
      calls,
      seconds: (measureTo - measureFrom) / 1000,
      commands,
      sent: sentMeasured,
      cpuSeconds: after.cpu - before.cpu,
      measured,
      stall,
      recovery,
      answers: { measured: answersBetween(measureFrom, measureTo), stall: answersBetween(stallFrom, stallTo), recovery: answersBetween(stallTo, end) },
      timing: { measured: timedBetween(measureFrom, measureTo), loopBusy },
    })}\n`,
  )
  await Promise.race([Promise.all(workers), sleep(10_000)])
}

let code = 0
try {
  await main()
} catch (err) {
  process.stderr.write(`scale-host: ${err.stack ?? err}\n`)
  code = 1
} finally {
  await Promise.race([Promise.all(gateways.map((gw) => gw.close().catch(() => undefined))), sleep(10_000)])
  for (const n of nodes) n.disconnect()
  process.exit(code)
}
