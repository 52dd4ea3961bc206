/**
 * The typed client (packages/client) against a scripted fetch: what it sends, when it
 * sends a read again and when it does not, the ETags it keeps, and the errors it throws.
 * test/integration/typed-client.test.ts runs it against a real gateway.
 */
import { answerError, createGatewayClient, factsOf, GatewayError, platformUsageOf, retryAfterSeconds, type GatewayClientOptions, type NotModifiedAnswer, type ReportAnswer, type ReportRow } from '@report-gateway/client'
import { describe, expect, expectTypeOf, it, vi } from 'vitest'
import { inTimeZone } from '../helpers/time-zone.js'

const BASE = 'http://127.0.0.1:1'
const KEY = 'rgw_test_client_key_000000000000000000000'
const WEEK = { advertiserId: 101, dateFrom: '2026-02-01', dateTo: '2026-02-07' }
const ROWS: ReportRow[] = [{ impressions: 1000, clicks: 9, ctr: 0.9, spent: 1.25, reach: 800, currency: 'USD' }]

type Answer = (request: Request) => Response

/** A fetch that answers from a script, one answer per request, and keeps the requests. */
function scripted(...answers: Answer[]) {
  const requests: Request[] = []
  const fetch = async (request: Request): Promise<Response> => {
    requests.push(request)
    const answer = answers.shift()
    if (!answer) throw new Error(`no answer scripted for request ${requests.length}: ${request.method} ${request.url}`)
    return answer(request)
  }
  return { requests, fetch }
}

function clientWith(fetch: GatewayClientOptions['fetch'], options: Partial<GatewayClientOptions> = {}) {
  return createGatewayClient({ baseUrl: BASE, apiKey: KEY, fetch, ...options })
}

const gw = (status: number, code: string, headers: Record<string, string> = {}): Answer => () =>
  Response.json({ statusCode: status, code, error: 'x', message: `${code} says why` }, { status, headers: { 'x-request-id': `req-${code}`, ...headers } })

const report = (headers: Record<string, string> = {}, rows: ReportRow[] = ROWS): Answer => () =>
  Response.json({ data: rows }, { headers: { 'x-cache': 'MISS', 'x-request-id': 'req-report', ...headers } })

const notModified = (headers: Record<string, string> = {}): Answer => () => new Response(null, { status: 304, headers: { 'x-cache': 'HIT', ...headers } })

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('resolved, expected a rejection')
    },
    (err: unknown) => err,
  )
}

describe('the typed client: requests', () => {
  it('sends the team key as x-api-key to the report path, with the flags as 1 and 0', async () => {
    const s = scripted(report())
    const answer = await clientWith(s.fetch).report('campaigns', { ...WEEK, byDate: true, byCampaign: false })
    const [request] = s.requests
    expect(request!.headers.get('x-api-key')).toBe(KEY)
    expect(request!.headers.get('authorization')).toBeNull()
    const url = new URL(request!.url)
    expect(`${url.origin}${url.pathname}`).toBe(`${BASE}/api/v1/report/campaigns/get`)
    expect(Object.fromEntries(url.searchParams)).toEqual({ advertiserId: '101', dateFrom: '2026-02-01', dateTo: '2026-02-07', byDate: '1', byCampaign: '0' })
    expect(answer).toMatchObject({ rows: ROWS, report: { data: ROWS }, cache: 'MISS', requestId: 'req-report', etag: null, revalidated: false })
  })

  it('asks fetch for a redirect as it is, whatever the call asks, so that the key goes nowhere else', async () => {
    const s = scripted(report(), () => Response.json({}), () => Response.json({}))
    const client = clientWith(s.fetch)
    await client.report('campaigns', WEEK)
    await client.call('POST', '/api/v1/campaign/get', { body: { userId: 101 } })
    await client.api.POST('/api/v1/campaign/get', { body: { userId: 101 }, redirect: 'follow' })
    expect(s.requests.map((r) => r.redirect)).toEqual(['manual', 'manual', 'manual'])
  })

  it('throws a redirect as CLIENT_REDIRECT, its location resolved against the call\'s URL and its query kept out of the message; a browser\'s, which hides both, too', async () => {
    const moved = (status: number, location: string): Answer => () => new Response(null, { status, headers: { location, 'x-request-id': 'req-moved' } })
    // What a browser's fetch gives for `redirect: 'manual'`: no status, no headers.
    const opaque: Answer = () => ({ type: 'opaqueredirect', status: 0, statusText: '', headers: new Headers(), body: null }) as unknown as Response
    const s = scripted(moved(302, 'get?page=2&signature=5f0c'), moved(308, 'https://gateway.example/api/v1/campaign/get#top'), moved(301, 'http://[bad'), opaque)
    const client = clientWith(s.fetch, { retries: 0 })
    const relative = await rejection(client.report('campaigns', WEEK))
    expect(relative).toMatchObject({ name: 'GatewayError', code: 'CLIENT_REDIRECT', status: 302, location: `${BASE}/api/v1/report/campaigns/get?page=2&signature=5f0c`, requestId: 'req-moved', usage: null, body: undefined })
    expect((relative as Error).message).toBe(`GET ${s.requests[0]!.url}: a 302 redirect to ${BASE}/api/v1/report/campaigns/get (its query not shown), not followed: the key goes nowhere else`)
    const other = await rejection(client.call('POST', '/api/v1/campaign/get', { body: { userId: 101 } }))
    expect(other).toMatchObject({ code: 'CLIENT_REDIRECT', status: 308, location: 'https://gateway.example/api/v1/campaign/get#top' })
    expect((other as Error).message).toContain(': a 308 redirect to https://gateway.example/api/v1/campaign/get (its fragment not shown), not followed')
    expect(await rejection(client.api.GET('/healthz'))).toMatchObject({ code: 'CLIENT_REDIRECT', status: 301, location: 'http://[bad' })
    const hidden = await rejection(client.report('campaigns', WEEK))
    expect(hidden).toMatchObject({ code: 'CLIENT_REDIRECT', status: null, location: null })
    expect((hidden as Error).message).toContain(': a redirect (the browser shows neither its status nor its location), not followed')
    expect(s.requests).toHaveLength(4)
  })

  it('sends every call in fetch\'s no-cache mode: a browser\'s HTTP cache never answers for the gateway', async () => {
    const s = scripted(report(), report(), () => Response.json({}))
    const client = clientWith(s.fetch)
    await client.report('campaigns', WEEK)
    await client.reportByBody('campaigns', { dateFrom: '2026-02-01', dateTo: '2026-02-07', campaignIds: [1] })
    await client.api.GET('/healthz')
    expect(s.requests.map((r) => r.cache)).toEqual(['no-cache', 'no-cache', 'no-cache'])
  })
})

