import { connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { drainListener } from '../../src/http/server.js'
import { startSandbox, type Sandbox } from '../../src/sandbox/sandbox.js'
import { buildGateway, closeAfterTest, KEYS, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { SANDBOX_TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import { waitFor } from '../helpers/wait.js'

// docs/contract.md, "Stopping": through the drain the listeners go on "answering every
// request as ever, each answer with `connection: close` ... loses no request". Requests a
// caller pipelined on one connection before the drain began are requests already taken:
// each is answered, the last with connection: close (http/server.ts closeGently).
const PORT = Number(process.env.PF_PORT ?? 26031)
const REPORT = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-07'
const get = (target: string): string => `GET ${target} HTTP/1.1\r\nhost: 127.0.0.1\r\nx-api-key: ${KEYS.all}\r\n\r\n`

let sandbox: Sandbox
let gw: TestGateway

beforeAll(async () => {
  sandbox = await startSandbox({ host: '127.0.0.1', port: PORT + 1 })
  gw = await buildGateway(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }, SANDBOX_TEAMS_YAML))
  await gw.proxy.listen({ host: '127.0.0.1', port: PORT })
})
afterAll(async () => {
  await closeAfterTest(gw)
  await sandbox.close()
})

describe('a drain that begins while a connection carries pipelined requests', () => {
  it('answers each request taken before it, the last with connection: close', async () => {
    sandbox.setRouteFailure('/api/v1/campaign/101001', { kind: 'held', times: 1 })
    const socket = connect({ port: PORT, host: '127.0.0.1' })
    const chunks: Buffer[] = []
    socket.on('data', (c: Buffer) => chunks.push(c))
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()))
    socket.write(get('/api/v1/campaign/101001') + get(REPORT) + get(REPORT.replace('01-07', '01-08')))
    await waitFor('the held call at the platform', () => sandbox.requests.some((r) => r.path === '/api/v1/campaign/101001'))
    await waitFor('the pipelined requests taken', () => gw.logs.records().filter((r) => r.msg === 'request').length === 0 && sandbox.requests.filter((r) => r.path.startsWith('/api/v1/report')).length >= 2)
    drainListener(gw.proxy)
    // One more on the connection once the drain began: answered too, and the connection closed after it.
    socket.write(get(REPORT.replace('01-07', '01-09')))
    await waitFor('the request sent in the drain taken', () => sandbox.requests.filter((r) => r.path.startsWith('/api/v1/report')).length >= 3)
    sandbox.releaseHeld()
    await closed
    const text = Buffer.concat(chunks).toString('latin1')
    const statuses = [...text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]))
    expect(statuses).toEqual([expect.any(Number), 200, 200, 200])
    expect(text.toLowerCase().split('connection: close').length - 1).toBe(1)
  })
})
