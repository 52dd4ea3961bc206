import { connect } from 'node:net'
import { beforeAll, describe, expect, it } from 'vitest'
import { startSandbox, type Sandbox } from '../../src/sandbox/sandbox.js'
import type { ReportRow as Row } from '../../src/sandbox/report-data.js'
import { useSandbox } from '../helpers/fixtures.js'
import { newCampaign } from '../helpers/sandbox-gateway.js'
import { waitFor } from '../helpers/wait.js'

// The sandbox stands in for the platform in every other suite, so this one pins
// the platform behaviour it reproduces, over real HTTP on loopback.

const WEEK = 'dateFrom=2026-01-01&dateTo=2026-01-07'

const sandbox = useSandbox()
let token: string

beforeAll(() => {
  token = sandbox.issueToken()
})

interface CallOptions {
  method?: string
  body?: unknown
  token?: string | null
  signal?: AbortSignal
}

/** A call as the gateway makes it: asking for JSON (a failed validation is otherwise a 302, as Laravel answers it). */
function call(path: string, options: CallOptions = {}): Promise<Response> {
  const headers: Record<string, string> = { accept: 'application/json' }
  const bearer = options.token === undefined ? token : options.token
  if (bearer !== null) headers.authorization = `Bearer ${bearer}`
  if (options.body !== undefined) headers['content-type'] = 'application/json'
  return fetch(`${sandbox.url}${path}`, {
    method: options.method ?? (options.body === undefined ? 'GET' : 'POST'),
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    signal: options.signal,
  })
}

async function rows(path: string, options?: CallOptions): Promise<Row[]> {
  const response = await call(path, options)
  expect(response.status).toBe(200)
  return ((await response.json()) as { data: Row[] }).data
}

function grant(overrides: Record<string, unknown> = {}): Promise<Response> {
  const { username, password, clientId, clientSecret } = sandbox.credentials
  return fetch(`${sandbox.url}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ grant_type: 'platform_dsp', username, password, client_id: clientId, client_secret: clientSecret, ...overrides }),
  })
}

/** A GET over a bare socket: the head as sent, and the body bytes until the connection closed. */
function rawGet(path: string): Promise<{ head: string; body: Buffer }> {
  const url = new URL(sandbox.url)
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname, () => {
      socket.write(`GET ${path} HTTP/1.1\r\nhost: ${url.host}\r\nauthorization: Bearer ${token}\r\n\r\n`)
    })
    const chunks: Buffer[] = []
    socket.on('data', (chunk: Buffer) => chunks.push(chunk))
    socket.on('error', reject)
    socket.on('close', () => {
      const all = Buffer.concat(chunks)
      const end = all.indexOf('\r\n\r\n')
      resolve({ head: all.subarray(0, end).toString('latin1').toLowerCase().replace(/^http/, 'HTTP'), body: all.subarray(end + 4) })
    })
  })
}

function jwtClaims(jwt: string): Record<string, unknown> {
  const payload = jwt.split('.')[1] ?? ''
  return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>
}

describe('token request', () => {
  it('grants a one-year JWT for the demo credentials, usable on /api/v1', async () => {
    const response = await grant()
    expect(response.status).toBe(200)
    const body = (await response.json()) as Record<string, unknown>
    expect(body).toMatchObject({ token_type: 'Bearer', expires_in: 31_536_000 })
    expect(typeof body.refresh_token).toBe('string')
    const accessToken = String(body.access_token)
    expect(accessToken.split('.')).toHaveLength(3)
    const claims = jwtClaims(accessToken)
    expect(claims).toMatchObject({ sub: '100', aud: String(sandbox.credentials.clientId) })
    expect(Number(claims.exp) - Number(claims.iat)).toBe(31_536_000)
    expect((await call('/api/v1/campaign/get', { body: {}, token: accessToken })).status).toBe(200)
  })

  it('takes client_id as a numeric string too', async () => {
    expect((await grant({ client_id: String(sandbox.credentials.clientId) })).status).toBe(200)
  })

  it.each([
    ['a wrong grant type', { grant_type: 'password' }, 400, 'unsupported_grant_type'],
    ['a wrong password', { password: 'nope' }, 400, 'invalid_grant'],
    ['a wrong username', { username: 'someone@else' }, 400, 'invalid_grant'],
    ['a wrong client secret', { client_secret: 'nope' }, 401, 'invalid_client'],
    ['a wrong client id', { client_id: 999 }, 401, 'invalid_client'],
  ])('refuses %s', async (_what, overrides, status, error) => {
    const response = await grant(overrides)
    expect(response.status).toBe(status)
    const body = (await response.json()) as Record<string, unknown>
    expect(body.error).toBe(error)
    expect(typeof body.message).toBe('string')
  })

  it('follows the grantType and tokenTtlSeconds options', async () => {
    const other = await startSandbox({ grantType: 'eskimi_dsp', tokenTtlSeconds: 60 })
    try {
      const { username, password, clientId, clientSecret } = other.credentials
      const response = await fetch(`${other.url}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ grant_type: 'eskimi_dsp', username, password, client_id: clientId, client_secret: clientSecret }),
      })
      const body = (await response.json()) as { expires_in: number; access_token: string }
      expect(body.expires_in).toBe(60)
      const claims = jwtClaims(body.access_token)
      expect(Number(claims.exp) - Number(claims.iat)).toBe(60)
    } finally {
      await other.close()
    }
  })
})

