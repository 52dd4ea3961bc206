import type { Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { request } from 'undici'
import { describe, expect, it } from 'vitest'
import { KEYS, listen, WHOLE_SHARE_TEAMS_YAML, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useCleanups, useGateways, useSandbox } from '../helpers/fixtures.js'
import { waitFor } from '../helpers/wait.js'
import { stalledCaller, stalledCampaignCall } from '../helpers/gateway-calls.js'
import { seatsOf } from '../helpers/governors.js'

// "A seat covers the platform's work, not the caller's reading" (docs/governor.md): the
// seat ends with the answer's headers, and an answer still being read holds buffer room
// and its connection, which readIdleTimeout frees. The gateway against the sandbox over
// loopback HTTP, with callers on raw sockets that ask for large answers and never read
// them. Loopback absorbs about 4 MB per connection before the gateway's writes back up,
// so the answers that must back up are larger.

const sandbox = useSandbox()
const gateways = useGateways()
const cleanups = useCleanups()

const CAMPAIGNS = '/api/v1/campaign/get'
const CAMPAIGNS_BODY = '{"userId":101}'
const REPORT = '/api/v1/report/campaigns/get'
const MB = 1_000_000

async function gateway(yaml: string): Promise<TestGateway & { port: number; url: string }> {
  const gw = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }, `${WHOLE_SHARE_TEAMS_YAML}\n${yaml}`))
  const listening = await listen(gw)
  // The start's token probe is the gateway's own call.
  sandbox.clearRequests()
  sandbox.resetConcurrency()
  return listening
}

/** A stalled caller, closed after the test. */
function stalled(socket: Socket): Socket {
  cleanups.push(() => void socket.destroy())
  return socket
}

/** Another team's small call, timed. */
async function victimCall(gw: { url: string }): Promise<{ status: number; ms: number; body: string }> {
  const started = performance.now()
  const res = await request(`${gw.url}${CAMPAIGNS}`, {
    method: 'POST',
    headers: { 'x-api-key': KEYS.growth, 'content-type': 'application/json' },
    body: CAMPAIGNS_BODY,
  })
  const body = await res.body.text()
  return { status: res.statusCode, ms: performance.now() - started, body }
}

async function metrics(gw: TestGateway): Promise<string> {
  return (await gw.admin.inject({ method: 'GET', url: '/metrics' })).body
}

const slowReaderLines = (gw: TestGateway) => gw.logs.records().filter((r) => r.msg === 'caller stopped reading: answer cut off' || r.msg === 'caller stopped reading while another team waited for its room: answer cut off')

