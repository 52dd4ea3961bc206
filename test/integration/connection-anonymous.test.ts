import type { AddressInfo, Socket } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { KEYS, TEAMS_YAML, buildGateway, closeAfterTest, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useSandbox } from '../helpers/fixtures.js'
import { waitFor } from '../helpers/wait.js'
import { answeredWith, closedAtBound, destroyRawConnections, rawConnection } from '../helpers/raw-connections.js'

// Callers with no key at a full listener. A slowloris (a head sent a byte at a time) and a
// body sent slowly after a head with no key have no answer under way (the head is not
// whole; the 401 is written before a byte of the body is read), so the bound closes them
// to make room like any idle connection: a team's new connection is answered however many
// of them fill the listener. A body sent slowly with a team's key is that team's answer
// under way, cut at a full listener as the team's (connection-teams.test.ts). Answers
// asked with no key and never read (the API's description, pipelined) are answers under
// way of no team: those connections count as one team, cut as a team's past its part.
// And a head sent a byte at a time does not outlive server.headersTimeout, however steady
// its bytes. Real sockets on 127.0.0.1, a bound of 8; counts, not times.

const BOUND = 8
// Answers asked at once on one connection: more than the kernel's buffers of a loopback connection take (3.2 MB of 12 such answers taken on each, measured).
const PIPELINED = 24
const sandbox = useSandbox()
let gw: TestGateway | null = null

afterEach(async () => {
  destroyRawConnections()
  if (gw) await closeAfterTest(gw)
  gw = null
})

const open = (port: number, bytes: string) => rawConnection(port, bytes)

const REPORT = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-07'
const teamCall = (key: string) => `GET ${REPORT} HTTP/1.1\r\nhost: x\r\nx-api-key: ${key}\r\n\r\n`
const answered = answeredWith
const closed = () => closedAtBound(gw!.admin, 'proxy')

async function listening(yaml = ''): Promise<number> {
  gw = await buildGateway(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }, `${TEAMS_YAML}server:\n  maxConnections: ${BOUND}\n${yaml}`))
  await gw.proxy.listen({ host: '127.0.0.1', port: 0 })
  return (gw.proxy.server.address() as AddressInfo).port
}

/** Gives each caller's byte count a look of the gateway's to see it move (one event-loop turn each way). */
const settle = () => new Promise((resolve) => setTimeout(resolve, 20))

describe('callers with no key at a full listener', () => {
  it(`(${BOUND} heads sent a byte at a time) hold no team out: one of them is closed as idle, the team is answered`, async () => {
    const port = await listening()
    const head = teamCall(KEYS.growth)
    const slow = Array.from({ length: BOUND }, () => open(port, head.slice(0, 10)))
    await settle()
    // Each sends one byte more, after the gateway took the first ones: none is the longest silent by much.
    for (const c of slow) c.socket.write(head.slice(10, 11))
    await settle()
    const team = open(port, teamCall(KEYS.writer))
    await waitFor('the team answered, or closed', () => answered(team) || team.isClosed())
    expect(answered(team)).toBe(true)
    await waitFor('a slow head closed', () => slow.some((c) => c.isClosed()))
    expect(slow.filter((c) => c.isClosed())).toHaveLength(1)
    expect(await closed()).toEqual({ idle: 1, busy: 0, new: 0 })
  })

  it(`(${BOUND} bodies sent slowly after a head with no key) are answered 401 at once and hold no team out`, async () => {
    const port = await listening()
    const post = `POST /api/v1/report/campaigns/get HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 60000\r\n\r\n{"advertiserId":`
    const slow = Array.from({ length: BOUND }, () => open(port, post))
    await waitFor('each answered 401', () => slow.every((c) => answered(c, 401)))
    for (const c of slow) c.socket.write('1')
    await settle()
    const team = open(port, teamCall(KEYS.writer))
    await waitFor('the team answered, or closed', () => answered(team) || team.isClosed())
    expect(answered(team)).toBe(true)
    expect(await closed()).toEqual({ idle: 1, busy: 0, new: 0 })
  })

  it(`(${BOUND} bodies sent slowly with a team's key) are that team's answers under way: one is cut for another team's connection`, async () => {
    const port = await listening()
    // `expect: 100-continue`: the gateway invites the body once it admitted the call, which says its head was read.
    const post = `POST /api/v1/report/campaigns/get HTTP/1.1\r\nhost: x\r\nx-api-key: ${KEYS.growth}\r\ncontent-type: application/json\r\ncontent-length: 60000\r\nexpect: 100-continue\r\n\r\n`
    const slow = Array.from({ length: BOUND }, () => open(port, post))
    await waitFor('each body invited', () => slow.every((c) => answered(c, 100)))
    for (const c of slow) c.socket.write('{"advertiserId":')
    const team = open(port, teamCall(KEYS.writer))
    await waitFor('the team answered, or closed', () => answered(team) || team.isClosed())
    expect(answered(team)).toBe(true)
    expect(slow.filter((c) => c.isClosed())).toHaveLength(1)
    expect(await closed()).toEqual({ idle: 0, busy: 1, new: 0 })
  })

  it('a head sent a byte at a time is closed at server.headersTimeout, its bytes still coming', async () => {
    const port = await listening('  headersTimeout: 300ms\n')
    // Long enough that, a byte per turn, it would take many times the deadline and its checks.
    const head = `GET ${REPORT} HTTP/1.1\r\nhost: x\r\nx-pad: ${'a'.repeat(500)}\r\nx-api-key: ${KEYS.growth}\r\n\r\n`
    const slow = open(port, head.slice(0, 1))
    let sent = 1
    while (!slow.isClosed() && sent < head.length - 4) {
      await settle()
      slow.socket.write(head.slice(sent, sent + 1))
      sent++
    }
    expect(slow.isClosed()).toBe(true)
    expect(sent).toBeLessThan(head.length - 4)
    expect(slow.received).toMatch(/^(HTTP\/1\.1 408 |)/)
  })
})

describe('answers with no key held open at a full listener', () => {
  it(`(${BOUND} connections each asking GET /openapi.json, about 270 KB, ${PIPELINED} times and reading nothing) hold no team out: one is cut`, async () => {
    const port = await listening()
    // The gateway's side of each connection: whether an answer of it is under way, backed up in its buffers.
    const theirs: Socket[] = []
    gw!.proxy.server.on('connection', (socket: Socket) => theirs.push(socket))
    const asks = `GET /openapi.json HTTP/1.1\r\nhost: x\r\n\r\n`.repeat(PIPELINED)
    for (let i = 0; i < BOUND; i++) open(port, asks).socket.pause()
    await waitFor('each connection\'s answers backed up in the gateway', () => theirs.length === BOUND && theirs.every((s) => s.writableLength > 0))
    const team = open(port, teamCall(KEYS.writer))
    await waitFor('the team answered, or closed', () => answered(team) || team.isClosed())
    expect(answered(team)).toBe(true)
    expect(await closed()).toEqual({ idle: 0, busy: 1, new: 0 })
  }, 30_000)
})
