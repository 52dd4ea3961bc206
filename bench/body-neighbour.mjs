// One team's large request bodies beside another team's cached reads: team A (`writer`,
// advertisers [101], writes, no rate limit) keeps `--bodies` POSTs of a 1 MiB JSON body
// (bodyLimit's default) in flight on /api/v1/campaign/get, while team B (`bench-b`) reads one
// cached report (an L1 hit) one request after the other. B's latency is measured alone and
// beside A, and the gateway's CPU (its threads' run time) per body of A's. Gateway
// (bench/gateway-server.mjs) on the server core, the sandbox and this load on the other, all
// on 127.0.0.1; each phase bounded by `--seconds`. `--builds=dist,dist-before` runs each
// build's gateway in turn, round after round (a build's dist/ copied beside dist/:
// `git checkout <commit> && npm run build:gateway && cp -r dist dist-before`, then back).
//   flock /tmp/bench.lock node_modules/.bin/node bench/body-neighbour.mjs [--rounds=3] [--bodies=8] [--seconds=6] [--shape=strings|string|values] [--builds=dist,dist-before] [--reader=off]

import { createHash, randomBytes } from 'node:crypto'
import { monitorEventLoopDelay, performance } from 'node:perf_hooks'
import { Agent, request } from 'undici'
import { REPORT_PATH, startSandbox } from './lib/fixture.mjs'
import { cleanup, launch, log, pin, SERVER_CORE, setUpPinning, stopProcess } from './lib/processes.mjs'
import { loadAverage, threadRunNs } from './lib/machine.mjs'
import { latencyFigures, median } from './lib/stats.mjs'
import { sized } from './lib/sized-text.mjs'

const option = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback
const rounds = Number(option('rounds', '3'))
const bodies = Number(option('bodies', '8'))
const seconds = Number(option('seconds', '6'))
const builds = option('builds', 'dist').split(',')
// --reader=off: A's bodies alone in the second phase (what the bodies get through, B aside).
const reader = option('reader', 'on') === 'on'
const shapes = {
  strings: (n) => `{"userId":101,"name":"bench","keywords":[${Array(n).fill('"kw"').join(',')}]}`,
  string: (n) => `{"userId":101,"name":"${'a'.repeat(n)}"}`,
  values: (n) => `{"userId":101,"name":"bench","bids":[${Array(n).fill('7').join(',')}]}`,
}
const shape = option('shape', 'strings')
const BODY = Buffer.from(sized(1024 * 1024, shapes[shape]))
const WRITE_ROUTE = '/api/v1/campaign/get'

const keyOf = () => `rgw_${randomBytes(32).toString('base64url')}`
const hashOf = (key) => `sha256:${createHash('sha256').update(key).digest('hex')}`
const [keyA, keyB] = [keyOf(), keyOf()]
const agent = new Agent({ connections: bodies + 4, pipelining: 0 })

setUpPinning()
const sandbox = await startSandbox()

async function startGateway(dist) {
  const env = {
    BENCH_PLATFORM_URL: sandbox.url,
    BENCH_PLATFORM_TOKEN: sandbox.token,
    BENCH_TEAM_KEY_HASH: hashOf(keyOf()),
    BENCH_TEAM_B_KEY_HASH: hashOf(keyB),
    BENCH_ADMIN_TOKEN: randomBytes(24).toString('base64url'),
    BENCH_DIST: `../${dist}`,
    BENCH_CONFIG: JSON.stringify({ teams: { writer: { keys: [hashOf(keyA)], advertisers: [101], write: true } } }),
  }
  // BENCH_GATEWAY_NODE_FLAGS: node flags for the gateway (--cpu-prof --cpu-prof-dir=DIR: where a body's time goes).
  const nodeFlags = process.env.BENCH_GATEWAY_NODE_FLAGS?.split(' ').filter(Boolean) ?? []
  const [cmd, args] = pin(SERVER_CORE, process.execPath, [...nodeFlags, 'bench/gateway-server.mjs'])
  const p = await launch(`gateway-${dist}`, cmd, args, { env, ready: /^READY / })
  return { ...p, url: `http://127.0.0.1:${JSON.parse(p.line.slice('READY '.length)).port}` }
}

