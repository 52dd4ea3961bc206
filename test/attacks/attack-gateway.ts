import { afterAll, afterEach, beforeAll, expect, it } from 'vitest'
import { late } from '../helpers/fixtures.js'
import { KEYS, startSandboxGateway, type SandboxGateway, type SandboxGatewayOptions } from '../helpers/sandbox-gateway.js'
import { leakedSecrets, runSecrets } from '../helpers/secret-scan.js'

// The set-up every attack file shares: a sandbox (the platform, quirks included) and a
// gateway in front of it on a loopback port, logging at trace level, so that each file
// also shows that no secret reached a log line while it was attacked.

export const ADMIN_TOKEN = 'attack-admin-token-0123456789abcdef'
export const REPORT_DATES = 'dateFrom=2026-01-01&dateTo=2026-01-07'

/** A valid `banner/create` body for the account, showing a creative set of account 101's. */
export function newCampaign(userId: number | string): Record<string, unknown> {
  return {
    userId, name: 'Attack test', adDomain: 'example.com', clickUrl: 'https://example.com/', autoStart: false,
    dates: { from: '2026-01-01', to: '2026-01-31' }, country: 'KE', bid: 1, budget: { daily: 10, total: 100 }, creativeSetIds: [1010011],
  }
}

// Secrets seen by a file's sandbox before its request log is emptied after each test.
const seen = new Set<string>()

/**
 * Registers the file's sandbox and gateway (use the result inside tests only); the
 * sandbox's request log is emptied after each test.
 */
export function useAttackGateway(opts: SandboxGatewayOptions = {}): SandboxGateway {
  let sg: SandboxGateway | undefined
  beforeAll(async () => {
    sg = await startSandboxGateway({ ...opts, env: { LOG_LEVEL: 'trace', ADMIN_TOKEN, ...opts.env } })
  })
  afterEach(() => {
    if (!sg) return
    for (const secret of runSecrets(sg.sandbox)) seen.add(secret)
    sg.sandbox.clearRequests()
  })
  afterAll(async () => {
    await sg?.closeAfterTests()
  })
  return late('the attack gateway', () => sg)
}

/** Call at the end of a file: its whole log, at trace level, holds no secret it used. */
export function itLoggedNoSecret(sg: SandboxGateway, extra: readonly string[] = []): void {
  it('logged no key, token, password or cookie, at trace level', async () => {
    await new Promise((resolve) => setTimeout(resolve, 50))
    const text = sg.gw.logs.text()
    // Trace level is on: the scan reads a log that holds every line the gateway wrote.
    expect(sg.gw.log.isLevelEnabled('trace')).toBe(true)
    expect(leakedSecrets(text, new Set([...seen, ...runSecrets(sg.sandbox), ADMIN_TOKEN, ...extra]))).toEqual([])
    expect(text).not.toContain('rawPacket')
  })
}

/** A call straight to the sandbox with a parent token: what the platform does with a request. */
export async function direct(
  sg: SandboxGateway,
  method: string,
  target: string,
  opts: { body?: string | Buffer; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const headers = { authorization: `Bearer ${sg.sandbox.issueToken()}`, ...opts.headers }
  const res = await fetch(`${sg.sandbox.url}${target}`, { method, headers, ...(opts.body === undefined ? {} : { body: opts.body }) })
  return { status: res.status, json: parseJson(await res.text()) }
}

export interface Answer {
  status: number
  json: Record<string, unknown>
}

/** Reads of `sg`'s report route, each of a report of its own (every read reaches the platform), as the team of the key given. */
export function reportMisses(sg: SandboxGateway): (key: string) => Promise<Answer> {
  let day = 0
  return (key) => {
    const d = ++day
    return call(sg, 'GET', `/api/v1/report/campaigns/get?advertiserId=101&byDate=1&dateFrom=2025-01-01&dateTo=2025-${String(1 + Math.floor(d / 28)).padStart(2, '0')}-${String(1 + (d % 28)).padStart(2, '0')}`, { key })
  }
}

/** An ordinary HTTP call to the gateway (fetch), as a team. */
export async function call(
  sg: SandboxGateway,
  method: string,
  target: string,
  opts: { key?: string; json?: unknown; body?: string | Buffer; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { 'x-api-key': opts.key ?? KEYS.all, ...opts.headers }
  let body: string | Buffer | undefined = opts.body
  if (opts.json !== undefined) {
    headers['content-type'] ??= 'application/json'
    body = JSON.stringify(opts.json)
  }
  const res = await fetch(`${sg.url}${target}`, { method, headers, ...(body === undefined ? {} : { body }) })
  return { status: res.status, json: parseJson(await res.text()) }
}

function parseJson(text: string): Record<string, unknown> {
  try {
    return JSON.parse(text) as Record<string, unknown>
  } catch {
    // a non-JSON answer: the status says enough
    return {}
  }
}
