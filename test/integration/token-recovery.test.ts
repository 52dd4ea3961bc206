import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import type { SandboxRequestRecord } from '../../src/sandbox/sandbox.js'
import { fingerprint } from '../../src/observe/fingerprint.js'
import { fakeClock, onRealTimers } from '../helpers/clock.js'
import { KEYS, TEAMS_YAML, sandboxLoginEnv, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useCleanups, useGateways, useSandbox } from '../helpers/fixtures.js'
import { bearerOf, campaignList, checksDone, expectNoSecrets } from '../helpers/gateway-calls.js'
import { newCampaign } from '../helpers/sandbox-gateway.js'
import { waitFor } from '../helpers/wait.js'

// Recovery: when the platform answers 401 and the probe call confirms that the
// token is refused (token-refusal.test.ts has the 401s it does not confirm), a
// password-login credential logs in again once (shared by every caller that saw the 401)
// and retries reads; a write is never retried; a static or file token makes the
// credential unusable (502 GW_PLATFORM_AUTH, listed as degraded in /readyz, a loud log
// line) until a new token arrives. Readiness stays 200: cached reports are
// still served.

const ADMIN_TOKEN = 'recovery-admin-token-0123456789abcdef'
const REPORT = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-07'
// The writer's creative sets pass unchecked: its write is then the one call a create makes.
const YAML = `ownership:\n  creativeSets: { check: pass }\n${TEAMS_YAML}`
const FAST_TICKS = `${YAML}\nplatform:\n  maintenanceInterval: 50ms\n`

const sandbox = useSandbox()
const cleanups = useCleanups()
const gateways = useGateways()

const loginEnv = () => sandboxLoginEnv(sandbox)

async function gateway(env: Record<string, string>, yaml = YAML): Promise<TestGateway> {
  const gw = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, ADMIN_TOKEN, ...env }, yaml))
  sandbox.clearRequests()
  return gw
}

const isTokenRequest = (r: SandboxRequestRecord) => r.path === '/oauth/token'
const isProbe = (r: SandboxRequestRecord) => String(r.headers['x-request-id']).startsWith('token-probe-')
/** The gateway's calls of a path for its callers, not its probe calls (POST /api/v1/campaign/get too). */
const onPath = (path: string) => (r: SandboxRequestRecord) => r.path === path && !isProbe(r)

function tokenOf(gw: TestGateway): string {
  const token = gw.tokens.get('default').current()?.token
  if (!token) throw new Error('the gateway holds no token')
  return token
}

function report(gw: TestGateway, url = REPORT) {
  return gw.proxy.inject({ method: 'GET', url, headers: { 'x-api-key': KEYS.all } })
}

function createCampaign(gw: TestGateway) {
  return gw.proxy.inject({
    method: 'POST',
    url: '/api/v1/campaign/banner/create',
    headers: { 'x-api-key': KEYS.writer },
    payload: newCampaign(101, { name: 'Recovery test' }),
  })
}

/** The answer to a call the credential could not make: 502 GW_PLATFORM_AUTH (and `body`'s fields). */
// What a caller of a credential the platform refuses can do: nothing but wait for the operators, who are told (/readyz).
const OPERATORS_ACT = "the gateway's operators must give it a token the platform accepts (its /readyz names the credential under degraded): retry once they have"

function expectAuthRefused(res: { statusCode: number; json: () => unknown }, body: Record<string, unknown> = {}): void {
  expect(res.statusCode).toBe(502)
  expect(res.json()).toMatchObject({ ...body, code: 'GW_PLATFORM_AUTH' })
}

// The admin listener's: the proxy listener's readiness names no credential (health.ts).
function ready(gw: TestGateway) {
  return gw.admin.inject({ method: 'GET', url: '/readyz' })
}

function loudLines(gw: TestGateway): Record<string, unknown>[] {
  return gw.logs.records().filter((r) => String(r.msg).startsWith('PLATFORM TOKEN REJECTED'))
}

