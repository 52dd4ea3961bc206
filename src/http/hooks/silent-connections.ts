import type { Server, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { performance } from 'node:perf_hooks'

// server.connectionTimeout without a timer per answer. Node's own socket timeout
// (server.setTimeout) is re-armed on every read and every write of a connection: at hit
// rates, a timer-list insertion per answer and a second Timeout object per request.
// A connection that moves no bytes for a whole connectionTimeout is the rare
// case, so it is looked for instead: every eighth of the timeout (5 s at most), each
// open connection's byte counts are compared with those of the previous look.
//
// The same looks bound the connections a listener holds (server.maxConnections,
// http/connection-bound.ts). A connection kept alive between requests costs its caller
// nothing to open again, and one that never sent a whole head has asked for nothing: so
// when a connection comes past the bound, the longest silent of those with no answer
// under way are closed (an eighth of the bound at a time, so that the next
// callers find room without a look at every connection each). A caller holding
// thousands of idle connections thereby holds no other caller out; only connections
// with answers under way, each bounded by requestTimeout, fill the listener; past the
// bound with none idle, a new connection is closed at once.

const MAX_LOOK_MS = 5000

interface Look {
  moved: number
  since: number
}

/** Node's socket of a connection: the answer it is writing, if any (lib/_http_server.js). */
type HttpSocket = Socket & { _httpMessage?: ServerResponse | null }

/**
 * Closes a connection of `server` through which nothing moved for `timeoutMs`: nothing
 * read from the caller and nothing taken by the kernel for it (what waits in the
 * gateway's buffers for a caller that stopped reading is no traffic). It is closed
 * between `timeoutMs` and a quarter more after its last byte. With `maxConnections`, a
 * connection past it closes the longest silent ones with no answer under way (or itself, when none is idle).
 */
export function closeSilentConnections(server: Server, timeoutMs: number, maxConnections: number | null = null, now: () => number = () => performance.now()): void {
  const open = new Map<Socket, Look>()
  const room = maxConnections === null ? 0 : Math.max(1, Math.ceil(maxConnections / 8))
  // The connections idle now, longest silent first: `room` of them are closed.
  const makeRoom = (newcomer: Socket): void => {
    const at = now()
    const quiet: [Socket, number][] = []
    for (const [socket, look] of open) {
      const bytes = moved(socket)
      if (bytes !== look.moved) {
        look.moved = bytes
        look.since = at
      }
      if (socket !== newcomer && idle(socket)) quiet.push([socket, look.since])
    }
    quiet.sort((a, b) => a[1] - b[1])
    for (const [socket] of quiet.slice(0, room)) close(socket)
  }
  const close = (socket: Socket): void => {
    // Out of the count at once: its 'close' comes later, and the next caller counts without it.
    open.delete(socket)
    socket.destroy()
  }
  server.on('connection', (socket: Socket) => {
    open.set(socket, { moved: moved(socket), since: now() })
    // `on`: a socket closes once, and `once` keeps a wrapper and its context per connection.
    socket.on('close', () => open.delete(socket))
    if (maxConnections === null || open.size <= maxConnections) return
    makeRoom(socket)
    // Every other connection has an answer under way: this one is closed, as Node closes one past its maxConnections.
    if (open.size > maxConnections) close(socket)
  })
  const looks = setInterval(
    () => {
      const at = now()
      for (const [socket, look] of open) {
        const bytes = moved(socket)
        if (bytes !== look.moved) {
          look.moved = bytes
          look.since = at
        } else if (at - look.since >= timeoutMs) {
          socket.destroy()
        }
      }
    },
    Math.max(1, Math.min(MAX_LOOK_MS, Math.floor(timeoutMs / 8))),
  )
  looks.unref()
  server.once('close', () => clearInterval(looks))
}

/** No answer under way: none Node is writing, and nothing of one written (by the entrance too) left for the kernel to take. */
function idle(socket: HttpSocket): boolean {
  return !socket._httpMessage && socket.writableLength === 0
}

function moved(socket: Socket): number {
  return socket.bytesRead + socket.bytesWritten - socket.writableLength
}