describe('authentication on /api/v1', () => {
  const REPORT = `/api/v1/report/campaigns/get?advertiserId=101&${WEEK}`

  it.each([
    ['no authorization header', null],
    ['an unknown token', 'not-a-token'],
  ])('answers 401 Unauthenticated to %s', async (_what, bearer) => {
    const response = await call(REPORT, { token: bearer })
    expect(response.status).toBe(401)
    expect(await response.json()).toEqual({ message: 'Unauthenticated.' })
  })

  it('answers 401 to an expired token', async () => {
    expect((await call(REPORT, { token: sandbox.issueToken({ ttlSeconds: -1 }) })).status).toBe(401)
  })

  it('answers 401 to a revoked token, and to every token after revokeAllTokens', async () => {
    const revoked = sandbox.issueToken()
    const kept = sandbox.issueToken()
    sandbox.revokeToken(revoked)
    expect((await call(REPORT, { token: revoked })).status).toBe(401)
    expect((await call(REPORT, { token: kept })).status).toBe(200)
    sandbox.revokeAllTokens()
    expect((await call(REPORT, { token: kept })).status).toBe(401)
    token = sandbox.issueToken()
  })

  it('accepts a hand-made token for the account it names', async () => {
    sandbox.acceptToken('dashboard-token-201', 201)
    expect((await call('/api/v1/report/campaigns/get?advertiserId=201&dateFrom=2026-01-01&dateTo=2026-01-01', { token: 'dashboard-token-201' })).status).toBe(200)
    expect((await call(REPORT, { token: 'dashboard-token-201' })).status).toBe(403)
  })
})

