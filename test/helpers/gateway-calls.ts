import { connect, type Socket } from 'node:net'
import { expect } from 'vitest'
import type { SandboxRequestRecord } from '../../src/sandbox/sandbox.js'
import { KEYS, REPORT_PATH, type TestGateway } from './build-gateway.js'
import { waitFor } from './wait.js'

// Calls on a test gateway and looks into it, as the suites make them.

/** A proxied read (the platform's POST .../get convention) by the all-advertisers team; never cached. */
export function campaignList(gw: TestGateway, userId = 101) {
  return gw.proxy.inject({ method: 'POST', url: '/api/v1/campaign/get', headers: { 'x-api-key': KEYS.all }, payload: { userId } })
}

/** A GET through the proxy listener with a team's key (the all-advertisers team unless given). */
export function proxyGet(gw: TestGateway, url: string, key = KEYS.all) {
  return gw.proxy.inject({ method: 'GET', url, headers: { 'x-api-key': key } })
}

/** The n-th of many distinct report queries (each a miss): one week, starting n days after 2025-01-01. */
export function distinctReport(n: number, advertiserId = 101): string {
  const day = (offset: number) => new Date(Date.UTC(2025, 0, 1 + offset)).toISOString().slice(0, 10)
  return `${REPORT_PATH}?advertiserId=${advertiserId}&byDate=1&dateFrom=${day(n)}&dateTo=${day(n + 6)}`
}

/** Every answer is a 200 MISS carrying the platform's own bytes, as one fill serves all who waited on it. */
export function expectMissesOf(answers: { statusCode: number; headers: Record<string, unknown>; rawPayload: Buffer }[], platform: Buffer): void {
  for (const res of answers) {
    expect(res.statusCode).toBe(200)
    expect(res.headers['x-cache']).toBe('MISS')
    expect(res.rawPayload.equals(platform)).toBe(true)
  }
}

/** The platform token the gateway holds now for a credential. */
export function tokenOf(gw: TestGateway, credential = 'default'): string | undefined {
  return gw.tokens.get(credential).current()?.token
}

/** A credential's count in one of the gateway's counters labelled by credential (0 before its first). */
export async function credentialCount(gw: TestGateway, metric: string, credential = 'default'): Promise<number> {
  const body = (await gw.admin.inject({ method: 'GET', url: '/metrics' })).body
  const line = new RegExp(`^${metric}\\{credential="${credential}"\\} (\\S+)$`, 'm').exec(body)
  return Number(line?.[1] ?? 0)
}

/** Resolves once each gateway's count (credentialCount) has risen by `more` since this call. */
export async function countsRise(what: string, gateways: TestGateway[], metric: string, more: number, credential = 'default'): Promise<void> {
  const counts = () => Promise.all(gateways.map((gw) => credentialCount(gw, metric, credential)))
  const before = await counts()
  await waitFor(what, async () => (await counts()).every((n, i) => n >= (before[i] ?? 0) + more))
}

/**
 * Once each gateway has done `reads` more reads of its token file: reads are made one at a
 * time, so all but the first of them began after this call, and saw the file as it is now.
 * What a test waited out as "several polls", counted.
 */
export function fileReadsDone(gateways: TestGateway[], reads: number): Promise<void> {
  return countsRise(`${reads} more reads of the token file on each replica`, gateways, 'gateway_platform_token_file_reads_total', reads)
}

/**
 * Once each gateway's maintenance tick has checked its token `checks` more times: a check
 * skipped while the one before runs is not counted, so all but the first began after this
 * call. What a test waited out as "several ticks", counted.
 */
export function checksDone(gateways: TestGateway[], checks: number): Promise<void> {
  return countsRise(`${checks} more checks of the token on each replica`, gateways, 'gateway_platform_token_checks_total', checks)
}

/** The platform token a request the sandbox received carried. */
export function bearerOf(r: SandboxRequestRecord | undefined): string | undefined {
  const h = r?.headers.authorization
  return typeof h === 'string' ? h.replace(/^Bearer /, '') : undefined
}

/** No secret value shows up in any of the texts (log lines, response bodies). */
export function expectNoSecrets(texts: string[], secrets: string[]): void {
  for (const text of texts) {
    for (const secret of secrets) expect(text.includes(secret), `a secret leaked into: ${text.slice(0, 300)}`).toBe(false)
  }
}

/** A caller on a raw socket that sends `head` (a whole request) to the proxy listener on `port` and never reads a byte of the answer. */
export function stalledCaller(port: number, head: string): Socket {
  const socket = connect(port, '127.0.0.1')
  socket.pause()
  socket.on('error', () => undefined)
  socket.write(head)
  return socket
}

/** A stalled caller asking the campaign list of advertiser 101 (POST /api/v1/campaign/get) with `key`. */
export function stalledCampaignCall(port: number, key: string = KEYS.all): Socket {
  const body = '{"userId":101}'
  return stalledCaller(port, `POST /api/v1/campaign/get HTTP/1.1\r\nhost: 127.0.0.1\r\nx-api-key: ${key}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`)
}
