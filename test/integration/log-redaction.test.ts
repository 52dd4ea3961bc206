import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildGateway, closeAfterTest, KEYS, TEAMS_YAML, sandboxLoginEnv, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useGateway, useSandbox } from '../helpers/fixtures.js'

// Contract, "Logs": one whole working day of the gateway (password login, cached
// reports, proxied calls, a refused token and the re-login, an admin token change,
// errors) and then the captured log: no secret of any kind, and one line per request.

const ADMIN_TOKEN = 'admin-token-for-log-test-0123456789'
const UNKNOWN_KEY = 'rgw_mistyped_key_that_is_probably_real_999999'
const CALLER_COOKIE = 'caller-session-cookie-value-abcdef'
const REPORT = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-07&byDate=1'

// Every test reads what the one scenario in beforeAll left behind: no reset in between.
const sandbox = useSandbox({ resetEach: false })
const config = (platform: string) =>
  testConfig(
    { PLATFORM_BASE_URL: sandbox.url, ...sandboxLoginEnv(sandbox), ADMIN_TOKEN, LOG_LEVEL: 'debug' },
    `${TEAMS_YAML}\nplatform: { ${platform}probe: { method: POST, path: /api/v1/campaign/get } }\n`,
  )
// The scenario's calls have the default platform.timeout (30 s), which no call on a loaded
// machine comes near: a re-login and the retry after it are made only within the call's
// deadline. The platform's hang is cut on a gateway of its own (started for it, as the
// scenario comes to it), at a deadline short enough to wait out; both logs are read.
const HANG_TIMEOUT_MS = 400
const gw = useGateway(() => config(''))
let hangGw: TestGateway | undefined
afterAll(async () => {
  if (hangGw) await closeAfterTest(hangGw)
})
const hangLogs = () => (hangGw as TestGateway).logs
const logText = () => `${gw.logs.text()}\n${hangLogs().text()}`
let adminPutToken: string
/** What each proxy-listener call answered, in order. */
const answered: { status: number; team: string | null; path: string }[] = []

