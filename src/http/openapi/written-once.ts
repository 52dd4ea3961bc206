import { gzipSync } from 'node:zlib'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { acceptsCoding } from '../caller-coding.js'

/**
 * A listener's description, written at its first ask and gzipped at its first ask that
 * accepts gzip: a listener's routes are fixed once it listens, so every answer holds one of
 * those two copies. Asks pipelined on one connection are all read before any answer goes
 * (some 1,600 in a 64 KB read), and an answer a caller does not read waits whole in the
 * gateway: written per ask, each would be a copy, and the YAML of the proxy's document takes
 * some 100 ms of the event loop to write. Gzipped, the proxy's JSON document (some 360 KB)
 * is about a tenth of it on the wire: a browser, `fetch()` and a generator that fetches
 * it all accept gzip.
 */
export function writtenOnce(write: () => string): (request: FastifyRequest, reply: FastifyReply) => Buffer {
  let plain: Buffer | undefined
  let gzipped: Buffer | undefined
  return (request, reply) => {
    plain ??= Buffer.from(write())
    reply.header('vary', 'accept-encoding')
    if (!acceptsCoding(request.headers['accept-encoding'], 'gzip')) return plain
    gzipped ??= gzipSync(plain)
    reply.header('content-encoding', 'gzip')
    return gzipped
  }
}
