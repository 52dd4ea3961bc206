import { connect, type Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { TEAMS_YAML } from '../helpers/build-gateway.js'
import { spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js'
import { KEYS, rawHttp, rawRequest } from '../helpers/sandbox-gateway.js'
import { startSandbox, type Sandbox } from '../../src/sandbox/sandbox.js'
import { REPORT_DATES } from './attack-gateway.js'

// Every connection a caller holds open is a file descriptor of the gateway's process.
// Past its open-file limit the process accepts nothing and opens nothing: a team that
// keeps more idle connections than that (one request each, then kept alive) would reset
// every other team's connection, the health check's and the admin listener's. Here the
// gateway runs with an open-file limit of 256, and one team holds 300 connections.

const OPEN_FILES = 256
const HELD = 300
const REPORT = `/api/v1/report/campaigns/get?advertiserId=101&${REPORT_DATES}`

let sandbox: Sandbox
let gw: GatewayProcess
const held: Socket[] = []

beforeAll(async () => {
  sandbox = await startSandbox()
  gw = await spawnGateway({ env: { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }, yaml: TEAMS_YAML, openFiles: OPEN_FILES })
}, 60_000)

afterAll(async () => {
  for (const socket of held) socket.destroy()
  await gw?.close()
  await sandbox?.close()
})

/** A connection of `key`'s team that asks one report and is kept alive: resolves once answered (or closed). */
function keptAlive(key: string): Promise<void> {
  return new Promise((resolve) => {
    const socket = connect(gw.port, '127.0.0.1')
    held.push(socket)
    socket.on('error', () => resolve())
    socket.on('close', () => resolve())
    socket.on('data', () => resolve())
    socket.on('connect', () => socket.write(`GET ${REPORT} HTTP/1.1\r\nhost: 127.0.0.1\r\nx-api-key: ${key}\r\n\r\n`))
  })
}

describe('idle kept-alive connections of one team', () => {
  it(`past the process's open-file limit (${HELD} held, limit ${OPEN_FILES}) hold no other team out: its new connection is answered, and so is the admin listener; a connection with an answer under way is kept`, async () => {
    // Another team's call the platform holds: its answer is under way through the flood.
    sandbox.setFailure({ kind: 'held', times: 1 })
    const waiting = rawRequest(gw.port, rawHttp('GET', REPORT.replace('2026-01-07', '2026-01-06'), { key: KEYS.writer }), 30_000).catch(() => ({ status: 0 }))
    while (sandbox.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 10))
    for (let i = 0; i < HELD; i += 50) await Promise.all(Array.from({ length: 50 }, () => keptAlive(KEYS.growth)))
    const other = await rawRequest(gw.port, rawHttp('GET', REPORT, { key: KEYS.writer })).catch((err: unknown) => ({ status: 0, error: String(err) }))
    expect(other.status).toBe(200)
    const ready = await fetch(`${gw.adminUrl}/readyz`).then((res) => res.status, () => 0)
    expect(ready).toBe(200)
    sandbox.releaseHeld()
    expect((await waiting).status).toBe(200)
  }, 60_000)
})