describe('reports', () => {
  it.each([
    [false, false, []],
    [true, false, ['date']],
    [false, true, ['campaignId', 'campaignName']],
    [true, true, ['date', 'campaignId', 'campaignName']],
  ])('GET byDate=%s byCampaign=%s has exactly the fields %j besides the metrics', async (byDate, byCampaign, extra) => {
    const data = await rows(`/api/v1/report/campaigns/get?advertiserId=101&${WEEK}&byDate=${byDate ? 1 : 0}&byCampaign=${byCampaign ? 1 : 0}`)
    expect(data.length).toBeGreaterThan(0)
    for (const row of data) {
      expect(Object.keys(row)).toEqual([...extra, 'impressions', 'clicks', 'ctr', 'spent', 'reach', 'currency'])
    }
  })

  it('answers like Laravel: application/json, no-cache, and a session cookie', async () => {
    const response = await call(`/api/v1/report/campaigns/get?advertiserId=101&${WEEK}`)
    expect(response.headers.get('content-type')).toBe('application/json')
    expect(response.headers.get('cache-control')).toBe('no-cache, private')
    expect(response.headers.get('set-cookie')).toMatch(/^laravel_session=[^;]+;.*httponly/i)
  })

  it('POST names campaigns, in any order and repeated, and reports them sorted once', async () => {
    const data = await rows('/api/v1/report/campaigns/get', {
      body: { campaignIds: [102002, 101001, 102002], dateFrom: '2026-01-01', dateTo: '2026-01-03', byDate: true, byCampaign: true },
    })
    expect(data.map((row) => `${row.date} ${row.campaignId}`)).toEqual([
      '2026-01-01 101001', '2026-01-01 102002',
      '2026-01-02 101001', '2026-01-02 102002',
      '2026-01-03 101001', '2026-01-03 102002',
    ])
  })

  it('splits by creative and by ad placement position', async () => {
    const creatives = await rows(`/api/v1/report/creatives/get?advertiserId=101&${WEEK}&byCampaign=1`)
    for (const row of creatives) {
      expect(typeof row.creativeName).toBe('string')
      expect(Math.floor(Number(row.creativeId) / 10)).toBe(row.campaignId)
    }
    const positions = await rows(`/api/v1/report/adPlacementPositions/get?advertiserId=101&${WEEK}`)
    expect(positions.map((row) => row.position)).toEqual(['Above the fold', 'Below the fold', 'Full screen', 'Unknown'])
  })

  it('answers 404 Not Found to an unknown split, before authentication', async () => {
    const response = await call(`/api/v1/report/geo/get?advertiserId=101&${WEEK}`, { token: null })
    expect(response.status).toBe(404)
    expect(await response.json()).toEqual({ message: 'Not Found' })
    expect((await call('/api/v1/nothing/here')).status).toBe(404)
  })

  it('gives the same bytes for the same query, across calls and across sandboxes of one seed', async () => {
    const path = `/api/v1/report/campaigns/get?advertiserId=102&${WEEK}&byDate=1&byCampaign=1`
    const first = await (await call(path)).text()
    expect(await (await call(path)).text()).toBe(first)
    const twin = await startSandbox({ seed: 42 })
    const stranger = await startSandbox({ seed: 7 })
    try {
      const fetchFrom = async (other: Sandbox): Promise<string> =>
        (await fetch(`${other.url}${path}`, { headers: { authorization: `Bearer ${other.issueToken()}` } })).text()
      expect(await fetchFrom(twin)).toBe(first)
      expect(await fetchFrom(stranger)).not.toBe(first)
    } finally {
      await Promise.all([twin.close(), stranger.close()])
    }
  })

  it('keeps a period reach below the sum of its daily reach, and every reach within impressions', async () => {
    const daily = await rows(`/api/v1/report/campaigns/get?advertiserId=101&${WEEK}&byDate=1&byCampaign=1`)
    const period = await rows(`/api/v1/report/campaigns/get?advertiserId=101&${WEEK}&byCampaign=1`)
    for (const row of period) {
      const days = daily.filter((day) => day.campaignId === row.campaignId)
      expect(days).toHaveLength(7)
      expect(row.impressions).toBe(days.reduce((sum, day) => sum + day.impressions, 0))
      expect(row.reach).toBeLessThan(days.reduce((sum, day) => sum + day.reach, 0))
      expect(row.reach).toBeGreaterThanOrEqual(Math.max(...days.map((day) => day.reach)))
    }
    for (const row of [...daily, ...period]) expect(row.reach).toBeLessThanOrEqual(row.impressions)
  })

  it('reports spent in the advertiser currency with spentBased=local', async () => {
    const [usd] = await rows(`/api/v1/report/campaigns/get?advertiserId=101&${WEEK}`)
    const [kes] = await rows(`/api/v1/report/campaigns/get?advertiserId=101&${WEEK}&spentBased=local`)
    expect(usd?.currency).toBe('USD')
    expect(kes?.currency).toBe('KES')
    expect(kes?.spent).toBeCloseTo((usd?.spent ?? 0) * 129.3, -1)
    expect(kes?.impressions).toBe(usd?.impressions)
  })

  it('is a few KB for a week of daily campaign rows, the benchmark body', async () => {
    const body = await (await call(`/api/v1/report/campaigns/get?advertiserId=101&${WEEK}&byDate=1&byCampaign=1`)).text()
    expect(body.length).toBeGreaterThan(2_000)
    expect(body.length).toBeLessThan(8_000)
  })

  it.each([
    ['missing dateFrom', 'advertiserId=101&dateTo=2026-01-07', 'dateFrom', 'The date from field is required.'],
    ['a non-date', 'advertiserId=101&dateFrom=2026-02-30&dateTo=2026-03-01', 'dateFrom', 'The date from field must match the format Y-m-d.'],
    ['dateFrom after dateTo', 'advertiserId=101&dateFrom=2026-01-07&dateTo=2026-01-01', 'dateTo', 'The date to field must be a date after or equal to date from.'],
    ['a non-integer advertiserId', `advertiserId=abc&${WEEK}`, 'advertiserId', 'The advertiser id field must be an integer.'],
    ['a bad spentBased', `advertiserId=101&${WEEK}&spentBased=eur`, 'spentBased', 'The selected spent based is invalid.'],
    ['a bad flag', `advertiserId=101&${WEEK}&byDate=yes`, 'byDate', 'The by date field must be true or false.'],
  ])('answers 422 to %s', async (_what, query, field, message) => {
    const response = await call(`/api/v1/report/campaigns/get?${query}`)
    expect(response.status).toBe(422)
    expect(await response.json()).toEqual({ message, errors: { [field]: [message] } })
  })

  it('answers 422 to a POST without campaigns, naming every error in the summary', async () => {
    const response = await call('/api/v1/report/campaigns/get', { body: { dateFrom: '2026-01-01' } })
    expect(response.status).toBe(422)
    const body = (await response.json()) as { message: string; errors: Record<string, string[]> }
    expect(body.message).toBe('The date to field is required. (and 1 more error)')
    expect(Object.keys(body.errors).sort()).toEqual(['campaignIds', 'dateTo'])
  })

  it('lets a parent read its children and refuses the other tree with 403', async () => {
    for (const child of [100, 101, 102, 103]) {
      expect((await call(`/api/v1/report/campaigns/get?advertiserId=${child}&${WEEK}`)).status).toBe(200)
    }
    for (const outsider of [200, 201, 999]) {
      const response = await call(`/api/v1/report/campaigns/get?advertiserId=${outsider}&${WEEK}`)
      expect(response.status).toBe(403)
      expect(await response.json()).toEqual({ message: 'This action is unauthorized.' })
    }
    const post = await call('/api/v1/report/campaigns/get', { body: { campaignIds: [101001, 201001], dateFrom: '2026-01-01', dateTo: '2026-01-02' } })
    expect(post.status).toBe(403)
    const northwind = sandbox.issueToken({ accountId: 200 })
    expect((await call(`/api/v1/report/campaigns/get?advertiserId=201&${WEEK}`, { token: northwind })).status).toBe(200)
  })
})

