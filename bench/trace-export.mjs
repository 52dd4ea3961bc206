// Tracing's price beside its spans: gateways of this build (`npm start`'s dist/main.js,
// tracing on with every request sampled, OTLP/HTTP protobuf to bench/otlp-sink.mjs; the
// same untraced; with --batch=N, traced with OTEL_BSP_MAX_EXPORT_BATCH_SIZE=N; with
// --semi=MB, traced with NODE_OPTIONS=--max-semi-space-size=MB, a young generation that
// outlives a batch) and, with --baseline=<dir>, traced from another build, given L1 hits in
// turn (wrk -c50 for --seconds, the order reversed every other round). For each: CPU a hit by thread name
// (/proc/<pid>/task/*/schedstat: MainThread, V8Worker, the GC's and compiler's helpers),
// the scavenges and mark-compacts --trace-gc printed (its stdout is a pipe, so counts lag
// by a buffer), and what the sink took in the run: exports, exports a second, bytes a span,
// and the TCP connections that carried an export (the exporter's keep-alive at work when
// none is new). Output: one JSON line a round and gateway on stdout.
//
//   node bench/trace-export.mjs [--seconds=8] [--rounds=3] [--batch=N] [--semi=MB] [--baseline=<dir>]

import { randomBytes } from 'node:crypto'
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { REPORT_PATH, startMainGateway } from './lib/fixture.mjs'
import { http } from './lib/http.mjs'
import { wrk } from './lib/load.mjs'
import { loadAverage } from './lib/machine.mjs'
import { LOAD_CORE, launch, pin, ROOT, stopProcess, tmp } from './lib/processes.mjs'

const arg = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback
const HITS_SECONDS = Number(arg('seconds', '8'))
const ROUNDS = Number(arg('rounds', '3'))
const baseline = arg('baseline', null)
const BATCH = arg('batch', null)
const SEMI = arg('semi', null)

/** Scavenges and mark-compacts `--trace-gc` has written to a gateway's output so far. */
function gcCounts(logPath) {
  const text = readFileSync(logPath, 'utf8')
  return { scavenges: text.split('Scavenge').length - 1, markCompacts: text.split('Mark-Compact').length - 1 }
}

/** CPU nanoseconds of each of `pid`'s threads, summed by thread name. */
function threads(pid) {
  const out = {}
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${task}/comm`, 'utf8').trim().replace(/\d+$/, '#')
      out[name] = (out[name] ?? 0) + Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0])
    } catch {
      // a thread that ended between the listing and the read
    }
  }
  return out
}

const own = []
try {
  const body = Buffer.from(JSON.stringify({ rows: Array.from({ length: 36 }, (_, i) => ({ date: `2025-01-${i}`, impressions: i * 1000, clicks: i, spend: i * 1.5, campaign: `campaign-${i}` })) }))
  const bodyFile = join(tmp, 'trace-export-report.json')
  writeFileSync(bodyFile, body)
  const [cmd, args] = pin(LOAD_CORE, process.execPath, ['bench/bare-server.mjs'])
  const standin = await launch('trace-platform', cmd, args, { env: { BENCH_BODY_FILE: bodyFile, BENCH_HEADERS: 'plain', BENCH_LATENCY_MS: '20' }, ready: /^READY / })
  own.push(standin)
  const standinUrl = `http://127.0.0.1:${JSON.parse(standin.line.slice('READY '.length)).port}`
  const [sinkCmd, sinkArgs] = pin(LOAD_CORE, process.execPath, ['bench/otlp-sink.mjs'])
  const sinkProcess = await launch('trace-sink', sinkCmd, sinkArgs, { ready: /^READY / })
  own.push(sinkProcess)
  const sink = `http://127.0.0.1:${JSON.parse(sinkProcess.line.slice('READY '.length)).port}`
  const sinkCount = async () => (await http('GET', `${sink}/__count`)).json()
  const { hashApiKey } = await import('../dist/access/api-keys.js')
  const key = `rgw_${randomBytes(32).toString('base64url')}`
  const config = { teams: { bench: { keys: [hashApiKey(key)], advertisers: ['*'], rateLimit: { max: 1_000_000_000, window: '1m' } } } }
  const env = { OTEL_EXPORTER_OTLP_ENDPOINT: sink, OTEL_TRACES_SAMPLER: 'parentbased_always_on' }
  // Each gateway with --trace-gc: its scavenges and mark-compacts counted from its output.
  process.env.BENCH_GATEWAY_NODE_FLAGS = '--trace-gc'
  const builds = [
    ['this', ROOT, env],
    ['this-untraced', ROOT, null],
    ...(BATCH ? [[`this-batch-${BATCH}`, ROOT, { ...env, OTEL_BSP_MAX_EXPORT_BATCH_SIZE: BATCH }]] : []),
    ...(SEMI ? [[`this-semi-${SEMI}`, ROOT, { ...env, NODE_OPTIONS: `--max-semi-space-size=${SEMI}` }]] : []),
    ...(baseline ? [['baseline', baseline, env]] : []),
  ]
  const gws = []
  for (const [name, root, gwEnv] of builds) {
    const gw = await startMainGateway(`trace-${name}`, { platformUrl: standinUrl, platformToken: 'bench-standin-token', config, env: gwEnv ?? {}, root })
    gw.traced = gwEnv !== null
    own.push(gw)
    for (let i = 0; i < 3; i += 1) await http('GET', `${gw.url}${REPORT_PATH}`, { headers: { 'x-api-key': key } })
    await wrk(`${gw.url}${REPORT_PATH}`, { seconds: 5, connections: 50, key, gzip: false })
    gws.push([name, gw])
  }
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const [name, gw] of round % 2 ? [...gws].reverse() : gws) {
      const s0 = await sinkCount()
      const t0 = threads(gw.pid)
      const g0 = gcCounts(gw.logPath)
      const load = loadAverage()
      const r = await wrk(`${gw.url}${REPORT_PATH}`, { seconds: HITS_SECONDS, connections: 50, key, gzip: false })
      const t1 = threads(gw.pid)
      const g1 = gcCounts(gw.logPath)
      const s1 = await sinkCount()
      const perHitUs = Object.fromEntries(Object.keys(t1).map((k) => [k, Number((((t1[k] - (t0[k] ?? 0)) / r.requests) / 1000).toFixed(3))]).filter(([, v]) => v > 0))
      const total = Object.values(perHitUs).reduce((a, b) => a + b, 0)
      const exports = s1.exports - s0.exports
      const gc = { scavengesPer10kHits: Number((((g1.scavenges - g0.scavenges) * 1e4) / r.requests).toFixed(2)), markCompactsPer10kHits: Number((((g1.markCompacts - g0.markCompacts) * 1e4) / r.requests).toFixed(3)) }
      // The sink's figures are a traced gateway's own: an untraced one's run only sees the others' trickle.
      const sent = gw.traced
        ? { exports, exportsPerSecond: Number((exports / HITS_SECONDS).toFixed(2)), bytesPerSpan: Number(((s1.bytes - s0.bytes) / (s1.spans - s0.spans)).toFixed(1)), newConnections: s1.connections - s0.connections, connectionsSoFar: s1.connections, exportsSoFar: s1.exports }
        : {}
      process.stdout.write(`${JSON.stringify({ round, name, hits: r.requests, errors: r.errors, rps: Math.round(r.rps), cpuUsPerHit: Number(total.toFixed(2)), perHitUs, ...sent, ...gc, load })}\n`)
    }
  }
} finally {
  for (const p of own.reverse()) await stopProcess(p)
}