describe('the typed client: platform calls by their real path', () => {
  it('sends call() to the path as written, with its query and JSON body, and returns the JSON answer', async () => {
    const s = scripted(() => Response.json({ data: [{ id: 101001 }] }, { headers: { 'x-request-id': 'req-list' } }))
    const answer = await clientWith(s.fetch).call<{ data: { id: number }[] }>('POST', '/api/v1/campaign/get', { query: { per_page: 200, page: undefined }, body: { userId: 101 } })
    const request = s.requests[0]!
    expect(request.method).toBe('POST')
    expect(request.url).toBe(`${BASE}/api/v1/campaign/get?per_page=200`)
    expect(request.headers.get('x-api-key')).toBe(KEY)
    expect(request.headers.get('content-type')).toBe('application/json')
    expect(await request.json()).toEqual({ userId: 101 })
    expect(answer).toMatchObject({ status: 200, body: { data: [{ id: 101001 }] }, requestId: 'req-list' })
    expectTypeOf(answer.body).toEqualTypeOf<{ data: { id: number }[] }>()
  })

  const CAMPAIGN = { id: 101005, userId: 101 }
  const NEW_CAMPAIGN = { userId: 101, name: 'x', adDomain: 'example.com', clickUrl: 'https://example.com/', dates: { from: '2026-02-01', to: '2026-02-28' }, country: 'KE', bid: 1, budget: { daily: 5, total: 50 }, creativeSetIds: [1] }

  it('sends the openapi-fetch client\'s platform calls to their real path, each typed as the document types it', async () => {
    const s = scripted(() => Response.json({ data: [CAMPAIGN], meta: { last_page: 1 } }), () => Response.json({ data: CAMPAIGN }, { status: 201 }), () => Response.json({ message: 'Deleted' }))
    const client = clientWith(s.fetch)
    const listed = await client.api.POST('/api/v1/campaign/get', { params: { query: { per_page: 50 } }, body: { userId: 101 } })
    const created = await client.api.POST('/api/v1/campaign/banner/create', { body: NEW_CAMPAIGN })
    await client.api.DELETE('/api/v1/campaign/banner/delete/{id}', { params: { path: { id: 101005 }, query: { userId: 101 } } })
    expect(s.requests.map((r) => `${r.method} ${new URL(r.url).pathname}${new URL(r.url).search}`)).toEqual([
      'POST /api/v1/campaign/get?per_page=50',
      'POST /api/v1/campaign/banner/create',
      'DELETE /api/v1/campaign/banner/delete/101005?userId=101',
    ])
    expect(created.response.status).toBe(201)
    expect(created.data?.data.id).toBe(101005)
    expectTypeOf(listed.data!.data[0]!.userId).toEqualTypeOf<number>()
    // Checked by the type check alone, never sent.
    const typedAsThePlatformValidates = () => [
      // @ts-expect-error a campaign is created with every field the platform requires
      client.api.POST('/api/v1/campaign/banner/create', { body: { userId: 101, name: 'x' } }),
      // @ts-expect-error a POST report form names its campaigns: the platform answers 422 without them
      client.reportByBody('campaigns', { advertiserId: 101, dateFrom: '2026-02-01', dateTo: '2026-02-07' }),
    ]
    expect(typedAsThePlatformValidates).toBeTypeOf('function')
  })

  // `process.env.REPORT_GATEWAY_KEY!` unset, or a session's key not there: every call would be a 401.
  it('refuses to be made without a key (empty, undefined, not a string), as GatewayError CLIENT_REFUSED, sending nothing', () => {
    const s = scripted()
    for (const apiKey of ['', undefined, null, 42]) {
      let thrown: unknown
      try {
        clientWith(s.fetch, { apiKey: apiKey as unknown as string })
      } catch (err) {
        thrown = err
      }
      expect(thrown, String(apiKey)).toBeInstanceOf(GatewayError)
      expect(thrown, String(apiKey)).toMatchObject({ code: 'CLIENT_REFUSED', status: null, message: 'not sent: no apiKey: createGatewayClient needs the team\'s key (sent as x-api-key), without which the gateway answers every call 401' })
    }
    expect(s.requests).toEqual([])
  })

  // A key copied from a curl line's header: the gateway's 401 then told the app to send `x-api-key: <key>`, a header the app does not write.
  it('refuses to be made with an apiKey that starts with "Bearer " or holds a space or line break, as GatewayError CLIENT_REFUSED, not repeating it and sending nothing', () => {
    const s = scripted()
    const key = 'rgw_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG'
    const said: Record<string, string> = {
      [`Bearer ${key}`]: 'not sent: apiKey: starts with "Bearer ", as an authorization header does; give the key alone (the client sends it as x-api-key; the key is not shown)',
      [`${key} `.repeat(2).trim()]: 'not sent: apiKey: holds a space or a line break, which no key has; give the key alone (the key is not shown)',
      [`${key}\n${key}`]: 'not sent: apiKey: holds a space or a line break, which no key has; give the key alone (the key is not shown)',
    }
    for (const [apiKey, message] of Object.entries(said)) {
      let thrown: unknown
      try {
        clientWith(s.fetch, { apiKey })
      } catch (err) {
        thrown = err
      }
      expect(thrown).toBeInstanceOf(GatewayError)
      expect(thrown).toMatchObject({ code: 'CLIENT_REFUSED', status: null, message })
      expect((thrown as Error).message).not.toContain(key)
    }
    // A key with the line break a file read leaves at its end is sent trimmed, as before.
    expect(() => clientWith(s.fetch, { apiKey: `${key}\n` })).not.toThrow()
    expect(s.requests).toEqual([])
  })

  // `process.env.GATEWAY_URL` unset, or a URL written without its scheme (`localhost:8080` reads as scheme `localhost:`).
  const API_V1 = "baseUrl: its path ends in /api/v1, which every call's own path begins with (/api/v1/report/campaigns/get): give the gateway's origin (and any path before /api/v1) alone"
  it('refuses to be made without a gateway URL it can call (none, no http(s) scheme, a query or fragment, a path ending in /api/v1), as GatewayError CLIENT_REFUSED, sending nothing', () => {
    const s = scripted()
    const refusals: [unknown, string][] = [
      ['', 'no baseUrl: createGatewayClient needs the gateway\'s URL (http://host:port), where every call goes'],
      [undefined, 'no baseUrl: createGatewayClient needs the gateway\'s URL (http://host:port), where every call goes'],
      [42, 'no baseUrl: createGatewayClient needs the gateway\'s URL (http://host:port), where every call goes'],
      ['127.0.0.1:8080', 'baseUrl: not a URL; write it with its scheme: http://host:port'],
      ['localhost:8080', 'baseUrl: its scheme is localhost:, not http: or https:; write it with its scheme: http://host:port'],
      ['ftp://gw.internal', 'baseUrl: its scheme is ftp:, not http: or https:; write it with its scheme: http://host:port'],
      ['http://gw.internal:8080/?team=a', 'baseUrl: has a query or fragment, which every call\'s path would follow; give the gateway\'s origin (and path) alone'],
      ['http://gw.internal:8080/#top', 'baseUrl: has a query or fragment, which every call\'s path would follow; give the gateway\'s origin (and path) alone'],
      // The platform's own base (…/api/v1) copied: every call's path would be /api/v1/api/v1/….
      ['http://gw.internal:8080/api/v1', API_V1],
      ['http://gw.internal:8080/api/v1/', API_V1],
      ['http://gw.internal/reports/API/V1', API_V1],
    ]
    for (const [baseUrl, why] of refusals) {
      let thrown: unknown
      try {
        clientWith(s.fetch, { baseUrl: baseUrl as string })
      } catch (err) {
        thrown = err
      }
      expect(thrown, String(baseUrl)).toBeInstanceOf(GatewayError)
      expect(thrown, String(baseUrl)).toMatchObject({ code: 'CLIENT_REFUSED', status: null, message: `not sent: ${why}` })
    }
    for (const baseUrl of ['http://127.0.0.1:8080', 'https://gw.internal/', 'http://gw.internal/reports', 'http://gw.internal/api/v1x']) expect(() => clientWith(s.fetch, { baseUrl })).not.toThrow()
    expect(s.requests).toEqual([])
  })

  // `Number(process.env.GATEWAY_TIMEOUT_MS)` unset is NaN: every call would time out at once (Infinity too: a timer of 1 ms).
  it('refuses to be made with a timeout, retries, wait or kept answers that are not counts it can use, naming the option; and a call with such a timeout, sending nothing', async () => {
    const s = scripted()
    const refusals: [Partial<GatewayClientOptions>, string][] = [
      [{ timeoutMs: Number.NaN }, 'timeoutMs: must be a number of ms from 1 to 2147483647 (got NaN)'],
      [{ timeoutMs: Number.POSITIVE_INFINITY }, 'timeoutMs: must be a number of ms from 1 to 2147483647 (got Infinity)'],
      [{ timeoutMs: 0 }, 'timeoutMs: must be a number of ms from 1 to 2147483647 (got 0)'],
      [{ retries: Number.NaN }, 'retries: must be a whole number from 0 (got NaN)'],
      [{ retries: 1.5 }, 'retries: must be a whole number from 0 (got 1.5)'],
      [{ retries: -1 }, 'retries: must be a whole number from 0 (got -1)'],
      [{ keptAnswers: Number.NaN }, 'keptAnswers: must be a whole number from 0 (got NaN)'],
      [{ maxRetryAfterSeconds: Number.NaN }, 'maxRetryAfterSeconds: must be a number of seconds from 0 (got NaN)'],
      [{ maxRetryAfterSeconds: '10' as unknown as number }, 'maxRetryAfterSeconds: must be a number of seconds from 0 (got a string)'],
    ]
    for (const [options, why] of refusals) {
      let thrown: unknown
      try {
        clientWith(s.fetch, options)
      } catch (err) {
        thrown = err
      }
      expect(thrown, why).toBeInstanceOf(GatewayError)
      expect(thrown, why).toMatchObject({ code: 'CLIENT_REFUSED', status: null, message: `not sent: ${why}` })
    }
    const client = clientWith(s.fetch, { timeoutMs: 2_147_483_647, retries: 0, keptAnswers: 0, maxRetryAfterSeconds: 0 })
    await expect(client.report('campaigns', { advertiserId: 101, dateFrom: '2026-02-01', dateTo: '2026-02-07' }, { timeoutMs: Number.NaN })).rejects.toMatchObject({ code: 'CLIENT_REFUSED', message: 'not sent: timeoutMs: must be a number of ms from 1 to 2147483647 (got NaN)' })
    await expect(client.call('GET', '/api/v1/campaign/get', { timeoutMs: -5 })).rejects.toMatchObject({ code: 'CLIENT_REFUSED' })
    expect(s.requests).toEqual([])
    // A job's result waited for with such a timeout: refused before its first status call.
    const asked = scripted(() => Response.json({ id: 'j1', state: 'queued' }, { status: 202 }))
    const job = await clientWith(asked.fetch).reportJob('campaigns', { advertiserId: 101, dateFrom: '2025-01-01', dateTo: '2025-12-31' })
    await expect(job.result({ timeoutMs: Number.NaN })).rejects.toMatchObject({ code: 'CLIENT_REFUSED', message: 'not sent: timeoutMs: must be a number of ms from 1 to 2147483647 (got NaN)' })
    expect(asked.requests).toHaveLength(1)
  })

  it('refuses a path outside /api/v1/ or with a query of its own, before sending, as GatewayError CLIENT_REFUSED', async () => {
    const s = scripted()
    const client = clientWith(s.fetch)
    await expect(client.call('GET', '/api/v1/campaign/get?per_page=1')).rejects.toMatchObject({ name: 'GatewayError', code: 'CLIENT_REFUSED', status: null })
    await expect(client.call('GET', '/admin/token' as never)).rejects.toMatchObject({ name: 'GatewayError', code: 'CLIENT_REFUSED' })
    expect(s.requests).toHaveLength(0)
  })

  it('refuses a path that leaves /api/v1/ once its dot segments are resolved: the key goes nowhere else on the origin', async () => {
    // fetch resolves `..` and `%2e%2e` segments (and `\\` as `/`): a path built from a caller's
    // input, `/api/v1/campaign/banner/delete/${id}`, would take the key to another path of the
    // base URL's origin (another service behind the same ingress, under another prefix).
    const s = scripted()
    for (const baseUrl of [BASE, `${BASE}/report-gateway`]) {
      const client = clientWith(s.fetch, { baseUrl })
      for (const path of ['/api/v1/../../admin/token', '/api/v1/%2e%2E/%2E%2e/other/secrets', '/api/v1/campaign/banner/delete/../../../../../other', '/api/v1/..\\..\\other', '/api/v1/..']) {
        expect(await rejection(client.call('DELETE', path as never)), `${baseUrl} ${path}`).toMatchObject({ name: 'GatewayError', code: 'CLIENT_REFUSED', status: null })
      }
    }
    expect(s.requests).toHaveLength(0)
  })

  it('refuses a method the gateway never forwards (TRACE, CONNECT), and a request fetch cannot make, as GatewayError CLIENT_REFUSED', async () => {
    const s = scripted()
    const client = clientWith(s.fetch)
    const trace = await rejection((client.api as unknown as { TRACE: (path: string) => Promise<unknown> }).TRACE('/api/v1/campaign/get'))
    expect(trace).toBeInstanceOf(GatewayError)
    expect(trace).toMatchObject({ code: 'CLIENT_REFUSED', status: null })
    expect((trace as Error).message).toContain('TRACE')
    for (const method of ['TRACE', 'CONNECT', 'OPTIONS']) {
      expect(await rejection(client.call(method as never, '/api/v1/campaign/get')), method).toMatchObject({ name: 'GatewayError', code: 'CLIENT_REFUSED' })
    }
    // A header value fetch refuses to send: a TypeError inside openapi-fetch.
    const badHeader = await rejection(client.api.GET('/healthz', { headers: { 'x-request-id': 'two\nlines' } }))
    expect(badHeader).toMatchObject({ name: 'GatewayError', code: 'CLIENT_REFUSED' })
    expect(s.requests).toHaveLength(0)
  })
})

