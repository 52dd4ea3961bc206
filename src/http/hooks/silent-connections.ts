import type { Server } from 'node:http'
import type { Socket } from 'node:net'
import { performance } from 'node:perf_hooks'

// server.connectionTimeout without a timer per answer. Node's own socket timeout
// (server.setTimeout) is re-armed on every read and every write of a connection: at hit
// rates, a timer-list insertion per answer and a second Timeout object per request.
// A connection that moves no bytes for a whole connectionTimeout is the rare
// case, so it is looked for instead: every eighth of the timeout (5 s at most), each
// open connection's byte counts are compared with those of the previous look.

const MAX_LOOK_MS = 5000

interface Look {
  moved: number
  since: number
}

/**
 * Closes a connection of `server` through which nothing moved for `timeoutMs`: nothing
 * read from the caller and nothing taken by the kernel for it (what waits in the
 * gateway's buffers for a caller that stopped reading is no traffic). It is closed
 * between `timeoutMs` and a quarter more after its last byte.
 */
export function closeSilentConnections(server: Server, timeoutMs: number, now: () => number = () => performance.now()): void {
  const open = new Map<Socket, Look>()
  server.on('connection', (socket: Socket) => {
    open.set(socket, { moved: moved(socket), since: now() })
    // `on`: a socket closes once, and `once` keeps a wrapper and its context per connection.
    socket.on('close', () => open.delete(socket))
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

function moved(socket: Socket): number {
  return socket.bytesRead + socket.bytesWritten - socket.writableLength
}
