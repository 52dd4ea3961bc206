import { connect, type AddressInfo } from 'node:net'
import { beforeAll, describe, expect, it } from 'vitest'
import { KEYS, TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import { ADMIN_TOKEN, itLoggedNoSecret, useAttackGateway } from './attack-gateway.js'

// Every read from a caller has a deadline, on both listeners. Short
// deadlines here so that each is reached within the test; every socket has a hard stop,
// so a gateway that never cuts it off fails rather than hangs.

const BODY_TIMEOUT_MS = 300
const HEADERS_TIMEOUT_MS = 1500
const KEEP_ALIVE_MS = 800
const HARD_STOP_MS = 15_000
const sg = useAttackGateway({
  yaml: `${TEAMS_YAML}\nserver: { requestTimeout: 20s, headersTimeout: ${HEADERS_TIMEOUT_MS}ms, keepAliveTimeout: ${KEEP_ALIVE_MS}ms }\nlimits: { bodyTimeout: ${BODY_TIMEOUT_MS}ms }\n`,
})

let adminPort = 0
beforeAll(async () => {
  await sg.gw.admin.listen({ host: '127.0.0.1', port: 0 })
  adminPort = (sg.gw.admin.server.address() as AddressInfo).port
})

interface Exchange {
  answer: string
  /** The connection closed before the hard stop: the gateway closed it, not only its side of it. */
  closedByGateway: boolean
}

/**
 * Writes `head`, then one byte of `rest` every 50 ms, from a client that keeps its side
 * open after the gateway's FIN while it still has bytes to send (as a hostile one would):
 * the connection ends only when the gateway drops it. With nothing left to send, the
 * client closes its side on the gateway's FIN, as any client does.
 */
function trickle(port: number, head: string, rest: string): Promise<Exchange> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true })
    const chunks: Buffer[] = []
    let hardStop = false
    let sent = 0
    const timer = setInterval(() => {
      if (sent < rest.length && socket.writable) socket.write(rest[sent++] as string)
    }, 50)
    const stop = setTimeout(() => {
      hardStop = true
      socket.destroy()
    }, HARD_STOP_MS)
    socket.on('data', (chunk: Buffer) => chunks.push(chunk))
    socket.on('end', () => {
      if (sent >= rest.length) socket.end()
    })
    socket.on('error', () => undefined)
    socket.on('close', () => {
      clearInterval(timer)
      clearTimeout(stop)
      resolve({ answer: Buffer.concat(chunks).toString('latin1'), closedByGateway: !hardStop })
    })
    socket.write(head)
  })
}

describe('a body that trickles in', () => {
  const head = (path: string, auth: string, length: number, method = 'POST') =>
    `${method} ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\n${auth}\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\n\r\n`

  it('is answered 408 GW_REQUEST_TIMEOUT after limits.bodyTimeout on the proxy listener, and its connection closed', async () => {
    const res = await trickle(sg.port, head('/api/v1/campaign/get', `x-api-key: ${KEYS.growth}`, 100_000), '{"userId":101,"pad":"'.padEnd(2000, 'x'))
    expect(res.answer).toMatch(/^HTTP\/1\.1 408 /)
    expect(res.answer).toContain('GW_REQUEST_TIMEOUT')
    expect(res.closedByGateway).toBe(true)
    expect(sg.callerRequests()).toEqual([])
  })

  it('and on the admin listener', async () => {
    // A call that takes a body (one that takes none is refused before its body is read),
    // declared within the admin listener's 64 KiB (a larger one is 413 before it is read).
    const res = await trickle(adminPort, head('/admin/token', `authorization: Bearer ${ADMIN_TOKEN}`, 60_000, 'PUT'), '{"token":"'.padEnd(2000, 'x'))
    expect(res.answer).toMatch(/^HTTP\/1\.1 408 /)
    expect(res.answer).toContain('GW_REQUEST_TIMEOUT')
    expect(res.closedByGateway).toBe(true)
  })

  it('a call refused before its body was read still has its connection closed when the rest does not come', async () => {
    const res = await trickle(sg.port, head('/api/v1/campaign/get', 'x-api-key: rgw_not_a_key_0000000000000000000000', 100_000), '{"userId":101,"pad":"'.padEnd(2000, 'x'))
    expect(res.answer).toMatch(/^HTTP\/1\.1 401 /)
    expect(res.closedByGateway).toBe(true)
  })
})

// A large body at loopback speed, against the deadline as configured by default (30 s): the
// 300 ms above is for bodies that trickle, and a loaded machine may take longer to read 900 KiB.
describe('a large body at normal speed', () => {
  const normal = useAttackGateway({ yaml: TEAMS_YAML })

  it('is not cut by limits.bodyTimeout', async () => {
    const body = JSON.stringify({ userId: 101, pad: 'x'.repeat(900 * 1024) })
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${normal.url}/api/v1/campaign/get`, { method: 'POST', headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json' }, body })
      await res.text()
      expect(res.status).not.toBe(408)
      expect(res.status).toBeLessThan(500)
    }
  })
})

// Each waits on its own socket for a deadline of the gateway: they wait side by side.
describe.concurrent('connections held open by a caller', () => {
  describe('headers that trickle in', () => {
    for (const listener of ['proxy', 'admin'] as const) {
      it(`are cut off after server.headersTimeout on the ${listener} listener`, async () => {
        const port = listener === 'proxy' ? sg.port : adminPort
        const res = await trickle(port, 'GET /healthz HTTP/1.1\r\n', 'x-slow: '.padEnd(2000, 'y'))
        expect(res.closedByGateway).toBe(true)
        if (res.answer !== '') expect(res.answer).toMatch(/^HTTP\/1\.1 408 /)
      })
    }
  })

  describe('an idle kept-alive connection', () => {
    for (const listener of ['proxy', 'admin'] as const) {
      it(`is closed by the ${listener} listener after server.keepAliveTimeout`, async () => {
        const port = listener === 'proxy' ? sg.port : adminPort
        expect((listener === 'proxy' ? sg.gw.proxy : sg.gw.admin).server.keepAliveTimeout).toBe(KEEP_ALIVE_MS)
        const res = await trickle(port, 'GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n', '')
        expect(res.answer).toMatch(/^HTTP\/1\.1 200 /)
        expect(res.closedByGateway).toBe(true)
      })
    }
  })
})

itLoggedNoSecret(sg)