describe('the typed client: retry-after', () => {
  it('sends a read again after a 429 or 503 with retry-after, at most `retries` times', async () => {
    const s = scripted(gw(429, 'GW_RATE_LIMITED', { 'retry-after': '0' }), gw(503, 'GW_OVERLOADED', { 'retry-after': '0' }), report())
    const answer = await clientWith(s.fetch, { retries: 2 }).report('campaigns', WEEK)
    expect(answer.rows).toEqual(ROWS)
    expect(s.requests).toHaveLength(3)

    const t = scripted(...Array.from({ length: 3 }, () => gw(503, 'GW_OVERLOADED', { 'retry-after': '0' })))
    const err = await rejection(clientWith(t.fetch, { retries: 2 }).report('campaigns', WEEK))
    expect(t.requests).toHaveLength(3)
    expect(err).toBeInstanceOf(GatewayError)
    expect(err).toMatchObject({ code: 'GW_OVERLOADED', status: 503, requestId: 'req-GW_OVERLOADED', retryAfterSeconds: 0 })
  })

  it('says what a failed read cost: the platform-usage of GW_PLATFORM_TIME_SPENT and of a 5xx on the GatewayError, null where the answer has none', async () => {
    const spent = await rejection(clientWith(scripted(gw(429, 'GW_PLATFORM_TIME_SPENT', { 'retry-after': '43200', 'platform-usage': 'fill=0, minute=0.000, day=3600.250, day-limit=3600.000, reset=43200' })).fetch).report('campaigns', WEEK))
    expect(spent).toMatchObject({ code: 'GW_PLATFORM_TIME_SPENT', usage: { fill: 0, day: 3600.25, dayLimit: 3600, reset: 43200 } })
    const failed = await rejection(clientWith(scripted(gw(502, 'GW_UPSTREAM', { 'platform-usage': 'fill=0.412, minute=0.412, day=0.412, reset=60' })).fetch, { retries: 0 }).report('campaigns', WEEK))
    expect(failed).toMatchObject({ code: 'GW_UPSTREAM', usage: { fill: 0.412, day: 0.412 } })
    const refused = await rejection(clientWith(scripted(gw(403, 'GW_FORBIDDEN')).fetch).report('campaigns', WEEK))
    expect(refused).toMatchObject({ code: 'GW_FORBIDDEN', usage: null })
  })

  it('throws a retry-after longer than the cap at once, as the GatewayError it came with', async () => {
    const s = scripted(gw(429, 'GW_RATE_LIMITED', { 'retry-after': '120' }))
    const err = await rejection(clientWith(s.fetch, { maxRetryAfterSeconds: 10 }).report('campaigns', WEEK))
    expect(s.requests).toHaveLength(1)
    expect(err).toMatchObject({ name: 'GatewayError', code: 'GW_RATE_LIMITED', status: 429, retryAfterSeconds: 120 })
  })

  it('sends a read again at once after GW_SHUTTING_DOWN; another 503 without retry-after is the error', async () => {
    const s = scripted(gw(503, 'GW_SHUTTING_DOWN'), report())
    expect((await clientWith(s.fetch).report('campaigns', WEEK)).rows).toEqual(ROWS)
    expect(s.requests).toHaveLength(2)

    const t = scripted(gw(503, 'GW_OVERLOADED'))
    expect(await rejection(clientWith(t.fetch).report('campaigns', WEEK))).toMatchObject({ code: 'GW_OVERLOADED', retryAfterSeconds: null })
    expect(t.requests).toHaveLength(1)
  })

  it('sends the POST report form again (a read), never a write', async () => {
    const s = scripted(gw(429, 'GW_RATE_LIMITED', { 'retry-after': '0' }), report())
    const body = { dateFrom: '2026-02-01', dateTo: '2026-02-07', campaignIds: [101001], byDate: true }
    expect((await clientWith(s.fetch).reportByBody('campaigns', body)).rows).toEqual(ROWS)
    expect(s.requests.map((r) => r.method)).toEqual(['POST', 'POST'])
    expect(await s.requests[1]!.json()).toEqual(body)

    const t = scripted(gw(429, 'GW_RATE_LIMITED', { 'retry-after': '0' }))
    const { error, response } = await clientWith(t.fetch).api.DELETE('/api/v1/campaign/banner/delete/{id}', { params: { path: { id: 101001 } } })
    expect(t.requests).toHaveLength(1)
    expect(answerError(error, response)).toMatchObject({ code: 'GW_RATE_LIMITED', status: 429 })
    await expect(clientWith(scripted(gw(429, 'GW_RATE_LIMITED', { 'retry-after': '0' })).fetch).call('DELETE', '/api/v1/campaign/banner/delete/101001')).rejects.toMatchObject({ code: 'GW_RATE_LIMITED' })
  })

  it('ends a wait when the call is aborted', async () => {
    const controller = new AbortController()
    const s = scripted((request) => {
      controller.abort(new Error('caller gave up'))
      return gw(503, 'GW_OVERLOADED', { 'retry-after': '5' })(request)
    })
    const err = await rejection(clientWith(s.fetch).report('campaigns', WEEK, { signal: controller.signal }))
    expect((err as Error).message).toBe('caller gave up')
    expect(s.requests).toHaveLength(1)
  })

  it('reads retry-after as seconds or as an HTTP date', () => {
    const now = Date.parse('2026-02-01T10:00:00Z')
    expect(retryAfterSeconds('7', now)).toBe(7)
    expect(retryAfterSeconds('Sun, 01 Feb 2026 10:00:30 GMT', now)).toBe(30)
    expect(retryAfterSeconds('Sun, 01 Feb 2026 09:00:00 GMT', now)).toBe(0)
    for (const value of ['soon', '1.5', '-1', null]) expect(retryAfterSeconds(value, now), String(value)).toBeNull()
  })

  it('reads every HTTP date as GMT whatever the zone the caller runs in, asctime\'s too', () => {
    const now = Date.parse('2026-02-01T10:00:00Z')
    inTimeZone('America/New_York', () => {
      // Local time is now five hours behind UTC.
      expect(new Date(now).getHours()).not.toBe(new Date(now).getUTCHours())
      expect(retryAfterSeconds('Sun Feb  1 10:00:05 2026', now)).toBe(5)
      expect(retryAfterSeconds('Sunday, 01-Feb-26 10:01:00 GMT', now)).toBe(60)
      expect(retryAfterSeconds('Sun, 01 Feb 2026 10:00:30 GMT', now)).toBe(30)
    })
  })
})

