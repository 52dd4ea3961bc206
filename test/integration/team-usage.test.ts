import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { hashApiKey } from '../../src/access/api-keys.js'
import { utcDay } from '../../src/observe/usage.js'
import { onRealTimers } from '../helpers/clock.js'
import { KEYS, buildGateway, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useRedis, useSandbox } from '../helpers/fixtures.js'
import { rawHttp, rawRequest, SANDBOX_TEAMS_YAML, type RawResponse } from '../helpers/sandbox-gateway.js'

// Usage per team (daily totals in Redis, Prometheus counters), the rate-limit
// headers on every answer of a limited team (the fast path's hits included), and the
// audit lines of write calls and refused admin calls, with operators named by
// ADMIN_TOKENS_FILE. One story, told in order, against the sandbox and a real Redis.

const ADMIN_TOKEN = 'usage-admin-token-00000000000000'
const ALICE_TOKEN = 'usage-alice-token-11111111111111'
const REPORT = (advertiser: number) => `/api/v1/report/campaigns/get?advertiserId=${advertiser}&dateFrom=2026-01-01&dateTo=2026-01-03`
const CAMPAIGN = { userId: 101, name: 'Usage test', adDomain: 'example.com', clickUrl: 'https://example.com/x', dates: { from: '2026-03-01', to: '2026-03-31' }, country: 'KE', bid: 0.5, budget: { daily: 10, total: 100 }, creativeSetIds: [1010011] }

const sandbox = useSandbox()
const redis = useRedis()
// A team's window is a minute of Redis' clock as the gateway reads it (its clock plus the offset read at
// its start, and again each minute after): this gateway's clock stands still (on real timers), so the
// limited team's calls, made within the start's and the first test's timeouts (40 s), fall in one window
// however long a loaded machine takes over them; the usage's day is `still`'s.
const still = Date.now()
let gw: TestGateway
let port: number
let dir: string
const bytes: Record<string, number> = {}
// What the sandbox received, counted before each test's clean-up empties its log.
let platformCalls = 0
afterEach(() => {
  platformCalls += sandbox.requests.length
})

async function send(team: keyof typeof KEYS, method: string, target: string, body?: unknown): Promise<RawResponse> {
  const json = body === undefined ? undefined : JSON.stringify(body)
  const res = await rawRequest(port, rawHttp(method, target, { key: KEYS[team], ...(json ? { body: json, headers: { 'content-type': 'application/json' } } : {}) }))
  bytes[team] = (bytes[team] ?? 0) + Buffer.byteLength(res.text, 'latin1')
  return res
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rgw-usage-'))
  writeFileSync(join(dir, 'admins'), `# operators\nalice:${hashApiKey(ALICE_TOKEN)}\n`)
  const config = testConfig(
    { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: redis.server.url, ADMIN_TOKEN, ADMIN_TOKENS_FILE: join(dir, 'admins') },
    `${SANDBOX_TEAMS_YAML}\nusage: { flush: 1h }\n`,
  )
  gw = await buildGateway(config, { clock: onRealTimers(() => still) })
  // The start's token probe is the gateway's own call, no team's: it counts under (gateway).
  sandbox.clearRequests()
  await gw.proxy.listen({ host: '127.0.0.1', port: 0 })
  port = (gw.proxy.server.address() as { port: number }).port
})

