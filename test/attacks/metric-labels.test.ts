import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH } from '../helpers/build-gateway.js'
import { useRedis } from '../helpers/fixtures.js'
import { rawRequest, startSandboxGateway, type SandboxGateway } from '../helpers/sandbox-gateway.js'
import { ADMIN_TOKEN } from './attack-gateway.js'

// An attacker with one team's key (`all`: every advertiser, so that its calls of routes the
// gateway does not know reach the platform) picks every value it can put in a request (a
// path in or out of /api/v1, a report's name, a job id, a method, one Node refuses among
// them, a key, a header's value, a report's dates) anew on every request, hoping each
// becomes a label value of its own on /metrics, so that the replica's memory and every
// scrape grow without bound. What /metrics shows of the gateway holds label values from the
// gateway's own lists (route kinds, statuses, teams, credentials, reasons): the series after
// a flood of fresh values are the series after a few of them, none more.

const ROUND = 200

describe('label values an attacker picks', () => {
  const redis = useRedis()
  let sg: SandboxGateway
  beforeAll(async () => {
    sg = await startSandboxGateway({ env: { REDIS_URL: redis.server.url, ADMIN_TOKEN } })
  })
  afterAll(async () => {
    await sg.closeAfterTests()
  })

  /** The gateway's series on /metrics (name and labels, not values), the process's left out. */
  async function series(): Promise<Set<string>> {
    const res = await sg.gw.admin.inject({ method: 'GET', url: '/metrics' })
    expect(res.statusCode).toBe(200)
    const lines = res.body.split('\n').filter((line) => line.startsWith('gateway_') && !line.startsWith('gateway_process_'))
    return new Set(lines.map((line) => line.slice(0, line.lastIndexOf(' '))))
  }

  /** Each kind of request the attacker varies, its `n`th value fresh: the status of its answer. */
  const kinds: readonly ((n: number) => Promise<number>)[] = [
    (n) => get(`/api/v1/attack-${n}/get?advertiserId=101`),
    (n) => get(`/attack-${n}/x`),
    (n) => get(`/api/v1/report/attack${n}/get?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-07`),
    (n) => get(`/api/v1/jobs/attack-job-${n}?wait=0`),
    (n) => statusOf(fetch(`${sg.url}/api/v1/attack-${n}`, { method: ['DELETE', 'PATCH', 'PUT', 'OPTIONS', 'PROPFIND'][n % 5], headers: { 'x-api-key': KEYS.all } })),
    (n) => statusOf(fetch(`${sg.url}${REPORT_PATH}?advertiserId=101`, { headers: { 'x-api-key': `rgw_attack_key_${String(n).padStart(30, '0')}` } })),
    async (n) => (await rawRequest(sg.port, `ATTACK${n} /api/v1/attack-${n} HTTP/1.1\r\nhost: 127.0.0.1\r\nx-api-key: ${KEYS.all}\r\nconnection: close\r\n\r\n`)).status,
    (n) => get(`${REPORT_PATH}?advertiserId=101&byDate=1&dateFrom=${day(n)}&dateTo=${day(n + 6)}`, {
      'x-request-id': `attack-${n}`, 'user-agent': `attack/${n}`, 'accept-language': `x-a${n}`, 'x-forwarded-for': `10.0.${n % 250}.${n % 7}`,
      traceparent: `00-${String(n).padStart(32, '1')}-${String(n).padStart(16, '2')}-01`, prefer: `attack=${n}`,
    }),
  ]
  function get(target: string, headers: Record<string, string> = {}): Promise<number> {
    return statusOf(fetch(`${sg.url}${target}`, { headers: { 'x-api-key': KEYS.all, ...headers } }))
  }
  async function statusOf(answer: Promise<Response>): Promise<number> {
    const res = await answer
    await res.arrayBuffer()
    return res.status
  }
  /** The `n`th day after 2021-01-01: a week from it a report of its own for each `n`. */
  function day(n: number): string {
    return new Date(Date.UTC(2021, 0, 1 + n)).toISOString().slice(0, 10)
  }
  /** Sends each kind's values `from` to `to` (excluded), four at a time; the statuses each kind saw. */
  async function flood(from: number, to: number): Promise<number[][]> {
    const seen: number[][] = []
    for (const kind of kinds) {
      const statuses = new Set<number>()
      for (let n = from; n < to; n += 4) {
        for (const status of await Promise.all([n, n + 1, n + 2, n + 3].filter((m) => m < to).map(kind))) statuses.add(status)
      }
      seen.push([...statuses].sort())
    }
    return seen
  }

  it(`${ROUND} fresh values of each (${ROUND * kinds.length} requests) add no series to the few values' series`, async () => {
    const warm = await flood(1, 9)
    const before = await series()
    const flooded = await flood(1000, 1000 + ROUND)
    const after = await series()
    // Each kind went where its few values went (the platform's answers among them), so the
    // flood met every label the few values met.
    expect(flooded).toEqual(warm)
    // A key of no team is 401, a method Node does not know 405, every report a 200.
    expect(flooded.slice(5)).toEqual([[401], [405], [200]])
    expect(sg.callerRequests().filter((r) => r.path === REPORT_PATH).length).toBeGreaterThanOrEqual(ROUND)
    expect([...after].filter((s) => !before.has(s))).toEqual([])
    expect(after.size).toBe(before.size)
  })
})
