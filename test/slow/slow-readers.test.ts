import { createServer } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { request } from 'undici'
import { describe, expect, it } from 'vitest'
import { KEYS, listen, WHOLE_SHARE_TEAMS_YAML, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useCleanups, useGateways, useSandbox } from '../helpers/fixtures.js'
import { waitFor } from '../helpers/wait.js'
import { stalledCaller, stalledCampaignCall } from '../helpers/gateway-calls.js'
import { seatsOf } from '../helpers/governors.js'

// "A seat covers the platform's work, not the caller's reading" (docs/governor.md): an
// answer is received whole at the platform's pace, within the answers' budget
// (platform.bufferTotalBytes), so that its seat and the platform's worker are free
// whatever its caller's pace; the caller's pace holds budget room, which readIdleTimeout
// and the room rules free. The gateway against the sandbox over loopback HTTP, with
// callers on raw sockets that ask for large answers and never read them, or read them
// slowly. Loopback absorbs about 4 MB per connection before the gateway's writes back
// up, so the answers that must back up are larger.

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

const CUT_LINES = ['caller stopped reading: answer cut off', 'caller stopped reading while another team waited for its room: answer cut off', 'caller read too slowly while another team waited for its room: answer cut off']
const slowReaderLines = (gw: TestGateway) => gw.logs.records().filter((r) => CUT_LINES.includes(r.msg as string))

/** A caller reading its answer at about `bytesPerSecond`, in sips every 100 ms; `got` counts what it read. */
function slowReader(port: number, head: string, bytesPerSecond: number): { got: () => number } {
  const socket = stalled(stalledCaller(port, head))
  let got = 0
  const sip = setInterval(() => {
    let taken = 0
    for (let chunk = socket.read() as Buffer | null; chunk !== null; chunk = taken < bytesPerSecond / 10 ? (socket.read() as Buffer | null) : null) taken += chunk.length
    got += taken
  }, 100)
  cleanups.push(() => clearInterval(sip))
  return { got: () => got }
}

const campaignHead = (key: string) => `POST ${CAMPAIGNS} HTTP/1.1\r\nhost: 127.0.0.1\r\nx-api-key: ${key}\r\ncontent-type: application/json\r\ncontent-length: ${CAMPAIGNS_BODY.length}\r\n\r\n${CAMPAIGNS_BODY}`

describe('callers that never read', () => {
  it('8 of them on large answers hold neither a seat nor the platform: the answers are in, another team\'s small call is answered at once, and readIdleTimeout frees their memory', async () => {
    // The whole limit (8 at the start) of a team alone, with a readIdleTimeout longer than
    // the test: however slowly a loaded machine puts the 8 at the platform, none is cut off.
    const gw = await gateway('platform: { adaptive: false, maxConcurrent: 8, readIdleTimeout: 10m, queueTimeout: 60s, timeout: 60s }')
    sandbox.setRouteFailure(CAMPAIGNS, { kind: 'large', bytes: 12 * MB, times: 8 })
    const callers = Array.from({ length: 8 }, () => stalled(stalledCampaignCall(gw.port)))
    // The answers are received whole, their callers read nothing: the platform's connections and the seats are free.
    await waitFor('8 large answers in, their seats and platform connections free', () => sandbox.countRequests((r) => r.path === CAMPAIGNS) === 8 && sandbox.concurrency().inFlight === 0 && seatsOf(gw).inFlight === 0)
    expect(gw.answers.budget.used).toBeGreaterThan(0)

    const victim = await victimCall(gw)
    expect(victim.status).toBe(200)
    // Answered while the stalled callers still hold their answers: it took none of their room.
    expect(slowReaderLines(gw)).toHaveLength(0)
    for (const caller of callers) caller.destroy()

    // The same 8 on a gateway cutting a caller off after 1 s of reading nothing: cut off, the memory they held is free.
    const cutting = await gateway('platform: { adaptive: false, maxConcurrent: 8, readIdleTimeout: 1s, queueTimeout: 60s, timeout: 60s }')
    let most = 0
    const watch = setInterval(() => (most = Math.max(most, cutting.answers.budget.used)), 2)
    cleanups.push(() => clearInterval(watch))
    sandbox.setRouteFailure(CAMPAIGNS, { kind: 'large', bytes: 12 * MB, times: 8 })
    for (let i = 0; i < 8; i++) stalled(stalledCampaignCall(cutting.port))
    await waitFor('8 slow readers counted', async () => (await metrics(cutting)).includes('gateway_platform_slow_readers_total{credential="default"} 8'))
    await waitFor('the memory freed', () => cutting.answers.budget.used === 0)
    expect(most).toBeGreaterThan(0)
    const lines = slowReaderLines(cutting)
    expect(lines).toHaveLength(8)
    for (const line of lines) expect(line).toMatchObject({ level: 40, team: 'all', path: CAMPAIGNS, credential: 'default', msg: CUT_LINES[0] })
  }, 60_000)

  it('frees the seat and the platform connection of an oversize report (past cache.maxEntryBytes) once it is in, and its memory once its caller stopped reading', async () => {
    const gw = await gateway('platform: { readIdleTimeout: 1s }\ncache: { maxEntryBytes: 1MiB }')
    sandbox.setRouteFailure(REPORT, { kind: 'large', bytes: 12 * MB, times: 1 })
    stalled(stalledCaller(gw.port, `GET ${REPORT}?advertiserId=101&byDate=1&dateFrom=2025-03-01&dateTo=2025-03-07 HTTP/1.1\r\nhost: 127.0.0.1\r\nx-api-key: ${KEYS.all}\r\n\r\n`))
    await waitFor('the report in, its seat and connection free', () => sandbox.countRequests((r) => r.path === REPORT) === 1 && sandbox.concurrency().inFlight === 0 && seatsOf(gw).inFlight === 0)
    expect(gw.answers.budget.used).toBeGreaterThan(0)
    await waitFor('the caller cut off and the memory freed', () => slowReaderLines(gw).length === 1 && gw.answers.budget.used === 0)
    expect(slowReaderLines(gw)).toMatchObject([{ team: 'all', path: REPORT, credential: 'default' }])
  })
})