afterAll(async () => {
  await gw.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('a limited team sees its standing on every answer', () => {
  it('RateLimit-Policy and RateLimit on a miss, the fast path hits, a refusal and the 429', async () => {
    const miss = await send('limited', 'GET', REPORT(101))
    const hit1 = await send('limited', 'GET', REPORT(101))
    const hit2 = await send('limited', 'GET', REPORT(101))
    expect([miss.status, hit1.status, hit2.status]).toEqual([200, 200, 200])
    expect([miss.headers['x-cache'], hit1.headers['x-cache'], hit2.headers['x-cache']]).toEqual(['MISS', 'HIT', 'HIT'])
    for (const [res, left] of [[miss, 2], [hit1, 1], [hit2, 0]] as const) {
      expect(res.headers['ratelimit-policy']).toBe('"default";q=3;w=60')
      const [, r, t] = /^"default";r=(\d+);t=(\d+)$/.exec(res.headers.ratelimit ?? '') ?? []
      expect(Number(r)).toBe(left)
      expect(Number(t)).toBeGreaterThanOrEqual(1)
      expect(Number(t)).toBeLessThanOrEqual(60)
    }
    // Refused before the limit counts (a write by a reading team): still told where it stands.
    const forbidden = await send('limited', 'POST', '/api/v1/campaign/banner/create', CAMPAIGN)
    expect(forbidden.status).toBe(403)
    expect(forbidden.headers.ratelimit).toMatch(/^"default";r=0;t=\d+$/)

    const refused = await send('limited', 'GET', REPORT(101))
    expect(refused.status).toBe(429)
    const retryAfter = Number(refused.headers['retry-after'])
    expect(retryAfter).toBeGreaterThanOrEqual(1)
    expect(refused.headers.ratelimit).toBe(`"default";r=0;t=${retryAfter}`)
    expect(JSON.parse(refused.body)).toMatchObject({ code: 'GW_RATE_LIMITED', message: `rate limit reached; retry in ${retryAfter} s` })
  })

  it('a team without a limit gets no rate-limit headers', async () => {
    const res = await send('all', 'GET', REPORT(102))
    expect(res.status).toBe(200)
    expect(res.headers['ratelimit-policy']).toBeUndefined()
    expect(res.headers.ratelimit).toBeUndefined()
  })
})

describe('usage per team', () => {
  it('counts coalesced waiters as cache hits, proxied calls and writes as platform calls, and a platform failure as an error', async () => {
    sandbox.setLatency(300)
    const together = await Promise.all(Array.from({ length: 5 }, () => send('all', 'GET', REPORT(103))))
    expect(together.map((r) => r.status)).toEqual([200, 200, 200, 200, 200])
    sandbox.setLatency(0)
    expect((await send('all', 'POST', '/api/v1/campaign/get', { userId: 101 })).status).toBe(200)
    expect((await send('writer', 'POST', '/api/v1/campaign/banner/create', CAMPAIGN)).status).toBe(201)
    // The platform fails once: the team's answer is a 502, one of its errors.
    sandbox.setFailure({ kind: 'status', status: 500, times: 1 })
    expect((await send('growth', 'POST', '/api/v1/campaign/get', { userId: 101 })).status).toBe(502)
  })

  it('GET /admin/usage: the day totals add up to what was sent', async () => {
    const res = await gw.admin.inject({ method: 'GET', url: '/admin/usage', headers: { authorization: `Bearer ${ALICE_TOKEN}` } })
    expect(res.statusCode).toBe(200)
    const { from, to, usage } = res.json() as { from: string; to: string; usage: Record<string, unknown>[] }
    const today = utcDay(still)
    expect([from, to]).toEqual([today, today])
    // Each team's calls held the platform a while (their seat-time).
    const held = { platformSeconds: expect.any(Number) as number }
    expect(usage).toEqual([
      // The start's token probe and the writer's creative sets looked up: calls of the gateway's own, which answer no request.
      { day: today, team: '(gateway)', requests: 0, cacheHits: 0, platformCalls: 2, platformCallsSaved: 0, bytes: 0, rateLimited: 0, errors: 0, platformSeconds: 0 },
      // REPORT(102) once (a miss); REPORT(103) five times at once (one call); one proxied call.
      { day: today, team: 'all', requests: 7, cacheHits: 4, platformCalls: 3, platformCallsSaved: 4, bytes: bytes.all, rateLimited: 0, errors: 0, ...held },
      // One proxied call, answered 502.
      { day: today, team: 'growth', requests: 1, cacheHits: 0, platformCalls: 1, platformCallsSaved: 0, bytes: bytes.growth, rateLimited: 0, errors: 1, ...held },
      // A miss, two hits, a 403 and a 429.
      { day: today, team: 'limited', requests: 5, cacheHits: 2, platformCalls: 1, platformCallsSaved: 2, bytes: bytes.limited, rateLimited: 1, errors: 0, ...held },
      { day: today, team: 'writer', requests: 1, cacheHits: 0, platformCalls: 1, platformCallsSaved: 0, bytes: bytes.writer, rateLimited: 0, errors: 0, ...held },
    ])
    expect(usage.reduce((n, row) => n + (row.platformCalls as number), 0)).toBe(platformCalls + 1)
    for (const row of usage.slice(1)) expect(row.platformSeconds, row.team as string).toBeGreaterThan(0)
    // Kept in Redis, one hash per team and day (each team's in a hash slot of its own), and the day's set of teams.
    expect(await redis.client.hget(`rgw:usage:{all}:${today}`, 'requests')).toBe('7')
    expect(await redis.client.hget(`rgw:usage:{limited}:${today}`, 'rateLimited')).toBe('1')
    expect(await redis.client.hget(`rgw:usage:{growth}:${today}`, 'errors')).toBe('1')
    expect((await redis.client.smembers(`rgw:usage-teams:${today}`)).sort()).toEqual(['(gateway)', 'all', 'growth', 'limited', 'writer'])
    expect(await redis.client.ttl(`rgw:usage:{all}:${today}`)).toBeGreaterThan(0)

    const one = await gw.admin.inject({ method: 'GET', url: `/admin/usage?team=writer&from=2026-01-01&to=${today}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect((one.json() as { usage: unknown[] }).usage).toEqual([expect.objectContaining({ team: 'writer', requests: 1 })])
    const bad = await gw.admin.inject({ method: 'GET', url: '/admin/usage?from=2026-02-30', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(bad.statusCode).toBe(400)

    // ?format=csv: the same rows as a CSV file, for the same parameters.
    const auth = { authorization: `Bearer ${ADMIN_TOKEN}` }
    const csv = await gw.admin.inject({ method: 'GET', url: '/admin/usage?format=csv', headers: auth })
    expect(csv.statusCode).toBe(200)
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8')
    expect(csv.headers['content-disposition']).toBe(`attachment; filename="usage-${today}-${today}.csv"`)
    expect(csv.headers['cache-control']).toBe('no-store')
    const columns = ['day', 'team', 'requests', 'cacheHits', 'platformCalls', 'platformCallsSaved', 'bytes', 'rateLimited', 'errors', 'platformSeconds']
    const seconds = (team: string) => usage.find((row) => row.team === team)?.platformSeconds as number
    expect(csv.body).toBe([columns.join(','), ...usage.map((row) => columns.map((c) => row[c]).join(',')), ''].join('\r\n'))
    expect(csv.body.split('\r\n')[4]).toBe(`${today},limited,5,2,1,2,${bytes.limited},1,0,${seconds('limited')}`)
    const writer = await gw.admin.inject({ method: 'GET', url: `/admin/usage?format=csv&team=writer&from=2026-01-01&to=${today}`, headers: auth })
    expect(writer.headers['content-disposition']).toBe(`attachment; filename="usage-2026-01-01-${today}.csv"`)
    expect(writer.body).toBe(`${columns.join(',')}\r\n${today},writer,1,0,1,0,${bytes.writer},0,0,${seconds('writer')}\r\n`)
    expect((await gw.admin.inject({ method: 'GET', url: '/admin/usage?format=json', headers: auth })).json()).toEqual(res.json())
  })

  it('GET /admin/usage?format=: csv or json, else 400 GW_BAD_REQUEST; the CSV form refuses what the JSON form refuses', async () => {
    const auth = { authorization: `Bearer ${ADMIN_TOKEN}` }
    for (const format of ['xml', 'CSV', '', 'csv&format=json']) {
      const bad = await gw.admin.inject({ method: 'GET', url: `/admin/usage?format=${format}`, headers: auth })
      const message = format.includes('&') ? 'format: given more than once' : 'format: must be json or csv'
      expect(bad.json(), format).toEqual({ statusCode: 400, code: 'GW_BAD_REQUEST', error: 'Bad Request', message })
    }
    expect((await gw.admin.inject({ method: 'GET', url: '/admin/usage?format=csv&from=2026-02-30', headers: auth })).statusCode).toBe(400)
    expect((await gw.admin.inject({ method: 'GET', url: '/admin/usage?format=csv&team=writr', headers: auth })).json()).toMatchObject({ code: 'GW_NOT_FOUND' })
    const empty = await gw.admin.inject({ method: 'GET', url: '/admin/usage?format=csv&team=growth&from=2026-01-01&to=2026-01-02', headers: auth })
    expect(empty.body).toBe('day,team,requests,cacheHits,platformCalls,platformCallsSaved,bytes,rateLimited,errors,platformSeconds\r\n')
  })

  it('GET /admin/usage?team=<typo>: 404, the name not repeated; a running team without usage: 200, empty', async () => {
    // A name no team can have (the config's rule) is no typo of one.
    for (const team of ['a%20b', '%3Cb%3E', 'gateway)']) {
      const malformed = await gw.admin.inject({ method: 'GET', url: `/admin/usage?team=${team}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
      expect(malformed.json(), team).toMatchObject({ statusCode: 400, code: 'GW_BAD_REQUEST', message: 'team: not a team name (nor (gateway))' })
    }
    const typo = await gw.admin.inject({ method: 'GET', url: '/admin/usage?team=writr', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(typo.statusCode).toBe(404)
    expect(typo.json()).toEqual({ statusCode: 404, code: 'GW_NOT_FOUND', error: 'Not Found', message: 'no team of the name this call gave: it is not in the running teams and has no usage in the range' })
    const quiet = await gw.admin.inject({ method: 'GET', url: '/admin/usage?team=growth&from=2026-01-01&to=2026-01-02', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(quiet.statusCode).toBe(200)
    expect(quiet.json()).toEqual({ from: '2026-01-01', to: '2026-01-02', usage: [] })
  })

  it('GET /admin/usage adds what a replica of an earlier version wrote in the day\'s shared hash (a rolling upgrade, or days before it)', async () => {
    const auth = { authorization: `Bearer ${ADMIN_TOKEN}` }
    await redis.client.hset('rgw:{usage}:2026-01-05', 'writer:requests', '3', 'writer:platformCalls', '1', 'gone:requests', '2')
    await redis.client.hset('rgw:usage:{writer}:2026-01-05', 'requests', '4')
    await redis.client.sadd('rgw:usage-teams:2026-01-05', 'writer')
    const day = (await gw.admin.inject({ method: 'GET', url: '/admin/usage?from=2026-01-05&to=2026-01-05', headers: auth })).json() as { usage: Record<string, unknown>[] }
    expect(day.usage).toEqual([
      expect.objectContaining({ team: 'gone', requests: 2 }),
      expect.objectContaining({ team: 'writer', requests: 7, platformCalls: 1 }),
    ])
    const one = (await gw.admin.inject({ method: 'GET', url: '/admin/usage?team=writer&from=2026-01-05&to=2026-01-05', headers: auth })).json() as { usage: Record<string, unknown>[] }
    expect(one.usage).toEqual([expect.objectContaining({ team: 'writer', requests: 7 })])
  })

  it('Prometheus counts requests by team and result, and platform calls by team', async () => {
    const text = (await gw.admin.inject({ method: 'GET', url: '/metrics' })).body
    const value = (series: string) => Number(text.split('\n').find((l) => l.startsWith(`${series} `))?.split(' ')[1])
    expect(value('gateway_team_requests_total{team="limited",result="hit"}')).toBe(2)
    expect(value('gateway_team_requests_total{team="limited",result="ok"}')).toBe(1)
    expect(value('gateway_team_requests_total{team="limited",result="refused"}')).toBe(1)
    expect(value('gateway_team_requests_total{team="limited",result="rate_limited"}')).toBe(1)
    expect(value('gateway_team_requests_total{team="all",result="hit"}')).toBe(4)
    expect(value('gateway_team_platform_calls_total{team="all"}')).toBe(3)
    expect(value('gateway_team_platform_calls_total{team="writer"}')).toBe(1)
    expect(value('gateway_team_requests_total{team="growth",result="error"}')).toBe(1)
  })
})

describe('audit', () => {
  it('a line per write call, refused ones included, naming the team, key id, account, status and request id', () => {
    const writes = gw.logs.records().filter((r) => r.kind === 'audit' && r.action === 'write')
    expect(writes).toEqual([
      // Refused before its body was read: the accounts it named are not known.
      expect.objectContaining({ team: 'limited', keyId: hashApiKey(KEYS.limited).slice(7, 19), method: 'POST', path: '/api/v1/campaign/banner/create', accounts: [], status: 403, reqId: expect.any(String) }),
      expect.objectContaining({ team: 'writer', keyId: hashApiKey(KEYS.writer).slice(7, 19), method: 'POST', path: '/api/v1/campaign/banner/create', accounts: ['101'], status: 201, reqId: expect.any(String) }),
    ])
  })

  it('a line per refused admin authentication with its source address; operators named by ADMIN_TOKENS_FILE', async () => {
    const wrong = await gw.admin.inject({ method: 'DELETE', url: '/admin/cache', headers: { authorization: 'Bearer not-an-admin-token-at-all' }, remoteAddress: '10.1.2.3' })
    expect(wrong.statusCode).toBe(401)
    const none = await gw.admin.inject({ method: 'GET', url: '/admin/usage' })
    expect(none.statusCode).toBe(401)
    expect((await gw.admin.inject({ method: 'DELETE', url: '/admin/cache', headers: { authorization: `Bearer ${ALICE_TOKEN}` } })).statusCode).toBe(200)
    const audit = gw.logs.records().filter((r) => r.kind === 'audit')
    expect(audit.filter((r) => r.action === 'admin-auth')).toEqual([
      expect.objectContaining({ outcome: 'refused', source: '10.1.2.3', method: 'DELETE', path: '/admin/cache', reason: 'unknown token' }),
      expect.objectContaining({ outcome: 'refused', source: '127.0.0.1', method: 'GET', path: '/admin/usage', reason: 'no bearer token' }),
    ])
    expect(audit.find((r) => r.action === 'purge')).toMatchObject({ actor: 'alice' })
  })

  it('no log line holds a key or an admin token', () => {
    const text = gw.logs.text()
    for (const secret of [...Object.values(KEYS), ADMIN_TOKEN, ALICE_TOKEN, 'not-an-admin-token-at-all']) expect(text).not.toContain(secret)
  })
})