describe('the typed client: ETags', () => {
  it('sends the kept ETag and answers a 304 with the kept body and the 304\'s headers', async () => {
    const s = scripted(report({ etag: '"v1"' }), notModified({ etag: '"v1"', age: '3', 'x-request-id': 'req-304' }))
    const client = clientWith(s.fetch)
    const first = await client.report('campaigns', WEEK)
    const second = await client.report('campaigns', WEEK)
    expect(s.requests[0]!.headers.get('if-none-match')).toBeNull()
    expect(s.requests[1]!.headers.get('if-none-match')).toBe('"v1"')
    // Not the default cache mode, in which fetch adds `cache-control: no-cache` (a REFRESH at the gateway).
    expect(s.requests[1]!.cache).toBe('no-cache')
    expect(first).toMatchObject({ etag: '"v1"', revalidated: false, cache: 'MISS' })
    expect(second).toMatchObject({ rows: ROWS, etag: '"v1"', revalidated: true, cache: 'HIT', requestId: 'req-304' })
  })

  it('keeps ETags per URL, drops one whose URL answers 200 without an ETag, and keeps at most `keptAnswers`', async () => {
    const other = { ...WEEK, advertiserId: 102 }
    const s = scripted(report({ etag: '"a"' }), report({ etag: '"b"' }), report({ etag: '"b2"' }), report(), report(), report({ etag: '"b3"' }))
    const client = clientWith(s.fetch, { keptAnswers: 1 })
    await client.report('campaigns', WEEK)
    await client.report('campaigns', other)
    await client.report('campaigns', other)
    await client.report('campaigns', WEEK)
    await client.report('campaigns', other)
    await client.report('campaigns', other)
    expect(s.requests.map((r) => r.headers.get('if-none-match'))).toEqual([null, null, '"b"', null, '"b2"', null])
  })

  it('answers report() with the caller\'s own if-none-match by the 304 as it is: not modified, no body, no error', async () => {
    const s = scripted(report({ etag: '"kept"' }), notModified({ etag: '"mine"', 'x-request-id': 'req-304' }), notModified({ etag: '"kept"' }))
    const client = clientWith(s.fetch)
    await client.report('campaigns', WEEK)
    const mine = await client.report('campaigns', WEEK, { headers: { 'if-none-match': '"mine"' } })
    expect(s.requests[1]!.headers.get('if-none-match')).toBe('"mine"')
    expect(mine).toEqual({ status: 304, notModified: true, report: null, rows: null, cache: 'HIT', cacheStatus: null, etag: '"mine"', requestId: 'req-304', revalidated: false, usage: null, finality: { settledThrough: null, provisional: null } })
    expectTypeOf(mine).toEqualTypeOf<ReportAnswer | NotModifiedAnswer>()
    // The caller's own validator, even the kept one's, is the caller's: its 304 as it is.
    const same = await client.report('campaigns', WEEK, { headers: { 'If-None-Match': '"kept"' } })
    expect(same).toMatchObject({ status: 304, notModified: true, report: null })
    // Without one, report() answers a report, typed so.
    expectTypeOf<Awaited<ReturnType<typeof client.report>>>().toEqualTypeOf<ReportAnswer>()
  })

  it('passes a 304 to the caller\'s own if-none-match through as it is', async () => {
    const s = scripted(report({ etag: '"kept"' }), notModified())
    const client = clientWith(s.fetch)
    await client.report('campaigns', WEEK)
    const { data, response } = await client.api.GET('/api/v1/report/{split}/get', {
      params: { path: { split: 'campaigns' }, query: WEEK },
      headers: { 'if-none-match': '"mine"' },
    })
    expect(s.requests[1]!.headers.get('if-none-match')).toBe('"mine"')
    expect(data).toBeUndefined()
    expect(response.status).toBe(304)
  })
})

