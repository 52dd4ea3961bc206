import { once } from 'node:events'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import { connect, type AddressInfo } from 'node:net'
import { afterAll, beforeAll } from 'vitest'

/** A request as Node's parser read it. */
export interface NodeRead {
  url: string
  headers: IncomingHttpHeaders
}

/**
 * Node's own parser, for what it makes of bytes: a node:http server reading heads as the
 * gateway's server does (a missing Host is the router's to refuse), started before the
 * file's tests and closed after them. `reads(bytes)` sends `bytes` on one connection and
 * gives the requests Node read from it, in their order.
 */
export function useNodeReads(): (bytes: Buffer) => Promise<NodeRead[]> {
  let port = 0
  let reads: NodeRead[] = []
  const server = createServer({ requireHostHeader: false }, (req, res) => {
    reads.push({ url: req.url as string, headers: req.headers })
    req.resume()
    res.end('ok')
  })
  beforeAll(async () => {
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    port = (server.address() as AddressInfo).port
  })
  afterAll(() => {
    server.close()
  })
  return async (bytes) => {
    reads = []
    const socket = connect(port, '127.0.0.1')
    socket.on('error', () => undefined)
    socket.end(bytes)
    socket.resume()
    await once(socket, 'close')
    return reads
  }
}
