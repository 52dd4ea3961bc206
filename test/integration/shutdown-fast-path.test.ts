import { connect } from 'node:net'
import { afterAll, describe, expect, it } from 'vitest'
import { request } from 'undici'
import { connectionRefused, startSandboxGateway, KEYS, type SandboxGateway } from '../helpers/sandbox-gateway.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'

// A hit of a URL seen before is answered before Fastify's router; while the gateway
// closes it is answered as every other request is (once it was refused GW_SHUTTING_DOWN,
// a report the replica held included): as ever, with connection: close.

const REPORT = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-07&byDate=1'
const OTHER = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-02-01&dateTo=2026-02-07&byDate=1'
const THIRD = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-03-01&dateTo=2026-03-07&byDate=1'
// REPORT spelled anew: the same cache entry, a URL the fast path has not seen.
const SPELLED_ANEW = '/api/v1/report/campaigns/get?byDate=1&dateTo=2026-01-07&dateFrom=2026-01-01&advertiserId=101'


describe('a hit while the gateway closes', () => {
  let env: SandboxGateway | undefined
  afterAll(async () => {
    await env?.close().catch(() => undefined)
  })

  it('is answered with connection: close, with the fields of the router\'s answer of the same report then', async () => {
    env = await startSandboxGateway()
    const { sandbox, url } = env
    for (const cache of ['MISS', 'HIT']) {
      const res = await request(`${url}${REPORT}`, { headers: { 'x-api-key': KEYS.all } })
      await res.body.dump()
      expect(res.headers['x-cache']).toBe(cache)
    }
    // Two connections, each with a miss that waits at the platform; once the gateway
    // closes, one asks the hit (before the router) and the other the same report spelled
    // anew (the router's own read).
    sandbox.setLatency(400)
    const port = Number(new URL(url).port)
    const open = (miss: string) => {
      const socket = connect(port, '127.0.0.1')
      const conn = { socket, received: '', closed: new Promise<void>((resolve) => socket.once('close', () => resolve())) }
      socket.setEncoding('latin1').on('data', (chunk: string) => (conn.received += chunk))
      socket.on('error', () => undefined)
      socket.write(`GET ${miss} HTTP/1.1\r\nhost: x\r\nx-api-key: ${KEYS.all}\r\n\r\n`)
      return conn
    }
    const calls = sandbox.requests.length
    const hit = open(OTHER)
    const routed = open(THIRD)
    await waitFor('both misses at the platform', () => sandbox.requests.length >= calls + 2, testTimeLeft(), 10)
    const closing = env.close()
    env = undefined
    // Closing: the listener takes no new connection (after the preClose hooks ran).
    await waitFor('the listener closed', () => connectionRefused(port), testTimeLeft(), 10)
    hit.socket.write(`GET ${REPORT} HTTP/1.1\r\nhost: x\r\nx-api-key: ${KEYS.all}\r\nx-request-id: hit-while-closing\r\n\r\n`)
    routed.socket.write(`GET ${SPELLED_ANEW} HTTP/1.1\r\nhost: x\r\nx-api-key: ${KEYS.all}\r\nx-request-id: route-while-closing\r\n\r\n`)
    await Promise.all([hit.closed, routed.closed])
    await closing
    const answers = [hit, routed].map((conn, i) => {
      const [first, second] = conn.received.split(/(?=HTTP\/1\.1 )/) as [string, string]
      expect(conn.received.split(/(?=HTTP\/1\.1 )/)).toHaveLength(2)
      // The miss under way when the close began, then the request behind it on its connection.
      expect(first).toMatch(/^HTTP\/1\.1 200 /)
      expect(first.toLowerCase()).toContain('connection: keep-alive')
      expect(second).toMatch(/^HTTP\/1\.1 200 /)
      expect(second.toLowerCase()).toContain('connection: close')
      expect(second.toLowerCase()).toContain('x-cache: hit')
      expect(second).toContain(`x-request-id: ${i === 0 ? 'hit' : 'route'}-while-closing`)
      return second
    })
    const names = (answer: string) =>
      answer
        .slice(0, answer.indexOf('\r\n\r\n'))
        .split('\r\n')
        .slice(1)
        .map((l) => l.slice(0, l.indexOf(':')).toLowerCase())
        .sort()
    // The same answer, field for field, whichever entrance the request took.
    expect(names(answers[0] as string)).toEqual(names(answers[1] as string))
  })
})
