/**
 * The typed client (packages/client) against a gateway listening on loopback in front of
 * the platform sandbox: a typed report read, an ETag round trip answered 304, a 429
 * waited out when its retry-after is within the client's bound and thrown when it is
 * not, GW_* answers thrown as GatewayError, platform calls by their real path; and, against
 * small loopback servers, what is not the gateway's answer: no listener, a proxy's HTML
 * 502, a server that never answers, a 200 that is not a report.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { createGatewayClient, GatewayError, type GatewayClientOptions, type ReportAnswer, type ReportRow } from '@report-gateway/client'
import { afterEach, describe, expect, expectTypeOf, it } from 'vitest'
import { hashApiKey } from '../../src/access/api-keys.js'
import { useSandboxGateway } from '../helpers/fixtures.js'
import { KEYS, TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import { waitFor } from '../helpers/wait.js'

/** A team allowed one call a second: its 429 says to come back within a second. */
const BURST_KEY = 'rgw_test_burst_key_88888888888888888888888888'
const YAML = `${TEAMS_YAML.trimEnd()}
  burst:
    keys: ["${hashApiKey(BURST_KEY)}"]
    advertisers: ["*"]
    rateLimit: { max: 1, window: 1s }
`

const env = useSandboxGateway({ yaml: YAML })

interface Exchange {
  method: string
  url: string
  ifNoneMatch: string | null
  status: number
  retryAfter: string | null
  sentAt: number
  answeredAt: number
}

/** A client of the gateway whose fetch records each exchange as the wire saw it. */
function recordingClient(apiKey: string, options: Partial<GatewayClientOptions> = {}) {
  const exchanges: Exchange[] = []
  const client = createGatewayClient({
    baseUrl: env.url,
    apiKey,
    ...options,
    fetch: async (request) => {
      const sentAt = performance.now()
      const response = await fetch(request)
      exchanges.push({
        method: request.method,
        url: request.url,
        ifNoneMatch: request.headers.get('if-none-match'),
        status: response.status,
        retryAfter: response.headers.get('retry-after'),
        sentAt,
        answeredAt: performance.now(),
      })
      return response
    },
  })
  return { client, exchanges }
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('resolved, expected a rejection')
    },
    (err: unknown) => err,
  )
}

const DAYS = ['2026-03-02', '2026-03-03', '2026-03-04', '2026-03-05', '2026-03-06', '2026-03-07', '2026-03-08']