describe('campaigns', () => {
  // In February, for the report on one of its days below; the country in lower case, as a caller may send it.
  const NEW_CAMPAIGN = newCampaign(103, {
    name: 'Sandbox test',
    clickUrl: 'https://example.com/landing',
    dates: { from: '2026-02-01', to: '2026-02-28' },
    country: 'lt',
    bid: 1.2,
    budget: { daily: 50, total: 1000 },
    creativeSetIds: [1030011, 1030021],
  })

  it('lists the campaigns of a child account with paging metadata', async () => {
    const response = await call('/api/v1/campaign/get?per_page=200', { body: { userId: 101 } })
    expect(response.status).toBe(200)
    const body = (await response.json()) as { data: { id: number; userId: number }[]; meta: Record<string, number> }
    expect(body.data.length).toBeGreaterThanOrEqual(3)
    expect(body.data.length).toBeLessThanOrEqual(6)
    expect(body.data.every((campaign) => campaign.userId === 101 && Math.floor(campaign.id / 1000) === 101)).toBe(true)
    expect(body.meta).toMatchObject({ per_page: 200, total: body.data.length })
    expect((await call('/api/v1/campaign/get?per_page=200', { body: { userId: 201 } })).status).toBe(403)
  })

  it('creates a campaign, lists it, reports on it and deletes it', async () => {
    const created = await call('/api/v1/campaign/banner/create', { body: NEW_CAMPAIGN })
    expect(created.status).toBe(201)
    const { data } = (await created.json()) as { data: { id: number; status: string; country: string } }
    expect(Math.floor(data.id / 1000)).toBe(103)
    expect(data).toMatchObject({ status: 'paused', country: 'LT' })
    const list = (await (await call('/api/v1/campaign/get?per_page=200', { body: { userId: 103 } })).json()) as { data: { id: number }[] }
    expect(list.data.map((campaign) => campaign.id)).toContain(data.id)
    expect(await rows('/api/v1/report/campaigns/get', { body: { campaignIds: [data.id], dateFrom: '2026-02-01', dateTo: '2026-02-01' } })).toHaveLength(1)

    const deleted = await call(`/api/v1/campaign/banner/delete/${data.id}`, { method: 'DELETE' })
    expect(deleted.status).toBe(200)
    expect(await deleted.json()).toEqual({ message: 'Deleted' })
    expect((await call(`/api/v1/campaign/banner/delete/${data.id}`, { method: 'DELETE' })).status).toBe(404)
  })

  it('answers 422 naming the missing fields of a create', async () => {
    const response = await call('/api/v1/campaign/banner/create', { body: { userId: 103, name: 'Half a campaign' } })
    expect(response.status).toBe(422)
    const { errors } = (await response.json()) as { errors: Record<string, string[]> }
    expect(Object.keys(errors)).toEqual(expect.arrayContaining(['adDomain', 'clickUrl', 'dates.from', 'bid', 'budget.daily', 'creativeSetIds']))
    expect(errors).not.toHaveProperty('userId')
  })

  it('refuses writes to the other tree with 403', async () => {
    expect((await call('/api/v1/campaign/banner/create', { body: { ...NEW_CAMPAIGN, userId: 201 } })).status).toBe(403)
    expect((await call('/api/v1/campaign/banner/delete/201001', { method: 'DELETE' })).status).toBe(403)
  })

  it('lists an account\'s creative sets; a create takes any set the token reads, its campaign\'s account or not', async () => {
    const listed = (await (await call('/api/v1/creative-set/get?per_page=200', { body: { userId: 102 } })).json()) as { data: { id: number; userId: number }[] }
    expect(listed.data.map((set) => set.id)).toContain(1020011)
    expect(listed.data.every((set) => set.userId === 102)).toBe(true)
    // Another child's set on a campaign of 103: the platform ties no set to the campaign's account.
    const sibling = await call('/api/v1/campaign/banner/create', { body: { ...NEW_CAMPAIGN, creativeSetIds: [1020011] } })
    expect(sibling.status).toBe(201)
    expect(((await sibling.json()) as { data: { userId: number; creativeSetIds: number[] } }).data).toMatchObject({ userId: 103, creativeSetIds: [1020011] })
    const unknown = await call('/api/v1/campaign/banner/create', { body: { ...NEW_CAMPAIGN, creativeSetIds: [1030011, 7] } })
    expect(unknown.status).toBe(422)
    expect(Object.keys(((await unknown.json()) as { errors: Record<string, string[]> }).errors)).toEqual(['creativeSetIds.1'])
    expect((await call('/api/v1/campaign/banner/create', { body: { ...NEW_CAMPAIGN, creativeSetIds: [2010011] } })).status).toBe(403)
  })
})