describe('the typed client: errors', () => {
  it('throws GW_* answers as GatewayError with their code, and the platform\'s own answers with PLATFORM_ANSWER', async () => {
    const s = scripted(gw(401, 'GW_UNAUTHORIZED'), () => Response.json({ message: 'Not Found' }, { status: 404, headers: { 'x-request-id': 'req-404' } }))
    const client = clientWith(s.fetch)
    const unauthorized = await rejection(client.report('campaigns', WEEK))
    expect(unauthorized).toBeInstanceOf(GatewayError)
    expect(unauthorized).toMatchObject({ code: 'GW_UNAUTHORIZED', status: 401, requestId: 'req-GW_UNAUTHORIZED', retryAfterSeconds: null, message: 'GW_UNAUTHORIZED (401): GW_UNAUTHORIZED says why' })
    expect((unauthorized as GatewayError).isGatewayAnswer()).toBe(true)
    const notFound = await rejection(client.report('nosuchsplit', WEEK))
    expect(notFound).toBeInstanceOf(GatewayError)
    expect(notFound).toMatchObject({ code: 'PLATFORM_ANSWER', status: 404, requestId: 'req-404', body: { message: 'Not Found' }, message: '404: Not Found' })
    expect((notFound as GatewayError).isGatewayAnswer()).toBe(false)
  })

  it('gives a GW_* code outside the contract, and a 5xx without one, a code of their own', () => {
    const newer = answerError({ statusCode: 400, code: 'GW_SOMETHING_NEW', message: 'x' }, new Response(null, { status: 400 }))
    expect(newer).toMatchObject({ name: 'GatewayError', code: 'CLIENT_UNKNOWN_CODE', status: 400, body: { code: 'GW_SOMETHING_NEW' } })
    expect(newer.message).toContain('GW_SOMETHING_NEW')
    const bare = answerError({ message: 'oops' }, new Response(null, { status: 503 }))
    expect(bare).toMatchObject({ code: 'CLIENT_UNKNOWN_CODE', status: 503 })
  })

  it('throws a body that is not JSON as CLIENT_NOT_JSON, on a failure and on a 200, keeping the start of its text', async () => {
    const page = '<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>'
    const html = (status: number) => () => new Response(page, { status, headers: { 'content-type': 'text/html' } })
    const s = scripted(html(502), html(200), html(502))
    const client = clientWith(s.fetch)
    const proxy = await rejection(client.report('campaigns', WEEK))
    expect(proxy).toBeInstanceOf(GatewayError)
    expect(proxy).toMatchObject({ code: 'CLIENT_NOT_JSON', status: 502, body: page, requestId: null })
    expect((proxy as Error).message).toContain('text/html')
    expect(await rejection(client.report('campaigns', WEEK))).toMatchObject({ code: 'CLIENT_NOT_JSON', status: 200 })
    expect(await rejection(client.call('POST', '/api/v1/campaign/get', { body: { userId: 101 } }))).toMatchObject({ code: 'CLIENT_NOT_JSON', status: 502 })
  })

  it('throws a 200 whose body is not a report as CLIENT_NOT_A_REPORT, never rows of undefined', async () => {
    const s = scripted(() => Response.json({ rows: [] }, { headers: { 'x-request-id': 'req-odd' } }), () => Response.json([1, 2]))
    const client = clientWith(s.fetch)
    expect(await rejection(client.report('campaigns', WEEK))).toMatchObject({ name: 'GatewayError', code: 'CLIENT_NOT_A_REPORT', status: 200, requestId: 'req-odd', body: { rows: [] } })
    expect(await rejection(client.reportByBody('campaigns', { dateFrom: '2026-02-01', dateTo: '2026-02-07', campaignIds: [1] }))).toMatchObject({ code: 'CLIENT_NOT_A_REPORT' })
  })

  it('throws a failed fetch as CLIENT_NETWORK with its cause, and no answer within the timeout as CLIENT_TIMEOUT', async () => {
    const refused = Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }) })
    const network = await rejection(clientWith(async () => Promise.reject(refused)).report('campaigns', WEEK))
    expect(network).toBeInstanceOf(GatewayError)
    expect(network).toMatchObject({ code: 'CLIENT_NETWORK', status: null, cause: refused })
    expect((network as Error).message).toContain('ECONNREFUSED')

    // A fetch that never answers but honours its signal, as fetch does.
    const hangs = (request: Request) => new Promise<Response>((_resolve, reject) => request.signal.addEventListener('abort', () => reject(request.signal.reason)))
    // On a fake clock: still waiting 1 ms before its timeout, ended at it.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] })
    try {
      let ended = false
      const slow = rejection(clientWith(hangs, { timeoutMs: 50 }).call('GET', '/api/v1/campaign/list')).finally(() => (ended = true))
      await vi.advanceTimersByTimeAsync(49)
      expect(ended).toBe(false)
      await vi.advanceTimersByTimeAsync(1)
      expect(ended).toBe(true)
      expect(await slow).toMatchObject({ name: 'GatewayError', code: 'CLIENT_TIMEOUT', status: null })
    } finally {
      vi.useRealTimers()
    }
    expect(await rejection(clientWith(hangs).report('campaigns', WEEK, { timeoutMs: 20 }))).toMatchObject({ code: 'CLIENT_TIMEOUT' })
  })

  it("says, in a page of another origin than the gateway's, that the browser hid the answer (no CORS headers): not a gateway out of reach", async () => {
    // What Chromium's fetch rejects with when a preflight finds no access-control-allow-origin.
    const blocked = async () => Promise.reject(new TypeError('Failed to fetch'))
    const inPage = async (origin: string) => {
      Object.defineProperty(globalThis, 'location', { value: { origin }, configurable: true })
      try {
        return (await rejection(clientWith(blocked).report('campaigns', WEEK))) as GatewayError
      } finally {
        Reflect.deleteProperty(globalThis, 'location')
      }
    }
    const other = await inPage('http://127.0.0.1:5173')
    expect(other).toMatchObject({ code: 'CLIENT_NETWORK', status: null })
    expect(other.message).toMatch(/: no answer \(TypeError: Failed to fetch\); this page's origin, http:\/\/127\.0\.0\.1:5173, is not the gateway's \(http:\/\/127\.0\.0\.1:1\): the gateway sends no CORS headers, so the browser lets no page of another origin read its answers$/)
    expect((await inPage(BASE)).message).toMatch(/: no answer \(TypeError: Failed to fetch\)$/)
    expect(((await rejection(clientWith(blocked).report('campaigns', WEEK))) as Error).message).toMatch(/: no answer \(TypeError: Failed to fetch\)$/)
  })

  it('does not wait out a retry-after that would end past its timeout: the 429 is the answer', async () => {
    const s = scripted(gw(429, 'GW_RATE_LIMITED', { 'retry-after': '2' }))
    const err = await rejection(clientWith(s.fetch, { timeoutMs: 1000 }).report('campaigns', WEEK))
    expect(err).toMatchObject({ code: 'GW_RATE_LIMITED', retryAfterSeconds: 2 })
    expect(s.requests).toHaveLength(1)
  })
})