describe('callers that never read', () => {
  it('8 of them on large answers hold no seat: another team\'s small call is answered at once, and readIdleTimeout frees the platform\'s connections', async () => {
    // The whole limit (8 at the start) of a team alone; readIdleTimeout leaves a loaded
    // machine the time to put all 8 at the platform before the first is cut off.
    const gw = await gateway('platform: { adaptive: false, maxConcurrent: 8, readIdleTimeout: 4s, queueTimeout: 60s, timeout: 60s }')
    sandbox.setRouteFailure(CAMPAIGNS, { kind: 'large', bytes: 12 * MB, times: 8 })
    for (let i = 0; i < 8; i++) stalled(stalledCampaignCall(gw.port))
    // The answers stream to the gateway, their callers read nothing: the connections stay, the seats went back with the headers.
    await waitFor('8 large answers at the gateway, their seats free', () => sandbox.concurrency().inFlight === 8 && sandbox.countRequests((r) => r.path === CAMPAIGNS) === 8 && seatsOf(gw).inFlight === 0, 4000)

    const victim = await victimCall(gw)
    expect(victim.status).toBe(200)
    // Answered before any stalled caller was cut off: it did not wait for their seats.
    expect(slowReaderLines(gw)).toHaveLength(0)

    // The stalled callers were cut off: their platform connections are free.
    await waitFor('the platform calls to end', () => sandbox.concurrency().inFlight === 0 && seatsOf(gw).inFlight === 0, 15_000)
    await waitFor('8 slow readers counted', async () => (await metrics(gw)).includes('gateway_platform_slow_readers_total{credential="default"} 8'))
    const lines = slowReaderLines(gw)
    expect(lines).toHaveLength(8)
    for (const line of lines) expect(line).toMatchObject({ level: 40, team: 'all', path: CAMPAIGNS, credential: 'default' })
  })

  it('frees the seat and the connection of an answer within platform.bufferBytes as soon as it is received, while its caller still reads nothing', async () => {
    // Each answer is larger than what loopback absorbs, so its caller holds it unread.
    const gw = await gateway('platform: { adaptive: false, maxConcurrent: 8, bufferBytes: 12MiB, bufferTotalBytes: 64MiB }')
    const answers = 4
    sandbox.setRouteFailure(CAMPAIGNS, { kind: 'large', bytes: 10 * MB, times: answers })
    for (let i = 0; i < answers; i++) stalled(stalledCampaignCall(gw.port))
    await waitFor('the answers to reach the gateway', () => sandbox.countRequests((r) => r.path === CAMPAIGNS) === answers)
    await waitFor('every seat and platform connection free', () => sandbox.concurrency().inFlight === 0 && seatsOf(gw).inFlight === 0)
    expect(sandbox.concurrency().peak).toBe(answers)
    // Still unread: the answers are held in memory, within the budget, for their callers.
    expect(gw.answers.budget.used).toBeGreaterThan(0)
    expect(slowReaderLines(gw)).toHaveLength(0)
    // Memory of an answer is released once it is sent, or its caller is gone.
    for (const fn of cleanups.splice(0)) await fn()
    await waitFor('the buffers released', () => gw.answers.budget.used === 0)
  })

  it('falls back to streaming, watched, past platform.bufferTotalBytes: the memory held never exceeds it', async () => {
    const gw = await gateway('platform: { bufferBytes: 8MiB, bufferTotalBytes: 16MiB, readIdleTimeout: 5s }')
    const { budget } = gw.answers
    const seats = seatsOf(gw)
    let most = 0
    const watch = setInterval(() => (most = Math.max(most, budget.used)), 2)
    cleanups.push(() => clearInterval(watch))
    // 8 answers of 6 MB: two fit in 16 MiB, the other six stream.
    sandbox.setRouteFailure(CAMPAIGNS, { kind: 'large', bytes: 6 * MB, times: 8 })
    for (let i = 0; i < 8; i++) stalled(stalledCampaignCall(gw.port))
    await waitFor('8 answers at the gateway', () => sandbox.countRequests((r) => r.path === CAMPAIGNS) === 8)
    // Every seat went back with its answer's headers; the buffered two hold 12 MB, the
    // streaming six no memory, and all eight are cut off once their callers have read
    // nothing for readIdleTimeout.
    await waitFor('two answers held in memory, no seat', () => budget.used === 12 * MB && seats.inFlight === 0, 4500)
    await waitFor('every caller cut off', async () => (await metrics(gw)).includes('gateway_platform_slow_readers_total{credential="default"} 8'), 15_000)
    await waitFor('connections and memory free', () => sandbox.concurrency().inFlight === 0 && budget.used === 0)
    expect(most).toBeLessThanOrEqual(budget.limit)
    expect(most).toBe(12 * MB)
  })

  it('frees the seat of an oversize report (past cache.maxEntryBytes) at its headers, and its connection once its caller stopped reading', async () => {
    const gw = await gateway('platform: { readIdleTimeout: 1s }\ncache: { maxEntryBytes: 1MiB }')
    sandbox.setRouteFailure(REPORT, { kind: 'large', bytes: 12 * MB, times: 1 })
    stalled(stalledCaller(gw.port, `GET ${REPORT}?advertiserId=101&byDate=1&dateFrom=2025-03-01&dateTo=2025-03-07 HTTP/1.1\r\nhost: 127.0.0.1\r\nx-api-key: ${KEYS.all}\r\n\r\n`))
    await waitFor('the report streaming, its seat free', () => sandbox.concurrency().inFlight === 1 && sandbox.countRequests((r) => r.path === REPORT) === 1 && seatsOf(gw).inFlight === 0)
    await waitFor('the report call to end', () => sandbox.concurrency().inFlight === 0, 4000)
    expect(slowReaderLines(gw)).toMatchObject([{ team: 'all', path: REPORT, credential: 'default' }])
  })
})

describe('a caller that reads slowly but steadily', () => {
  it('gets the whole answer, byte for byte, though it streams past platform.bufferBytes', async () => {
    const gw = await gateway('platform: { bufferBytes: 256KiB, readIdleTimeout: 1s }')
    const bytes = 8 * MB
    sandbox.setRouteFailure(CAMPAIGNS, { kind: 'large', bytes, times: 1 })
    const res = await request(`${gw.url}${CAMPAIGNS}`, {
      method: 'POST',
      headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json' },
      body: CAMPAIGNS_BODY,
      // Each read takes what arrived meanwhile, up to 1 MiB.
      highWaterMark: 1024 * 1024,
    })
    expect(res.statusCode).toBe(200)
    const chunks: Buffer[] = []
    // A read every 100 ms: the gateway's writes back up between reads, never for 1 s.
    for await (const chunk of res.body) {
      chunks.push(chunk as Buffer)
      await sleep(100)
    }
    const body = Buffer.concat(chunks)
    expect(body.length).toBe(bytes)
    expect(body.equals(Buffer.from(JSON.stringify({ data: 'x'.repeat(bytes - 11) })))).toBe(true)
    expect(slowReaderLines(gw)).toHaveLength(0)
  })
})