describe('failure modes and latency', () => {
  const REPORT = `/api/v1/report/campaigns/get?advertiserId=101&${WEEK}`

  it('answers the injected status for the next `times` requests, then recovers', async () => {
    sandbox.setFailure({ kind: 'status', status: 503, times: 2 })
    expect((await call(REPORT)).status).toBe(503)
    const second = await call(REPORT)
    expect(second.status).toBe(503)
    expect(await second.json()).toEqual({ message: 'Service Unavailable' })
    expect((await call(REPORT)).status).toBe(200)
    expect(sandbox.countRequests((r) => r.path === '/api/v1/report/campaigns/get')).toBe(3)
  })

  it('sends the injected body and headers, e.g. a 429 with retry-after, until changed', async () => {
    sandbox.setFailure({ kind: 'status', status: 429, headers: { 'retry-after': '7' } })
    for (let i = 0; i < 3; i++) {
      const response = await call(REPORT)
      expect(response.status).toBe(429)
      expect(response.headers.get('retry-after')).toBe('7')
      expect(await response.json()).toEqual({ message: 'Too Many Attempts.' })
    }
  })

  it('holds the next `times` requests at the platform until released, then answers them as the route does', async () => {
    sandbox.setFailure({ kind: 'held', times: 2 })
    let answered = 0
    const held = [call(REPORT), call(REPORT)].map((p) => p.then((r) => ((answered += 1), r)))
    await waitFor('both calls at the platform', () => sandbox.concurrency().inFlight === 2)
    // The next call is not held: it is answered while the two wait.
    expect((await call(REPORT)).status).toBe(200)
    expect(answered).toBe(0)
    sandbox.releaseHeld()
    expect((await Promise.all(held)).map((r) => r.status)).toEqual([200, 200])
  })

  it('leaves the token request alone', async () => {
    sandbox.setFailure({ kind: 'status', status: 500 })
    expect((await grant()).status).toBe(200)
  })

  it('hangs a request until the client gives up, and close() still returns at once', async () => {
    const hanging = await startSandbox()
    hanging.setFailure({ kind: 'hang' })
    const request = fetch(`${hanging.url}${REPORT}`, {
      headers: { authorization: `Bearer ${hanging.issueToken()}` },
      signal: AbortSignal.timeout(200),
    })
    await expect(request).rejects.toThrow()
    const pending = fetch(`${hanging.url}${REPORT}`, { headers: { authorization: `Bearer ${hanging.issueToken()}` } })
    pending.catch(() => undefined)
    await new Promise((resolve) => setTimeout(resolve, 50))
    // The hang never ends: a close that waited for it would end the test at its timeout.
    await hanging.close()
    await expect(pending).rejects.toThrow()
  })

  it('resets the connection without an answer', async () => {
    sandbox.setFailure({ kind: 'reset', times: 1 })
    await expect(call(REPORT)).rejects.toThrow()
    expect((await call(REPORT)).status).toBe(200)
  })

  it('trickles a 200: headers first, then the body one chunk at a time, the whole valid JSON', async () => {
    sandbox.setFailure({ kind: 'trickle', intervalMs: 100, chunks: 3, times: 1 })
    const { head, body } = await rawGet(REPORT)
    expect(head).toMatch(/^HTTP\/1\.1 200 /)
    expect(head).toContain('transfer-encoding: chunked')
    // On the wire: the opening, each of the three chunks framed on its own, the closing.
    expect(body.toString('latin1')).toBe('c\r\n{"trickle":"\r\n1\r\n.\r\n1\r\n.\r\n1\r\n.\r\n2\r\n"}\r\n0\r\n\r\n')
    expect(sandbox.trickles).toEqual([{ chunks: 3, sent: 3 }])
    expect(await (await call(REPORT)).json()).not.toEqual({ trickle: '...' })
  })

  it('fails one path only, whatever the token, while the other paths answer', async () => {
    const OTHER = '/api/v1/report/adPlacementPositions/get'
    sandbox.setRouteFailure('/api/v1/report/campaigns/get', { kind: 'status', status: 401, body: { message: 'Unauthenticated.' } })
    const refused = await call(REPORT)
    expect(refused.status).toBe(401)
    expect(await refused.json()).toEqual({ message: 'Unauthenticated.' })
    expect((await call(`${OTHER}?advertiserId=101&${WEEK}`)).status).toBe(200)
    sandbox.setRouteFailure('/api/v1/report/campaigns/get', { kind: 'status', status: 429, headers: { 'retry-after': '900' }, times: 1 })
    // A call of another path, before it, takes nothing of a failure counted in times.
    expect((await call(`${OTHER}?advertiserId=101&${WEEK}`)).status).toBe(200)
    const throttled = await call(REPORT)
    expect([throttled.status, throttled.headers.get('retry-after')]).toEqual([429, '900'])
    expect((await call(REPORT)).status).toBe(200)
    sandbox.setRouteFailure('/api/v1/report/campaigns/get', { kind: 'status', status: 503 })
    sandbox.clearRouteFailures()
    expect((await call(REPORT)).status).toBe(200)
  })

  it('sends a large JSON answer of the size asked for', async () => {
    sandbox.setRouteFailure('/api/v1/report/campaigns/get', { kind: 'large', bytes: 3_000_000, times: 1 })
    const response = await call(REPORT)
    expect(response.status).toBe(200)
    const text = await response.text()
    expect(text.length).toBe(3_000_000)
    expect(JSON.parse(text)).toHaveProperty('data')
    expect(() => sandbox.setRouteFailure('/x', { kind: 'large', bytes: 0 })).toThrow(/bytes/)
  })

  it('refuses a trickle without a positive interval', () => {
    expect(() => sandbox.setFailure({ kind: 'trickle', intervalMs: 0 })).toThrow(/intervalMs/)
    expect(() => sandbox.setFailure({ kind: 'trickle', intervalMs: 10, chunks: 0 })).toThrow(/chunks/)
  })

  it('cuts an answer halfway: the whole content-length announced, half the body, then the connection closed', async () => {
    const whole = Buffer.from(await (await call(REPORT)).arrayBuffer())
    sandbox.setFailure({ kind: 'cut', times: 1 })
    const raw = await rawGet(REPORT)
    expect(raw.head).toMatch(/^HTTP\/1\.1 200 /)
    expect(raw.head).toContain(`content-length: ${whole.length}`)
    expect(raw.body.length).toBe(Math.floor(whole.length / 2))
    expect(raw.body.equals(whole.subarray(0, raw.body.length))).toBe(true)
    expect((await call(REPORT)).status).toBe(200)
  })

  it('draws failures at the weather rates, 500/502/503, 429 with retry-after, hangs and cuts, and ends them with {}', async () => {
    sandbox.setWeather({ serverErrors: 1 })
    for (let i = 0; i < 6; i++) expect([500, 502, 503]).toContain((await call(REPORT)).status)
    sandbox.setWeather({ throttles: 1 })
    const throttled = await call(REPORT)
    expect([throttled.status, throttled.headers.get('retry-after')]).toEqual([429, '1'])
    sandbox.setWeather({ cuts: 1 })
    await expect(call(REPORT).then((r) => r.arrayBuffer())).rejects.toThrow()
    sandbox.setWeather({ hangs: 1 })
    await expect(call(REPORT, { signal: AbortSignal.timeout(300) })).rejects.toThrow()
    // A set failure comes first.
    sandbox.setFailure({ kind: 'status', status: 418, times: 1 })
    expect((await call(REPORT)).status).toBe(418)
    sandbox.setWeather({})
    for (let i = 0; i < 5; i++) expect((await call(REPORT)).status).toBe(200)
    expect(() => sandbox.setWeather({ serverErrors: 0.6, cuts: 0.6 })).toThrow(/more than 1/)
    expect(() => sandbox.setWeather({ rain: 0.1 } as never)).toThrow(/rain/)
  })

  it('draws each latency between the shortest and the longest asked', async () => {
    sandbox.setLatency(60, 120)
    sandbox.clearRequests()
    for (let i = 0; i < 3; i++) expect((await call(REPORT)).status).toBe(200)
    // Each answer came after the wait its record notes (noted when the wait ended, before the answer).
    for (const { waitedMs } of sandbox.requests) {
      expect(waitedMs).toBeGreaterThanOrEqual(60)
      expect(waitedMs).toBeLessThanOrEqual(120)
    }
    expect(sandbox.requests).toHaveLength(3)
    expect(() => sandbox.setLatency(100, 50)).toThrow(/shorter/)
  })

  it('adds the configured latency before answering', async () => {
    sandbox.setLatency(150)
    sandbox.clearRequests()
    expect((await call(REPORT)).status).toBe(200)
    expect(sandbox.requests.map((r) => r.waitedMs)).toEqual([150])
    sandbox.setLatency(0)
    expect((await call(REPORT)).status).toBe(200)
    expect(sandbox.requests.map((r) => r.waitedMs)).toEqual([150, 0])
  })
})

