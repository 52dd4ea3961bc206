// Reference point for the benchmark: a minimal Fastify 5 + lru-cache "gateway" that
// answers the report route from an in-process LRU with the stored gzip bytes (no key
// check, no validation, no logging, no metrics). The distance between it and the bare
// node:http server is the framework's own cost; the distance between it and the
// gateway's L1 hits is the gateway's code on the hit path.
//
// Input (environment): BENCH_BODY_FILE (the gzip body). Output: `READY {"port":…}`.

import { readFileSync } from 'node:fs'
import { setInterval } from 'node:timers'
import Fastify from 'fastify'
import { LRUCache } from 'lru-cache'

const body = readFileSync(process.env.BENCH_BODY_FILE ?? '')
const lru = new LRUCache({ max: 10_000 })

const app = Fastify({ logger: false })
app.get('/api/v1/report/*', (request, reply) => {
  let entry = lru.get(request.url)
  if (entry === undefined) {
    entry = body
    lru.set(request.url, entry)
  }
  reply
    .header('content-type', 'application/json')
    .header('x-cache', 'HIT')
    .header('vary', 'accept-encoding')
    .header('cache-control', 'private, max-age=86399')
    .header('age', '0')
    .header('x-request-id', '00000000-0000-4000-8000-000000000000')
    .header('content-encoding', 'gzip')
    .send(entry)
})

await app.listen({ host: '127.0.0.1', port: 0 })
process.stdout.write(`READY ${JSON.stringify({ port: app.server.address().port })}\n`)

const stop = () => {
  app.server.closeAllConnections()
  app.close().then(() => process.exit(0))
  setTimeout(() => process.exit(0), 1000).unref()
}
process.on('SIGTERM', stop)
process.on('SIGINT', stop)

const parent = process.ppid
setInterval(() => {
  if (process.ppid !== parent) stop()
}, 1000).unref()
