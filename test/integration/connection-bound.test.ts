import { connect, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { TEAMS_YAML, buildGateway, closeAfterTest, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useSandbox } from '../helpers/fixtures.js'
import { waitFor } from '../helpers/wait.js'

// Each listener holds at most its bound of open connections (server.maxConnections for
// the proxy's, admin.maxConnections for the admin's): an idle kept-alive socket costs the
// replica about 12 KiB (docs/decisions/connection-bound.md), so callers that open sockets
// and keep them idle could otherwise fill its memory. A connection past the bound is
// closed at once, unanswered; it is counted (gateway_connections_refused_total) and said
// in one warn line a minute. Real sockets on 127.0.0.1.

const sandbox = useSandbox()
let gw: TestGateway | null = null

afterEach(async () => {
  if (gw) await closeAfterTest(gw)
  gw = null
})

interface Caller {
  socket: Socket
  received: string
  closed: Promise<void>
}

/** A connection to `port` that asks `GET /healthz` and is answered (kept alive), or, past the bound, is closed unanswered. */
function call(port: number): Caller {
  const socket = connect(port, '127.0.0.1')
  const caller: Caller = { socket, received: '', closed: new Promise((resolve) => socket.once('close', () => resolve())) }
  socket.setEncoding('latin1').on('data', (chunk: string) => (caller.received += chunk))
  socket.on('error', () => undefined)
  socket.write('GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n')
  return caller
}

const answered = (c: Caller) => /^HTTP\/1\.1 200 [\s\S]*\r\n\r\n/.test(c.received)

async function refusedCount(listener: string): Promise<number> {
  const metrics = (await gw!.admin.inject({ method: 'GET', url: '/metrics' })).body
  return Number(new RegExp(`^gateway_connections_refused_total\\{listener="${listener}"\\} (\\d+)`, 'm').exec(metrics)?.[1] ?? 0)
}

const warnLines = () => gw!.logs.records().filter((r) => r.level === 40 && String(r.msg).startsWith('connections refused'))

describe('a listener\'s bound on open connections', () => {
  it('holds server.maxConnections on the proxy listener: the next connection is closed unanswered, counted, and said once', async () => {
    gw = await buildGateway(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }, `${TEAMS_YAML}server:\n  maxConnections: 3\n`))
    await gw.proxy.listen({ host: '127.0.0.1', port: 0 })
    const { port } = gw.proxy.server.address() as AddressInfo
    const held = [call(port), call(port), call(port)]
    await waitFor('three answers kept alive', () => held.every(answered))
    const past = [call(port), call(port)]
    await Promise.all(past.map((c) => c.closed))
    expect(past.map((c) => c.received)).toEqual(['', ''])
    expect(await refusedCount('proxy')).toBe(2)
    expect(warnLines()).toHaveLength(1)
    expect(warnLines()[0]).toMatchObject({ listener: 'proxy', maxConnections: 3, refused: 1 })
    // One held connection closed: the next is taken and answered.
    held[0]!.socket.destroy()
    await waitFor('the proxy listener to hold two connections', () => new Promise((resolve) => gw!.proxy.server.getConnections((_err, n) => resolve(n === 2))))
    const next = call(port)
    await waitFor('an answer after a connection closed', () => answered(next))
    for (const c of [...held, next]) c.socket.destroy()
  })

  it('holds admin.maxConnections on the admin listener, apart from the proxy\'s', async () => {
    gw = await buildGateway(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }, `${TEAMS_YAML}admin:\n  maxConnections: 2\n`))
    await gw.admin.listen({ host: '127.0.0.1', port: 0 })
    const { port } = gw.admin.server.address() as AddressInfo
    const held = [call(port), call(port)]
    await waitFor('two answers kept alive', () => held.every(answered))
    const past = call(port)
    await past.closed
    expect(past.received).toBe('')
    expect(await refusedCount('admin')).toBe(1)
    expect(await refusedCount('proxy')).toBe(0)
    expect(warnLines()).toHaveLength(1)
    expect(warnLines()[0]).toMatchObject({ listener: 'admin', maxConnections: 2, refused: 1 })
    for (const c of held) c.socket.destroy()
  })

  it('holds 4096 connections on the proxy listener and 128 on the admin\'s by default', async () => {
    gw = await buildGateway(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }))
    expect(gw.proxy.server.maxConnections).toBe(4096)
    expect(gw.admin.server.maxConnections).toBe(128)
  })
})