describe('request log', () => {
  it('records token and API requests with method, path, query, headers and raw body', async () => {
    await grant()
    await call('/api/v1/campaign/get?per_page=200', { body: { userId: 101 } })
    expect(sandbox.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['POST /oauth/token', 'POST /api/v1/campaign/get'])
    const [tokenRequest, listRequest] = sandbox.requests
    expect(JSON.parse(tokenRequest?.body ?? '{}')).toMatchObject({ grant_type: 'platform_dsp' })
    expect(listRequest).toMatchObject({ query: 'per_page=200', body: '{"userId":101}' })
    expect(listRequest?.headers.authorization).toBe(`Bearer ${token}`)
    expect(sandbox.countRequests((r) => r.path === '/oauth/token')).toBe(1)
    sandbox.clearRequests()
    expect(sandbox.countRequests()).toBe(0)
  })

  it('notes the accounts each call acted on, as the platform resolved them', async () => {
    await call('/api/v1/campaign/get', { body: {} })
    await call(`/api/v1/report/campaigns/get?advertiserId=101&${WEEK}`)
    await call('/api/v1/report/campaigns/get', { method: 'POST', body: { campaignIds: [102001, 103001], dateFrom: '2026-01-01', dateTo: '2026-01-02' } })
    await call('/api/v1/report/campaigns/get', { method: 'POST', body: { campaignIds: [201001], dateFrom: '2026-01-01', dateTo: '2026-01-02' } })
    // The list without a userId in its body is the parent's; a refused call acted on nothing.
    expect(sandbox.requests.map((r) => r.accounts)).toEqual([[100], [101], [102, 103], []])
  })
})

