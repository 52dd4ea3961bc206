// A bare node:http server that answers every request with the same stored bytes: the
// gzip body the gateway keeps for the benchmark's report, with the header set of a
// gateway cache hit. Its req/s is the ceiling of any Node gateway on the same core.
//
// The same script is the tiny upstream of the nginx scenarios ("origin"): there it
// waits BENCH_LATENCY_MS before answering (the platform's latency) and counts the
// calls it got and when it read the last (GET /__count, DELETE /__count), so nginx caches exactly the bytes the
// gateway serves.
//
// With BENCH_HEADERS=plain it sends the body as it is with content-type and
// content-length only: the `targets` scenario's bare server (identity JSON) and, with a
// latency, its platform stand-in. With BENCH_HEADERS=hit-plain it sends the body as it is
// with the eleven headers of a gateway L1 hit without accept-encoding, a fresh request id
// each time: what the contract's headers alone cost (the `spread` scenario).
//
// Input (environment): BENCH_BODY_FILE (the body), BENCH_LATENCY_MS (default 0),
// BENCH_HEADERS ("hit", the default, "plain" or "hit-plain"), BENCH_COUNT_PREFIX (count only calls
// whose URL starts with it, e.g. /api/v1/report/; default: every call).
// Output: one line `READY {"port":…}` on stdout.

import { randomUUID } from 'node:crypto'
import { createServer } from 'node:http'
import { readFileSync } from 'node:fs'
import { setInterval } from 'node:timers'
import { performance } from 'node:perf_hooks'

const body = readFileSync(process.env.BENCH_BODY_FILE ?? '')
const latencyMs = Number(process.env.BENCH_LATENCY_MS ?? 0)
const countPrefix = process.env.BENCH_COUNT_PREFIX ?? ''
let calls = 0
// When the last counted call's head was read (epoch ms, sub-millisecond).
let lastCallAt = null

// The headers of a gateway L1 hit, with fixed values of the same length.
const hitHeaders = {
  'content-type': 'application/json',
  'content-encoding': 'gzip',
  vary: 'accept-encoding',
  'cache-control': 'private, max-age=86399',
  age: '0',
  'x-cache': 'HIT',
  'x-request-id': '00000000-0000-4000-8000-000000000000',
  'content-length': String(body.length),
}
const plainHeaders = { 'content-type': 'application/json', 'content-length': String(body.length) }
const hitPlainHeaders = () => ({
  'x-cache': 'HIT',
  'cache-status': 'report-gateway; hit; ttl=86400',
  etag: '"0000000000000000000000"',
  vary: 'accept-encoding',
  'cache-control': 'private, max-age=86400',
  age: '0',
  'content-type': 'application/json',
  'x-request-id': randomUUID(),
  'content-length': String(body.length),
  'ratelimit-policy': '"default";q=1000000000;w=60',
  ratelimit: '"default";r=999999999;t=60',
})
const mode = process.env.BENCH_HEADERS

function answer(res) {
  res.writeHead(200, mode === 'plain' ? plainHeaders : mode === 'hit-plain' ? hitPlainHeaders() : hitHeaders)
  res.end(body)
}

const server = createServer((req, res) => {
  if (req.url === '/__count') {
    if (req.method === 'DELETE') calls = 0
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ count: calls, lastCallAt }))
    return
  }
  if (req.url.startsWith(countPrefix)) {
    calls += 1
    lastCallAt = performance.timeOrigin + performance.now()
  }
  // A call with a body (the gateway's token probe is a POST) is read to its end.
  if (req.method !== 'GET') req.resume()
  if (latencyMs > 0) setTimeout(answer, latencyMs, res)
  else answer(res)
})
server.keepAliveTimeout = 65_000

server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`READY ${JSON.stringify({ port: server.address().port })}\n`)
})

const stop = () => {
  server.closeAllConnections()
  server.close(() => process.exit(0))
  setTimeout(() => process.exit(0), 1000).unref()
}
process.on('SIGTERM', stop)
process.on('SIGINT', stop)

const parent = process.ppid
setInterval(() => {
  if (process.ppid !== parent) stop()
}, 1000).unref()
