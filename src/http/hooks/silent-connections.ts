import type { Server, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { performance } from 'node:perf_hooks'
import type { ClosedAtBound, EnforcedBound } from '../connection-bound.js'
import { carrier, cutAtFullBound } from '../connection-teams.js'

// server.connectionTimeout without a timer per answer. Node's own socket timeout
// (server.setTimeout) is re-armed on every read and every write of a connection: at hit
// rates, a timer-list insertion per answer and a second Timeout object per request.
// A connection that moves no bytes for a whole connectionTimeout is the rare
// case, so it is looked for instead: every eighth of the timeout (5 s at most), each
// open connection's byte counts are compared with those of the previous look.
//
// The same looks bound the connections a listener holds (server.maxConnections,
// admin.maxConnections: http/connection-bound.ts). A connection kept alive between
// requests costs its caller nothing to open again, and one that never sent a whole head
// has asked for nothing: so when a connection comes past the bound, the longest silent of
// those with no answer under way are closed (an eighth of the bound at a time, so that the next
// callers find room without a look at every connection each). A caller holding
// thousands of idle connections thereby holds no other caller out. With none idle, the
// team holding the most answers under way past its part of the bound (callers with no key
// are one team) gives up its longest silent connections (http/connection-teams.ts), so
// that one team's answers held open hold no other team out either; with no team past its
// part, the new connection is closed at once. Each closing is told to the bound
// (`closed`), which counts and says them.

const MAX_LOOK_MS = 5000
// A look at a listener's connections that found none idle, and fewer than the room of a
// team's answers to cut, is not repeated until this many times what it took has passed:
// each connection coming past a full bound meanwhile is closed without one. A look is a
// pass over every connection (about 180 µs at 4096: decisions/connection-bound.md), and a
// caller opening connections as fast as it can would otherwise have the process spend all
// of its time looking; so looks at a full listener take at most a hundredth of its time,
// whatever the rate of new connections, unless each finds a whole room to make.
const FULL_LOOK_SPACING = 100

interface Look {
  /** Its bytes moved (moved()) when a look last saw them change, or when it opened. */
  moved: number
  /** When a look first saw `moved` (or it opened): its last byte came at or before this. */
  since: number
  /** Its last byte came after this: the look before the one that saw it (or when it opened). */
  after: number
}

/** Node's socket of a connection: the answer it is writing, if any (lib/_http_server.js). */
type HttpSocket = Socket & { _httpMessage?: ServerResponse | null }

/**
 * Closes a connection of `server` through which nothing moved for `timeoutMs`: nothing
 * read from the caller and nothing taken by the kernel for it (what waits in the
 * gateway's buffers for a caller that stopped reading is no traffic). It is closed
 * between `timeoutMs` and a quarter more after its last byte. With `bound`, a connection
 * past its max closes the longest silent ones with no answer under way (or itself, when none is idle).
 */
export function closeSilentConnections(server: Server, timeoutMs: number, bound: EnforcedBound | null = null, now: () => number = () => performance.now()): void {
  const open = new Map<Socket, Look>()
  const room = bound === null ? 0 : Math.max(1, Math.ceil(bound.max / 8))
  // When every open connection was last looked at.
  let looked = -Infinity
  // Until when a connection past the bound is closed without a look: the last look found none idle, and less than a room to cut.
  let fullUntil = -Infinity
  // Whether `look`'s connection moved bytes since the last look at it; notes it at `at`.
  const see = (look: Look, bytes: number, at: number): boolean => {
    if (bytes === look.moved) return false
    look.after = Math.max(look.since, looked)
    look.moved = bytes
    look.since = at
    return true
  }
  // The connections idle now, longest silent first: `room` of them are closed. Silent
  // since `after`, the earliest its last byte may have come: a connection answered since
  // the last look is not taken for newer than one opened since, whose request has not been
  // read yet (connections accepted together are one look). With none idle, those of the
  // team past its part of the bound (cutAtFullBound). Returns which were closed, and how many.
  const makeRoom = (newcomer: Socket, max: number): [ClosedAtBound, number] => {
    const at = now()
    const quiet: [Socket, number][] = []
    const busy: { conn: Socket; team: string | undefined; after: number }[] = []
    for (const [socket, look] of open) {
      see(look, moved(socket), at)
      if (socket === newcomer) continue
      if (idle(socket)) quiet.push([socket, look.after])
      else if (quiet.length === 0) busy.push({ conn: socket, team: carrier(socket), after: look.after })
    }
    looked = at
    if (quiet.length > 0) {
      quiet.sort((a, b) => a[1] - b[1])
      const closing = quiet.slice(0, room)
      for (const [socket] of closing) close(socket)
      return ['idle', closing.length]
    }
    const cut = cutAtFullBound(busy, max, room)
    if (cut.length < room) fullUntil = at + (now() - at) * FULL_LOOK_SPACING
    for (const socket of cut) close(socket)
    return ['busy', cut.length]
  }
  const close = (socket: Socket): void => {
    // Out of the count at once: its 'close' comes later, and the next caller counts without it.
    open.delete(socket)
    socket.destroy()
  }
  server.on('connection', (socket: Socket) => {
    const at = now()
    open.set(socket, { moved: moved(socket), since: at, after: at })
    // `on`: a socket closes once, and `once` keeps a wrapper and its context per connection.
    socket.on('close', () => open.delete(socket))
    if (bound === null || open.size <= bound.max) return
    if (at >= fullUntil) {
      const [which, count] = makeRoom(socket, bound.max)
      if (count > 0) bound.closed(which, count)
    }
    if (open.size <= bound.max) return
    // Every other connection has an answer under way, no team's past its part: this one is closed, as Node closes one past its maxConnections.
    close(socket)
    bound.closed('new', 1)
  })
  const lookAtAll = (): void => {
    const at = now()
    for (const [socket, look] of open) {
      if (!see(look, moved(socket), at) && at - look.since >= timeoutMs) socket.destroy()
    }
    looked = at
  }
  // Looks only while listening: a server that never listens (built for inject) never
  // emits 'close', and a timer left running would hold it, and its bound's listener, for good.
  let looks: NodeJS.Timeout | undefined
  server.on('listening', () => {
    clearInterval(looks)
    looks = setInterval(lookAtAll, Math.max(1, Math.min(MAX_LOOK_MS, Math.floor(timeoutMs / 8))))
    looks.unref()
  })
  server.on('close', () => clearInterval(looks))
}

/** No answer under way: none Node is writing, and nothing of one written (by the entrance too) left for the kernel to take. */
function idle(socket: HttpSocket): boolean {
  return !socket._httpMessage && socket.writableLength === 0
}

function moved(socket: Socket): number {
  return socket.bytesRead + socket.bytesWritten - socket.writableLength
}
