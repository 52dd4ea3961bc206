import { maxHeaderSize, type Server } from 'node:http'
import { Socket } from 'node:net'
import { performance } from 'node:perf_hooks'
import type { Logger } from 'pino'
import { AnswerRoom } from '../perf/answer-room.js'
import type { ReadHold } from '../perf/read-hold.js'
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
// every next request to Node, which answers it with `connection: close`. While a read hold
// is on (perf/read-hold.ts: a stampede's call due to be written), what would go to Node's
// parser waits for the hold's end, its bytes kept in their order: a request declined here,
// and the bytes of a connection Node reads, whose listeners are called from here. The
// decisions: docs/decisions/socket-entrance.md, docs/decisions/read-hold.md.

/** Writes a plain 200's `lines` (status line and header lines, as plainAnswer makes them) and `body` on `socket`: the kept-alive end of its head is added. */
export type SendPlain = (socket: Socket, lines: string, body: Buffer) => void

/** Answers a plain GET on its connection through `send` (true), or declines it (false): the connection is then Node's, from this request on. */
export type ServePlain = (head: PlainGet, socket: Socket, send: SendPlain) => boolean

/** Node's sockets keep their stream handle here, and mark it `_consumed` once a parser reads it natively. */
type HandleSocket = Socket & { _handle?: { _consumed?: boolean } | null }

/** A socket's own `on` (its stream's), whatever its server put in its place on the socket itself. */
const streamOn = Socket.prototype.on as (this: Socket, event: 'data' | 'end', listener: (chunk: Buffer) => void) => Socket

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
export function enterOnConnections(server: BufferedServer, serve: ServePlain, closing: () => boolean, log: Pick<Logger, 'error'>, hold: ReadHold | null = null, now: () => number = () => performance.now()): boolean {
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
    // Bytes kept for Node while a read hold is on (perf/read-hold.ts), in their order; and
    // whether the caller's end came behind them. Null: none kept.
    let kept: Buffer[] | null = null
    let endKept = false
    // Node's own listeners of the connection once handed over, when found (readThroughHold).
    let nodeData: ((chunk: Buffer) => void) | null = null
    let nodeEnd: (() => void) | null = null
    const handOff = (rest: Buffer): void => {
      socket.removeListener('data', onData)
      socket.removeListener('end', onEnd)
      socket.removeListener('error', onError)
      held.delete(socket)
      // Node's parser reads the rest from the stream, behind the bytes given back, never
      // from the handle beside it: the connection's requests stay in their order.
      if (socket._handle) socket._handle._consumed = true
      node.call(server, socket)
      if (hold !== null) readThroughHold()
      if (rest.length > 0) socket.unshift(rest)
    }
    // Node's reading of the connection goes through the hold: its bytes, and its end behind
    // them, are kept while a hold is on. Its listeners are taken off and called from here,
    // with the same bytes in the same order; without them found, Node reads as it would.
    const readThroughHold = (): void => {
      const data = socket.listeners('data').find((listener) => listener.name === 'bound socketOnData') as ((chunk: Buffer) => void) | undefined
      const end = socket.listeners('end').find((listener) => listener.name === 'bound socketOnEnd') as (() => void) | undefined
      if (data === undefined || end === undefined) return
      nodeData = data
      nodeEnd = end
      socket.removeListener('data', data)
      socket.removeListener('end', end)
      // Node's server wraps `on` of its sockets (a 'data' listener added stops its native
      // reading, and its pause and resume listeners); the stream's own is the one meant here.
      streamOn.call(socket, 'data', (chunk: Buffer) => {
        if (kept !== null) kept.push(chunk)
        else if (hold?.on === true) keep(chunk, toNode)
        else data(chunk)
      })
      streamOn.call(socket, 'end', () => {
        if (kept !== null) endKept = true
        else end()
      })
    }
    // Bytes kept until the hold ends, then given to `then`.
    const keep = (chunk: Buffer, then: () => void): void => {
      kept = [chunk]
      hold!.defer(() => {
        // A connection cut meanwhile has nothing to read, and Node's parser of it is gone.
        if (kept === null || socket.destroyed) return
        try {
          then()
        } catch (err) {
          log.error({ err }, 'reading a request held on its connection failed')
          socket.destroy()
        }
      })
    }
    const takeKept = (): Buffer => {
      const bytes = kept!.length === 1 ? kept![0]! : Buffer.concat(kept!)
      kept = null
      return bytes
    }
    // The kept bytes to Node's parser, then the end that came behind them.
    const toNode = (): void => {
      nodeData!(takeKept())
      if (endKept) nodeEnd!()
    }
    // The kept bytes, a request declined here and what followed it, handed to Node.
    const handKept = (): void => {
      const rest = takeKept()
      if (!endKept) return handOff(rest)
      // The end was read here: Node is given the bytes and the end as the stream gave them
      // (without its listeners found, the connection is ended as Node ends one at its caller's end).
      handOff(nodeData === null ? rest : Buffer.alloc(0))
      if (nodeData === null) return void socket.end()
      nodeData(rest)
      nodeEnd!()
    }
    const onData = (chunk: Buffer): void => {
      if (kept !== null) {
        kept.push(chunk)
        return
      }
      let at = 0
      try {
        for (;;) {
          // A caller that reads its answers slower than it sends requests is Node's to pace;
          // a limit of requests per connection is Node's to count.
          const head = socket.writableNeedDrain || server.maxRequestsPerSocket ? null : heads.read(chunk, at, headLimit)
          if (head === null || closing() || !serve(head, socket, send)) {
            // Held: Node's reading of it waits for the hold's end (the decision made stays on the connection).
            if (hold?.on === true) return keep(chunk.subarray(at), handKept)
            return handOff(chunk.subarray(at))
          }
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
      if (kept === null) socket.end()
      else endKept = true
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
