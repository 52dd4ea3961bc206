import { connect } from 'node:net'
import { afterAll, describe, expect, it } from 'vitest'
import { request } from 'undici'
import { startSandboxGateway, KEYS, type SandboxGateway } from '../helpers/sandbox-gateway.js'
import { waitFor } from '../helpers/wait.js'

// A hit of a URL seen before is answered before Fastify's router; while the gateway
// closes it must be refused as every other request is, not served.

const REPORT = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-07&byDate=1'
const OTHER = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-02-01&dateTo=2026-02-07&byDate=1'

/** Whether a new connection to `port` is refused. */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = connect(port, '127.0.0.1')
    probe.once('connect', () => {
      probe.destroy()
      resolve(false)
    })
    probe.once('error', () => resolve(true))
  })
}

describe('a hit while the gateway closes', () => {
  let env: SandboxGateway | undefined
  afterAll(async () => {
    await env?.close().catch(() => undefined)
  })

  it('is refused GW_SHUTTING_DOWN with connection: close, as the route refuses any request then', async () => {
    env = await startSandboxGateway()
    const { sandbox, url } = env
    for (const cache of ['MISS', 'HIT']) {
      const res = await request(`${url}${REPORT}`, { headers: { 'x-api-key': KEYS.all } })
      await res.body.dump()
      expect(res.headers['x-cache']).toBe(cache)
    }
    // Two requests on one connection: a miss that waits at the platform, then, once the
    // gateway closes, that hit.
    sandbox.setLatency(400)
    const port = Number(new URL(url).port)
    const socket = connect(port, '127.0.0.1')
    let received = ''
    socket.setEncoding('latin1').on('data', (chunk: string) => (received += chunk))
    socket.on('error', () => undefined)
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
    const calls = sandbox.requests.length
    socket.write(`GET ${OTHER} HTTP/1.1\r\nhost: x\r\nx-api-key: ${KEYS.all}\r\n\r\n`)
    await waitFor('the miss at the platform', () => sandbox.requests.length > calls, 5000, 10)
    const closing = env.close()
    env = undefined
    // Closing: the listener takes no new connection (after the preClose hooks ran).
    await waitFor('the listener closed', () => refused(port), 5000, 10)
    socket.write(`GET ${REPORT} HTTP/1.1\r\nhost: x\r\nx-api-key: ${KEYS.all}\r\nx-request-id: hit-while-closing\r\n\r\n`)
    await closed
    await closing
    const answers = received.split(/(?=HTTP\/1\.1 )/)
    expect(answers).toHaveLength(2)
    expect(answers[0]).toMatch(/^HTTP\/1\.1 200 /)
    expect(answers[1]).toMatch(/^HTTP\/1\.1 503 /)
    expect(answers[1]?.toLowerCase()).toContain('connection: close')
    expect(answers[1]).toContain('x-request-id: hit-while-closing')
    expect(answers[1]).toContain('GW_SHUTTING_DOWN')
  })
})
