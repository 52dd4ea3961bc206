import { describe, expect, it } from 'vitest'
import type { SandboxRequestRecord } from '../../src/sandbox/sandbox.js'
import { fakeClock, onRealTimers } from '../helpers/clock.js'
import { KEYS, PRYING_KEY, PRYING_TEAMS_YAML as YAML, sandboxLoginEnv, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { campaignList, checksDone, tokenOf } from '../helpers/gateway-calls.js'
import { leakedSecrets, runSecrets } from '../helpers/secret-scan.js'
import { CLOSED_PORT, redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// A 401 on one call never condemns the shared token by itself. A route
// behind another guard answers 401 to a valid token; before the gateway re-logs in, marks
// the token rejected or retries, its probe call (platform.probe) must confirm that the
// token itself is refused. An unconfirmed 401 is that call's answer only (502
// GW_PLATFORM_REFUSED). Logins run one at a time across replicas and at most once per
// platform.loginMinInterval unless the probe confirms a refusal.

const ADMIN_TOKEN = 'refusal-admin-token-0123456789abcdef'
const GATEWAY_SECRET = 'refusal-gateway-secret-0123456789'
/** A route behind another guard: it answers 401 whatever the token. */
const GUARDED = '/api/v1/report/creatives/get'
const REPORT = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-07'
const UNAUTHENTICATED = { kind: 'status', status: 401, body: { message: 'Unauthenticated.' } } as const

const isLogin = (r: SandboxRequestRecord) => r.path === '/oauth/token'
const isProbe = (r: SandboxRequestRecord) => String(r.headers['x-request-id']).startsWith('token-probe-')
const isGuarded = (r: SandboxRequestRecord) => r.path === GUARDED
const notConfirmedLines = (gw: TestGateway) => gw.logs.records().filter((r) => String(r.msg).startsWith('platform 401 not confirmed'))

const sandbox = useSandbox()
const gateways = useGateways()

async function gateway(env: Record<string, string>, yaml = YAML, now?: () => number): Promise<TestGateway> {
  const gw = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, ADMIN_TOKEN, ...env }, yaml), now ? { clock: onRealTimers(now) } : {})
  sandbox.clearRequests()
  return gw
}

/** Team A's call of the guarded route: a day of its own, so that no two calls coalesce. */
function pry(gw: TestGateway, day: number) {
  const d = `2026-01-${String(day).padStart(2, '0')}`
  return gw.proxy.inject({ method: 'GET', url: `${GUARDED}?advertiserId=101&dateFrom=${d}&dateTo=${d}`, headers: { 'x-api-key': PRYING_KEY } })
}

function report(gw: TestGateway, url = REPORT) {
  return gw.proxy.inject({ method: 'GET', url, headers: { 'x-api-key': KEYS.all } })
}

