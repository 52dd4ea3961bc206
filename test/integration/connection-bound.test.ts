import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { KEYS, TEAMS_YAML, buildGateway, closeAfterTest, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useSandbox } from '../helpers/fixtures.js'
import { waitFor } from '../helpers/wait.js'
import { closedAtBound, rawConnection, type RawConnection } from '../helpers/raw-connections.js'
import type { ClosedAtBound } from '../../src/http/connection-bound.js'

// Each listener holds at most its bound of open connections (server.maxConnections for
// the proxy's, admin.maxConnections for the admin's, fewer where the open-file limit
// leaves fewer): an idle kept-alive socket costs the replica about 12 KiB
// (docs/decisions/connection-bound.md), so callers that open sockets and keep them idle
// could otherwise fill its memory. A connection past the bound closes the longest silent
// connections with no answer under way, or itself when every one has an answer under way;
// each is counted (gateway_connections_closed_at_bound_total{listener,which}) and said in
// one warn line a minute. Real sockets on 127.0.0.1.

const sandbox = useSandbox()
let gw: TestGateway | null = null

afterEach(async () => {
  if (gw) await closeAfterTest(gw)
  gw = null
})

const HEALTHZ = 'GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n'
const call = (port: number, head = HEALTHZ) => rawConnection(port, head)

const answered = (c: RawConnection) => /^HTTP\/1\.1 200 [\s\S]*\r\n\r\n/.test(c.received)

const closedCount = async (listener: 'proxy' | 'admin', which: ClosedAtBound) => (await closedAtBound(gw!.admin, listener))[which]

const warnLines = () => gw!.logs.records().filter((r) => r.level === 40 && String(r.msg).startsWith('connections closed at the bound'))

describe('a listener\'s bound on open connections', () => {
  it('holds server.maxConnections on the proxy listener: a connection past it closes the longest silent idle one and is answered; counted and said once', async () => {
    gw = await buildGateway(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }, `${TEAMS_YAML}server:\n  maxConnections: 3\n`))
    await gw.proxy.listen({ host: '127.0.0.1', port: 0 })
    const { port } = gw.proxy.server.address() as AddressInfo
    const held: RawConnection[] = []
    // One at a time, so that the first is the longest silent.
    for (let i = 0; i < 3; i++) {
      const c = call(port)
      held.push(c)
      await waitFor(`answer ${i + 1} kept alive`, () => answered(c))
    }
    const past = [call(port), call(port)]
    await waitFor('both connections past the bound answered', () => past.every(answered))
    await Promise.all([held[0]!.closed, held[1]!.closed])
    expect(held[2]!.isClosed()).toBe(false)
    expect(await closedCount('proxy', 'idle')).toBe(2)
    expect(await closedCount('proxy', 'new')).toBe(0)
    expect(warnLines()).toHaveLength(1)
    expect(warnLines()[0]).toMatchObject({ listener: 'proxy', maxConnections: 3, closedIdle: 1, closedNew: 0 })
    for (const c of [...held, ...past]) c.socket.destroy()
  })

  it('closes the new connection unanswered when every connection has an answer under way and no team holds more than its part, and answers them', async () => {
    gw = await buildGateway(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }, `${TEAMS_YAML}server:\n  maxConnections: 2\n`))
    await gw.proxy.listen({ host: '127.0.0.1', port: 0 })
    const { port } = gw.proxy.server.address() as AddressInfo
    sandbox.setFailure({ kind: 'held' })
    // Two teams, one call each: neither holds more than its part of the bound (one of two, with the newcomer's team).
    const report = (key: string, dates: string) => `GET /api/v1/report/campaigns/get?advertiserId=101&${dates} HTTP/1.1\r\nhost: x\r\nx-api-key: ${key}\r\n\r\n`
    const waiting = [call(port, report(KEYS.all, 'dateFrom=2026-01-01&dateTo=2026-01-07')), call(port, report(KEYS.writer, 'dateFrom=2026-01-08&dateTo=2026-01-14'))]
    await waitFor('both calls at the platform', () => sandbox.requests.length >= 2)
    const past = call(port)
    await past.closed
    expect(past.received).toBe('')
    expect(waiting.some((c) => c.isClosed())).toBe(false)
    expect(await closedCount('proxy', 'new')).toBe(1)
    expect(await closedCount('proxy', 'idle')).toBe(0)
    expect(await closedCount('proxy', 'busy')).toBe(0)
    expect(warnLines()[0]).toMatchObject({ listener: 'proxy', maxConnections: 2, closedIdle: 0, closedBusy: 0, closedNew: 1 })
    sandbox.setFailure({ kind: 'none' })
    sandbox.releaseHeld()
    await waitFor('both held calls answered', () => waiting.every(answered))
    for (const c of waiting) c.socket.destroy()
  })

  it('shows each listener\'s bound in force on /metrics (gateway_connections_bound), the admin\'s its own', async () => {
    gw = await buildGateway(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }, `${TEAMS_YAML}server:\n  maxConnections: 7\nadmin:\n  maxConnections: 5\n`))
    const metrics = (await gw.admin.inject({ method: 'GET', url: '/metrics' })).body
    expect(metrics).toMatch(/^gateway_connections_bound\{listener="proxy"\} 7$/m)
    expect(metrics).toMatch(/^gateway_connections_bound\{listener="admin"\} 5$/m)
  })

  it('holds admin.maxConnections on the admin listener, apart from the proxy\'s', async () => {
    gw = await buildGateway(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }, `${TEAMS_YAML}admin:\n  maxConnections: 2\n`))
    await gw.admin.listen({ host: '127.0.0.1', port: 0 })
    const { port } = gw.admin.server.address() as AddressInfo
    const first = call(port)
    await waitFor('the first answer kept alive', () => answered(first))
    const second = call(port)
    await waitFor('the second answer kept alive', () => answered(second))
    const past = call(port)
    await waitFor('the connection past the bound answered', () => answered(past))
    await first.closed
    expect(second.isClosed()).toBe(false)
    expect(await closedCount('admin', 'idle')).toBe(1)
    expect(await closedCount('proxy', 'idle')).toBe(0)
    expect(warnLines()).toHaveLength(1)
    expect(warnLines()[0]).toMatchObject({ listener: 'admin', maxConnections: 2, closedIdle: 1, closedNew: 0 })
    for (const c of [second, past]) c.socket.destroy()
  })
})
