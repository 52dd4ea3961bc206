// `node bench/trace-start-price.mjs [--root=<dir>] [--rounds=7]` (after `npm run build`; under
// the bench lock): in one process, no I/O, the CPU time a request's trace costs as an L1 hit
// at the socket entrance takes it (Tracing.begin, traceOf, the admission and cache.lookup
// steps, the SERVER span ended as the access line ends it when recorded), with
// OTEL_TRACES_SAMPLER at parentbased_traceidratio 0.01 and at parentbased_always_on, from
// the build in <dir> (default: this one). Spans are not exported (the loop never yields:
// the queue fills and drops, as a full one does). Per round 200,000 requests a sampler,
// both in turn; medians of the rounds, µs a request.

import { Socket } from 'node:net'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { ROOT } from './lib/processes.mjs'
import { median } from './lib/stats.mjs'

const arg = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback
const root = arg('root', ROOT)
const ROUNDS = Number(arg('rounds', '7'))
const N = 200_000
const load = (path) => import(pathToFileURL(join(root, 'dist', path)).href)
const { tracingConfig } = await load('config/tracing.js')
const { startTracing, traceOf } = await load('observe/tracing.js')

const L1 = Object.freeze({ 'gateway.cache.tier': 'l1', 'gateway.cache.result': 'hit' })
const ANSWER = Object.freeze({ 'http.response.status_code': 200, 'gateway.team': 'bench', 'gateway.cache.status': 'HIT' })
const about = { version: '0.1.0', instanceId: 'bench', now: () => Date.now(), warn: () => undefined, holdsSecret: () => false }
const tracers = {}
for (const [name, env] of [
  ['1pct', { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.01' }],
  ['all', { OTEL_TRACES_SAMPLER: 'parentbased_always_on' }],
]) {
  const problems = []
  tracers[name] = await startTracing(tracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', ...env }, problems), about)
  if (problems.length) throw new Error(problems.join('; '))
}
// 50 connections, as wrk -c50: a request's SERVER attributes are kept on its connection.
const sockets = Array.from({ length: 50 }, () => new Socket())
const headers = { host: '127.0.0.1:8080', 'x-api-key': 'rgw_x', 'user-agent': 'wrk' }
const url = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2025-01-01&dateTo=2025-02-05&byDate=1'
const cpu = () => process.cpuUsage().user

function hits(tracing) {
  const t0 = cpu()
  for (let i = 0; i < N; i += 1) {
    const seen = { method: 'GET', url, headers, httpVersion: '1.1', socket: sockets[i % 50] }
    tracing.begin(seen)
    const trace = traceOf(seen)
    trace.step('admission').end()
    const lookup = trace.step('cache.lookup')
    lookup.set(L1)
    lookup.end()
    if (trace.recording) {
      trace.set(ANSWER)
      trace.set({ 'gateway.request_id': `r-${i}` })
      trace.end()
    }
  }
  return (cpu() - t0) / N
}

const us = { '1pct': [], all: [] }
for (let round = 0; round < ROUNDS; round += 1) for (const name of round % 2 ? ['all', '1pct'] : ['1pct', 'all']) us[name].push(hits(tracers[name]))
process.stdout.write(`${JSON.stringify({ root, rounds: ROUNDS, requests: N, '1pctUs': Number(median(us['1pct']).toFixed(3)), allUs: Number(median(us.all).toFixed(3)), '1pctRounds': us['1pct'].map((v) => Number(v.toFixed(3))), allRounds: us.all.map((v) => Number(v.toFixed(3))) })}\n`)
process.exit(0)