describe('the typed client against a gateway', () => {
  it('reads a report: typed rows, the body the gateway sends', async () => {
    const { client } = recordingClient(KEYS.all)
    const query = { advertiserId: 101, dateFrom: DAYS[0]!, dateTo: DAYS[6]!, byDate: true }
    const answer = await client.report('campaigns', query)
    expectTypeOf(answer).toEqualTypeOf<ReportAnswer>()
    expectTypeOf(answer.rows).toEqualTypeOf<ReportRow[]>()
    // The rows are the platform's as it sent them, which the gateway does not read: every field may be missing.
    expectTypeOf<ReportRow['impressions']>().toEqualTypeOf<number | undefined>()
    expectTypeOf<ReportRow['date']>().toEqualTypeOf<string | undefined>()

    const raw = await fetch(`${env.url}/api/v1/report/campaigns/get?advertiserId=101&dateFrom=${DAYS[0]}&dateTo=${DAYS[6]}&byDate=1`, { headers: { 'x-api-key': KEYS.all } })
    expect(raw.status).toBe(200)
    expect(answer.report).toEqual(await raw.json())
    expect(answer.rows.map((row) => row.date)).toEqual(DAYS)
    for (const row of answer.rows) {
      expect(row).toMatchObject({ currency: 'USD', impressions: expect.any(Number), clicks: expect.any(Number), reach: expect.any(Number) })
      expect(Number(row.clicks)).toBeLessThanOrEqual(Number(row.impressions))
      expect(Number(row.reach)).toBeLessThanOrEqual(Number(row.impressions))
      expect(row.campaignId).toBeUndefined()
    }
    expect(answer).toMatchObject({ cache: 'MISS', revalidated: false })
    expect(answer.etag).toMatch(/^"[^"]+"$/)
    expect(answer.requestId).toBeTruthy()
  })

  it('reads a report whose rows are of another shape than the sandbox\'s, as the gateway passes it on', async () => {
    const { client } = recordingClient(KEYS.all)
    const body = { data: [{ impressions: 1, conversions: 2 }, { date: 20260101 }] }
    env.sandbox.setFailure({ kind: 'status', status: 200, headers: { 'content-type': 'application/json' }, body, times: 1 })
    const answer = await client.report('campaigns', { advertiserId: 101, dateFrom: '2026-07-01', dateTo: '2026-07-02' })
    expect(answer.rows).toEqual(body.data)
  })

  it('sends the kept ETag: the gateway answers 304 and the client returns the kept body', async () => {
    const { client, exchanges } = recordingClient(KEYS.all)
    const query = { advertiserId: 102, dateFrom: DAYS[0]!, dateTo: DAYS[6]!, byCampaign: true }
    const first = await client.report('campaigns', query)
    const second = await client.report('campaigns', query)
    expect(exchanges.map((e) => [e.status, e.ifNoneMatch])).toEqual([
      [200, null],
      [304, first.etag],
    ])
    expect(first).toMatchObject({ cache: 'MISS', revalidated: false })
    expect(second).toMatchObject({ cache: 'HIT', revalidated: true, etag: first.etag })
    // What each cost, and its finality: the miss's fill held the platform, the 304 none; March's days are settled.
    expect(first.usage?.fill).toBeGreaterThan(0)
    expect(second.usage).toMatchObject({ fill: 0, day: expect.any(Number) as number, reset: expect.any(Number) as number })
    for (const answer of [first, second]) expect(answer.finality).toEqual({ settledThrough: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/) as string, provisional: null })
    expect(second.rows).toEqual(first.rows)
    expect(second.rows.length).toBeGreaterThan(0)
    expect(second.rows.every((row) => typeof row.campaignId === 'number' && typeof row.campaignName === 'string')).toBe(true)
    expect(second.requestId).not.toBe(first.requestId)
    // The revalidation is answered from the gateway's cache: one platform call for both reads.
    expect(env.callerRequests().filter((r) => r.path.endsWith('/report/campaigns/get') && r.query.includes('advertiserId=102'))).toHaveLength(1)
  })

  it('answers a read with the caller\'s own if-none-match by the gateway\'s 304, as it is', async () => {
    const { client, exchanges } = recordingClient(KEYS.all)
    const query = { advertiserId: 101, dateFrom: DAYS[1]!, dateTo: DAYS[3]!, byCampaign: true }
    const first = await client.report('campaigns', query)
    const mine = await client.report('campaigns', query, { headers: { 'if-none-match': first.etag! } })
    expect(exchanges.map((e) => [e.status, e.ifNoneMatch])).toEqual([
      [200, null],
      [304, first.etag],
    ])
    expect(mine).toMatchObject({ status: 304, notModified: true, report: null, rows: null, etag: first.etag, cache: 'HIT', revalidated: false })
    expect(mine.cacheStatus).toMatch(/^report-gateway; hit; ttl=\d+$/)
    if (!mine.notModified) expect.unreachable('the report has not changed')
  })

  it('waits out a 429 whose retry-after is within its bound, then reads', async () => {
    const { client, exchanges } = recordingClient(BURST_KEY, { retries: 2, maxRetryAfterSeconds: 5 })
    const query = { advertiserId: 101, dateFrom: DAYS[0]!, dateTo: DAYS[1]! }
    await client.report('campaigns', query)
    // The first call may have opened the team's window just before it ended: read until one is refused.
    while (exchanges.every((e) => e.status !== 429)) {
      expect(exchanges.length, 'a team allowed one call a second is refused within a few calls').toBeLessThan(10)
      await client.report('campaigns', query)
    }
    const refused = exchanges.findIndex((e) => e.status === 429)
    const retry = exchanges[refused + 1]!
    const seconds = Number(exchanges[refused]!.retryAfter)
    expect(seconds).toBeGreaterThanOrEqual(1)
    // The retry carries the ETag of the first read: 304 and the kept body, or 200.
    expect([200, 304]).toContain(retry.status)
    expect(retry.sentAt - exchanges[refused]!.answeredAt).toBeGreaterThanOrEqual(seconds * 1000 - 1)
  })

  it('throws a 429 whose retry-after is beyond its bound as GatewayError, without waiting', async () => {
    // Every retry-after is 1 s at least: a bound of 0 waits for none.
    const { client, exchanges } = recordingClient(KEYS.limited, { maxRetryAfterSeconds: 0 })
    const query = { advertiserId: 101, dateFrom: DAYS[0]!, dateTo: DAYS[0]! }
    let err: unknown
    for (let call = 0; err === undefined; call++) {
      expect(call, 'a team allowed 3 calls a minute is refused within a few calls').toBeLessThan(10)
      err = await client.report('campaigns', query).then(() => undefined, (e: unknown) => e)
    }
    expect(err).toBeInstanceOf(GatewayError)
    const refusal = err as GatewayError
    expect(refusal).toMatchObject({ code: 'GW_RATE_LIMITED', status: 429 })
    expect(refusal.retryAfterSeconds).toBeGreaterThanOrEqual(1)
    expect(refusal.requestId).toBeTruthy()
    expect(exchanges.at(-1)!.status).toBe(429)
    expect(exchanges.filter((e) => e.status === 429)).toHaveLength(1)
  })

  it('throws every failure as a GatewayError: GW_* answers with their code, the platform\'s own 4xx with PLATFORM_ANSWER', async () => {
    const wrongKey = recordingClient('rgw_not_a_key_of_any_team_0000000000000000')
    const unauthorized = await rejection(wrongKey.client.report('campaigns', { advertiserId: 101, dateFrom: DAYS[0]!, dateTo: DAYS[1]! }))
    expect(unauthorized).toBeInstanceOf(GatewayError)
    expect(unauthorized).toMatchObject({ code: 'GW_UNAUTHORIZED', status: 401, retryAfterSeconds: null })
    expect((unauthorized as GatewayError).requestId).toBeTruthy()

    const { client } = recordingClient(KEYS.growth)
    expect(await rejection(client.report('campaigns', { advertiserId: 103, dateFrom: DAYS[0]!, dateTo: DAYS[1]! }))).toMatchObject({ code: 'GW_FORBIDDEN', status: 403 })
    expect(await rejection(client.report('campaigns', { advertiserId: 101, dateFrom: '2026-02-30', dateTo: DAYS[1]! }))).toMatchObject({ code: 'GW_BAD_QUERY', status: 400 })
    const platform = await rejection(client.report('nosuchsplit', { advertiserId: 101, dateFrom: DAYS[0]!, dateTo: DAYS[1]! }))
    expect(platform).toBeInstanceOf(GatewayError)
    expect(platform).toMatchObject({ code: 'PLATFORM_ANSWER', status: 404 })
  })

  it('says how the cache answered: x-cache and RFC 9211 cache-status', async () => {
    const { client } = recordingClient(KEYS.all)
    const query = { advertiserId: 103, dateFrom: DAYS[0]!, dateTo: DAYS[2]! }
    const miss = await client.report('campaigns', query, { headers: { 'cache-control': 'no-cache' } })
    expect(miss).toMatchObject({ cache: 'REFRESH', cacheStatus: expect.stringMatching(/^report-gateway; fwd=request; stored; ttl=\d+$/) })
    const hit = await client.report('campaigns', query)
    expect(hit).toMatchObject({ cache: 'HIT', revalidated: true, cacheStatus: expect.stringMatching(/^report-gateway; hit; ttl=\d+$/) })
  })

  it('says the status of a report the platform answered with another 2xx, passed on as it came, read now or as a job', async () => {
    const { client } = recordingClient(KEYS.all)
    const report = { data: [{ date: DAYS[0], impressions: 1, clicks: 0, ctr: 0, spent: 0, reach: 1, currency: 'USD' }] }
    env.sandbox.setFailure({ kind: 'status', status: 203, body: report, times: 1 })
    const now = await client.report('campaigns', { advertiserId: 102, dateFrom: DAYS[0]!, dateTo: DAYS[0]! })
    env.sandbox.setFailure({ kind: 'status', status: 203, body: report, times: 1 })
    const job = await client.reportJob('campaigns', { advertiserId: 102, dateFrom: '2025-01-01', dateTo: '2025-12-31' })
    const kept = await job.result()
    expect([now, kept].map((answer) => [answer.status, answer.cache, answer.rows])).toEqual([[203, 'BYPASS', report.data], [203, 'BYPASS', report.data]])
  })

  it('makes platform calls by their real path: call() and the openapi-fetch client alike', async () => {
    const { client, exchanges } = recordingClient(KEYS.all)
    const listed = await client.call<{ data: { id: number; userId: number }[] }>('POST', '/api/v1/campaign/get', { query: { per_page: 200 }, body: { userId: 101 } })
    expect(listed.status).toBe(200)
    expect(listed.body.data.length).toBeGreaterThan(0)
    expect(listed.body.data.every((c) => c.userId === 101)).toBe(true)
    const { data, response } = await client.api.POST('/api/v1/campaign/get', { body: { userId: 102 } })
    expect(response.status).toBe(200)
    // Typed by the document: the campaign list's answer, where the gateway reads it.
    expectTypeOf(data!.data[0]!.userId).toEqualTypeOf<number>()
    expect(data!.data.every((c) => c.userId === 102)).toBe(true)
    expect(exchanges.map((e) => `${e.method} ${new URL(e.url).pathname}`)).toEqual(['POST /api/v1/campaign/get', 'POST /api/v1/campaign/get'])
    expect(env.callerRequests().filter((r) => r.path === '/api/v1/campaign/get')).toHaveLength(2)
    // A read-only team's write is the gateway's refusal, thrown with its code.
    const refused = await rejection(recordingClient(KEYS.growth).client.call('DELETE', '/api/v1/campaign/banner/delete/101001'))
    expect(refused).toMatchObject({ name: 'GatewayError', code: 'GW_FORBIDDEN', status: 403 })
  })
})