async function call(url, init) {
  const res = await request(url, { ...init, dispatcher: agent })
  await res.body.dump()
  return res
}

/** B's hits one after the other until `until` (performance.now()): their latencies, ms. */
async function readLoop(gw, until) {
  const ms = []
  while (performance.now() < until) {
    const t = performance.now()
    const res = await call(`${gw.url}${REPORT_PATH}`, { headers: { 'x-api-key': keyB } })
    if (res.statusCode !== 200 || res.headers['x-cache'] !== 'HIT') throw new Error(`B: ${res.statusCode} x-cache ${res.headers['x-cache']}`)
    ms.push(performance.now() - t)
  }
  return ms
}

/** `bodies` of A's in flight until `until`: the statuses of those that ended. */
async function writeLoops(gw, until) {
  const statuses = {}
  const loop = async () => {
    while (performance.now() < until) {
      const res = await call(`${gw.url}${WRITE_ROUTE}`, { method: 'POST', headers: { 'x-api-key': keyA, 'content-type': 'application/json' }, body: BODY })
      statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1
    }
  }
  await Promise.all(Array.from({ length: bodies }, loop))
  return statuses
}

const results = Object.fromEntries(builds.map((b) => [b, []]))
try {
  log(`body ${BODY.length} bytes (${shape}), ${bodies} in flight, ${seconds} s a phase, load ${loadAverage()}`)
  for (let round = 0; round < rounds; round++) {
    for (const dist of builds) {
      const gw = await startGateway(dist)
      try {
        await call(`${gw.url}${REPORT_PATH}`, { headers: { 'x-api-key': keyB } })
        await readLoop(gw, performance.now() + 1000)
        const alone = latencyFigures(await readLoop(gw, performance.now() + seconds * 1000))
        const cpuBefore = threadRunNs(gw.child.pid)
        const delay = monitorEventLoopDelay({ resolution: 5 })
        delay.enable()
        const until = performance.now() + seconds * 1000
        const [beside, statuses] = await Promise.all([reader ? readLoop(gw, until) : [NaN], writeLoops(gw, until)])
        delay.disable()
        const done = Object.values(statuses).reduce((a, b) => a + b, 0)
        const cpuMsPerBody = (threadRunNs(gw.child.pid) - cpuBefore) / 1e6 / done
        const row = { alone, beside: latencyFigures(beside), hits: beside.length, done, statuses, cpuMsPerBody, load: loadAverage() }
        results[dist].push(row)
        log(`${dist} round ${round + 1}: B alone p50 ${alone.p50.toFixed(2)} p99 ${alone.p99.toFixed(2)}; beside A p50 ${row.beside.p50.toFixed(2)} p99 ${row.beside.p99.toFixed(2)} (${row.hits} hits); A ${done} bodies ${JSON.stringify(statuses)}, gateway CPU ${cpuMsPerBody.toFixed(1)} ms a body; this process's loop delay p99 ${(delay.percentile(99) / 1e6).toFixed(1)} ms; load ${row.load}`)
      } finally {
        await stopProcess(gw)
      }
    }
  }
  for (const dist of builds) {
    const rows = results[dist]
    const m = (f) => median(rows.map(f)).toFixed(2)
    console.log(`${dist}: medians of ${rows.length}: B alone p50 ${m((r) => r.alone.p50)} p99 ${m((r) => r.alone.p99)} ms; beside A p50 ${m((r) => r.beside.p50)} p99 ${m((r) => r.beside.p99)} ms; A ${m((r) => r.done / seconds)} bodies/s, gateway ${m((r) => r.cpuMsPerBody)} ms CPU a body`)
  }
} finally {
  await agent.close()
  await cleanup()
}
