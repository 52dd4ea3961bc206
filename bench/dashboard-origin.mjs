// The platform stand-in of the dashboard scenario: every report answer says when it was
// made (`generatedAt`, epoch ms), so a caller can tell how old the data it got is,
// whichever cache served it. Answers after BENCH_LATENCY_MS; counts report calls
// (GET /__count → {"count":…}, DELETE /__count). Any other call (the gateway's probe)
// is answered 200 `{}`.
//
// Output: one line `READY {"port":…}` on stdout.

import { createServer } from 'node:http'

const latencyMs = Number(process.env.BENCH_LATENCY_MS ?? 0)
// About 2 KB of rows, like a small report.
const rows = Array.from({ length: 30 }, (_, i) => ({ date: `2026-01-${String((i % 28) + 1).padStart(2, '0')}`, impressions: 1000 + i, clicks: 10 + i, spend: 12.5 + i }))
let count = 0

const server = createServer((req, res) => {
  if (req.url === '/__count') {
    if (req.method === 'DELETE') count = 0
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ count }))
    return
  }
  req.resume()
  const isReport = req.url.startsWith('/api/v1/report/')
  if (isReport) count += 1
  setTimeout(() => {
    const body = isReport ? JSON.stringify({ generatedAt: Date.now(), rows }) : '{}'
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body)
  }, isReport ? latencyMs : 0)
})
server.keepAliveTimeout = 65_000
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`READY ${JSON.stringify({ port: server.address().port })}\n`)
})
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => process.exit(0))