describe('HTTP controls', () => {
  async function control(method: string, path: string, body?: unknown): Promise<Response> {
    return fetch(`${sandbox.url}/__sandbox${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
  }

  it('mint tokens, inject failures and latency, count and clear requests, without entering the log', async () => {
    const minted = (await (await control('POST', '/tokens', { accountId: 101 })).json()) as { access_token: string }
    const REPORT = `/api/v1/report/campaigns/get?advertiserId=101&${WEEK}`
    expect((await call(REPORT, { token: minted.access_token })).status).toBe(200)

    expect((await control('POST', '/failure', { kind: 'status', status: 502, times: 1 })).status).toBe(200)
    expect((await call(REPORT)).status).toBe(502)
    expect((await control('POST', '/failure', { kind: 'explode' })).status).toBe(400)

    expect(await (await control('POST', '/latency', { ms: 100 })).json()).toEqual({ ms: 100 })
    await call(REPORT)
    expect(sandbox.requests.at(-1)?.waitedMs).toBe(100)

    const count = await control('GET', '/requests/count?path=/api/v1/report/campaigns/get')
    expect(await count.json()).toEqual({ count: 3 })
    expect((await control('DELETE', '/requests')).status).toBe(204)
    expect(await (await control('GET', '/requests/count')).json()).toEqual({ count: 0 })

    // A held call is in flight from its arrival, and held once its latency is waited out:
    // a release lets go of the calls held then.
    expect((await control('POST', '/failure', { kind: 'held', times: 1 })).status).toBe(200)
    const held = call(REPORT)
    await waitFor('the call held at the platform', async () => ((await (await control('GET', '/concurrency')).json()) as { held: number }).held === 1)
    expect(await (await control('GET', '/concurrency')).json()).toMatchObject({ inFlight: 1, held: 1 })
    expect((await control('POST', '/release')).status).toBe(204)
    expect((await held).status).toBe(200)
    expect((await control('POST', '/latency', { ms: 0 })).status).toBe(200)
  })

  it('reports the most /api/v1 requests answered at once, hung and reset ones included, until reset', async () => {
    expect((await control('DELETE', '/concurrency')).status).toBe(204)
    expect((await control('POST', '/latency', { ms: 150 })).status).toBe(200)
    const REPORT = `/api/v1/report/campaigns/get?advertiserId=101&${WEEK}`
    await Promise.all(Array.from({ length: 5 }, () => call(REPORT)))
    expect(await (await control('GET', '/concurrency')).json()).toEqual({ inFlight: 0, peak: 5, held: 0 })
    expect((await control('POST', '/latency', { ms: 0 })).status).toBe(200)
    expect((await control('POST', '/failure', { kind: 'reset', times: 1 })).status).toBe(200)
    await call(REPORT).catch(() => undefined)
    expect((await control('DELETE', '/concurrency')).status).toBe(204)
    expect(await (await control('GET', '/concurrency')).json()).toEqual({ inFlight: 0, peak: 0, held: 0 })
  })

  // The failure mode a platform redirect is tested with (contract: "A platform redirect carries no content").
  it('answers a redirect as Laravel writes one over HTTP, and refuses one without a location or with another status', async () => {
    const REPORT = `/api/v1/report/campaigns/get?advertiserId=101&${WEEK}`
    for (const refused of [{ kind: 'redirect' }, { kind: 'redirect', location: '' }, { kind: 'redirect', location: '/next', status: 200 }, { kind: 'redirect', location: '/next', status: 302.5 }, { kind: 'redirect', location: '/next', headers: { 'x-n': 1 } }]) {
      const res = await control('POST', '/failure', refused)
      expect([JSON.stringify(refused), res.status]).toEqual([JSON.stringify(refused), 400])
    }
    expect((await control('POST', '/failure', { kind: 'redirect', location: '/next?a=1&b="2"', headers: { 'x-sent': 'yes' }, times: 1 })).status).toBe(200)
    const moved = await fetch(`${sandbox.url}${REPORT}`, { headers: { authorization: `Bearer ${token}` }, redirect: 'manual' })
    expect([moved.status, moved.headers.get('location'), moved.headers.get('x-sent')]).toEqual([302, '/next?a=1&b="2"', 'yes'])
    expect(await moved.text()).toContain('Redirecting to /next?a=1&amp;b=&quot;2&quot;')
    expect((await call(REPORT)).status).toBe(200)
  })

  it('fails one path over HTTP, and clears the path failures', async () => {
    const REPORT = `/api/v1/report/campaigns/get?advertiserId=101&${WEEK}`
    expect((await control('POST', '/route-failure', { path: '/api/v1/report/campaigns/get', kind: 'status', status: 429 })).status).toBe(200)
    expect((await call(REPORT)).status).toBe(429)
    expect((await control('POST', '/route-failure', { kind: 'status', status: 429 })).status).toBe(400)
    expect((await control('DELETE', '/route-failure')).status).toBe(204)
    expect((await call(REPORT)).status).toBe(200)
  })

  it('sets the weather and a latency range over HTTP, and refuses bad rates', async () => {
    const REPORT = `/api/v1/report/campaigns/get?advertiserId=101&${WEEK}`
    expect(await (await control('POST', '/weather', { serverErrors: 1 })).json()).toEqual({ weather: { serverErrors: 1, throttles: 0, hangs: 0, cuts: 0 } })
    expect([500, 502, 503]).toContain((await call(REPORT)).status)
    expect((await control('POST', '/weather', { serverErrors: 2 })).status).toBe(400)
    expect((await control('POST', '/weather', {})).status).toBe(200)
    expect((await call(REPORT)).status).toBe(200)
    expect(await (await control('POST', '/latency', { ms: 10, maxMs: 20 })).json()).toEqual({ ms: 10, maxMs: 20 })
    expect((await control('POST', '/latency', { ms: 10, maxMs: 5 })).status).toBe(400)
  })

  it("counts each token user's calls as Laravel's throttle:api does, and refuses past the count once told to, over HTTP", async () => {
    const REPORT = `/api/v1/report/campaigns/get?advertiserId=101&${WEEK}`
    expect((await control('POST', '/throttle', { limit: 0 })).status).toBe(400)
    expect((await control('POST', '/throttle', { refuse: 'yes' })).status).toBe(400)
    expect((await control('POST', '/throttle', { limits: 2 })).status).toBe(400)
    expect(await (await control('POST', '/throttle', { limit: 2, windowMs: 600_000, refuse: true })).json()).toEqual({ throttle: { limit: 2, windowMs: 600_000, refuse: true } })
    const answers = []
    for (let i = 0; i < 3; i++) answers.push(await call(REPORT))
    expect(answers.map((a) => [a.status, a.headers.get('x-ratelimit-limit'), a.headers.get('x-ratelimit-remaining')])).toEqual([[200, '2', '1'], [200, '2', '0'], [429, '2', '0']])
    // Laravel's ThrottleRequestsException: the seconds to the window's end, and when it ends; the count's refusal alone carries x-ratelimit-reset.
    const refused = answers[2] as Response
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(590)
    expect(Number(refused.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000 + 590)
    expect(await refused.json()).toEqual({ message: 'Too Many Attempts.' })
    expect(answers[1]?.headers.get('x-ratelimit-reset')).toBeNull()
    // Written and never refused, as by default (60 a minute).
    expect((await control('POST', '/throttle', { limit: 1 })).status).toBe(200)
    const past = [await call(REPORT), await call(REPORT)]
    expect(past.map((a) => [a.status, a.headers.get('x-ratelimit-remaining')])).toEqual([[200, '0'], [200, '0']])
    expect((await control('POST', '/throttle', {})).status).toBe(200)
  })

  it('revokes every token', async () => {
    expect((await control('DELETE', '/tokens')).status).toBe(204)
    expect((await call(`/api/v1/report/campaigns/get?advertiserId=101&${WEEK}`)).status).toBe(401)
    token = sandbox.issueToken()
  })
})
