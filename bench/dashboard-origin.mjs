// The platform stand-in of the dashboard and capacity scenarios. Every report answer says
// when it was made (`generatedAt`, epoch ms), so a caller can tell how old the data it
// got is, whichever cache served it.
//
// Input (environment):
//   BENCH_LATENCY_MS    how long a report call takes while at most BENCH_KNEE are in flight
//   BENCH_SPREAD        optional: each call's latency is BENCH_LATENCY_MS × e^(σ·z), z drawn
//                       standard normal, σ this (a log-normal spread; default 0: none)
//   BENCH_KNEE          optional: calls in flight answered in BENCH_LATENCY_MS (default: no knee)
//   BENCH_SLOPE_MS      optional: how much slower a call is per call in flight beyond the knee
//   BENCH_REFUSE_ABOVE  optional: a call that finds this many in flight is answered 429 at
//                       once, with `retry-after: 1` (default: none refused)
//   BENCH_CALL_LOG      optional: when 1, each report call is kept (GET /__calls)
// A report call may say the limit its sender's governor had in force when it sent it, in a
// header `x-bench-limit` (the scale bench's host adds it): the calls in flight as it comes are
// judged against it (bench/lib/platform-load.mjs).
// A call's latency is fixed when it arrives: BENCH_LATENCY_MS (spread) + BENCH_SLOPE_MS ×
// (calls in flight with it − BENCH_KNEE), when positive. Only report calls (/api/v1/report/…) are
// counted, delayed or refused; any other call (the gateway's probe) is answered 200 `{}`.
//
// Control calls:
//   GET /__count     {"count", "byRoute": {route: calls}, "refused"} since the last reset
//   DELETE /__count  resets those counts
//   GET /__load      {"inFlight", "meanInFlight", "peak", "overLimit"}: calls in flight now, and
//                    their time-weighted mean and peak since the previous GET /__load; the most
//                    calls in flight as a call came (itself included) beyond the limit its
//                    x-bench-limit says (null: no call said one)
//   GET /__calls?from=<n>  with BENCH_CALL_LOG, the report calls from the n-th on (0: all), each
//                    {at, answeredAt (epoch ms; null: not answered), path, requestId (its x-request-id)}
//
// Output: one line `READY {"port":…}` on stdout.

import { createServer } from 'node:http'
import { performance } from 'node:perf_hooks'
import { platformLoad } from './lib/platform-load.mjs'

const numberFrom = (name, fallback) => (process.env[name] ? Number(process.env[name]) : fallback)
const latencyMs = numberFrom('BENCH_LATENCY_MS', 0)
const knee = numberFrom('BENCH_KNEE', Infinity)
const slopeMs = numberFrom('BENCH_SLOPE_MS', 0)
const refuseAbove = numberFrom('BENCH_REFUSE_ABOVE', Infinity)
const spread = numberFrom('BENCH_SPREAD', 0)
const callLog = process.env.BENCH_CALL_LOG === '1' ? [] : null

/** A call's own latency: the median, spread log-normally (Box-Muller). */
const drawLatency = () => (spread > 0 ? latencyMs * Math.exp(spread * Math.sqrt(-2 * Math.log(1 - Math.random())) * Math.cos(2 * Math.PI * Math.random())) : latencyMs)
// About 2 KB of rows, like a small report.
const rows = Array.from({ length: 30 }, (_, i) => ({ date: `2026-01-${String((i % 28) + 1).padStart(2, '0')}`, impressions: 1000 + i, clicks: 10 + i, spend: 12.5 + i }))

let counts = { count: 0, byRoute: {}, refused: 0 }
const load = platformLoad(() => performance.now())

const json = (res, status, value, headers = {}) => {
  const body = JSON.stringify(value)
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers }).end(body)
}

const server = createServer((req, res) => {
  if (req.url === '/__count') {
    if (req.method === 'DELETE') counts = { count: 0, byRoute: {}, refused: 0 }
    return json(res, 200, counts)
  }
  if (req.url === '/__load') return json(res, 200, load.read())
  if (req.url.startsWith('/__calls')) return json(res, 200, callLog?.slice(Number(new URL(req.url, 'http://x').searchParams.get('from') ?? 0)) ?? [])
  req.resume()
  if (!req.url.startsWith('/api/v1/report/')) return json(res, 200, {})
  const route = req.url.split('?')[0]
  counts.count += 1
  counts.byRoute[route] = (counts.byRoute[route] ?? 0) + 1
  const sentUnder = Number(req.headers['x-bench-limit'])
  const refused = load.inFlight >= refuseAbove
  load.arrived(Number.isFinite(sentUnder) ? sentUnder : null, !refused)
  if (refused) {
    counts.refused += 1
    return json(res, 429, { message: 'Too Many Attempts.' }, { 'retry-after': '1' })
  }
  res.once('close', () => load.ended())
  const call = callLog ? { at: Date.now(), answeredAt: null, path: req.url, requestId: req.headers['x-request-id'] ?? null } : null
  if (call) callLog.push(call)
  setTimeout(() => {
    const generatedAt = Date.now()
    if (call) call.answeredAt = generatedAt
    json(res, 200, { generatedAt, rows })
  }, drawLatency() + slopeMs * Math.max(0, load.inFlight - knee))
})
server.keepAliveTimeout = 65_000
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`READY ${JSON.stringify({ port: server.address().port })}\n`)
})
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => process.exit(0))