describe('the typed client: what a report cost and which of its days may change', () => {
  it('reads platform-usage as numbers, its optional members as null, and refuses a header that is not one', () => {
    expect(platformUsageOf('fill=0.412, minute=3.250, share=27, day=812.500, day-limit=3600.000, reset=43100')).toEqual({ fill: 0.412, minute: 3.25, share: 27, day: 812.5, dayLimit: 3600, reset: 43100 })
    expect(platformUsageOf('fill=0, minute=0.000, day=0.000, reset=60')).toEqual({ fill: 0, minute: 0, share: null, day: 0, dayLimit: null, reset: 60 })
    expect(platformUsageOf('fill=0, minute=x, day=1, reset=2')).toBeNull()
    expect(platformUsageOf(null)).toBeNull()
  })

  it('reads the settled day and the provisional days, none as null', () => {
    const headers = new Headers({ 'report-settled-through': '2026-03-06', 'report-provisional-days': '2026-03-07/2026-03-10' })
    expect(factsOf(headers).finality).toEqual({ settledThrough: '2026-03-06', provisional: { from: '2026-03-07', to: '2026-03-10' } })
    expect(factsOf(new Headers({ 'report-settled-through': '2026-03-06', 'report-provisional-days': 'none' })).finality).toEqual({ settledThrough: '2026-03-06', provisional: null })
  })
})

