import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { KEYS, TEAMS_YAML, buildGateway, closeAfterTest, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useSandbox } from '../helpers/fixtures.js'
import { waitFor } from '../helpers/wait.js'
import { answeredWith, closedAtBound, destroyRawConnections, rawConnection, type RawConnection } from '../helpers/raw-connections.js'

// One team's answers under way at a full listener. A team with a valid key opens the
// listener's bound of connections, each asking a report whose answer it never reads (or
// whose platform call is held): each connection has an answer under way, which the bound
// never used to close, so every other team's new connection was closed unanswered. At a
// full listener with none idle, the team holding the most answers under way, past its
// part of the bound, has its longest silent connections closed instead (counted as
// `which="busy"`). Real sockets on 127.0.0.1, a bound of 64.

const BOUND = 64
const ROOM = BOUND / 8
const sandbox = useSandbox()
let gw: TestGateway | null = null

afterEach(async () => {
  sandbox.setFailure({ kind: 'none' })
  sandbox.releaseHeld()
  destroyRawConnections()
  if (gw) await closeAfterTest(gw)
  gw = null
})

const report = (key: string, dates: string) => `GET /api/v1/report/campaigns/get?advertiserId=101&${dates} HTTP/1.1\r\nhost: x\r\nx-api-key: ${key}\r\n\r\n`
const week = (i: number) => `dateFrom=2025-01-01&dateTo=2025-${String(1 + Math.floor(i / 28)).padStart(2, '0')}-${String(1 + (i % 28)).padStart(2, '0')}`
const answered = (c: RawConnection) => answeredWith(c)
const call = (port: number, head: string, read = true) => rawConnection(port, head, { read, keep: 4096 })

/** The value of a series of /metrics. */
async function series(name: string, labels: string): Promise<number> {
  const metrics = (await gw!.admin.inject({ method: 'GET', url: '/metrics' })).body
  const line = new RegExp(`^${name}\\{${labels}\\} (\\d+)`, 'm').exec(metrics)
  if (line === null) throw new Error(`no series ${name}{${labels}}`)
  return Number(line[1])
}

describe('one team\'s answers under way at a full listener', () => {
  it(`(${BOUND} connections of one team, each a 6 MB cached report it stops reading) hold no other team out: ${ROOM} of the team's are closed, and the other team's connection is answered`, async () => {
    gw = await buildGateway(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }, `${TEAMS_YAML}server:\n  maxConnections: ${BOUND}\n`))
    await gw.proxy.listen({ host: '127.0.0.1', port: 0 })
    const { port } = gw.proxy.server.address() as AddressInfo
    // The report, cached: a copy of about 6 MB, sent plain (no accept-encoding), far past what the kernel's buffers take.
    sandbox.setFailure({ kind: 'large', bytes: 6_000_000, times: 1 })
    const warm = call(port, report(KEYS.growth, week(0)))
    await waitFor('the report cached', () => answered(warm) && warm.received.includes('x-cache: MISS'))
    warm.socket.destroy()
    const held: RawConnection[] = []
    for (let i = 0; i < BOUND; i++) held.push(call(port, report(KEYS.growth, week(0)), false))
    await Promise.all(held.map((c) => c.firstData))
    expect(held.filter(answered)).toHaveLength(BOUND)

    const other = call(port, report(KEYS.writer, week(1)))
    await waitFor('the other team\'s answer, or its connection closed', () => answered(other) || other.isClosed())
    expect(answered(other)).toBe(true)
    // The team's connections cut were closed by the gateway: a caller that reads nothing does not see it yet.
    expect(await closedAtBound(gw.admin, 'proxy')).toEqual({ idle: 0, busy: ROOM, new: 0 })
  }, 30_000)

  it(`(${BOUND} platform calls of one team held) hold no other team out, through the router's entrance`, async () => {
    gw = await buildGateway(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }, `${TEAMS_YAML}server:\n  maxConnections: ${BOUND}\nplatform:\n  queueTimeout: 5m\n`))
    await gw.proxy.listen({ host: '127.0.0.1', port: 0 })
    const { port } = gw.proxy.server.address() as AddressInfo
    sandbox.setFailure({ kind: 'held' })
    const held: RawConnection[] = []
    for (let i = 0; i < BOUND; i++) held.push(call(port, report(KEYS.growth, week(i))))
    const platformCalls = async () => (await series('gateway_platform_queued_calls', 'credential="default"')) + (await series('gateway_platform_in_flight_calls', 'credential="default"'))
    await waitFor('the team\'s calls at the platform or waiting for a seat', async () => (await platformCalls()) === BOUND)
    const other = call(port, report(KEYS.writer, week(BOUND + 1)))
    await waitFor('the other team\'s connection kept or closed', () => other.isClosed() || held.filter((c) => c.isClosed()).length >= ROOM)
    expect(other.isClosed()).toBe(false)
    expect(held.filter((c) => c.isClosed())).toHaveLength(ROOM)
    expect((await closedAtBound(gw.admin, 'proxy')).busy).toBe(ROOM)
    sandbox.setFailure({ kind: 'none' })
    sandbox.releaseHeld()
    await waitFor('the other team\'s answer', () => answered(other))
  }, 30_000)

  // Behind a balancer that keeps connections to the gateway and sends any team's request on
  // any of them, one connection carries several teams' answers, pipelined: the answer under
  // way is the first one's, whichever team's request was admitted on it last. Here team B
  // (writer) holds 4 connections of its own (the longest silent), team A (growth) 28, and
  // 32 carry A's report then B's, pipelined: A's answers are under way on 60 connections,
  // B's on 4. A newcomer at the full listener has A's longest silent cut, none of B's own.
  it(`(a connection carrying two teams' pipelined answers) is charged to the team whose answer it is writing, not to the team admitted on it last`, async () => {
    gw = await buildGateway(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }, `${TEAMS_YAML}server:\n  maxConnections: ${BOUND}\nplatform:\n  queueTimeout: 5m\n`))
    await gw.proxy.listen({ host: '127.0.0.1', port: 0 })
    const { port } = gw.proxy.server.address() as AddressInfo
    sandbox.setFailure({ kind: 'held' })
    const platformCalls = async () => (await series('gateway_platform_queued_calls', 'credential="default"')) + (await series('gateway_platform_in_flight_calls', 'credential="default"'))
    const own = Array.from({ length: 4 }, (_, i) => call(port, report(KEYS.writer, week(i))))
    const a = Array.from({ length: 28 }, (_, i) => call(port, report(KEYS.growth, week(4 + i))))
    await waitFor('the teams\' own calls at the platform or waiting for a seat', async () => (await platformCalls()) === 32)
    const shared = Array.from({ length: 32 }, (_, i) => call(port, report(KEYS.growth, week(32 + i)) + report(KEYS.writer, week(64 + i))))
    await waitFor('every call at the platform or waiting for a seat', async () => (await platformCalls()) === 96)
    const newcomer = call(port, report(KEYS.all, week(100)))
    await waitFor('connections closed at the bound', () => [...own, ...a, ...shared].filter((c) => c.isClosed()).length >= ROOM)
    expect(newcomer.isClosed()).toBe(false)
    expect([own, a, shared].map((conns) => conns.filter((c) => c.isClosed()).length)).toEqual([0, ROOM, 0])
    expect((await closedAtBound(gw.admin, 'proxy')).busy).toBe(ROOM)
  }, 30_000)
})
