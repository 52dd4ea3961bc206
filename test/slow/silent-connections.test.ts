import { createServer, type Server } from 'node:http'
import { connect, type AddressInfo, type Socket } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { closeSilentConnections } from '../../src/http/hooks/silent-connections.js'
import { startSandboxGateway, TEAMS_YAML } from '../helpers/sandbox-gateway.js'

// server.connectionTimeout: a connection through which nothing moves for that long is
// closed, by a periodic look at each connection's byte counts rather than Node's socket
// timer re-armed on every read and write. Every socket has a hard stop, so a
// server that never closes it fails rather than hangs.

const TIMEOUT_MS = 400
// For the tests where a connection must stay open: far longer than the pauses between
// its bytes, so that a stalled event loop on a loaded machine cannot close it.
const LONG_TIMEOUT_MS = 2000
const HARD_STOP_MS = 20_000

const servers: Server[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve).closeAllConnections())))
})

async function serve(handler: Parameters<typeof createServer>[1], timeoutMs = TIMEOUT_MS): Promise<number> {
  // Node's own deadlines far away: only the one under test can close a connection.
  const server = createServer({ headersTimeout: 60_000, requestTimeout: 60_000, connectionsCheckingInterval: 60_000 }, handler)
  server.keepAliveTimeout = 60_000
  closeSilentConnections(server, timeoutMs)
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return (server.address() as AddressInfo).port
}

interface Closing {
  socket: Socket
  /** When the connection closed, counted from `quietFrom()` of the caller; null: the hard stop closed it. */
  closed: Promise<number | null>
  /** Marks when the caller last sent a byte. */
  quietFrom: () => void
  /** Whether the hard stop closed it. */
  hardStopped: () => boolean
}

function open(port: number): Closing {
  const socket = connect({ port, host: '127.0.0.1' })
  socket.on('error', () => undefined)
  let quiet = performance.now()
  let hardStop = false
  const stop = setTimeout(() => {
    hardStop = true
    socket.destroy()
  }, HARD_STOP_MS)
  const closed = new Promise<number | null>((resolve) =>
    socket.on('close', () => {
      clearTimeout(stop)
      resolve(hardStop ? null : performance.now() - quiet)
    }),
  )
  return { socket, closed, quietFrom: () => (quiet = performance.now()), hardStopped: () => hardStop }
}

describe('closeSilentConnections', () => {
  it('closes a connection that sends nothing once the timeout has passed, not before', async () => {
    const port = await serve((_req, res) => res.end('ok'))
    const c = open(port)
    const after = await c.closed
    expect(after).not.toBeNull()
    expect(after as number).toBeGreaterThanOrEqual(TIMEOUT_MS)
  })

  it('keeps a connection open while its caller sends a byte within each timeout, and closes it once the bytes stop', async () => {
    const port = await serve((_req, res) => res.end('ok'), LONG_TIMEOUT_MS)
    const c = open(port)
    const head = 'GET / HTTP/1.1\r\nx-slow: '.padEnd(200, 'y')
    let sent = 0
    let closedEarly = false
    void c.closed.then(() => (closedEarly = sent < 12))
    // A byte every 250 ms for 3 s: past the timeout, never a pause near it.
    const sending = setInterval(() => {
      if (sent >= 12) {
        clearInterval(sending)
        return
      }
      c.socket.write(head[sent++] as string)
      c.quietFrom()
    }, 250)
    const after = await c.closed
    clearInterval(sending)
    expect(closedEarly).toBe(false)
    expect(sent).toBe(12)
    expect(after).not.toBeNull()
    expect(after as number).toBeGreaterThanOrEqual(LONG_TIMEOUT_MS)
  })

  it('closes a connection whose caller stopped reading an answer: what waits in the buffers is no traffic', async () => {
    let finished = false
    // Larger than what loopback's socket buffers take, so that the answer stalls.
    const body = Buffer.alloc(64 * 1024 * 1024, 120)
    let answered = 0
    const port = await serve((_req, res) => {
      res.on('finish', () => (finished = true))
      res.end(body)
      answered = performance.now()
    })
    // Seen from the server: the paused caller has unread bytes queued, so it would
    // notice the close only once it read them.
    const server = servers.at(-1) as Server
    const closedAt = new Promise<number>((resolve) => server.once('connection', (socket: Socket) => socket.once('close', () => resolve(performance.now()))))
    const c = open(port)
    c.socket.pause()
    c.socket.write('GET / HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n')
    const at = await closedAt
    expect(c.hardStopped()).toBe(false)
    expect(finished).toBe(false)
    expect((at as number) - answered).toBeGreaterThanOrEqual(TIMEOUT_MS)
    c.socket.destroy()
  })

  it('never closes a connection whose answer arrives as fast as its caller reads', async () => {
    const port = await serve((_req, res) => {
      // A slow answer: a chunk every 250 ms for 3 s.
      let n = 0
      const writing = setInterval(() => {
        if (++n > 12) {
          clearInterval(writing)
          res.end('done')
        } else res.write('x')
      }, 250)
    }, LONG_TIMEOUT_MS)
    const c = open(port)
    let answer = ''
    c.socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')))
    c.socket.write('GET / HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n')
    await expect.poll(() => answer.endsWith('done\r\n0\r\n\r\n'), { timeout: HARD_STOP_MS }).toBe(true)
    expect(c.socket.destroyed).toBe(false)
    c.socket.destroy()
  })
})

describe('server.connectionTimeout', () => {
  it('closes a silent connection on both listeners of the gateway', async () => {
    const sg = await startSandboxGateway({ yaml: `${TEAMS_YAML}\nserver: { connectionTimeout: ${TIMEOUT_MS}ms }\nplatform: { timeout: 300ms }\n` })
    try {
      await sg.gw.admin.listen({ host: '127.0.0.1', port: 0 })
      for (const port of [sg.port, (sg.gw.admin.server.address() as AddressInfo).port]) {
        const after = await open(port).closed
        expect(after).not.toBeNull()
        expect(after as number).toBeGreaterThanOrEqual(TIMEOUT_MS)
      }
    } finally {
      await sg.close()
    }
  })
})