// The gateway passes a platform's redirect on (its location on the gateway when it names
// the platform, as it is when it names another host) with no content. The client follows
// none, whatever a call asks (openapi-fetch takes fetch's own options, `redirect` among
// them): following one to another origin would take the team key there in x-api-key,
// which fetch keeps on a redirect (it drops only authorization, and only across origins).
describe('the typed client and a redirect', () => {
  const reached: IncomingMessage[] = []
  let elsewhere: Server | undefined
  afterEach(async () => {
    env.sandbox.clearRouteFailures()
    reached.length = 0
    if (elsewhere) await new Promise((resolve) => elsewhere!.close(resolve).closeAllConnections())
    elsewhere = undefined
  })

  /** A server of another origin: 127.0.0.2 is loopback too, and not the platform's host (127.0.0.1), so the gateway passes its URL on as it is. */
  async function otherOrigin(): Promise<string> {
    elsewhere = createServer((req, res) => {
      reached.push(req)
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"data": []}')
    })
    await new Promise<void>((resolve) => elsewhere!.listen(0, '127.0.0.2', resolve))
    return `http://127.0.0.2:${(elsewhere.address() as AddressInfo).port}`
  }

  it('throws a report read\'s redirect as CLIENT_REDIRECT: its status, its location on the gateway, what its call cost; not followed', async () => {
    const { client, exchanges } = recordingClient(KEYS.all)
    const platform = new URL(env.sandbox.url)
    const path = '/api/v1/report/creatives/get'
    env.sandbox.setRouteFailure(path, { kind: 'redirect', location: `http://${platform.host}${path}?advertiserId=101&page=2` })
    const err = await rejection(client.report('creatives', { advertiserId: 101, dateFrom: DAYS[0]!, dateTo: DAYS[1]! }))
    expect(err).toBeInstanceOf(GatewayError)
    expect(err).toMatchObject({ code: 'CLIENT_REDIRECT', status: 302, location: `${env.url}${path}?advertiserId=101&page=2`, requestId: expect.any(String), usage: { fill: expect.any(Number) } })
    expect((err as Error).message).toBe(`GET ${env.url}${path}?advertiserId=101&dateFrom=${DAYS[0]}&dateTo=${DAYS[1]}: a 302 redirect to ${env.url}${path} (its query not shown), not followed: the key goes nowhere else`)
    expect(exchanges.map((e) => e.status)).toEqual([302])
  })

  it('follows no redirect to another origin, whatever the call asks: the key goes nowhere else', async () => {
    const origin = await otherOrigin()
    const { client } = recordingClient(KEYS.all)
    const path = '/api/v1/campaign/get'
    env.sandbox.setRouteFailure(path, { kind: 'redirect', status: 307, location: `${origin}/collect` })
    const called = await rejection(client.call('POST', path, { body: { userId: 101 } }))
    // openapi-fetch passes fetch's options on: a call that asks fetch to follow is not followed either.
    const typed = await rejection(client.api.POST(path, { body: { userId: 101 }, redirect: 'follow' }))
    expect(reached.map((req) => [req.method, req.url, req.headers['x-api-key']])).toEqual([])
    expect(called).toMatchObject({ code: 'CLIENT_REDIRECT', status: 307, location: `${origin}/collect` })
    expect(typed).toMatchObject({ code: 'CLIENT_REDIRECT', status: 307, location: `${origin}/collect` })
  })
})

