// An OTLP/HTTP receiver that takes every export and keeps nothing but counts: the
// collector of the `targets` scenario's traced gateways, on the load's core. It answers
// each POST with an empty ExportTraceServiceResponse at once, so that the gateway's cost
// is its own (making, batching, encoding and sending spans), not a collector's.
//
// Output: one line `READY {"port":…}` on stdout; GET /__count answers {exports, bytes}.

import { createServer } from 'node:http'

let exports = 0
let bytes = 0

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/__count') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ exports, bytes }))
    return
  }
  req.on('data', (chunk) => (bytes += chunk.length))
  req.on('end', () => {
    exports += 1
    const json = (req.headers['content-type'] ?? '').includes('json')
    res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' }).end(json ? '{}' : '')
  })
})
server.keepAliveTimeout = 60_000
server.listen(0, '127.0.0.1', () => process.stdout.write(`READY ${JSON.stringify({ port: server.address().port })}\n`))
