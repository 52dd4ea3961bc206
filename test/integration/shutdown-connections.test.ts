import { connect } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { Agent, request } from 'undici'
import { KEYS, buildGateway, listen, testConfig } from '../helpers/build-gateway.js'
import { useSandbox } from '../helpers/fixtures.js'
import { waitFor } from '../helpers/wait.js'
import { connectionRefused } from '../helpers/sandbox-gateway.js'

// A replica told to stop answers what comes on the connections it has, with
// `connection: close` (it refused GW_SHUTTING_DOWN, a report it held included), and
// closes once its requests in flight are answered, not at the end of its grace: a caller
// that sends nothing more after SIGTERM (a load balancer that took the replica out) kept
// each connection that was answering open and idle, so every restart took the whole
// shutdownGrace (10 s, seen in a chaos soak) instead of a moment.

const sandbox = useSandbox()

const REPORT = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-06-01&dateTo=2026-06-07'

describe('closing with answers in flight on kept-alive connections', () => {
  it('answers them and is closed soon after, with nothing more sent', async () => {
    const gw = await listen(await buildGateway(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() })))
    const agent = new Agent({ keepAliveTimeout: 60_000 })
    try {
      // The connection is kept alive (an answer before), then one answer is in flight.
      const first = await request(`${gw.url}/healthz`, { dispatcher: agent })
      await first.body.dump()
      sandbox.setLatency(600)
      const inFlight = request(`${gw.url}${REPORT}`, { headers: { 'x-api-key': KEYS.all }, dispatcher: agent })
      await waitFor('the call at the platform', () => sandbox.countRequests((r) => r.path === '/api/v1/report/campaigns/get') === 1)
      let closed = false
      const closing = gw.close().then(() => (closed = true))
      const answer = await inFlight
      await answer.body.dump()
      expect(answer.statusCode).toBe(200)
      // The caller's next request goes to another replica.
      expect(answer.headers.connection).toBe('close')
      // Closed once the answer is out, not at keepAliveTimeout (72 s, longer than the test).
      await waitFor('the close to end', () => closed)
      await closing
    } finally {
      await gw.close()
      await agent.close().catch(() => undefined)
      await sleep(0)
    }
  })
})

describe('closing with kept-alive connections idle', () => {
  it('answers the next request on one, with connection: close, and closes one that stays idle a moment later', async () => {
    const gw = await listen(await buildGateway(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() })))
    const open = async () => {
      const socket = connect(gw.port, '127.0.0.1')
      const conn = { socket, received: '', closed: new Promise<void>((resolve) => socket.once('close', () => resolve())) }
      socket.setEncoding('latin1').on('data', (chunk: string) => (conn.received += chunk))
      socket.on('error', () => undefined)
      socket.write(`GET ${REPORT} HTTP/1.1\r\nhost: x\r\nx-api-key: ${KEYS.all}\r\n\r\n`)
      await waitFor('the answer on the connection', () => /\r\n\r\n/.test(conn.received) && conn.received.includes('"data"'))
      return conn
    }
    try {
      // Two connections kept alive after an answer each, idle as the close begins.
      const [asking, silent] = [await open(), await open()]
      let closed = false
      const closing = gw.close().then(() => (closed = true))
      // Closing: the listener takes no new connection (after the preClose hooks ran).
      await waitFor('the listener to refuse connections', () => connectionRefused(gw.port))
      asking.socket.write(`GET ${REPORT} HTTP/1.1\r\nhost: x\r\nx-api-key: ${KEYS.all}\r\n\r\n`)
      await asking.closed
      const answers = asking.received.split(/(?=HTTP\/1\.1 )/)
      expect(answers).toHaveLength(2)
      expect(answers[1]).toMatch(/^HTTP\/1\.1 200 /)
      expect(answers[1]?.toLowerCase()).toContain('connection: close')
      expect(answers[1]?.toLowerCase()).toContain('x-cache: hit')
      // The silent one is closed by the gateway, and the close ends (not at keepAliveTimeout, 72 s).
      await silent.closed
      await waitFor('the close to end', () => closed)
      await closing
    } finally {
      await gw.close()
    }
  })
})