async function proxyCall(method: 'GET' | 'POST' | 'DELETE', url: string, headers: Record<string, string>, json?: unknown) {
  const res = await gw.proxy.inject({
    method,
    url,
    headers: { ...headers, ...(json === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(json === undefined ? {} : { payload: JSON.stringify(json) }),
  })
  const team = Object.entries(KEYS).find(([, k]) => headers['x-api-key'] === k || headers.authorization === `Bearer ${k}`)?.[0] ?? null
  answered.push({ status: res.statusCode, team, path: url.split('?')[0] as string })
  return res
}

beforeAll(async () => {
  const all = { 'x-api-key': KEYS.all }
  // Reports: a miss, then a hit.
  expect((await proxyCall('GET', REPORT, all)).headers['x-cache']).toBe('MISS')
  expect((await proxyCall('GET', REPORT, { authorization: `Bearer ${KEYS.growth}` })).headers['x-cache']).toBe('HIT')
  // Proxied calls, with every kind of caller credential on them.
  expect((await proxyCall('POST', '/api/v1/campaign/get', { ...all, cookie: `laravel_session=${CALLER_COOKIE}` }, { userId: 101 })).statusCode).toBe(200)
  expect((await proxyCall('POST', '/api/v1/campaign/get', { authorization: `Bearer ${KEYS.writer}` }, { userId: 101 })).statusCode).toBe(200)
  // The platform refuses every token: one re-login, one retry.
  sandbox.revokeAllTokens()
  expect((await proxyCall('POST', '/api/v1/campaign/get', all, { userId: 102 })).statusCode).toBe(200)
  expect(sandbox.countRequests((r) => r.path === '/oauth/token')).toBe(2)
  // The admin replaces the token.
  adminPutToken = sandbox.issueToken()
  const put = await gw.admin.inject({ method: 'PUT', url: '/admin/token', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { token: adminPutToken } })
  expect(put.statusCode).toBe(200)
  expect((await gw.admin.inject({ method: 'PUT', url: '/admin/token', headers: { authorization: `Bearer ${ADMIN_TOKEN}x` }, payload: { token: 'whatever-token-123' } })).statusCode).toBe(401)
  expect((await proxyCall('POST', '/api/v1/campaign/get', { 'x-api-key': KEYS.limited }, { userId: 103 })).statusCode).toBe(200)
  // Errors of every kind.
  expect((await proxyCall('GET', '/api/v1/campaign/get', { 'x-api-key': UNKNOWN_KEY })).statusCode).toBe(401)
  expect((await proxyCall('POST', '/api/v1/campaign/get', { 'x-api-key': KEYS.growth }, { userId: 201 })).statusCode).toBe(403)
  expect((await proxyCall('POST', '/api/v1/campaign/banner/create', { 'x-api-key': KEYS.growth }, { userId: 101 })).statusCode).toBe(403)
  expect((await proxyCall('POST', '/oauth/token', all, { grant_type: 'platform_dsp' })).statusCode).toBe(404)
  expect((await proxyCall('GET', '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-02-30&dateTo=2026-03-01', all)).statusCode).toBe(400)
  sandbox.setFailure({ kind: 'status', status: 500, times: 1 })
  expect((await proxyCall('POST', '/api/v1/campaign/get', all, { userId: 101 })).statusCode).toBe(502)
  hangGw = await buildGateway(config(`timeout: ${HANG_TIMEOUT_MS}ms, `))
  sandbox.setFailure({ kind: 'hang', times: 1 })
  expect((await hangGw.proxy.inject({ method: 'POST', url: '/api/v1/campaign/get', headers: { ...all, 'content-type': 'application/json' }, payload: '{"userId":101}' })).statusCode).toBe(504)
  // The limit's windows are minutes of the clock: 8 calls over at most two windows put 4
  // in one of them, past its 3.
  for (let i = 0; i < 7; i++) await proxyCall('POST', '/api/v1/campaign/get', { 'x-api-key': KEYS.limited }, { userId: 101 })
  expect(answered.slice(-7).map((a) => a.status)).toContain(429)
  // A refused token that cannot be replaced: the platform refuses the fresh one too (the
  // call, its probe, the retry with the new token and that token's probe all answer 401).
  sandbox.revokeAllTokens()
  sandbox.setFailure({ kind: 'status', status: 401, body: { message: 'Unauthenticated.' }, times: 4 })
  expect((await proxyCall('POST', '/api/v1/campaign/get', all, { userId: 101 })).statusCode).toBe(502)
  // Let the logger's stream drain.
  await new Promise((r) => setTimeout(r, 50))
}, 30_000)

describe('the log of a whole scenario', () => {
  it('ran against the platform with more than one platform token', () => {
    const bearer = new Set(sandbox.requests.map((r) => r.headers.authorization).filter((a): a is string => typeof a === 'string'))
    // The first login's token, the re-login's token, the admin's token.
    expect(bearer.size).toBeGreaterThanOrEqual(3)
    expect(bearer).toContain(`Bearer ${adminPutToken}`)
  })

  it('holds none of the platform tokens used', () => {
    const text = logText()
    const tokens = new Set(sandbox.requests.map((r) => String(r.headers.authorization ?? '').replace(/^Bearer /, '')).filter((t) => t.length > 0))
    tokens.add(adminPutToken)
    for (const token of tokens) {
      expect(text).not.toContain(token)
      // Nor a recognisable piece of one (a JWT's signature part).
      expect(text).not.toContain(token.split('.').at(-1) as string)
    }
    expect(text).not.toMatch(/eyJ[\w-]{10,}\.[\w-]{10,}/)
  })

  it('holds no team key, not even an unknown one', () => {
    const text = logText()
    for (const key of [...Object.values(KEYS), UNKNOWN_KEY]) expect(text).not.toContain(key)
    expect(text).not.toMatch(/rgw_[A-Za-z0-9_-]{8,}/)
  })

  it('holds neither the password, the client secret, nor the admin token', () => {
    const text = logText()
    expect(text).not.toContain(sandbox.credentials.password)
    expect(text).not.toContain(sandbox.credentials.clientSecret)
    expect(text).not.toContain(ADMIN_TOKEN)
  })

  it('holds no caller cookie and no platform session cookie', () => {
    const text = logText()
    expect(text).not.toContain(CALLER_COOKIE)
    expect(text).not.toContain('laravel_session=')
  })

  it('records the token changes as audit lines with fingerprints only', () => {
    const audit = gw.logs.records().filter((r) => r.kind === 'audit' && r.msg === 'platform token changed')
    expect(audit.map((r) => r.reason)).toEqual(expect.arrayContaining(['start', 'relogin', 'admin']))
    for (const line of audit) expect(line.newFingerprint).toMatch(/^[0-9a-f]{12}$/)
  })
})

describe('request lines', () => {
  it('has exactly one "request" line per proxy request, in order', () => {
    const lines = gw.logs.lines.filter((l) => l.includes('"msg":"request"'))
    expect(lines).toHaveLength(answered.length)
    const records = lines.map((l) => JSON.parse(l) as Record<string, unknown>)
    expect(records.map((r) => r.status)).toEqual(answered.map((a) => a.status))
    expect(records.map((r) => r.path)).toEqual(answered.map((a) => a.path))
  })

  it('names the team, the route, the status and the duration on each', () => {
    const records = gw.logs.records().filter((r) => r.msg === 'request')
    records.forEach((r, i) => {
      const call = answered[i] as (typeof answered)[number]
      // The team is known once the key is; 401 and 404 come before that.
      expect(r.team).toBe(call.status === 401 || call.path === '/oauth/token' ? null : call.team)
      expect(r.route).toBe(call.path.startsWith('/api/v1/report/') ? 'report' : call.path.startsWith('/api/v1/') ? 'proxy' : 'unmatched')
      expect(r.status).toBe(call.status)
      expect(typeof r.durationMs).toBe('number')
      expect(r.durationMs as number).toBeGreaterThanOrEqual(0)
      expect(r.reqId).toEqual(expect.any(String))
      expect(r.level).toBe(30)
    })
    expect(records.slice(0, 2).map((r) => r.cache)).toEqual(['MISS', 'HIT'])
  })

  it('takes at least the platform timeout for the 504', () => {
    const timeout = hangLogs().records().find((r) => r.msg === 'request' && r.status === 504)
    expect(timeout?.durationMs as number).toBeGreaterThanOrEqual(HANG_TIMEOUT_MS - 50)
  })
})
