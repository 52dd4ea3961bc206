// Tracing's price per L1 hit, in one run: gateways of this build (`npm start`'s dist/main.js)
// with tracing off, on at 1 % (parentbased_traceidratio 0.01, the default sampler with a
// ratio) and on with every request sampled (parentbased_always_on), spans sent as OTLP/HTTP
// protobuf to bench/otlp-sink.mjs; with --baseline=<dir>, the same three from another build.
// Each is given L1 hits in turn (wrk -t1 -c50 for --seconds, the order turned by one every
// round), and its CPU a hit is every thread's run time (/proc/<pid>/task/*/schedstat) over
// wrk's completed requests. The prices are ratios within a round (a build's traced gateway
// against its own untraced one, the same minutes of the same machine), then medians of the
// rounds: on a loaded machine a hit's absolute CPU moves, a ratio of neighbours much less.
// With --twin, a second untraced gateway of each build beside the first (its ratio to the
// first says what two gateways of one setting differ by in this run, the ratios' floor of
// noise). BENCH_GATEWAY_NODE_FLAGS='--cpu-prof --cpu-prof-dir=DIR' profiles every gateway.
// Output: one JSON line a round and gateway, then a summary line, on stdout.
//
//   flock /tmp/bench.lock node bench/trace-price.mjs [--seconds=6] [--rounds=5] [--baseline=<dir>] [--twin]

import { randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { REPORT_PATH, startMainGateway } from './lib/fixture.mjs'
import { http } from './lib/http.mjs'
import { wrk } from './lib/load.mjs'
import { loadAverage, threadRunNs } from './lib/machine.mjs'
import { LOAD_CORE, launch, pin, ROOT, setUpPinning, stopProcess, tmp } from './lib/processes.mjs'
import { median } from './lib/stats.mjs'

const arg = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback
const SECONDS = Number(arg('seconds', '6'))
const ROUNDS = Number(arg('rounds', '5'))
const baseline = arg('baseline', null)
const TWIN = process.argv.includes('--twin')

// As the targets scenario: the gateways on core 1, wrk, the stand-in and the sink on core 0.
setUpPinning()
const own = []
try {
  const body = Buffer.from(JSON.stringify({ rows: Array.from({ length: 36 }, (_, i) => ({ date: `2025-01-${i}`, impressions: i * 1000, clicks: i, spend: i * 1.5, campaign: `campaign-${i}` })) }))
  const bodyFile = join(tmp, 'trace-price-report.json')
  writeFileSync(bodyFile, body)
  const [cmd, args] = pin(LOAD_CORE, process.execPath, ['bench/bare-server.mjs'])
  const standin = await launch('trace-price-platform', cmd, args, { env: { BENCH_BODY_FILE: bodyFile, BENCH_HEADERS: 'plain', BENCH_LATENCY_MS: '20' }, ready: /^READY / })
  own.push(standin)
  const standinUrl = `http://127.0.0.1:${JSON.parse(standin.line.slice('READY '.length)).port}`
  const [sinkCmd, sinkArgs] = pin(LOAD_CORE, process.execPath, ['bench/otlp-sink.mjs'])
  const sinkProcess = await launch('trace-price-sink', sinkCmd, sinkArgs, { ready: /^READY / })
  own.push(sinkProcess)
  const sink = `http://127.0.0.1:${JSON.parse(sinkProcess.line.slice('READY '.length)).port}`
  const { hashApiKey } = await import('../dist/access/api-keys.js')
  const key = `rgw_${randomBytes(32).toString('base64url')}`
  const config = { teams: { bench: { keys: [hashApiKey(key)], advertisers: ['*'], rateLimit: { max: 1_000_000_000, window: '1m' } } } }
  const settings = [
    ['off', null],
    ...(TWIN ? [['off-twin', null]] : []),
    ['1pct', { OTEL_EXPORTER_OTLP_ENDPOINT: sink, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.01' }],
    ['all', { OTEL_EXPORTER_OTLP_ENDPOINT: sink, OTEL_TRACES_SAMPLER: 'parentbased_always_on' }],
  ]
  const builds = [['this', ROOT], ...(baseline ? [['baseline', baseline]] : [])]
  const gws = []
  for (const [build, root] of builds) {
    for (const [setting, env] of settings) {
      const gw = await startMainGateway(`trace-price-${build}-${setting}`, { platformUrl: standinUrl, platformToken: 'bench-standin-token', config, env: env ?? {}, root })
      own.push(gw)
      for (let i = 0; i < 3; i += 1) await http('GET', `${gw.url}${REPORT_PATH}`, { headers: { 'x-api-key': key } })
      await wrk(`${gw.url}${REPORT_PATH}`, { seconds: 3, connections: 50, key, gzip: false })
      gws.push({ build, setting, gw, us: [] })
    }
  }
  for (let round = 0; round < ROUNDS; round += 1) {
    const order = gws.map((_, i) => gws[(i + round) % gws.length])
    for (const g of order) {
      const load = loadAverage()
      const t0 = threadRunNs(g.gw.pid)
      const r = await wrk(`${g.gw.url}${REPORT_PATH}`, { seconds: SECONDS, connections: 50, key, gzip: false })
      const us = (threadRunNs(g.gw.pid) - t0) / r.requests / 1000
      g.us.push(us)
      process.stdout.write(`${JSON.stringify({ round, build: g.build, setting: g.setting, hits: r.requests, errors: r.errors, rps: Math.round(r.rps), cpuUsPerHit: Number(us.toFixed(2)), load })}\n`)
    }
  }
  const summary = {}
  for (const [build] of builds) {
    const of = (setting) => gws.find((g) => g.build === build && g.setting === setting).us
    const off = of('off')
    const ratios = (setting) => of(setting).map((us, i) => us / off[i])
    summary[build] = {
      offUs: Number(median(off).toFixed(2)),
      pct1Us: Number(median(of('1pct')).toFixed(2)),
      allUs: Number(median(of('all')).toFixed(2)),
      pct1X: Number(median(ratios('1pct')).toFixed(3)),
      allX: Number(median(ratios('all')).toFixed(3)),
      pct1Rounds: ratios('1pct').map((x) => Number(x.toFixed(2))),
      allRounds: ratios('all').map((x) => Number(x.toFixed(2))),
      ...(TWIN ? { twinX: Number(median(ratios('off-twin')).toFixed(3)), twinRounds: ratios('off-twin').map((x) => Number(x.toFixed(2))) } : {}),
    }
  }
  if (baseline) summary.offThisOverBaseline = Number(median(gws[0].us.map((us, i) => us / gws[settings.length].us[i])).toFixed(3))
  process.stdout.write(`SUMMARY ${JSON.stringify(summary)}\n`)
} finally {
  for (const p of own.reverse()) await stopProcess(p)
}
