import { connect } from 'node:net'
import { describe, expect, it } from 'vitest'
import { KEYS, teamsYamlWith } from '../helpers/build-gateway.js'
import { useSandboxGatewayProcess } from '../helpers/fixtures.js'
import { timedRequest } from '../helpers/gateway-process.js'
import { waitFor } from '../helpers/wait.js'

// SIGTERM while calls hang at the platform, with a
// platform.timeout far longer than shutdownGrace. The process must answer them and exit 0
// within the grace plus a moment (in Kubernetes, what comes later is a SIGKILL), and a
// request arriving on a kept-alive connection meanwhile is answered, with
// connection: close.

const GRACE_MS = 2000
// main.ts: up to 2 s after the grace to answer aborted calls and exit; then a margin.
const AFTER_GRACE_MS = 2000
const MARGIN_MS = 1500
// A fixed limit (the learned one moves as it learns), below the calls started here.
const YAML = teamsYamlWith({ shutdownGrace: `${GRACE_MS}ms`, platform: { timeout: '20s', adaptive: false }, server: { connectionTimeout: '30s' } })

describe('shutdown within shutdownGrace (gateway process)', () => {
  const { sandbox, gw } = useSandboxGatewayProcess(YAML)

  it('aborts the calls still at the platform at the end of the grace, answers them GW_SHUTTING_DOWN and exits 0', async () => {
    // Counted from here: the gateway's start probe is not one of the calls below.
    sandbox.clearRequests()
    sandbox.setLatency(1000)
    sandbox.setFailure({ kind: 'hang', times: 3 })
    const hanging = [1, 2, 3].map((d) =>
      timedRequest(`${gw.url}/api/v1/report/campaigns/get?advertiserId=101&byDate=1&dateFrom=2026-01-01&dateTo=2026-01-0${d}`, { headers: { 'x-api-key': KEYS.all } }),
    )
    await waitFor('three calls at the platform', () => sandbox.countRequests() >= 3, 10_000)

    // A kept-alive connection with a proxied call in flight (1 s at the platform).
    const socket = connect(gw.port, '127.0.0.1')
    let received = ''
    socket.setEncoding('latin1').on('data', (chunk: string) => (received += chunk))
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
    socket.on('error', () => undefined)
    const body = '{"userId":101}'
    socket.write(`POST /api/v1/campaign/get HTTP/1.1\r\nhost: x\r\nx-api-key: ${KEYS.all}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`)
    await waitFor('the proxied call at the platform', () => sandbox.countRequests() >= 4, 10_000)

    const termAt = Date.now()
    gw.kill('SIGTERM')
    await new Promise((r) => setTimeout(r, 200))
    // The next request on that connection, while the gateway closes.
    socket.write(`GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n`)

    const answers = await Promise.all(hanging)
    const exit = await gw.exited
    await Promise.race([closed, new Promise((r) => setTimeout(r, 1000))])
    socket.destroy()

    expect(exit).toMatchObject({ code: 0, signal: null })
    expect(exit.at - termAt).toBeLessThan(GRACE_MS + AFTER_GRACE_MS + MARGIN_MS)
    for (const res of answers) {
      expect(res.status).toBe(503)
      expect(JSON.parse(res.body)).toEqual({ statusCode: 503, code: 'GW_SHUTTING_DOWN', error: 'Service Unavailable', message: expect.any(String) })
      expect(res.at - termAt).toBeGreaterThanOrEqual(GRACE_MS - 100)
      expect(res.at - termAt).toBeLessThan(GRACE_MS + MARGIN_MS)
    }
    // The call in flight finished; the request after it was answered, and the connection closed after it.
    const statuses = [...received.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]))
    expect(statuses).toEqual([200, 200])
    const last = received.slice(received.lastIndexOf('HTTP/1.1 200'))
    expect(last.toLowerCase()).toContain('connection: close')
    expect(last).toContain('"status":"ok"')
  })
})
