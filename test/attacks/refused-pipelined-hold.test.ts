import { connect, type Socket } from 'node:net'
import { describe, expect, it, onTestFinished } from 'vitest'
import { TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import { waitFor } from '../helpers/wait.js'
import { itLoggedNoSecret, useAttackGateway } from './attack-gateway.js'

// A request refused behind pipelined requests (a head the parser refuses, or one not read
// whole within server.headersTimeout) is answered after their answers (RFC 9112, 9.3.2).
// A caller that reads none of those answers and keeps sending bytes moves its connection
// for as long as it sends, and its request timeout is spent: the wait for the answers ahead
// ends with the connection cut server.connectionTimeout after the refusal. Short deadlines,
// so each is reached within the test.

const CONNECTION_TIMEOUT_MS = 1500
const sg = useAttackGateway({
  yaml: `${TEAMS_YAML}\nserver: { connectionTimeout: ${CONNECTION_TIMEOUT_MS}ms, headersTimeout: 1000ms }\nplatform: { timeout: 300ms }\n`,
})

// The API's description, read by Node's parser (two spaces before the host: not a plain head
// the entrance reads itself), each a few hundred KB: together more than the kernel's buffers hold.
const DESCRIPTION = 'GET /openapi.json HTTP/1.1\r\nhost:  127.0.0.1\r\n\r\n'
const AHEAD = DESCRIPTION.repeat(80)

/**
 * A connection that sends `bytes`, reads nothing, and sends one more byte every 200 ms:
 * whether the gateway closed it. The running test destroys it when it finishes.
 */
function unreadTrickling(bytes: string): { closed: () => boolean } {
  const socket: Socket = connect(sg.port, '127.0.0.1')
  onTestFinished(() => { socket.destroy() })
  let closed = false
  socket.on('error', () => undefined)
  socket.on('close', () => (closed = true))
  socket.pause()
  socket.write(bytes)
  const trickle = setInterval(() => {
    if (closed) clearInterval(trickle)
    else socket.write('x')
  }, 200)
  socket.on('close', () => clearInterval(trickle))
  return { closed: () => closed }
}

// Each waits on its own connection for the gateway's deadlines: they wait side by side.
describe.concurrent('a request refused behind unread pipelined answers', () => {
  it('does not hold its connection for a caller that keeps sending bytes after a head the parser refused', async () => {
    const conn = unreadTrickling(`${AHEAD}FOO / HTTP/1.1\r\n`)
    await waitFor('the gateway to close the connection', conn.closed)
    expect(conn.closed()).toBe(true)
  })

  it('does not hold its connection for a caller that keeps sending a head past server.headersTimeout', async () => {
    const conn = unreadTrickling(`${AHEAD}GET /api/v1/jobs HTTP/1.1\r\nhost: 127.0.0.1\r\n`)
    await waitFor('the gateway to close the connection', conn.closed)
    expect(conn.closed()).toBe(true)
  })
})

itLoggedNoSecret(sg)