describe('the typed client against what is not the gateway', () => {
  const servers: Server[] = []
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve).closeAllConnections())))
  })

  async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
    const server = createServer(handler)
    servers.push(server)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  }

  const WEEK = { advertiserId: 101, dateFrom: DAYS[0]!, dateTo: DAYS[6]! }

  it('throws CLIENT_NETWORK when nothing listens, with the cause', async () => {
    // A port that was just free: a listener opened and closed.
    const url = await serve(() => undefined)
    await new Promise((resolve) => servers.pop()!.close(resolve))
    const err = await rejection(createGatewayClient({ baseUrl: url, apiKey: KEYS.all }).report('campaigns', WEEK))
    expect(err).toBeInstanceOf(GatewayError)
    expect(err).toMatchObject({ code: 'CLIENT_NETWORK', status: null })
    expect((err as Error).message).toContain('ECONNREFUSED')
  })

  it("throws a 401 without a GW_* code (baseUrl set to the platform itself) as CLIENT_UNKNOWN_CODE saying it is not the gateway's, not as the platform's answer passed on", async () => {
    // The gateway answers a key it refuses 401 GW_UNAUTHORIZED, and never passes a platform
    // 401 on (502 GW_PLATFORM_REFUSED or GW_PLATFORM_AUTH): a bare 401 is another server's.
    const client = createGatewayClient({ baseUrl: env.sandbox.url, apiKey: KEYS.all })
    const err = await rejection(client.report('campaigns', WEEK))
    expect(err).toMatchObject({ name: 'GatewayError', code: 'CLIENT_UNKNOWN_CODE', status: 401, body: { message: 'Unauthenticated.' } })
    expect((err as Error).message).toBe("401: an answer without a GW_* code, so not the gateway's (a key it refuses is 401 GW_UNAUTHORIZED): is baseUrl the gateway's proxy listener? (Unauthenticated.)")
    expect(await rejection(client.call('POST', '/api/v1/campaign/get', { body: { userId: 101 } }))).toMatchObject({ code: 'CLIENT_UNKNOWN_CODE', status: 401 })
  })

  it('throws an https:// baseUrl of a listener that speaks plain HTTP as CLIENT_NETWORK saying so, on one line', async () => {
    // The gateway's listeners speak plain HTTP; TLS is an ingress's. OpenSSL's own words end in a line break.
    const url = await serve((_req, res) => res.end('{}'))
    const err = await rejection(createGatewayClient({ baseUrl: url.replace('http://', 'https://'), apiKey: KEYS.all }).report('campaigns', WEEK))
    expect(err).toMatchObject({ name: 'GatewayError', code: 'CLIENT_NETWORK', status: null })
    const message = (err as Error).message
    expect(message).toContain(': no answer (TLS failed: the server answered in plain HTTP, not TLS (ERR_SSL_WRONG_VERSION_NUMBER); the gateway speaks plain HTTP: write baseUrl http://…, or https:// to a TLS ingress in front of it)')
    expect(message).not.toMatch(/[\r\n]/)
  })

  it('throws a proxy\'s HTML 502 in front of the gateway as CLIENT_NOT_JSON, not as a gateway code', async () => {
    const page = '<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n'
    const url = await serve((_req, res) => res.writeHead(502, { 'content-type': 'text/html' }).end(page))
    const client = createGatewayClient({ baseUrl: url, apiKey: KEYS.all, retries: 2 })
    const err = await rejection(client.report('campaigns', WEEK))
    expect(err).toMatchObject({ name: 'GatewayError', code: 'CLIENT_NOT_JSON', status: 502, body: page })
    expect(await rejection(client.call('POST', '/api/v1/campaign/get', { body: { userId: 101 } }))).toMatchObject({ code: 'CLIENT_NOT_JSON', status: 502 })
  })

  it('throws CLIENT_TIMEOUT for a server that takes the request and never answers, within its timeout', async () => {
    let arrived = 0
    let left = 0
    const url = await serve((req) => {
      arrived += 1
      req.socket.once('close', () => (left += 1))
    })
    const err = await rejection(createGatewayClient({ baseUrl: url, apiKey: KEYS.all, timeoutMs: 300 }).report('campaigns', WEEK))
    // Ended by its timer (the only writer of this message), the request taken and left open by the server.
    expect(err).toMatchObject({ name: 'GatewayError', code: 'CLIENT_TIMEOUT', status: null, message: expect.stringMatching(/: no answer within 300 ms$/) })
    expect(arrived).toBe(1)
    // The client, not the server, ended the call: the connection closes after the error.
    await waitFor('the client to close its connection', () => left === 1)
  })

  it('throws CLIENT_TIMEOUT within its timeout while the garbage collector runs: the deadline does not hang on a chain of abort signals', async () => {
    setFlagsFromString('--expose-gc')
    const gc = runInNewContext('gc') as () => void
    const url = await serve(() => undefined)
    const collecting = setInterval(gc, 5)
    try {
      const client = createGatewayClient({ baseUrl: url, apiKey: KEYS.all, timeoutMs: 300 })
      for (let i = 0; i < 3; i++) expect(await rejection(client.report('campaigns', WEEK))).toMatchObject({ code: 'CLIENT_TIMEOUT' })
    } finally {
      clearInterval(collecting)
    }
  })

  it('throws CLIENT_TIMEOUT for an answer whose body stops half-way', async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' })
      res.write('{"data": [')
    })
    const err = await rejection(createGatewayClient({ baseUrl: url, apiKey: KEYS.all, timeoutMs: 300 }).report('campaigns', WEEK))
    expect(err).toMatchObject({ code: 'CLIENT_TIMEOUT' })
  })

  it('throws a 200 whose body is not a report as CLIENT_NOT_A_REPORT', async () => {
    const url = await serve((_req, res) => res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'odd-1' }).end('{"status":"ok"}'))
    const err = await rejection(createGatewayClient({ baseUrl: url, apiKey: KEYS.all }).report('campaigns', WEEK))
    expect(err).toMatchObject({ name: 'GatewayError', code: 'CLIENT_NOT_A_REPORT', status: 200, requestId: 'odd-1', body: { status: 'ok' } })
  })
})