async function tokenView(gw: TestGateway) {
  return (await gw.admin.inject({ method: 'GET', url: '/admin/token', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json<{ usable: boolean }>()
}

async function metricsText(gw: TestGateway): Promise<string> {
  return (await gw.admin.inject({ method: 'GET', url: '/metrics' })).body
}

describe('a 401 the probe does not confirm is that call\'s answer only', () => {
  it.each([
    ['a password login', () => sandboxLoginEnv(sandbox)],
    ['a static token', () => ({ PLATFORM_TOKEN: sandbox.issueToken() })],
  ])('with %s: team A gets GW_PLATFORM_REFUSED, team B keeps its 200s, the token stays usable, no login', async (_name, env) => {
    const gw = await gateway(env())
    const before = tokenOf(gw)
    sandbox.setRouteFailure(GUARDED, UNAUTHENTICATED)

    const answers = []
    for (const day of [1, 2, 3, 4]) answers.push(await pry(gw, day))
    answers.push(...(await Promise.all([5, 6, 7, 8, 9, 10].map((day) => pry(gw, day)))))
    for (const res of answers) {
      expect(res.statusCode).toBe(502)
      expect(res.json()).toMatchObject({ code: 'GW_PLATFORM_REFUSED' })
    }

    // Team B is not touched: the token is the same, usable, and not degraded.
    expect((await report(gw)).statusCode).toBe(200)
    expect((await campaignList(gw)).statusCode).toBe(200)
    expect(tokenOf(gw)).toBe(before)
    expect(await tokenView(gw)).toMatchObject({ usable: true })
    expect((await gw.admin.inject({ method: 'GET', url: '/readyz' })).json()).toMatchObject({ status: 'ready', platformToken: { default: 'ok' }, degraded: [] })
    expect(sandbox.countRequests(isLogin)).toBe(0)
    // Each call went up once (no retry); the verdicts came from one or two probes, not ten.
    expect(sandbox.countRequests(isGuarded)).toBe(10)
    expect(sandbox.countRequests(isProbe)).toBeGreaterThanOrEqual(1)
    expect(sandbox.countRequests(isProbe)).toBeLessThanOrEqual(2)

    // One warn line for the ten calls, naming the credential, the path (no query) and the team.
    expect(notConfirmedLines(gw)).toEqual([expect.objectContaining({ level: 40, credential: 'default', path: GUARDED, team: 'prying', verdict: 'unconfirmed' })])
    expect(await metricsText(gw)).toMatch(/gateway_platform_unauthorized_total\{credential="default",verdict="unconfirmed"\} 10\n/)
  })

  it('answers the contract\'s error shape, never blames the caller\'s key, and leaks no token into logs or answers', async () => {
    const gw = await gateway(sandboxLoginEnv(sandbox))
    sandbox.setRouteFailure(GUARDED, UNAUTHENTICATED)
    const res = await pry(gw, 1)
    expect(res.statusCode).toBe(502)
    const body = res.json<Record<string, unknown>>()
    expect(Object.keys(body).sort()).toEqual(['code', 'error', 'message', 'statusCode'])
    expect(body).toMatchObject({ statusCode: 502, code: 'GW_PLATFORM_REFUSED', error: 'Bad Gateway' })
    expect(body.message).toMatch(/refused this call/)
    expect(body.message).not.toMatch(/key|GW_PLATFORM_AUTH/i)
    expect(res.headers['content-type']).toMatch(/^application\/json/)
    const secrets = runSecrets(sandbox, [ADMIN_TOKEN, tokenOf(gw) as string, PRYING_KEY])
    expect(leakedSecrets(gw.logs.text(), secrets)).toEqual([])
    expect(leakedSecrets(res.body, secrets)).toEqual([])
  })

  it('a write to a guarded route is refused alike: GW_PLATFORM_REFUSED, sent once, the token stays', async () => {
    const gw = await gateway(sandboxLoginEnv(sandbox))
    const before = tokenOf(gw)
    sandbox.setRouteFailure('/api/v1/campaign/banner/create', UNAUTHENTICATED)
    const res = await gw.proxy.inject({ method: 'POST', url: '/api/v1/campaign/banner/create', headers: { 'x-api-key': KEYS.writer }, payload: { userId: 101, name: 'x' } })
    expect(res.statusCode).toBe(502)
    expect(res.json()).toMatchObject({ code: 'GW_PLATFORM_REFUSED' })
    expect(sandbox.countRequests((r) => r.path === '/api/v1/campaign/banner/create')).toBe(1)
    expect(sandbox.countRequests(isLogin)).toBe(0)
    expect(tokenOf(gw)).toBe(before)
  })

  it('a probe that cannot reach the platform confirms nothing: GW_PLATFORM_REFUSED, the token stays', async () => {
    const gw = await gateway(sandboxLoginEnv(sandbox))
    const before = tokenOf(gw)
    sandbox.setRouteFailure(GUARDED, UNAUTHENTICATED)
    sandbox.setRouteFailure('/api/v1/campaign/get', { kind: 'reset' })
    const res = await pry(gw, 1)
    expect(res.json()).toMatchObject({ statusCode: 502, code: 'GW_PLATFORM_REFUSED' })
    expect(tokenOf(gw)).toBe(before)
    expect(await tokenView(gw)).toMatchObject({ usable: true })
    expect(sandbox.countRequests(isLogin)).toBe(0)
    expect(await metricsText(gw)).toMatch(/gateway_platform_unauthorized_total\{credential="default",verdict="probe_failed"\} 1\n/)
  })
})

describe('a token the probe confirms refused is still found', () => {
  it('password login: the probe confirms, one re-login, the read is retried and succeeds', async () => {
    const gw = await gateway(sandboxLoginEnv(sandbox))
    const old = tokenOf(gw) as string
    sandbox.revokeToken(old)
    const res = await report(gw)
    expect(res.statusCode).toBe(200)
    expect(sandbox.countRequests(isLogin)).toBe(1)
    expect(sandbox.requests.filter(isProbe).map((r) => r.headers.authorization)).toEqual([`Bearer ${old}`])
    expect(tokenOf(gw)).not.toBe(old)
    expect(await metricsText(gw)).toMatch(/gateway_platform_unauthorized_total\{credential="default",verdict="confirmed"\} 1\n/)
    expect(notConfirmedLines(gw)).toEqual([])
  })

  it('static token: the probe confirms, the credential becomes rejected: GW_PLATFORM_AUTH, degraded', async () => {
    const token = sandbox.issueToken()
    const gw = await gateway({ PLATFORM_TOKEN: token })
    sandbox.revokeAllTokens()
    const res = await campaignList(gw)
    expect(res.statusCode).toBe(502)
    expect(res.json()).toMatchObject({ code: 'GW_PLATFORM_AUTH' })
    expect(await tokenView(gw)).toMatchObject({ usable: false })
    expect((await gw.admin.inject({ method: 'GET', url: '/readyz' })).json()).toMatchObject({ platformToken: { default: 'rejected' } })
  })

  it('a revoked token behind a guarded route too: the guarded call does not hide the revocation', async () => {
    const gw = await gateway(sandboxLoginEnv(sandbox))
    sandbox.setRouteFailure(GUARDED, UNAUTHENTICATED)
    sandbox.revokeToken(tokenOf(gw) as string)
    // The probe confirms the token is refused: one login; the retry still meets the guard.
    const res = await pry(gw, 1)
    expect(res.json()).toMatchObject({ code: 'GW_PLATFORM_REFUSED' })
    expect(sandbox.countRequests(isLogin)).toBe(1)
    expect(await tokenView(gw)).toMatchObject({ usable: true })
    expect((await report(gw)).statusCode).toBe(200)
  })
})

describe('a 401 to a token replaced while the call was out', () => {
  it('sends the read again with the token in use, without a probe of the old one, even after that token\'s own 401 went unconfirmed', async () => {
    const old = sandbox.issueToken()
    const gw = await gateway({ PLATFORM_TOKEN: old })
    // The read waits at the platform's front, held until released, while the token changes under it.
    sandbox.setRouteFailure('/api/v1/report/campaigns/get', { kind: 'held', times: 1 })
    const read = report(gw)
    await waitFor('the read held at the platform', () => sandbox.concurrency().held === 1)
    const replacement = sandbox.issueToken()
    const put = await gw.admin.inject({ method: 'PUT', url: '/admin/token', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { token: replacement } })
    expect(put.statusCode).toBe(200)
    sandbox.revokeToken(old)
    // A guarded route's 401 with the new token: the probe finds the new token accepted.
    sandbox.setRouteFailure(GUARDED, UNAUTHENTICATED)
    expect((await pry(gw, 1)).json()).toMatchObject({ code: 'GW_PLATFORM_REFUSED' })
    sandbox.releaseHeld()
    const res = await read
    expect(res.statusCode).toBe(200)
    const probed = sandbox.requests.filter(isProbe).map((r) => r.headers.authorization)
    expect(probed).toContain(`Bearer ${replacement}`)
    expect(probed).not.toContain(`Bearer ${old}`)
    expect(tokenOf(gw)).toBe(replacement)
    expect(sandbox.countRequests(isLogin)).toBe(0)
  })
})

describe('no probe configured (platform.probe: null)', () => {
  const NO_PROBE = `${YAML}platform:\n  probe: null\n`

  it('a password login re-logs in at most once per loginMinInterval; the token is never condemned', async () => {
    const gw = await gateway(sandboxLoginEnv(sandbox), NO_PROBE)
    sandbox.setRouteFailure(GUARDED, UNAUTHENTICATED)
    const answers = []
    for (const day of [1, 2, 3]) answers.push(await pry(gw, day))
    answers.push(...(await Promise.all([4, 5, 6, 7, 8, 9, 10].map((day) => pry(gw, day)))))
    for (const res of answers) expect(res.json()).toMatchObject({ statusCode: 502, code: 'GW_PLATFORM_REFUSED' })
    expect(sandbox.countRequests(isLogin)).toBeLessThanOrEqual(1)
    expect(await tokenView(gw)).toMatchObject({ usable: true })
    expect((await report(gw)).statusCode).toBe(200)
  })

  it('a static token stays in use: a 401 is GW_PLATFORM_REFUSED, never GW_PLATFORM_AUTH', async () => {
    const gw = await gateway({ PLATFORM_TOKEN: sandbox.issueToken() }, NO_PROBE)
    sandbox.setRouteFailure(GUARDED, UNAUTHENTICATED)
    expect((await pry(gw, 1)).json()).toMatchObject({ code: 'GW_PLATFORM_REFUSED' })
    expect(await tokenView(gw)).toMatchObject({ usable: true })
    expect((await report(gw)).statusCode).toBe(200)
  })
})

const redisCheck = redisAvailability()
if (redisCheck.notice) console.warn(redisCheck.notice)

describe.skipIf(!redisCheck.available)('logins across replicas (Redis)', () => {
  const { server: redis } = useRedis()

  function replica(env: Record<string, string>, now?: () => number, yaml = YAML): Promise<TestGateway> {
    return gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, ADMIN_TOKEN, REDIS_URL: redis.url, ...sandboxLoginEnv(sandbox), ...env }, yaml), now ? { clock: onRealTimers(now) } : {})
  }

  it('three replicas sharing tokens meet a confirmed refusal at once: exactly one login in total, every read answered 200', async () => {
    const replicas = [await replica({ GATEWAY_SECRET }), await replica({ GATEWAY_SECRET }), await replica({ GATEWAY_SECRET })]
    // They hold the one shared token before it is revoked.
    await waitFor('the replicas on one token', () => new Set(replicas.map((gw) => tokenOf(gw))).size === 1)
    sandbox.clearRequests()
    sandbox.revokeToken(tokenOf(replicas[0] as TestGateway) as string)
    // Slow answers keep every call in flight with the old token at once.
    sandbox.setLatency(100)

    const answers = await Promise.all(replicas.flatMap((gw) => [101, 102, 103].map((id) => campaignList(gw, id))))
    expect(answers.map((r) => r.statusCode)).toEqual(Array(9).fill(200))
    expect(sandbox.countRequests(isLogin)).toBe(1)
    expect(new Set(replicas.map((gw) => tokenOf(gw))).size).toBe(1)
  })

  it('unconfirmed reasons (the scheduled re-login) log in at most once per loginMinInterval across replicas', async () => {
    const clock = fakeClock()
    // Every maintenance tick finds the token due for its scheduled re-login once a minute has passed.
    const yaml = `${YAML}platform:\n  maintenanceInterval: 50ms\n  refreshBefore: 400d\n  loginMinInterval: 30s\n`
    const a = await replica({ GATEWAY_SECRET }, clock.now, yaml)
    const b = await replica({ GATEWAY_SECRET }, clock.now, yaml)
    sandbox.clearRequests()
    clock.advance(61_000)
    // Many ticks on both replicas, counted: one login, the other replica's re-login waits for the interval.
    await waitFor('the scheduled login', () => sandbox.countRequests(isLogin) >= 1)
    await checksDone([a, b], 3)
    expect(sandbox.countRequests(isLogin)).toBe(1)
    // The replicas share the new token: its next scheduled re-login is again one login.
    clock.advance(61_000)
    await waitFor('the second scheduled login', () => sandbox.countRequests(isLogin) >= 2)
    await checksDone([a, b], 3)
    expect(sandbox.countRequests(isLogin)).toBe(2)
    for (const gw of [a, b]) expect(await tokenView(gw)).toMatchObject({ usable: true })
  })

  it('Redis down: a confirmed refusal still gets its one login on this replica, and nothing is left unhandled', async () => {
    const gw = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, ADMIN_TOKEN, REDIS_URL: `redis://127.0.0.1:${CLOSED_PORT}`, ...sandboxLoginEnv(sandbox) }, YAML))
    sandbox.clearRequests()
    sandbox.revokeToken(tokenOf(gw) as string)
    sandbox.setLatency(50)
    const answers = await Promise.all([101, 102, 103].map((id) => campaignList(gw, id)))
    expect(answers.map((r) => r.statusCode)).toEqual([200, 200, 200])
    expect(sandbox.countRequests(isLogin)).toBe(1)
    // Unconfirmed 401s without Redis: no login at all.
    sandbox.setRouteFailure(GUARDED, UNAUTHENTICATED)
    expect((await pry(gw, 1)).json()).toMatchObject({ code: 'GW_PLATFORM_REFUSED' })
    expect(sandbox.countRequests(isLogin)).toBe(1)
  })
})

