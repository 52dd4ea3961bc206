import { connect } from 'node:net'
import { describe, expect, it } from 'vitest'
import { request } from 'undici'
import { hashApiKey } from '../../src/access/api-keys.js'
import { useSandboxGateway } from '../helpers/fixtures.js'
import { KEYS } from '../helpers/sandbox-gateway.js'
import { waitFor } from '../helpers/wait.js'

// Fresh in-memory hits are served before Fastify's router, through the same
// admission and access checks, with every contract behaviour of a hit.

const WIRE_KEY = 'rgw_test_wire_key_444444444444444444444444444'
const SCOPED_KEY = 'rgw_test_scoped_key_5555555555555555555555555'
const REPORT = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-07&byDate=1'
// Teams limited, burst and scoped count their calls in a window of 10000d (as withLimitedWindow):
// each test's calls of one team fall in one window, where a minute's may end between them.
const env = useSandboxGateway({
  yaml: `teams:
  growth:
    keys: ["${hashApiKey(KEYS.growth)}"]
    advertisers: [101, 102]
    refresh: true
  other:
    keys: ["${hashApiKey(KEYS.writer)}"]
    advertisers: [103]
  limited:
    keys: ["${hashApiKey(KEYS.limited)}"]
    advertisers: ["*"]
    rateLimit: { max: 3, window: 10000d }
  burst:
    keys: ["${hashApiKey(KEYS.all)}"]
    advertisers: ["*"]
    rateLimit: { max: 6, window: 10000d }
  wire:
    keys: ["${hashApiKey(WIRE_KEY)}"]
    advertisers: ["*"]
    rateLimit: { max: 1000, window: 1m }
    refresh: true
  scoped:
    keys: ["${hashApiKey(SCOPED_KEY)}"]
    advertisers: [103]
    rateLimit: { max: 2, window: 10000d }
# The refreshes here follow their copies at once.
cache:
  refreshMinAge: 0
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
      vary: 'accept-encoding, authorization, prefer, x-api-key',
      'x-request-id': 'fast-1',
      'content-type': miss.headers['content-type'],
    })
    expect(hit.headers.age).toMatch(/^\d+$/)
    expect(hit.headers['cache-control']).toMatch(/^private, max-age=\d+$/)
    // A report is data, never a page of the gateway's origin, on either entrance.
    for (const res of [miss, hit]) expect(res.headers).toMatchObject({ 'x-content-type-options': 'nosniff', 'content-security-policy': "default-src 'none'; frame-ancestors 'none'; sandbox" })
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

  it('answers a hit whose If-None-Match names it with 304, no body, and logs it as such', async () => {
    const miss = await get(REPORT, { 'x-api-key': KEYS.growth, 'accept-encoding': 'gzip' })
    const tag = miss.headers.etag as string
    const before = env.gw.logs.records().filter((r) => r.msg === 'request').length
    const hit = await get(REPORT, { 'x-api-key': KEYS.growth, 'accept-encoding': 'gzip', 'if-none-match': tag, 'x-request-id': 'fast-304' })
    expect(hit.status).toBe(304)
    expect(hit.body.length).toBe(0)
    expect(hit.headers).toMatchObject({ 'x-cache': 'HIT', etag: tag, 'x-request-id': 'fast-304', vary: 'accept-encoding, authorization, prefer, x-api-key' })
    expect(hit.headers['content-length']).toBeUndefined()
    const lines = env.gw.logs.records().filter((r) => r.msg === 'request').slice(before)
    expect(lines[0]).toMatchObject({ reqId: 'fast-304', status: 304, cache: 'HIT' })
    // Another team is still refused before any 304 could tell it the entry exists.
    expect((await get(REPORT, { 'x-api-key': KEYS.writer, 'if-none-match': tag })).status).toBe(403)
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

  it('counts a call refused after the rate limit once: decided before the router, answered by the route', async () => {
    expect((await get(REPORT, { 'x-api-key': KEYS.growth })).status).toBe(200)
    // The scope (403) comes after the rate limit in the contract's order: each refusal
    // costs the team one call of its two, counted where it was decided and not again.
    const statuses: number[] = []
    for (let i = 0; i < 3; i++) statuses.push((await get(REPORT, { 'x-api-key': SCOPED_KEY })).status)
    expect(statuses).toEqual([403, 403, 429])
    const lines = env.gw.logs.records().filter((r) => r.msg === 'request' && r.team === 'scoped')
    expect(lines.map((r) => r.status)).toEqual([403, 403, 429])
  })

  it('leaves a refresh to the route (REFRESH, a new platform call)', async () => {
    await get(REPORT, { 'x-api-key': KEYS.growth })
    const calls = env.sandbox.countRequests((r) => r.path === '/api/v1/report/campaigns/get')
    const refresh = await get(REPORT, { 'x-api-key': KEYS.growth, 'cache-control': 'no-cache' })
    expect(refresh.headers['x-cache']).toBe('REFRESH')
    expect(env.sandbox.countRequests((r) => r.path === '/api/v1/report/campaigns/get')).toBe(calls + 1)
  })
})

describe("a hit's head rendered ahead", () => {
  /** Writes `raw` on one connection; resolves with what came back once `answers` whole answers (heads only: `bodies` false) arrived, or the gateway closed it. */
  function onTheWire(raw: string, answers: number, bodies = true): Promise<{ text: string; closed: boolean }> {
    const { hostname, port } = new URL(env.url)
    return new Promise((resolve, reject) => {
      const socket = connect({ host: hostname, port: Number(port) })
      let text = ''
      const stop = setTimeout(() => finish(false), 10_000)
      const finish = (closed: boolean) => {
        clearTimeout(stop)
        socket.destroy()
        resolve({ text, closed })
      }
      socket.on('data', (chunk) => {
        text += chunk.toString('latin1')
        const heads = text.split('HTTP/1.').slice(1)
        const whole = heads.filter((h) => {
          const length = Number(/\r\ncontent-length: (\d+)\r\n/i.exec(h)?.[1] ?? NaN)
          const start = h.indexOf('\r\n\r\n')
          return start !== -1 && (!bodies || h.length - start - 4 >= length)
        })
        if (whole.length >= answers) finish(false)
      })
      socket.on('end', () => finish(true))
      socket.on('error', reject)
      socket.write(raw)
    })
  }

  const names = (head: string) =>
    head
      .split('\r\n')
      .slice(1)
      .filter(Boolean)
      .map((l) => l.slice(0, l.indexOf(':')).toLowerCase())
      .sort()

  it('answers a hit with the same fields before the router and through it, a 200 and a 304 alike', async () => {
    // The same report under two URLs: the first is seen before (the fast path answers it),
    // the second spelled anew (its first hit takes the router, which finds the same entry).
    const seen = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-04-01&dateTo=2026-04-02'
    const spelledAnew = '/api/v1/report/campaigns/get?dateTo=2026-04-02&advertiserId=101&dateFrom=2026-04-01'
    const ask = (url: string, id: string, extra = '') => `GET ${url} HTTP/1.1\r\nhost: gw\r\nx-api-key: ${WIRE_KEY}\r\nx-request-id: ${id}\r\n${extra}\r\n`
    await onTheWire(ask(seen, 'fill'), 1)
    const etag = /\r\netag: ([^\r]+)\r\n/.exec((await onTheWire(ask(seen, 'tag'), 1)).text)?.[1] as string
    expect(etag).toBeTruthy()
    const before = env.gw.logs.records().filter((r) => r.msg === 'request').length
    const fast = await onTheWire(ask(seen, 'fast-200'), 1)
    const routed = await onTheWire(ask(spelledAnew, 'route-200'), 1)
    const fast304 = await onTheWire(ask(seen, 'fast-304', `if-none-match: ${etag}\r\n`), 1, false)
    const routed304 = await onTheWire(ask(`${spelledAnew}&`, 'route-304', `if-none-match: ${etag}\r\n`), 1, false)
    const lines = env.gw.logs.records().filter((r) => r.msg === 'request').slice(before)
    // Both entrances were taken: the router's answers carry its route in the access line.
    expect(lines.map((l) => [l.reqId, l.status, l.cache])).toEqual([
      ['fast-200', 200, 'HIT'],
      ['route-200', 200, 'HIT'],
      ['fast-304', 304, 'HIT'],
      ['route-304', 304, 'HIT'],
    ])
    for (const [a, b, status] of [[fast.text, routed.text, 200], [fast304.text, routed304.text, 304]] as const) {
      const headA = a.slice(0, a.indexOf('\r\n\r\n'))
      const headB = b.slice(0, b.indexOf('\r\n\r\n'))
      expect(headA).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `))
      expect(headB).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `))
      expect(names(headA)).toEqual(names(headB))
      for (const head of [headA, headB]) {
        expect(head).toMatch(/\r\nx-request-id: (fast|route)-(200|304)\r\n/)
        expect(head).toMatch(/\r\nratelimit-policy: "default";q=1000;w=60\r\n/)
        expect(head).toMatch(/\r\nratelimit: "default";r=\d+;t=\d+\r\n/)
      }
    }
  })

  it('writes each header of a hit once, for pipelined callers on one kept-alive connection, and counts its bytes', async () => {
    await get(REPORT, { 'x-api-key': WIRE_KEY })
    const ask = (extra: string) => `GET ${REPORT} HTTP/1.1\r\nhost: gw\r\nx-api-key: ${WIRE_KEY}\r\n${extra}\r\n`
    const before = env.gw.logs.records().filter((r) => r.msg === 'request').length
    const { text, closed } = await onTheWire(ask('x-request-id: wire-1\r\n') + ask('accept-encoding: gzip\r\nx-request-id: wire-2\r\n'), 2)
    expect(closed).toBe(false)
    const answers = text.split(/(?=HTTP\/1\.1 )/)
    expect(answers).toHaveLength(2)
    const heads = answers.map((a) => a.slice(0, a.indexOf('\r\n\r\n')))
    const expected = ['age', 'cache-control', 'cache-status', 'connection', 'content-length', 'content-security-policy', 'content-type', 'date', 'etag', 'keep-alive', 'platform-usage', 'ratelimit', 'ratelimit-policy', 'report-provisional-days', 'report-settled-through', 'vary', 'x-cache', 'x-content-type-options', 'x-request-id']
    expect(names(heads[0] as string)).toEqual(expected)
    expect(names(heads[1] as string)).toEqual([...expected, 'content-encoding'].sort())
    expect(heads[0]).toMatch(/^HTTP\/1\.1 200 OK\r\n/)
    expect(heads[0]).toContain('\r\nx-cache: HIT\r\n')
    expect(heads[0]).toMatch(/\r\ncache-status: report-gateway; hit; ttl=\d+\r\n/)
    expect(heads[0]).toContain('\r\nx-request-id: wire-1\r\n')
    expect(heads[1]).toContain('\r\ncontent-encoding: gzip\r\n')
    const lines = env.gw.logs.records().filter((r) => r.msg === 'request').slice(before)
    expect(lines.map((l) => [l.reqId, l.status, l.cache])).toEqual([
      ['wire-1', 200, 'HIT'],
      ['wire-2', 200, 'HIT'],
    ])
    expect(lines.map((l) => l.bytes)).toEqual(answers.map((a) => Buffer.byteLength(a, 'latin1')))
  })

  it('counts each pipelined answer its own bytes in its access line, through either entrance, sent in one write', async () => {
    await get(REPORT, { 'x-api-key': WIRE_KEY })
    // The same report spelled anew each time: its first read takes the router, which finds the entry.
    const anew = `${REPORT}&pipe=${Date.now()}`
    const ask = (url: string, id: string, extra = '') => `GET ${url} HTTP/1.1\r\nhost: gw\r\nx-api-key: ${WIRE_KEY}\r\nx-request-id: ${id}\r\n${extra}\r\n`
    const before = env.gw.logs.records().filter((r) => r.msg === 'request').length
    const raw = ask(REPORT, 'pipe-1') + ask(anew, 'pipe-2') + ask(REPORT, 'pipe-3', 'accept-encoding: gzip\r\n') + ask(REPORT, 'pipe-4', 'connection: close\r\n')
    const { text } = await onTheWire(raw, 4)
    const answers = text.split(/(?=HTTP\/1\.1 )/)
    expect(answers).toHaveLength(4)
    await waitFor('the four access lines', () => env.gw.logs.records().filter((r) => r.msg === 'request').length >= before + 4)
    const lines = env.gw.logs.records().filter((r) => r.msg === 'request').slice(before)
    const bytesOf = (id: string) => lines.find((l) => l.reqId === id)?.bytes
    expect(['pipe-1', 'pipe-2', 'pipe-3', 'pipe-4'].map(bytesOf)).toEqual(answers.map((a) => Buffer.byteLength(a, 'latin1')))
    expect(lines.reduce((sum, l) => sum + Number(l.bytes), 0)).toBe(Buffer.byteLength(text, 'latin1'))
  })

  it("renders the route's answers too (MISS, REFRESH), with what Fastify's hooks would add, and logs them", async () => {
    const url = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-03-01&dateTo=2026-03-02'
    const ask = (extra: string) => `GET ${url} HTTP/1.1\r\nhost: gw\r\nx-api-key: ${WIRE_KEY}\r\n${extra}\r\n`
    const before = env.gw.logs.records().filter((r) => r.msg === 'request').length
    const miss = await onTheWire(ask('x-request-id: route-1\r\n'), 1)
    const refresh = await onTheWire(ask('x-request-id: route-2\r\ncache-control: no-cache\r\n'), 1)
    const expected = ['cache-control', 'cache-status', 'connection', 'content-length', 'content-security-policy', 'content-type', 'date', 'etag', 'keep-alive', 'platform-usage', 'ratelimit', 'ratelimit-policy', 'report-provisional-days', 'report-settled-through', 'vary', 'x-cache', 'x-content-type-options', 'x-request-id']
    for (const [answer, cache, id] of [[miss.text, 'MISS', 'route-1'], [refresh.text, 'REFRESH', 'route-2']] as const) {
      const head = answer.slice(0, answer.indexOf('\r\n\r\n'))
      expect(names(head)).toEqual(expected)
      expect(head).toContain(`\r\nx-cache: ${cache}\r\n`)
      expect(head).toMatch(new RegExp(`\r\ncache-status: report-gateway; fwd=${cache === 'MISS' ? 'uri-miss' : 'request'}; stored; ttl=\\d+\r\n`))
      expect(head).toContain(`\r\nx-request-id: ${id}\r\n`)
      expect(head).toMatch(/\r\nratelimit: "default";r=\d+;t=\d+\r\n/)
    }
    const lines = env.gw.logs.records().filter((r) => r.msg === 'request').slice(before)
    expect(lines.map((l) => [l.reqId, l.status, l.cache, l.team])).toEqual([
      ['route-1', 200, 'MISS', 'wire'],
      ['route-2', 200, 'REFRESH', 'wire'],
    ])
    expect(lines[0]?.bytes).toBe(Buffer.byteLength(miss.text, 'latin1'))
  })

  it('answers HEAD of a cached report with its head and no body, on a connection kept alive', async () => {
    await get(REPORT, { 'x-api-key': WIRE_KEY })
    const head = `HEAD ${REPORT} HTTP/1.1\r\nhost: gw\r\nx-api-key: ${WIRE_KEY}\r\n\r\n`
    const { text, closed } = await onTheWire(head + head, 2, false)
    expect(closed).toBe(false)
    const answers = text.split(/(?=HTTP\/1\.1 )/)
    expect(answers).toHaveLength(2)
    for (const answer of answers) {
      expect(answer).toMatch(/^HTTP\/1\.1 200 OK\r\n/)
      expect(answer).toMatch(/\r\ncontent-length: \d+\r\n/)
      expect(answer.endsWith('\r\n\r\n')).toBe(true)
    }
  })

  it('answers an HTTP/1.0 hit with the same headers and closes the connection, as writeHead does', async () => {
    await get(REPORT, { 'x-api-key': WIRE_KEY })
    const { text, closed } = await onTheWire(`GET ${REPORT} HTTP/1.0\r\nx-api-key: ${WIRE_KEY}\r\n\r\n`, Infinity)
    expect(closed).toBe(true)
    const head = text.slice(0, text.indexOf('\r\n\r\n'))
    expect(head).toMatch(/^HTTP\/1\.1 200 OK\r\n/)
    expect(head).toContain('\r\nx-cache: HIT\r\n')
    expect(head).toContain('\r\nConnection: close')
    expect(names(head)).toEqual(['age', 'cache-control', 'cache-status', 'connection', 'content-length', 'content-security-policy', 'content-type', 'date', 'etag', 'platform-usage', 'ratelimit', 'ratelimit-policy', 'report-provisional-days', 'report-settled-through', 'vary', 'x-cache', 'x-content-type-options', 'x-request-id'])
  })
})

describe('a stampede joins the fill before the router', () => {
  const PATH = '/api/v1/report/campaigns/get'
  const reportCalls = () => env.sandbox.countRequests((r) => r.path === PATH)

  /**
   * One caller starts a cold fill of `url`; once the platform has its call, `joiners` more
   * callers ask for the same report, each on its own connection. Counts the callers the
   * fast path joined to the fill.
   */
  async function stampede(url: string, key: string, joiners: number, others: string[] = []) {
    const reports = env.gw.reports
    const join = reports.joinCold.bind(reports)
    let joined = 0
    reports.joinCold = (...args) => {
      const ok = join(...args)
      if (ok) joined += 1
      return ok
    }
    try {
      const before = reportCalls()
      env.sandbox.setLatency(1500)
      const first = get(url, { 'x-api-key': key })
      await waitFor('the first caller to reach the platform', () => reportCalls() > before)
      const [rest, refused] = await Promise.all([
        Promise.all(Array.from({ length: joiners }, (_, i) => get(url, { 'x-api-key': key, 'x-request-id': `joiner-${i}` }))),
        Promise.all(others.map((other) => get(url, { 'x-api-key': other }))),
      ])
      return { answers: [await first, ...rest], refused, calls: reportCalls() - before, joined }
    } finally {
      env.sandbox.setLatency(0)
      reports.joinCold = join
    }
  }

  it('answers every caller from the one platform call, each a MISS with the body, logged and counted', async () => {
    const url = `${PATH}?advertiserId=101&dateFrom=2026-02-01&dateTo=2026-02-09`
    const before = env.gw.logs.records().filter((r) => r.msg === 'request').length
    // Callers of another team, and without a valid key, arrive during the fill: they are
    // refused as they would be by the route, and never join it.
    const { answers, refused, calls, joined } = await stampede(url, KEYS.growth, 20, [KEYS.writer, 'rgw_unknown'])
    expect(refused.map((r) => r.status)).toEqual([403, 401])
    expect(calls).toBe(1)
    expect(joined).toBe(20)
    expect(answers.map((a) => `${a.status} ${String(a.headers['x-cache'])}`)).toEqual(Array(21).fill('200 MISS'))
    for (const a of answers) expect(a.body.equals(answers[0]?.body as Buffer)).toBe(true)
    // The first caller's read made the call; the joiners' waited for it (RFC 9211 `collapsed`).
    expect(answers[0]?.headers['cache-status']).toMatch(/^report-gateway; fwd=uri-miss; stored; ttl=\d+$/)
    for (const a of answers.slice(1)) expect(a.headers['cache-status']).toMatch(/^report-gateway; fwd=uri-miss; collapsed; stored; ttl=\d+$/)
    expect(answers[1]?.headers).toMatchObject({ 'x-request-id': 'joiner-0', vary: 'accept-encoding, authorization, prefer, x-api-key', etag: answers[0]?.headers.etag })
    const lines = env.gw.logs.records().filter((r) => r.msg === 'request').slice(before)
    expect(lines.filter((l) => String(l.reqId).startsWith('joiner-'))).toHaveLength(20)
    const answered = lines.filter((l) => l.status === 200)
    expect(answered).toHaveLength(21)
    for (const l of answered) expect(l).toMatchObject({ team: 'growth', route: 'report', cache: 'MISS', upstreamMs: expect.any(Number) })
    // The next caller is a HIT of the stored copy.
    expect((await get(url, { 'x-api-key': KEYS.growth })).headers['x-cache']).toBe('HIT')
  })

  it('hands a joined fill that failed to the route: the first caller\'s error for all, no second call, the rate limit counted once', async () => {
    const url = `${PATH}?advertiserId=102&dateFrom=2026-02-01&dateTo=2026-02-09`
    env.sandbox.setRouteFailure(PATH, { kind: 'status', status: 500 })
    try {
      const { answers, calls, joined } = await stampede(url, KEYS.all, 5)
      expect(calls).toBe(1)
      expect(joined).toBe(5)
      expect(answers.map((a) => a.status)).toEqual(Array(6).fill(502))
      for (const a of answers) expect(JSON.parse(a.body.toString('utf8'))).toMatchObject({ code: 'GW_UPSTREAM' })
      // Six calls of a six-a-minute team: each counted once, none refused.
      expect(answers.map((a) => String(a.headers.ratelimit).match(/r=(\d+)/)?.[1]).sort()).toEqual(['0', '1', '2', '3', '4', '5'])
    } finally {
      env.sandbox.clearRouteFailures()
    }
  })
})

describe('the access log line', () => {
  const lastRequestLine = () => env.gw.logs.records().filter((r) => r.msg === 'request').at(-1) as Record<string, unknown>

  it('carries client, advertiser, cache result, bytes sent, upstream time and user agent, on both entrances', async () => {
    const url = '/api/v1/report/campaigns/get?advertiserId=102&dateFrom=2026-01-01&dateTo=2026-01-14'
    const ua = { 'x-api-key': KEYS.growth, 'user-agent': 'dashboards/2.1' }
    const miss = await get(url, ua)
    expect(miss.headers['x-cache']).toBe('MISS')
    const missLine = lastRequestLine()
    expect(missLine).toMatchObject({ client: '127.0.0.1', team: 'growth', advertiser: 102, cache: 'MISS', status: 200, userAgent: 'dashboards/2.1' })
    expect(missLine.upstreamMs).toEqual(expect.any(Number))
    // Headers and body: more than the body, less than the body and 2 KB of headers.
    expect(missLine.bytes).toBeGreaterThan(miss.body.length)
    expect(missLine.bytes).toBeLessThan(miss.body.length + 2048)

    const hit = await get(url, ua)
    expect(hit.headers['x-cache']).toBe('HIT')
    const hitLine = lastRequestLine()
    expect(hitLine).toMatchObject({ client: '127.0.0.1', advertiser: 102, cache: 'HIT', upstreamMs: null, userAgent: 'dashboards/2.1' })
    expect(hitLine.bytes).toBeGreaterThan(hit.body.length)
    expect(hitLine.bytes).toBeLessThan(hit.body.length + 2048)
    expect(Object.keys(hitLine).sort()).toEqual(Object.keys(missLine).sort())
  })

  it("bounds what a caller chose in its line: a 12 KB user-agent or path is logged as its first 1024 characters, a key across the cut redacted whole", async () => {
    // Node reads heads of 16 KiB: a line that long is split by a log driver (Docker's at
    // 16 KiB) and its request read by no parser; each call would write that much again.
    const key = KEYS.growth
    const agent = `${'a'.repeat(1024 - 14)}${key} ${'b'.repeat(12_000)}`
    const path = `/api/v1/${'p'.repeat(12_000)}`
    await get(REPORT, { 'x-api-key': KEYS.growth, 'user-agent': agent, 'x-request-id': 'long-agent' })
    await get(path, { 'x-api-key': KEYS.growth, 'x-request-id': 'long-path' })
    const raw = env.gw.logs.text().split('\n').filter((l) => l.includes('"msg":"request"') && /"reqId":"long-(agent|path)"/.test(l))
    expect(raw).toHaveLength(2)
    for (const line of raw) {
      expect(line.length).toBeLessThan(4096)
      expect(line).not.toContain(key.slice(0, 12))
    }
    const lines = env.gw.logs.records().filter((r) => r.msg === 'request' && (r.reqId === 'long-agent' || r.reqId === 'long-path'))
    // Redacted, then cut: the characters left out are counted in what is logged.
    expect(lines[0]?.userAgent).toBe(`${'a'.repeat(1024 - 14)}[REDACTED] bbb… (+${12_000 - 3} characters)`)
    expect(lines[1]).toMatchObject({ path: `${path.slice(0, 1024)}… (+${path.length - 1024} characters)` })
  })

  it('names the account of a proxied call and times its platform call', async () => {
    const res = await request(`${env.url}/api/v1/campaign/get`, {
      method: 'POST',
      headers: { 'x-api-key': KEYS.growth, 'content-type': 'application/json' },
      body: JSON.stringify({ userId: 101 }),
    })
    const body = Buffer.from(await res.body.arrayBuffer())
    expect(res.statusCode).toBe(200)
    const line = lastRequestLine()
    expect(line).toMatchObject({ route: 'proxy', advertiser: 101, cache: null, userAgent: null })
    expect(line.upstreamMs).toEqual(expect.any(Number))
    expect(line.bytes).toBeGreaterThan(body.length)
  })

  it('names the advertiser a refused cross-team call asked for (403), on a report read, a report form and a proxied call', async () => {
    // growth reads 101 and 102; 103 is another team's.
    const asked = [
      { method: 'GET' as const, path: '/api/v1/report/campaigns/get?advertiserId=103&dateFrom=2026-01-01&dateTo=2026-01-07', body: undefined },
      { method: 'POST' as const, path: '/api/v1/report/campaigns/get', body: { advertiserId: 103, campaignIds: [1], dateFrom: '2026-01-01', dateTo: '2026-01-07' } },
      { method: 'POST' as const, path: '/api/v1/campaign/get', body: { userId: 103 } },
    ]
    for (const { method, path, body } of asked) {
      const res = await request(`${env.url}${path}`, {
        method,
        headers: { 'x-api-key': KEYS.growth, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
      })
      await res.body.arrayBuffer()
      expect(res.statusCode, `${method} ${path}`).toBe(403)
      expect(lastRequestLine(), `${method} ${path}`).toMatchObject({ team: 'growth', status: 403, advertiser: 103 })
    }
  })
})

// A report answer is `cache-control: private, max-age=N`: a browser keeps it. A browser
// keys its cache by URL and by the request headers the answer's `vary` names, so an answer
// that varied on `accept-encoding` alone would be served from the cache of a browser that
// holds it to a request with another team's key, one the gateway refuses (403): the other
// team would see advertisers not its own without asking the gateway. Every answer of an
// entry varies on both headers that carry a key, and on `prefer` (RFC 7240, 2): a read that
// prefers `respond-async` may be answered 202 where one without is answered 200.
const KEYED_REPORT = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-02-01&dateTo=2026-02-07&byDate=1'
const VARY = 'accept-encoding, authorization, prefer, x-api-key'

describe('a report answer in a browser cache', () => {
  it('varies on the headers that carry a key: a copy kept for one key is not one for another', async () => {
    const miss = await get(KEYED_REPORT, { 'x-api-key': KEYS.growth, 'accept-encoding': 'gzip' })
    expect(miss).toMatchObject({ status: 200, headers: { 'x-cache': 'MISS', vary: VARY } })
    // A hit before the router, plain and gzip, and its 304.
    const hit = await get(KEYED_REPORT, { authorization: `Bearer ${KEYS.growth}` })
    expect(hit).toMatchObject({ status: 200, headers: { 'x-cache': 'HIT', vary: VARY } })
    const gzip = await get(KEYED_REPORT, { 'x-api-key': KEYS.growth, 'accept-encoding': 'gzip' })
    expect(gzip).toMatchObject({ status: 200, headers: { 'x-cache': 'HIT', 'content-encoding': 'gzip', vary: VARY } })
    const notModified = await get(KEYED_REPORT, { 'x-api-key': KEYS.growth, 'accept-encoding': 'gzip', 'if-none-match': gzip.headers.etag as string })
    expect(notModified).toMatchObject({ status: 304, headers: { vary: VARY } })
    // What a browser that did not reuse the copy gets for the other team's key.
    expect((await get(KEYED_REPORT, { 'x-api-key': KEYS.writer })).status).toBe(403)
  })
})
