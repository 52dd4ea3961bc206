// An OTLP/HTTP receiver that takes every export and keeps nothing but counts: the
// collector of the `targets` scenario's traced gateways, on the load's core. It answers
// each POST with an empty ExportTraceServiceResponse at once, so that the gateway's cost
// is its own (making, batching, encoding and sending spans), not a collector's.
//
// Output: one line `READY {"port":…}` on stdout; GET /__count answers {exports, bytes, spans,
// connections} (spans counted in each export, protobuf or JSON: what the gateway sent, not
// what it made; connections: the TCP connections that carried an export, the exporter's
// keep-alive at work when it stays below exports).

import { createServer } from 'node:http'

let exports = 0
let bytes = 0
let spans = 0
let connections = 0
// The connections that have carried an export (a WeakSet: closed ones go with their socket).
const exporting = new WeakSet()

/** The length-delimited fields `field` of a protobuf message, as [start, end] pairs. */
function fields(buf, start, end, field) {
  const out = []
  let at = start
  const varint = () => {
    let v = 0
    let shift = 0
    for (;;) {
      const b = buf[at++]
      v += (b & 0x7f) * 2 ** shift
      if (b < 0x80) return v
      shift += 7
    }
  }
  while (at < end) {
    const key = varint()
    const wire = key % 8
    if (wire === 0) varint()
    else if (wire === 1) at += 8
    else if (wire === 5) at += 4
    else if (wire === 2) {
      const length = varint()
      if (Math.floor(key / 8) === field) out.push([at, at + length])
      at += length
    } else throw new Error(`wire type ${wire}`)
  }
  return out
}

/** Spans in an ExportTraceServiceRequest: resource_spans (1) > scope_spans (2) > spans (2). */
function spansIn(body, json) {
  if (json) return JSON.parse(body.toString('utf8')).resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)).length
  let n = 0
  for (const [a, b] of fields(body, 0, body.length, 1)) for (const [c, d] of fields(body, a, b, 2)) n += fields(body, c, d, 2).length
  return n
}

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/__count') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ exports, bytes, spans, connections }))
    return
  }
  if (!exporting.has(req.socket)) {
    exporting.add(req.socket)
    connections += 1
  }
  const chunks = []
  req.on('data', (chunk) => {
    bytes += chunk.length
    chunks.push(chunk)
  })
  req.on('end', () => {
    exports += 1
    const json = (req.headers['content-type'] ?? '').includes('json')
    spans += spansIn(Buffer.concat(chunks), json)
    res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' }).end(json ? '{}' : '')
  })
})
server.keepAliveTimeout = 60_000
server.listen(0, '127.0.0.1', () => process.stdout.write(`READY ${JSON.stringify({ port: server.address().port })}\n`))
