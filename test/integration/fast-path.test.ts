import { describe, expect, it } from 'vitest'
import { request } from 'undici'
import { hashApiKey } from '../../src/teams/api-keys.js'
import { useSandboxGateway } from '../helpers/fixtures.js'
import { KEYS } from '../helpers/sandbox-gateway.js'

// Issue #6: fresh in-memory hits are served before Fastify's router, through the same
// admission and access checks, with every contract behaviour of a hit.

const REPORT = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-07&byDate=1'
const env = useSandboxGateway({
  yaml: `teams:
  growth:
    keys: ["${hashApiKey(KEYS.growth)}"]
    advertisers: [101, 102]
  other:
    keys: ["${hashApiKey(KEYS.writer)}"]
    advertisers: [103]
  limited:
    keys: ["${hashApiKey(KEYS.limited)}"]
    advertisers: ["*"]
    rateLimit: { max: 3, window: 1m }
`,
})

async function get(path: string, headers: Record<string, string>) {
  const res = await request(`${env.url}${path}`, { headers })
  const body = Buffer.from(await res.body.arrayBuffer())
  return { status: res.statusCode, headers: res.headers, body }
}

describe('hits before the router', () => {
  it('answers a hit with the same bytes and headers as the route, and one log line', async () => {
    const miss = await get(REPORT, { 'x-api-key': KEYS.growth, 'accept-encoding': 'gzip' })
    expect(miss.headers['x-cache']).toBe('MISS')
    const before = env.gw.logs.records().filter((r) => r.msg === 'request').length
    const hit = await get(REPORT, { 'x-api-key': KEYS.growth, 'accept-encoding': 'gzip', 'x-request-id': 'fast-1' })
    expect(hit.status).toBe(200)
    expect(hit.headers).toMatchObject({
      'x-cache': 'HIT',
      'content-encoding': 'gzip',
      vary: 'accept-encoding',
      'x-request-id': 'fast-1',
      'content-type': miss.headers['content-type'],
    })
    expect(hit.headers.age).toMatch(/^\d+$/)
    expect(hit.headers['cache-control']).toMatch(/^private, max-age=\d+$/)
    expect(hit.body.equals(miss.body)).toBe(true)
    const plain = await get(REPORT, { 'x-api-key': KEYS.growth })
    expect(plain.headers['content-encoding']).toBeUndefined()
    expect(JSON.parse(plain.body.toString('utf8'))).toHaveProperty('data')
    const lines = env.gw.logs.records().filter((r) => r.msg === 'request').slice(before)
    expect(lines).toHaveLength(2)
    expect(lines[0]).toMatchObject({ reqId: 'fast-1', team: 'growth', method: 'GET', route: 'report', status: 200, cache: 'HIT' })
    const metrics = await env.gw.admin.inject({ method: 'GET', url: '/metrics' })
    expect(metrics.body).toMatch(/gateway_cache_requests_total\{result="HIT",tier="l1"\} [2-9]/)
  })

  it('refuses a team the cached advertiser is not its own, an unknown key and no key', async () => {
    await get(REPORT, { 'x-api-key': KEYS.growth })
    expect((await get(REPORT, { 'x-api-key': KEYS.writer })).status).toBe(403)
    expect((await get(REPORT, { 'x-api-key': 'rgw_unknown' })).status).toBe(401)
    expect((await get(REPORT, {})).status).toBe(401)
  })

  it('keeps the rate limit: the fourth hit of a 3-a-minute team is 429 with retry-after', async () => {
    const statuses: number[] = []
    let retryAfter: unknown
    for (let i = 0; i < 4; i++) {
      const res = await get(REPORT, { 'x-api-key': KEYS.limited })
      statuses.push(res.status)
      retryAfter = res.headers['retry-after']
    }
    expect(statuses).toEqual([200, 200, 200, 429])
    expect(Number(retryAfter)).toBeGreaterThan(0)
  })

  it('leaves a refresh to the route (REFRESH, a new platform call)', async () => {
    await get(REPORT, { 'x-api-key': KEYS.growth })
    const calls = env.sandbox.countRequests((r) => r.path === '/api/v1/report/campaigns/get')
    const refresh = await get(REPORT, { 'x-api-key': KEYS.growth, 'cache-control': 'no-cache' })
    expect(refresh.headers['x-cache']).toBe('REFRESH')
    expect(env.sandbox.countRequests((r) => r.path === '/api/v1/report/campaigns/get')).toBe(calls + 1)
  })
})