describe('the typed client: a report job', () => {
  it('gives up waiting for a job at result()\'s timeoutMs, whatever its status call\'s ?wait: a call held past it is ended, CLIENT_TIMEOUT', async () => {
    const requests: Request[] = []
    const accepted = { id: 'job1', state: 'queued', askedAt: '2026-02-08T00:00:00.000Z', startedAt: null, endedAt: null, placeInQueue: 1, expectedSeconds: null, tookSeconds: null, error: null, expiresAt: null, result: null, settledThrough: '2026-02-04', provisionalDays: 'none' }
    // The 202, then status calls the gateway holds (its ?wait) without an answer.
    const fetch = (request: Request): Promise<Response> => {
      requests.push(request)
      if (requests.length === 1) return Promise.resolve(Response.json(accepted, { status: 202, headers: { location: '/api/v1/jobs/job1' } }))
      return new Promise(() => undefined)
    }
    const job = await clientWith(fetch).reportJob('campaigns', WEEK)
    const err = await rejection(job.result({ timeoutMs: 200 }))
    expect(err).toBeInstanceOf(GatewayError)
    expect((err as GatewayError).code).toBe('CLIENT_TIMEOUT')
    expect(new URL(requests[1]!.url).searchParams.get('wait')).toBe('1')
  })

  it('waits out a status call refused 503 GW_JOBS_UNAVAILABLE (Redis a moment out of reach) in result(): the job is asked again after its retry-after, its report read once it ended', async () => {
    const accepted = { id: 'job1', state: 'queued', askedAt: '2026-02-08T00:00:00.000Z', startedAt: null, endedAt: null, placeInQueue: 1, expectedSeconds: null, tookSeconds: null, error: null, retry: null, expiresAt: null, result: null, settledThrough: '2026-02-04', provisionalDays: 'none' }
    const done = { ...accepted, state: 'done', placeInQueue: null, result: '/api/v1/jobs/job1/result' }
    const { requests, fetch } = scripted(
      () => Response.json(accepted, { status: 202, headers: { location: '/api/v1/jobs/job1' } }),
      gw(503, 'GW_JOBS_UNAVAILABLE', { 'retry-after': '0' }),
      () => Response.json(done),
      report(),
    )
    const job = await clientWith(fetch, { retries: 0 }).reportJob('campaigns', WEEK)
    expect((await job.result()).rows).toEqual(ROWS)
    expect(requests.map((r) => new URL(r.url).pathname)).toEqual(['/api/v1/report/campaigns/get', '/api/v1/jobs/job1', '/api/v1/jobs/job1', '/api/v1/jobs/job1/result'])
  })
})

