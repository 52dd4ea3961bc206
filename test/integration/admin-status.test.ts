import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config.js'
import { demoConfig } from '../../src/demo.js'
import type { Clock } from '../../src/clock.js'
import { CLOSED_PORT } from '../helpers/start-redis.js'
import { KEYS, TEAMS_YAML, sandboxLoginEnv, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { onRealTimers } from '../helpers/clock.js'
import { useGateways, useSandbox } from '../helpers/fixtures.js'
import { leakedSecrets, runSecrets } from '../helpers/secret-scan.js'
import { waitFor } from '../helpers/wait.js'

// The read-only admin calls the operations console reads, and the console's
// own files. Redis is configured on a port nothing listens on, with a password in the URL.

const ADMIN_TOKEN = 'admin-status-admin-token-0123456789'
const REDIS_PASSWORD = 'redis-password-never-shown-42'
const REPORT = '/api/v1/report/campaigns/get?advertiserId=101&byDate=1&dateFrom=2026-01-01&dateTo=2026-01-07'

const sandbox = useSandbox()
const gateways = useGateways()

/** A gateway on the sandbox, Redis configured where nothing listens (`redis`, a password in its URL) or not at all, on `clock` (default the system's). */
async function gateway({ redis = true, clock }: { redis?: boolean; clock?: Clock } = {}): Promise<{ gw: TestGateway; port: number }> {
  const port = CLOSED_PORT
  const env = { PLATFORM_BASE_URL: sandbox.url, ADMIN_TOKEN, ...(redis ? { REDIS_URL: `redis://ops:${REDIS_PASSWORD}@127.0.0.1:${port}` } : {}), ...sandboxLoginEnv(sandbox) }
  return { gw: await gateways.build(testConfig(env), clock ? { clock } : {}), port }
}

const get = (gw: TestGateway, url: string, token: string | null = ADMIN_TOKEN) =>
  gw.admin.inject({ method: 'GET', url, headers: token === null ? {} : { authorization: `Bearer ${token}` } })

describe('GET /admin/status and /admin/audit', () => {
  it('need the admin token, and no admin answer is cached or framed', async () => {
    const { gw } = await gateway()
    for (const url of ['/admin/status', '/admin/audit']) {
      const refused = await get(gw, url, null)
      expect(refused.statusCode).toBe(401)
      expect(refused.headers['cache-control']).toBe('no-store')
      const ok = await get(gw, url)
      expect(ok.statusCode).toBe(200)
      expect(ok.headers['cache-control']).toBe('no-store')
      expect(ok.headers['x-frame-options']).toBe('DENY')
    }
    expect((await get(gw, '/admin/usage')).headers['cache-control']).toBe('no-store')
  })

  it('no call under /admin/ answers without the admin token or without the admin headers, an unknown one included', async () => {
    const { gw } = await gateway({ redis: false })
    const tries = [
      { method: 'GET', url: '/admin/nope' },
      { method: 'GET', url: '/admin/status/' },
      { method: 'POST', url: '/admin/status' },
      { method: 'DELETE', url: '/admin/whoami' },
      { method: 'GET', url: '/admin/' },
    ] as const
    for (const { method, url } of tries) {
      const refused = await gw.admin.inject({ method, url })
      const known = await gw.admin.inject({ method, url, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
      const seen = (res: typeof refused) => [res.statusCode, res.json().code, res.headers['cache-control'], res.headers['x-frame-options'], res.headers['x-content-type-options']]
      expect([method, url, ...seen(refused)]).toEqual([method, url, 401, 'GW_UNAUTHORIZED', 'no-store', 'DENY', 'nosniff'])
      expect([method, url, ...seen(known)]).toEqual([method, url, 404, 'GW_NOT_FOUND', 'no-store', 'DENY', 'nosniff'])
    }
  })

  it('answers a path no admin call serves 404 whatever body it carries, as without one (a form, no body under a form\'s type, text)', async () => {
    const { gw } = await gateway({ redis: false })
    const auth = { authorization: `Bearer ${ADMIN_TOKEN}` }
    const tries = [
      { method: 'DELETE', url: '/admin/status', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: '' },
      { method: 'POST', url: '/admin/nothing', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'a=1' },
      { method: 'POST', url: '/admin/cache', headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': '0' } },
      { method: 'PUT', url: '/admin/nope', headers: { 'content-type': 'text/plain' }, payload: 'hello' },
      { method: 'PATCH', url: '/admin/status', headers: { 'content-type': 'application/json' }, payload: '{not json' },
    ] as const
    for (const { method, url, headers, ...body } of tries) {
      const res = await gw.admin.inject({ method, url, headers: { ...auth, ...headers }, ...body })
      expect([method, url, res.statusCode, res.json().code, res.headers['x-frame-options']]).toEqual([method, url, 404, 'GW_NOT_FOUND', 'DENY'])
    }
  })

  it('shows a pause\'s route without anything shaped like a team key in it, as a log line writes it', async () => {
    const { gw } = await gateway({ redis: false })
    const path = '/api/v1/campaign/e429-rgw_looks_like_a_key_of_no_team_000000/x'
    sandbox.setRouteFailure(path, { kind: 'status', status: 429, headers: { 'retry-after': '30' }, body: { message: 'slow down' }, times: 1 })
    const res = await gw.proxy.inject({ method: 'GET', url: path, headers: { 'x-api-key': KEYS.all } })
    expect(res.statusCode).toBe(429)
    const [governor] = (await get(gw, '/admin/status')).json<{ governors: { pauses: { route: string | null }[] }[] }>().governors
    expect(governor?.pauses.map((p) => p.route)).toContain('/api/v1/campaign/e429-[REDACTED]/x')
  })

  it('shows the credential, Redis without its password, the cache, the teams and the governor; never a secret', async () => {
    // Team limited's window is the clock's minute: this gateway's clock stands still (on real timers), so that its call
    // and the status read after it fall in one window however long a loaded machine takes between them.
    const still = Date.now()
    const { gw, port } = await gateway({ clock: onRealTimers(() => still) })
    const key = gw.tokens.get('default').current()
    expect((await gw.proxy.inject({ method: 'GET', url: REPORT, headers: { 'x-api-key': KEYS.all } })).headers['x-cache']).toBe('MISS')
    expect((await gw.proxy.inject({ method: 'GET', url: REPORT, headers: { 'x-api-key': KEYS.limited } })).headers['x-cache']).toBe('HIT')

    const res = await get(gw, '/admin/status')
    const status = res.json()
    expect(status.credentials).toEqual([
      expect.objectContaining({ name: 'default', state: 'ok', source: 'login', fingerprint: key?.fingerprint, login: true, pause: null }),
    ])
    expect(status.credentials[0].secondsLeft).toBeGreaterThan(0)
    expect(status.redis).toEqual({ state: 'down', address: `127.0.0.1:${port}`, topology: 'single' })
    expect(status.cache.lookups).toMatchObject({ MISS: 1, HIT: 1 })
    expect(status.cache.l1.entries).toBe(1)
    expect(status.cache.l1.bytes).toBeGreaterThan(0)
    expect(status.teams.map((t: { name: string }) => t.name)).toEqual(['all', 'growth', 'writer', 'limited'])
    const limited = status.teams.find((t: { name: string }) => t.name === 'limited')
    expect(limited.rateLimit).toMatchObject({ max: 3, windowSec: 60, remaining: 2 })
    expect(limited.keys).toEqual([{ id: expect.any(String), expiresAt: null }])
    // The limit rule starts at platform.initialConcurrent (8), doubling while calls wait and no queue shows.
    expect(status.governors).toEqual([
      expect.objectContaining({ credential: 'default', adaptive: true, limit: 8, knee: 8, phase: 'start', learner: true, maxConcurrent: 64, queueLimit: 200, inFlight: 0, queued: 0, seatsHeld: 0, permitsHeld: 0, pausedUntil: null, pauses: [], refusals: {}, count: expect.objectContaining({ enforced: false, windowSeconds: 60 }) }),
    ])
    // No ceiling of its own; no share while it is not active (it asked nothing).
    expect(status.governors[0].teams).toContainEqual({ team: 'growth', inFlight: 0, waiting: 0, share: 0, maxConcurrent: null, queue: null, seatSeconds: 0, counted: 0, countedElsewhere: 0, countShare: 0 })
    expect(status.governors[0].teams).toContainEqual(expect.objectContaining({ team: 'all', inFlight: 0, share: expect.any(Number) }))
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
    expect(status.build).toEqual({ version, commit: expect.stringMatching(/^([0-9a-f]{7,40}|unknown)$/), node: process.version, startedAt: expect.any(String), uptimeSeconds: expect.any(Number) })
    const metrics = (await gw.admin.inject({ method: 'GET', url: '/metrics' })).body
    expect(metrics).toContain(`gateway_build_info{version="${version}",commit="${status.build.commit}",node="${process.version}"} 1`)
    expect(leakedSecrets(res.body, runSecrets(sandbox, [REDIS_PASSWORD, ADMIN_TOKEN, key?.token as string]))).toEqual([])

    // A team with a call at the platform is asking: the status shows its share of the seats
    // whatever the clock (the linger alone is a time, and a loaded machine can pass it).
    sandbox.clearRequests()
    sandbox.setFailure({ kind: 'held', times: 1 })
    const held = gw.proxy.inject({ method: 'GET', url: REPORT.replace('2026-01-07', '2026-01-06'), headers: { 'x-api-key': KEYS.all } })
    await waitFor('the call of team all at the platform', () => sandbox.countRequests() >= 1)
    const all = (await get(gw, '/admin/status')).json().governors[0].teams.find((t: { team: string }) => t.team === 'all')
    sandbox.releaseHeld()
    expect((await held).statusCode).toBe(200)
    expect(all).toMatchObject({ inFlight: 1 })
    expect(all.share).toBeGreaterThan(0)
  })

  it('says whether the teams can be reloaded, from which files, or why not (the console offers the reload only then)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rgw-admin-status-'))
    try {
      writeFileSync(join(dir, 'teams.yaml'), TEAMS_YAML)
      const env = { PLATFORM_BASE_URL: sandbox.url, ADMIN_TOKEN, TEAMS_FILE: join(dir, 'teams.yaml'), ...sandboxLoginEnv(sandbox) }
      const fromFile = await gateways.build(loadConfig({ env }), { configSource: { env } })
      expect((await get(fromFile, '/admin/status')).json().teamsReload).toEqual({ available: true, files: ['TEAMS_FILE'], reason: null, refused: null })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
    // No file to read again: the answer says why, as POST /admin/reload's 409 does.
    const noFile = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, ADMIN_TOKEN, ...sandboxLoginEnv(sandbox) }), { configSource: { env: {} } })
    const none = (await get(noFile, '/admin/status')).json().teamsReload
    expect(none).toEqual({ available: false, files: [], reason: 'the teams come from no file (neither CONFIG_FILE nor TEAMS_FILE is set)', refused: null })
    const refused = await noFile.admin.inject({ method: 'POST', url: '/admin/reload', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect([refused.statusCode, refused.json().message]).toEqual([409, `teams cannot be reloaded: ${none.reason as string}`])
    const demo = await gateways.build(demoConfig(testConfig({ PLATFORM_BASE_URL: sandbox.url, ADMIN_TOKEN, ...sandboxLoginEnv(sandbox) }), sandbox).config)
    expect((await get(demo, '/admin/status')).json().teamsReload).toEqual({ available: false, files: [], reason: 'the teams come from no file (demo mode)', refused: null })
  })

  it('writes one audit line for a console login with a wrong token, not one per call it makes', async () => {
    const { gw } = await gateway({ redis: false })
    for (const path of ['/admin/status', '/admin/usage', '/admin/audit']) expect((await get(gw, path, 'a-wrong-admin-token-000000')).statusCode).toBe(401)
    const refused = gw.logs.records().filter((r) => r.kind === 'audit' && r.action === 'admin-auth')
    expect(refused).toEqual([expect.objectContaining({ outcome: 'refused', path: '/admin/status', reason: 'unknown token' })])
  })

  it('lists this replica\'s audit lines, newest first', async () => {
    const { gw } = await gateway({ redis: false })
    await get(gw, '/admin/status', 'a-wrong-admin-token-000000')
    const purged = await gw.admin.inject({ method: 'DELETE', url: '/admin/cache?advertiserId=101', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(purged.statusCode).toBe(200)
    const { lines } = (await get(gw, '/admin/audit')).json()
    expect(lines[0]).toMatchObject({ kind: 'audit', action: 'purge', scope: 'advertiser', advertiserId: 101, actor: 'admin' })
    expect(lines[1]).toMatchObject({ kind: 'audit', action: 'admin-auth', outcome: 'refused', reason: 'unknown token' })
  })
})

describe('GET /console', () => {
  it('serves the page, its style, its scripts and the chart library with a strict policy; nothing else of the disk', async () => {
    const { gw } = await gateway()
    const page = await get(gw, '/console', null)
    expect(page.statusCode).toBe(200)
    expect(page.headers['content-type']).toMatch(/^text\/html/)
    expect(page.headers['content-security-policy']).toMatch(/default-src 'self'.*connect-src 'self'.*frame-ancestors 'none'/)
    expect(page.headers['x-frame-options']).toBe('DENY')
    expect(page.body).not.toMatch(/<script>|<script [^>]*>[^<]/)
    expect(page.body).not.toMatch(/https?:\/\//)
    expect((await get(gw, '/console/console.css', null)).headers['content-type']).toMatch(/^text\/css/)
    // uPlot, minified, from the gateway itself (the `uplot` package), under the same policy.
    const uplot = await get(gw, '/console/uPlot.iife.min.js', null)
    expect(uplot.statusCode).toBe(200)
    expect(uplot.headers['content-type']).toMatch(/^text\/javascript/)
    expect(uplot.headers['content-security-policy']).toBe(page.headers['content-security-policy'])
    expect(uplot.body).toMatch(/^\/\*! https:\/\/github\.com\/leeoniya\/uPlot \(v1\.6\.\d+\) \*\/\nvar uPlot=function/)
    expect((await get(gw, '/console/uPlot.min.css', null)).headers['content-type']).toMatch(/^text\/css/)
    expect(page.body).toMatch(/<script src="\/console\/uPlot\.iife\.min\.js"><\/script>/)
    for (const url of ['/console/console-assets.js', '/console/console-route.js', '/console/..%2Fapp.js', '/console/console-page.ts', '/console/uPlot.esm.js']) expect((await get(gw, url, null)).statusCode).toBe(404)
  })

  it('refuses a file it does not serve with the page\'s headers: in no frame, read as its type says, kept by no cache', async () => {
    const { gw } = await gateway()
    const page = await get(gw, '/console', null)
    for (const url of ['/console/nope.js', '/console/console-page.ts', '/console/..%2Fapp.js']) {
      const refused = await get(gw, url, null)
      expect(refused.statusCode).toBe(404)
      const headers = ['content-security-policy', 'x-frame-options', 'x-content-type-options', 'referrer-policy', 'cache-control'].map((h) => [h, refused.headers[h]])
      expect(Object.fromEntries(headers), url).toEqual({
        'content-security-policy': page.headers['content-security-policy'],
        'x-frame-options': 'DENY',
        'x-content-type-options': 'nosniff',
        'referrer-policy': 'no-referrer',
        'cache-control': 'no-store',
      })
    }
  })

  // A password manager keeps what a password field held when its form was sent and offers
  // it on every page of that host (a port-forward's 127.0.0.1 is many services'), where
  // `autocomplete="off"` is ignored on a password field; a spell checker may send what a
  // field holds to a service; a phone's keyboard capitalizes a token's first letter.
  it('serves the admin token\'s field as no password manager, spell checker or capitalization takes', async () => {
    const { gw } = await gateway()
    const page = await get(gw, '/console', null)
    const field = /<input id="token"[^>]*>/.exec(page.body)?.[0] ?? ''
    const attributes = Object.fromEntries([...field.matchAll(/ ([a-z-]+)(?:="([^"]*)")?/g)].map((m) => [m[1], m[2] ?? '']))
    expect(attributes).toMatchObject({ type: 'password', autocomplete: 'one-time-code', spellcheck: 'false', autocapitalize: 'off' })
    expect(attributes.name).toBeUndefined()
  })

  it('names its icon, served under the same policy: a browser opening it asks for no /favicon.ico (a 404 in its console)', async () => {
    const { gw } = await gateway()
    const page = await get(gw, '/console', null)
    const icon = /<link rel="icon" href="(\/console\/[^"]+)"/.exec(page.body)?.[1]
    expect(icon).toBeDefined()
    const answer = await get(gw, icon!, null)
    expect(answer.statusCode).toBe(200)
    expect(answer.headers['content-type']).toMatch(/^image\/svg\+xml/)
    expect(answer.headers['content-security-policy']).toBe(page.headers['content-security-policy'])
  })
})
