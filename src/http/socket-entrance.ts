import { maxHeaderSize, type Server } from 'node:http'
import type { Socket } from 'node:net'
import { performance } from 'node:perf_hooks'
import type { Logger } from 'pino'
import { AnswerRoom } from '../perf/answer-room.js'
import { keptAliveHeadEnd } from '../perf/rendered-head.js'
import { PlainGets, type PlainGet } from './plain-get.js'

// The listener's first entrance: a connection's bytes read by the gateway itself, before
// Node's HTTP parser makes an IncomingMessage and a ServerResponse of them. At hit rates
// those objects and their life cycle (parser callbacks, streams, timers re-armed per
// answer) cost more than everything the gateway does for a hit (docs/benchmarks.md,
// "L1 hits against nginx"). So a connection is read here first: each plain GET
// (plain-get.ts) is offered to `serve`, which answers it on the connection (a fresh copy
// in memory) or declines; at the first request declined or not plain, the connection is
// handed to Node's parser with every byte not yet answered, and is Node's from then on,
// as if Node had read it from the start. What Node does for a connection it holds is done
// here for the connection's life here: its first request must come within
// `server.headersTimeout` (else the 408 Node writes, through the listener's clientError
// answer), an idle kept-alive connection is closed after `server.keepAliveTimeout` and
// Node's `keepAliveTimeoutBuffer` more; a caller that reads its answers slower than it
// asks is Node's (its backlog of answers is Node's to bound); a closing listener hands
// every next request to Node, which answers it with `connection: close`. The decision:
// docs/decisions/socket-entrance.md.

/** Writes a plain 200's `lines` (status line and header lines, as plainAnswer makes them) and `body` on `socket`: the kept-alive end of its head is added. */
export type SendPlain = (socket: Socket, lines: string, body: Buffer) => void

/** Answers a plain GET on its connection through `send` (true), or declines it (false): the connection is then Node's, from this request on. */
export type ServePlain = (head: PlainGet, socket: Socket, send: SendPlain) => boolean

/** Node's sockets keep their stream handle here, and mark it `_consumed` once a parser reads it natively. */
type HandleSocket = Socket & { _handle?: { _consumed?: boolean } | null }

/** A server with Node's own time past keepAliveTimeout before it closes an idle connection (Node 24: 1 s by default), and its own `maxHeaderSize` where one was given. */
type BufferedServer = Server & { keepAliveTimeoutBuffer?: number; maxHeaderSize?: number }

/**
 * The largest body written with its head as one buffer: below it, copying the body costs
 * less than a gathered write's stream machinery (about 0.5 µs of a 4 KB hit's 13, measured
 * side by side: decisions/socket-entrance.md); above it, head and body go out as they are.
 */
const ONE_WRITE_MAX = 16 * 1024
/** How often the connections read here are looked at for their deadlines, at most. */
const LOOK_MS = 1000

interface Look {
  /** Bytes read from the caller at the last look. */
  read: number
  /** Since when nothing was read. */
  since: number
}

/**
 * Reads `server`'s connections first, offering each plain GET to `serve` while
 * `closing()` is false. False when this Node's server is not the one this was built for
 * (no `connectionListener` to hand connections to): Node then reads every connection.
 */
export function enterOnConnections(server: BufferedServer, serve: ServePlain, closing: () => boolean, log: Pick<Logger, 'error'>, now: () => number = () => performance.now()): boolean {
  const node = server.listeners('connection').find((listener) => listener.name === 'connectionListener') as ((socket: Socket) => void) | undefined
  if (node === undefined) return false
  server.removeListener('connection', node)
  const held = new Map<Socket, Look>()
  // Half what Node reads of a head (plain-get.ts): a head Node would refuse as too large is its own to refuse.
  const headLimit = Math.floor((server.maxHeaderSize ?? maxHeaderSize) / 2)
  // Answers are written in one room while their writes complete at once (perf/answer-room.ts).
  const room = new AnswerRoom()

  const send: SendPlain = (socket, lines, body) => {
    const head = lines + keptAliveHeadEnd(server.keepAliveTimeout)
    if (body.length <= ONE_WRITE_MAX) {
      const out = room.take(head.length + body.length)
      out.write(head, 0, 'latin1')
      body.copy(out, head.length)
      socket.write(out)
      room.written(socket)
      return
    }
    socket.cork()
    socket.write(head, 'latin1')
    socket.write(body)
    socket.uncork()
  }

  server.on('connection', (socket: HandleSocket) => {
    held.set(socket, { read: 0, since: now() })
    const heads = new PlainGets()
    const handOff = (rest: Buffer): void => {
      socket.removeListener('data', onData)
      socket.removeListener('end', onEnd)
      socket.removeListener('error', onError)
      held.delete(socket)
      // Node's parser reads the rest from the stream, behind the bytes given back, never
      // from the handle beside it: the connection's requests stay in their order.
      if (socket._handle) socket._handle._consumed = true
      node.call(server, socket)
      if (rest.length > 0) socket.unshift(rest)
    }
    const onData = (chunk: Buffer): void => {
      let at = 0
      try {
        for (;;) {
          // A caller that reads its answers slower than it sends requests is Node's to pace;
          // a limit of requests per connection is Node's to count.
          const head = socket.writableNeedDrain || server.maxRequestsPerSocket ? null : heads.read(chunk, at, headLimit)
          if (head === null || closing() || !serve(head, socket, send)) return handOff(chunk.subarray(at))
          at += head.length
          if (at === chunk.length) return
        }
      } catch (err) {
        // Nothing above is expected to throw; should it, this caller is cut off, not the process.
        log.error({ err }, 'answering a request on its connection failed')
        socket.destroy()
      }
    }
    const onEnd = (): void => {
      held.delete(socket)
      socket.end()
    }
    const onError = (): void => {
      held.delete(socket)
      socket.destroy()
    }
    socket.on('data', onData)
    socket.on('end', onEnd)
    socket.on('error', onError)
    // `on`: a socket closes once, and `once` keeps a wrapper and its context per connection.
    socket.on('close', () => held.delete(socket))
  })

  // The deadlines, looked for rather than timed per answer: a connection whose bytes read
  // did not move for its deadline. Before any byte, the first request's (headersTimeout);
  // after answers, the kept-alive connection's. Looked for while the server listens: a
  // server that never listens (a gateway built for inject, or one whose listen failed)
  // is never closed by Fastify, and a timer of its own would keep it for good.
  const lookForDeadlines = (): void => {
    const at = now()
    for (const [socket, look] of held) {
      const read = socket.bytesRead
      if (read !== look.read) {
        look.read = read
        look.since = at
        continue
      }
      const idle = at - look.since
      if (read === 0) {
        if (server.headersTimeout > 0 && idle >= server.headersTimeout) {
          held.delete(socket)
          server.emit('clientError', Object.assign(new Error('Request Timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }), socket)
        }
      } else if (server.keepAliveTimeout > 0 && idle >= server.keepAliveTimeout + (server.keepAliveTimeoutBuffer ?? 0)) {
        held.delete(socket)
        socket.destroy()
      }
    }
  }
  let looks: NodeJS.Timeout | undefined
  const start = (): void => {
    looks = setInterval(lookForDeadlines, Math.max(10, Math.min(LOOK_MS, Math.floor(Math.min(server.headersTimeout || LOOK_MS, server.keepAliveTimeout || LOOK_MS) / 4))))
    looks.unref()
  }
  if (server.listening) start()
  else server.once('listening', start)
  server.once('close', () => {
    server.removeListener('listening', start)
    clearInterval(looks)
  })
  return true
}