describe('password login: 401 → one re-login → one retry', () => {
  /** A gateway on a password login whose token (`old`) the platform has just revoked. */
  async function gatewayWithRevokedToken() {
    const gw = await gateway(loginEnv())
    const old = tokenOf(gw)
    sandbox.revokeToken(old)
    return { gw, old }
  }

  it('a report read: the caller sees 200, the retry carries the new token', async () => {
    const { gw, old } = await gatewayWithRevokedToken()

    const res = await report(gw)
    expect(res.statusCode).toBe(200)
    expect(res.headers['x-cache']).toBe('MISS')
    const calls = sandbox.requests.filter(onPath('/api/v1/report/campaigns/get'))
    expect(calls.map(bearerOf)).toEqual([old, tokenOf(gw)])
    expect(sandbox.countRequests(isTokenRequest)).toBe(1)
    expect(tokenOf(gw)).not.toBe(old)
    const audit = gw.logs.records().filter((r) => r.kind === 'audit' && r.reason === 'relogin')
    expect(audit).toHaveLength(1)
    expect(audit[0]).toMatchObject({ credential: 'default', oldFingerprint: fingerprint(old, null), newFingerprint: fingerprint(tokenOf(gw), null) })
    expectNoSecrets([res.headers['x-request-id'] as string, gw.logs.text()], [old, tokenOf(gw), sandbox.credentials.password, sandbox.credentials.clientSecret])
  })

  it('a proxied read (POST .../get): the caller sees 200 with the platform body, the retry carries the new token', async () => {
    const { gw, old } = await gatewayWithRevokedToken()

    const res = await campaignList(gw)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toHaveProperty('data')
    const calls = sandbox.requests.filter(onPath('/api/v1/campaign/get'))
    expect(calls.map(bearerOf)).toEqual([old, tokenOf(gw)])
    // The retry sends the caller's body again, byte for byte.
    expect(calls.map((c) => c.body)).toEqual([JSON.stringify({ userId: 101 }), JSON.stringify({ userId: 101 })])
    // In between, one probe call with the refused token confirmed the refusal.
    expect(sandbox.requests.filter(isProbe).map(bearerOf)).toEqual([old])
    expect(sandbox.countRequests(isTokenRequest)).toBe(1)
  })

  it('a write is not retried: 502 GW_PLATFORM_AUTH, one call upstream; the next call uses the new token', async () => {
    const { gw, old } = await gatewayWithRevokedToken()

    const res = await createCampaign(gw)
    // The write was not carried out (its 401), and a new token is in: the caller may send it again.
    expectAuthRefused(res, { statusCode: 502, message: 'the platform refused the gateway token: the write was not carried out, nor sent again; the gateway holds a new token now: send it again' })
    expect(sandbox.countRequests(onPath('/api/v1/campaign/banner/create'))).toBe(1)
    // The 401 still renewed the token for later calls.
    expect(sandbox.countRequests(isTokenRequest)).toBe(1)
    expect(tokenOf(gw)).not.toBe(old)
    const next = await createCampaign(gw)
    expect(next.statusCode).toBe(201)
    expect(bearerOf(sandbox.requests.at(-1))).toBe(tokenOf(gw))
    expectNoSecrets([res.body, next.body], [old, tokenOf(gw)])
  })

  it('concurrent 401s trigger exactly one token request, and every caller gets 200', async () => {
    const gw = await gateway(loginEnv())
    sandbox.revokeToken(tokenOf(gw))
    // Slow answers make sure every call is in flight with the old token at once.
    sandbox.setLatency(100)

    const results = await Promise.all([
      ...[101, 102, 103, 101, 102, 103].map((id) => campaignList(gw, id)),
      ...[1, 2, 3, 4].map((d) => report(gw, `/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-01-0${d}&dateTo=2026-01-0${d}`)),
    ])
    expect(results.map((r) => r.statusCode)).toEqual(Array(10).fill(200))
    expect(sandbox.countRequests(isTokenRequest)).toBe(1)
    // One probe call for them all.
    expect(sandbox.countRequests(isProbe)).toBe(1)
    // Each call went up twice at most: once refused, once retried.
    expect(sandbox.countRequests(onPath('/api/v1/campaign/get'))).toBe(12)
    expect(sandbox.countRequests(onPath('/api/v1/report/campaigns/get'))).toBe(8)
  })

  it('a fresh token that is refused too ends in 502 GW_PLATFORM_AUTH after one retry, without a loop', async () => {
    // The token endpoint hands out tokens the platform does not accept.
    const server = createServer((req, res) => {
      req.resume()
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ access_token: `unknown-to-the-platform-${Math.random().toString(36).slice(2)}`, expires_in: 3600 }))
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    cleanups.push(() => new Promise((resolve) => server.close(() => resolve())))
    const gw = await gateway({ ...loginEnv(), PLATFORM_TOKEN_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/oauth/token` })

    const res = await campaignList(gw)
    expectAuthRefused(res, { message: `the platform refused the gateway token: a token obtained just now was refused too; ${OPERATORS_ACT}` })
    expect(sandbox.countRequests(onPath('/api/v1/campaign/get'))).toBe(2)
    const rep = await report(gw)
    expectAuthRefused(rep, { message: `the platform refused the gateway token: credential default has no usable token; ${OPERATORS_ACT}` })
    expect(sandbox.countRequests(onPath('/api/v1/report/campaigns/get'))).toBeLessThanOrEqual(2)
  })

  it('when the re-login fails, the credential is unusable until a later login succeeds on its own', async () => {
    let failing = false
    const server = createServer((req, res) => {
      req.resume()
      req.on('end', () => {
        if (failing) {
          res.writeHead(400, { 'content-type': 'application/json' })
          res.end(JSON.stringify({ error: 'invalid_grant', message: 'The user credentials were incorrect.' }))
          return
        }
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ token_type: 'Bearer', access_token: sandbox.issueToken(), expires_in: 31_536_000 }))
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    cleanups.push(() => new Promise((resolve) => server.close(() => resolve())))
    const tokenUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/oauth/token`
    const gw = await gateway({ ...loginEnv(), PLATFORM_TOKEN_URL: tokenUrl }, FAST_TICKS)
    expect((await campaignList(gw)).statusCode).toBe(200)

    failing = true
    sandbox.revokeToken(tokenOf(gw))
    const refused = await campaignList(gw)
    expectAuthRefused(refused)
    expect((await ready(gw)).statusCode).toBe(200)
    expect((await ready(gw)).json()).toMatchObject({ degraded: ['platformToken:default'] })
    expect(loudLines(gw).length).toBeGreaterThan(0)

    failing = false
    await waitFor('the login retried', () => gw.tokens.get('default').usable())
    expect((await ready(gw)).statusCode).toBe(200)
    expect((await campaignList(gw)).statusCode).toBe(200)
  })
})

describe('static or file token: 401 makes the credential unusable until a new token arrives', () => {
  it('502 GW_PLATFORM_AUTH for reads, reports and writes, degraded in /readyz (still 200), a repeated loud log line; PUT /admin/token recovers', async () => {
    const token = sandbox.issueToken()
    const gw = await gateway({ PLATFORM_TOKEN: token }, FAST_TICKS)
    expect((await ready(gw)).statusCode).toBe(200)
    sandbox.revokeToken(token)

    const read = await campaignList(gw)
    expectAuthRefused(read, { statusCode: 502, message: `the platform refused the gateway token: no new token could be had; ${OPERATORS_ACT}` })
    expect(sandbox.countRequests(onPath('/api/v1/campaign/get'))).toBe(1)
    expect(sandbox.countRequests(isTokenRequest)).toBe(0)

    const readiness = await ready(gw)
    expect(readiness.statusCode).toBe(200)
    expect(readiness.json()).toMatchObject({ status: 'ready', platformToken: { default: 'rejected' }, degraded: ['platformToken:default'] })
    expect((await gw.admin.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200)
    const metrics = await gw.admin.inject({ method: 'GET', url: '/metrics' })
    expect(metrics.body).toMatch(/gateway_platform_token_usable\{credential="default"\} 0/)

    // Refused before going upstream: the platform is not hammered with a known-bad token.
    const rep = await report(gw)
    expectAuthRefused(rep, { message: `the platform refused the gateway token: credential default has no usable token; ${OPERATORS_ACT}` })
    const write = await createCampaign(gw)
    expect(write.statusCode).toBe(502)
    // The read and the one probe call that confirmed its 401.
    expect(sandbox.countRequests((r) => r.path.startsWith('/api/v1/'))).toBe(2)
    expect(sandbox.countRequests(isProbe)).toBe(1)

    // Loud: an error line at once, repeated on every maintenance tick.
    const first = loudLines(gw)
    expect(first.length).toBeGreaterThan(0)
    expect(first[0]).toMatchObject({ level: 50, credential: 'default', fingerprint: fingerprint(token, null) })
    await waitFor('the error line repeated on the maintenance ticks', () => loudLines(gw).length >= 3)

    const next = sandbox.issueToken()
    const put = await gw.admin.inject({ method: 'PUT', url: '/admin/token', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { token: next } })
    expect(put.statusCode).toBe(200)
    expect((await ready(gw)).statusCode).toBe(200)
    expect((await campaignList(gw)).statusCode).toBe(200)
    expect(bearerOf(sandbox.requests.at(-1))).toBe(next)
    // Quiet again once a usable token is in.
    const count = loudLines(gw).length
    await checksDone([gw], 3)
    expect(loudLines(gw).length).toBe(count)
    expectNoSecrets([read.body, rep.body, write.body, readiness.body, put.body, gw.logs.text()], [token, next, ADMIN_TOKEN])
  })

  it('a 401 to an older token after the token changed does not mark the new one refused', async () => {
    const token = sandbox.issueToken()
    const gw = await gateway({ PLATFORM_TOKEN: token })
    const provider = gw.tokens.get('default')
    const next = sandbox.issueToken()
    provider.replace(next)
    expect(await provider.recover(token, true)).toMatchObject({ token: next })
    expect(provider.usable()).toBe(true)
    expect((await ready(gw)).statusCode).toBe(200)
  })
})

describe('a refused token degrades, it does not empty the Service', () => {
  it('a garbage static token is probed at start: degraded at once, loud, usable 0, and still ready', async () => {
    const gw = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, ADMIN_TOKEN, PLATFORM_TOKEN: 'garbage-token-the-platform-never-issued' }, YAML))
    const readiness = await ready(gw)
    expect(readiness.statusCode).toBe(200)
    expect(readiness.json()).toEqual({ status: 'ready', platformToken: { default: 'rejected' }, redis: 'not configured', degraded: ['platformToken:default'] })
    expect(loudLines(gw)).toHaveLength(1)
    const metrics = await gw.admin.inject({ method: 'GET', url: '/metrics' })
    expect(metrics.body).toMatch(/gateway_platform_token_usable\{credential="default"\} 0/)
    // One probe call at start, with the configured probe (platform.probe).
    expect(sandbox.requests.filter((r) => r.path.startsWith('/api/v1/')).map((r) => `${r.method} ${r.path}`)).toEqual(['POST /api/v1/campaign/get'])
  })

  it('cached reports are served while the token is refused (HIT, then STALE within staleIfError); only platform calls fail', async () => {
    const clock = fakeClock()
    const token = sandbox.issueToken()
    const gw = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, ADMIN_TOKEN, PLATFORM_TOKEN: token }, YAML), { clock: onRealTimers(clock.now) })
    const filled = await report(gw)
    expect(filled.headers['x-cache']).toBe('MISS')
    sandbox.revokeToken(token)
    // The refusal is found by a platform call: the credential is now unusable.
    expect((await campaignList(gw)).json()).toMatchObject({ code: 'GW_PLATFORM_AUTH' })
    expect(gw.tokens.get('default').usable()).toBe(false)

    const hit = await report(gw)
    expect(hit.statusCode).toBe(200)
    expect(hit.headers['x-cache']).toBe('HIT')
    expect(hit.body).toBe(filled.body)
    // Past freshness and stale-while-revalidate, within staleIfError (24 h after freshness).
    clock.advance(25 * 3600_000)
    const stale = await report(gw)
    expect(stale.statusCode).toBe(200)
    expect(stale.headers['x-cache']).toBe('STALE')
    expect(stale.body).toBe(filled.body)
    // A report never cached needs the platform: 502 GW_PLATFORM_AUTH.
    const miss = await report(gw, '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-02-01&dateTo=2026-02-07')
    expectAuthRefused(miss)
    expect((await ready(gw)).statusCode).toBe(200)
  })
})
