import { connect, type Socket } from 'node:net'
import type { FastifyInstance } from 'fastify'
import type { ClosedAtBound } from '../../src/http/connection-bound.js'

// Connections to a listener as a caller holds them, for the tests of its connection bound:
// real sockets on 127.0.0.1 that send what a test writes and keep what comes back.

/** A caller's connection and what it received. */
export interface RawConnection {
  socket: Socket
  /** What came, as latin1 (its first `keep` characters). */
  received: string
  /** Resolves at the first bytes that come, or at the close. */
  firstData: Promise<void>
  closed: Promise<void>
  isClosed: () => boolean
}

const opened = new Set<Socket>()

/**
 * A connection to `port` that sends `bytes` at once. `read: false` stops reading at the
 * first bytes that come (the rest waits in the kernel's buffers and the gateway's);
 * `keep`: how much of what comes is kept.
 */
export function rawConnection(port: number, bytes: string, { read = true, keep = Infinity }: { read?: boolean; keep?: number } = {}): RawConnection {
  const socket = connect(port, '127.0.0.1')
  opened.add(socket)
  let closed = false
  let gotData: () => void = () => undefined
  const conn: RawConnection = {
    socket,
    received: '',
    firstData: new Promise((resolve) => (gotData = resolve)),
    closed: new Promise((resolve) =>
      socket.once('close', () => {
        closed = true
        opened.delete(socket)
        gotData()
        resolve()
      }),
    ),
    isClosed: () => closed,
  }
  socket.setEncoding('latin1').on('data', (chunk: string) => {
    if (conn.received.length < keep) conn.received += chunk.slice(0, keep - conn.received.length)
    gotData()
    if (!read) socket.pause()
  })
  socket.on('error', () => undefined)
  if (bytes.length > 0) socket.write(bytes)
  return conn
}

/** Destroys every connection rawConnection opened that is still open. */
export function destroyRawConnections(): void {
  for (const socket of opened) socket.destroy()
  opened.clear()
}

/** Whether `conn` received an answer of `status` (its status line). */
export function answeredWith(conn: RawConnection, status = 200): boolean {
  return conn.received.startsWith(`HTTP/1.1 ${status} `)
}

/** gateway_connections_closed_at_bound_total of `listener` on the admin listener's /metrics, by which. */
export async function closedAtBound(admin: FastifyInstance, listener: 'proxy' | 'admin'): Promise<Record<ClosedAtBound, number>> {
  const metrics = (await admin.inject({ method: 'GET', url: '/metrics' })).body
  const count = (which: ClosedAtBound): number => {
    const line = new RegExp(`^gateway_connections_closed_at_bound_total\\{listener="${listener}",which="${which}"\\} (\\d+)`, 'm').exec(metrics)
    if (line === null) throw new Error(`no series for ${listener} ${which}`)
    return Number(line[1])
  }
  return { idle: count('idle'), busy: count('busy'), new: count('new') }
}