// The login's throttle (a 429 with retry-after) holds every login of the credential back
// until its retry-after, the scheduled re-login of a token still held among them: its
// loginMinInterval is shorter than the platform's retry-after.
describe('a password login the platform answered 429', () => {
  it('neither the scheduled re-login nor a confirmed refusal\'s is sent again before the 429\'s retry-after, though loginMinInterval has passed', async () => {
    const clock = fakeClock()
    const yaml = `${YAML}platform:\n  maintenanceInterval: 50ms\n  refreshBefore: 400d\n  loginMinInterval: 30s\n  maxPause: 60s\n`
    const gw = await gateway(sandboxLoginEnv(sandbox), yaml, clock.now)
    sandbox.setRouteFailure('/oauth/token', { kind: 'status', status: 429, headers: { 'retry-after': '60' } })
    clock.advance(61_000)
    await waitFor('the scheduled re-login answered 429', () => gw.tokens.get('default')?.loginFault?.kind === 'busy')
    expect(sandbox.countRequests(isLogin)).toBe(1)
    // Past loginMinInterval, within the retry-after: ticks run, no login is sent.
    clock.advance(31_000)
    await checksDone([gw], 3)
    expect(sandbox.countRequests(isLogin)).toBe(1)
    // A token the probe confirms refused meanwhile gets no re-login either: the read is told
    // when the retry-after ends (121 s after the start, 92 s now).
    sandbox.revokeToken(tokenOf(gw) as string)
    const refused = await report(gw)
    expect([refused.statusCode, refused.headers['retry-after'], refused.json<{ code: string }>().code]).toEqual([502, '29', 'GW_PLATFORM_AUTH'])
    expect(sandbox.countRequests(isLogin)).toBe(1)
    // Once the retry-after has passed, the next tick logs in again.
    sandbox.clearRouteFailures()
    clock.advance(30_000)
    await waitFor('the re-login after the retry-after', () => sandbox.countRequests(isLogin) === 2)
    // The platform's answer to it is taken after the sandbox counted the login: waited for, not assumed.
    await waitFor('the re-login\'s token in use', async () => (await tokenView(gw)).usable)
    expect(sandbox.countRequests(isLogin)).toBe(2)
  })

  // The read's retry-after says when to come back: the login is sent once the platform's
  // retry-after ends, not at the next maintenance tick (an hour here), so the read told
  // "1" finds a token when it comes back.
  it('a confirmed refusal during the 429\'s retry-after is logged in again once it ends, not at the next maintenance tick', async () => {
    const yaml = `${YAML}platform:\n  maintenanceInterval: 1h\n  refreshBefore: 400d\n  maxPause: 60s\n`
    const gw = await gateway(sandboxLoginEnv(sandbox), yaml)
    sandbox.setRouteFailure('/oauth/token', { kind: 'status', status: 429, headers: { 'retry-after': '1' } })
    sandbox.revokeToken(tokenOf(gw) as string)
    const refused = await report(gw)
    expect([refused.statusCode, refused.headers['retry-after'], refused.json<{ code: string }>().code]).toEqual([502, '1', 'GW_PLATFORM_AUTH'])
    expect(sandbox.countRequests(isLogin)).toBe(1)
    sandbox.clearRouteFailures()
    await waitFor('the re-login once the retry-after ended', () => sandbox.countRequests(isLogin) === 2)
    await waitFor('the re-login\'s token in use', async () => (await tokenView(gw)).usable)
    expect((await report(gw)).statusCode).toBe(200)
  })
})