describe('the answers\' budget (platform.bufferTotalBytes)', () => {
  it('refuses the same team\'s next large answer 503 GW_ANSWER_BUDGET with retry-after while a slow reader holds the room, and cuts that reader off for another team\'s', async () => {
    const gw = await gateway('platform: { bufferTotalBytes: 40MiB, readIdleTimeout: 4s }')
    const { budget } = gw.answers
    let most = 0
    const watch = setInterval(() => (most = Math.max(most, budget.used)), 2)
    cleanups.push(() => clearInterval(watch))
    sandbox.setRouteFailure(CAMPAIGNS, { kind: 'large', bytes: 30 * MB, times: 3 })
    // 500 KB/s: it reads all along, never stopping for a second, and would need a minute;
    // its pace is judged once it has read for more than a second.
    const reader = slowReader(gw.port, campaignHead(KEYS.all), 500_000)
    await waitFor('its answer in, held for it', () => sandbox.concurrency().inFlight === 0 && sandbox.countRequests((r) => r.path === CAMPAIGNS) === 1 && budget.used > 20 * MB && reader.got() > 750_000)

    const same = await request(`${gw.url}${CAMPAIGNS}`, { method: 'POST', headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json' }, body: CAMPAIGNS_BODY })
    expect(same.statusCode).toBe(503)
    expect(Number(same.headers['retry-after'])).toBeGreaterThanOrEqual(1)
    expect(await same.body.json()).toMatchObject({ code: 'GW_ANSWER_BUDGET' })
    // The platform answered it; the gateway dropped it rather than hold past the budget.
    expect(sandbox.countRequests((r) => r.path === CAMPAIGNS)).toBe(2)
    expect(slowReaderLines(gw)).toHaveLength(0)

    const other = await request(`${gw.url}${CAMPAIGNS}`, { method: 'POST', headers: { 'x-api-key': KEYS.growth, 'content-type': 'application/json' }, body: CAMPAIGNS_BODY })
    expect(other.statusCode).toBe(200)
    expect((await other.body.arrayBuffer()).byteLength).toBe(30 * MB)
    // Read slowly, or, the socket buffers between it and the gateway filled, not at all for a second.
    expect(slowReaderLines(gw)).toMatchObject([{ team: 'all', path: CAMPAIGNS }])
    expect(CUT_LINES.slice(1)).toContain(slowReaderLines(gw)[0]?.msg)
    expect(most).toBeLessThanOrEqual(budget.limit)
    await waitFor('the memory freed', () => budget.used === 0)
  })
})

describe('a seat ends when the platform\'s answer is in, not when its caller has read it (docs/governor.md)', () => {
  it('holds the seat while the platform is still sending the body, and frees it once the body is in', async () => {
    // A platform that sends its answer's headers and first 256 KiB at once, and the rest when told.
    const FIRST_PART = 256 * 1024
    const answer: { finish?: () => void } = {}
    const platform = createServer((req, res) => {
      res.on('close', () => (answer.finish = () => undefined))
      req.resume()
      res.writeHead(200, { 'content-type': 'application/json' })
      res.write(`{"data":"${'x'.repeat(FIRST_PART)}`)
      answer.finish = () => void res.end('"}')
    })
    await new Promise<void>((resolve) => platform.listen(0, '127.0.0.1', resolve))
    cleanups.push(() => {
      platform.closeAllConnections()
      return new Promise<void>((resolve) => platform.close(() => resolve()))
    })
    const base = `http://127.0.0.1:${(platform.address() as AddressInfo).port}`
    const gw = await listen(await gateways.build(testConfig({ PLATFORM_BASE_URL: base, PLATFORM_TOKEN: 'platform-token-of-the-test' }, `${WHOLE_SHARE_TEAMS_YAML}\nplatform: { adaptive: false, maxConcurrent: 8, probe: null }`)))
    const call = victimCall(gw)
    // The budget holds the call's own request body too, before the platform has it: the answer's first part is in once it holds that part.
    await waitFor('the answer\'s headers and first part in, its rest still coming', () => answer.finish !== undefined && gw.answers.budget.used >= FIRST_PART)
    expect(seatsOf(gw).inFlight).toBe(1)
    answer.finish?.()
    expect((await call).status).toBe(200)
    expect(seatsOf(gw).inFlight).toBe(0)
  })

  it('20 slow but reading callers and 10 that read nothing, of one team, hold no seat and no worker of the platform: another team\'s miss is answered as if alone', async () => {
    // A platform of 8 workers, each busy until its answer is out, reached over 8 connections;
    // the governor's limit is 8. Each answer is more than loopback absorbs: were it streamed
    // at its caller's pace, it would hold its connection, and the platform's worker behind it.
    const gw = await gateway('platform: { adaptive: false, maxConcurrent: 8, connections: 8, bufferTotalBytes: 512MiB, readIdleTimeout: 60s, queueTimeout: 60s, timeout: 60s }')
    sandbox.setCapacity({ workers: 8 })
    sandbox.setRouteFailure(CAMPAIGNS, { kind: 'large', bytes: 12 * MB, times: 30 })
    const readers = Array.from({ length: 20 }, () => slowReader(gw.port, campaignHead(KEYS.all), 16_000))
    for (let i = 0; i < 10; i++) stalled(stalledCampaignCall(gw.port))
    // Every answer is in, received at the platform's pace: the platform's workers and the seats are free, the callers still at it.
    await waitFor('30 answers in, no seat or platform worker held', () => sandbox.countRequests((r) => r.path === CAMPAIGNS) === 30 && sandbox.concurrency().inFlight === 0 && seatsOf(gw).inFlight === 0)
    expect(gw.answers.budget.used).toBeGreaterThan(0)
    const read = readers.map((r) => r.got())
    await waitFor('the slow callers still reading', () => readers.every((r, i) => r.got() > (read[i] as number)))
    expect(slowReaderLines(gw)).toHaveLength(0)

    sandbox.resetConcurrency()
    const miss = await request(`${gw.url}${REPORT}?advertiserId=102&byDate=1&dateFrom=2025-03-01&dateTo=2025-03-07`, { headers: { 'x-api-key': KEYS.growth } })
    expect(miss.statusCode).toBe(200)
    expect(miss.headers['x-cache']).toBe('MISS')
    await miss.body.dump()
    // Alone at the platform: no call ahead of it there, nor in the governor's queue.
    expect(sandbox.concurrency().peak).toBe(1)
    expect(seatsOf(gw).queued).toBe(0)
    expect(slowReaderLines(gw)).toHaveLength(0)
  }, 60_000)
})

describe('a caller that reads slowly but steadily', () => {
  it('gets the whole answer, byte for byte', async () => {
    const gw = await gateway('platform: { readIdleTimeout: 1s }')
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
