import { createHash } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config.js'
import { fingerprint } from '../../src/observe/fingerprint.js'
import { CREDENTIAL_KEYS, KEYS, TEAMS_YAML, TEST_GATEWAY_SECRET, credentialTeams, sandboxLoginEnv, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'

// The configuration in force and where each setting came from (GET /admin/config), and
// the log level changed at run time on one replica or all (PUT /admin/log-level), over
// the Redis bus, sealed like every bus message, audited on each replica; no level
// silences the audit.

const [ADMIN_TOKEN, VIEWER_TOKEN, PARTNER_TOKEN, REDIS_PASSWORD] = ['admin-config-admin-token-0123456789', 'admin-config-viewer-token-0123456789', 'admin-config-partner-platform-token-0001', 'admin-config-redis-password-00']

const [sandbox, redis, gateways] = [useSandbox(), useRedis(), useGateways()]
let dir: string

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'rgw-admin-config-'))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const as = (gw: TestGateway, method: 'GET' | 'PUT' | 'DELETE', url: string, payload?: object, token = ADMIN_TOKEN) =>
  gw.admin.inject({ method, url, headers: { authorization: `Bearer ${token}` }, ...(payload ? { payload } : {}) })

async function replica(withRedis = true): Promise<TestGateway> {
  const env = { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN, ADMIN_VIEWER_TOKEN: VIEWER_TOKEN, LOG_LEVEL: 'info', ...(withRedis ? { REDIS_URL: redis.server.url, GATEWAY_SECRET: TEST_GATEWAY_SECRET } : {}) }
  writeFileSync(join(dir, 'teams.yaml'), TEAMS_YAML)
  return gateways.build(loadConfig({ env: { ...env, TEAMS_FILE: join(dir, 'teams.yaml') } }))
}

type Setting = { setting: string; value: unknown; source: string; from: string; fingerprint?: string }

describe('GET /admin/config', () => {
  it('gives every setting in force with its source, secrets only as fingerprints', async () => {
    const password = sandbox.credentials.password
    writeFileSync(join(dir, 'password'), `${password}\n`)
    writeFileSync(join(dir, 'config.yaml'), `${credentialTeams('partner')}cache:\n  ttl:\n    recent: 2m\n`)
    const { username, clientId, clientSecret } = sandbox.credentials
    const env = {
      PLATFORM_BASE_URL: sandbox.url,
      PLATFORM_USERNAME: username,
      PLATFORM_PASSWORD_FILE: join(dir, 'password'),
      PLATFORM_CLIENT_ID: String(clientId),
      PLATFORM_CLIENT_SECRET: clientSecret,
      CREDENTIAL_PARTNER_TOKEN: PARTNER_TOKEN,
      ADMIN_TOKEN,
      REDIS_URL: redis.server.url.replace('redis://', `redis://:${REDIS_PASSWORD}@`),
      GATEWAY_SECRET: TEST_GATEWAY_SECRET,
      CONFIG_FILE: join(dir, 'config.yaml'),
      LOG_LEVEL: 'info',
    }
    const gw = await gateways.build(loadConfig({ env }), { redis: null })
    const res = await as(gw, 'GET', '/admin/config')
    expect(res.statusCode).toBe(200)
    const settings = new Map(res.json<{ settings: Setting[] }>().settings.map((s) => [s.setting, s]))
    expect(settings.get('platform.baseUrl')).toEqual({ setting: 'platform.baseUrl', value: sandbox.url, source: 'environment', from: 'PLATFORM_BASE_URL' })
    expect(settings.get('cache.ttl.recent')).toEqual({ setting: 'cache.ttl.recent', value: '2m', source: 'file', from: 'CONFIG_FILE' })
    expect(settings.get('cache.ttl.settled')).toMatchObject({ source: 'default', from: 'config/default.yaml' })
    expect(settings.get('logLevel')).toMatchObject({ value: 'info', source: 'environment', from: 'LOG_LEVEL' })
    expect(settings.get('platform.password')).toEqual({ setting: 'platform.password', value: null, fingerprint: fingerprint(password, TEST_GATEWAY_SECRET), source: 'environment', from: 'PLATFORM_PASSWORD_FILE' })
    expect(settings.get('platform.clientSecret')).toMatchObject({ value: null, fingerprint: fingerprint(clientSecret, TEST_GATEWAY_SECRET), from: 'PLATFORM_CLIENT_SECRET' })
    expect(settings.get('admin.token')).toMatchObject({ value: null, fingerprint: fingerprint(ADMIN_TOKEN, TEST_GATEWAY_SECRET) })
    expect(settings.get('gatewaySecret')).toMatchObject({ value: null, fingerprint: fingerprint(TEST_GATEWAY_SECRET, TEST_GATEWAY_SECRET) })
    expect(settings.get('credentials.partner.token')).toEqual({ setting: 'credentials.partner.token', value: null, fingerprint: fingerprint(PARTNER_TOKEN, TEST_GATEWAY_SECRET), source: 'environment', from: 'CREDENTIAL_PARTNER_TOKEN' })
    expect(settings.get('redis.url')?.value).toBe(`redis://***@${redis.server.url.slice('redis://'.length)}`)
    expect([...settings.keys()].filter((k) => k === 'teams' || k.startsWith('teams.'))).toEqual([])
    for (const secret of [password, clientSecret, ADMIN_TOKEN, TEST_GATEWAY_SECRET, PARTNER_TOKEN, REDIS_PASSWORD, CREDENTIAL_KEYS.partner]) expect(res.body).not.toContain(secret)
  })
})

describe('URL settings in GET /admin/config', () => {
  it('show a viewer no userinfo, no query value and no fragment: the scheme, host and path, and *** where each was', async () => {
    const [user, password, query, fragment] = ['url-user-secret-0001', 'url-password-secret-0001', 'url-query-secret-0001', 'url-fragment-secret-0001']
    writeFileSync(join(dir, 'config.yaml'), `${credentialTeams('partner')}`.replace('  partner: {}', `  partner: { baseUrl: ${JSON.stringify(sandbox.url)}, tokenUrl: "/oauth/token?key=${query}" }`))
    const env = {
      PLATFORM_BASE_URL: sandbox.url,
      PLATFORM_TOKEN: sandbox.issueToken(),
      // A user or password in a token URL stops the start (config.test.ts): the userinfo shown as *** is REDIS_URL's.
      PLATFORM_TOKEN_URL: `https://auth.example:8443/oauth/token?client_secret=${query}&grant_type=client_credentials#${fragment}`,
      CREDENTIAL_PARTNER_TOKEN: PARTNER_TOKEN,
      ADMIN_TOKEN,
      ADMIN_VIEWER_TOKEN: VIEWER_TOKEN,
      REDIS_URL: redis.server.url.replace('redis://', `redis://${user}:${password}@`),
      GATEWAY_SECRET: TEST_GATEWAY_SECRET,
      CONFIG_FILE: join(dir, 'config.yaml'),
      LOG_LEVEL: 'info',
    }
    const gw = await gateways.build(loadConfig({ env }), { redis: null })
    const res = await as(gw, 'GET', '/admin/config', undefined, VIEWER_TOKEN)
    expect(res.statusCode).toBe(200)
    const settings = new Map(res.json<{ settings: Setting[] }>().settings.map((s) => [s.setting, s.value]))
    expect(settings.get('platform.tokenUrl')).toBe('https://auth.example:8443/oauth/token?***#***')
    expect(settings.get('credentials.partner.tokenUrl')).toBe('/oauth/token?***')
    expect(settings.get('redis.url')).toBe(`redis://***@${redis.server.url.slice('redis://'.length)}`)
    // A URL with nothing to hide is shown as configured.
    expect([settings.get('platform.baseUrl'), settings.get('credentials.partner.baseUrl')]).toEqual([sandbox.url, sandbox.url])
    for (const secret of [user, password, query, fragment]) expect(res.body).not.toContain(secret)
  })
})

describe('fingerprints of secrets', () => {
  it('are keyed: no plain SHA-256 prefix of a secret a viewer could check a guess against, and the same on replicas sharing GATEWAY_SECRET', async () => {
    const env = { PLATFORM_BASE_URL: sandbox.url, ...sandboxLoginEnv(sandbox), ADMIN_TOKEN, ADMIN_VIEWER_TOKEN: VIEWER_TOKEN, GATEWAY_SECRET: TEST_GATEWAY_SECRET, LOG_LEVEL: 'info' }
    const secrets = [...Object.values(sandboxLoginEnv(sandbox)), ADMIN_TOKEN, VIEWER_TOKEN, TEST_GATEWAY_SECRET]
    const plain = new Set(secrets.map((s) => createHash('sha256').update(s).digest('hex').slice(0, 12)))
    const fingerprints = async (gw: TestGateway) =>
      Object.fromEntries((await as(gw, 'GET', '/admin/config', undefined, VIEWER_TOKEN)).json<{ settings: Setting[] }>().settings.filter((s) => s.fingerprint !== undefined).map((s) => [s.setting, s.fingerprint]))
    const [a, b] = [await gateways.build(loadConfig({ env }), { redis: null }), await gateways.build(loadConfig({ env }), { redis: null })]
    const shown = await fingerprints(a)
    expect(Object.keys(shown)).toEqual(expect.arrayContaining(['platform.clientId', 'platform.password', 'admin.token', 'admin.viewerToken', 'gatewaySecret']))
    expect(Object.values(shown).filter((f) => plain.has(f as string))).toEqual([])
    expect(shown['platform.clientId']).toBe(fingerprint(String(sandbox.credentials.clientId), TEST_GATEWAY_SECRET))
    expect(await fingerprints(b)).toEqual(shown)
    // The platform token's, too: the same token is named alike by both replicas, and not by its plain prefix.
    const token = sandbox.issueToken()
    for (const gw of [a, b]) expect((await as(gw, 'PUT', '/admin/token', { token })).json()).toMatchObject({ fingerprint: fingerprint(token, TEST_GATEWAY_SECRET) })
    expect(fingerprint(token, TEST_GATEWAY_SECRET)).not.toBe(createHash('sha256').update(token).digest('hex').slice(0, 12))
  })
})

describe('PUT /admin/log-level', () => {
  const level = async (gw: TestGateway) => (await as(gw, 'GET', '/admin/cluster')).json<{ replicas: { logLevel: string }[] }>().replicas[0]!.logLevel
  const idOf = async (gw: TestGateway) => (await as(gw, 'GET', '/admin/cluster')).json<{ replicas: { id: string }[] }>().replicas[0]!.id
  const requestLines = (gw: TestGateway) => gw.logs.records().filter((r) => r.msg === 'request').length
  const report = (gw: TestGateway) => gw.proxy.inject({ method: 'GET', url: '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-02', headers: { 'x-api-key': CREDENTIAL_KEYS.partner } })

  it('sets the level on every replica, audited on each, and says so in the configuration and the cluster view', async () => {
    const a = await replica()
    const b = await replica()
    const res = await as(a, 'PUT', '/admin/log-level', { level: 'warn' })
    expect(res.json()).toEqual({ level: 'warn', previous: 'info', replicas: 'all', applied: true })
    await waitFor('the other replica to take the level', async () => b.log.level === 'warn', testTimeLeft(), 20)
    expect(await level(a)).toBe('warn')
    // A request line is an info line: none is written now.
    const before = requestLines(a)
    await report(a)
    expect(requestLines(a)).toBe(before)
    const audit = (gw: TestGateway) => gw.logs.records().filter((r) => r.action === 'log-level').map((r) => [r.logLevel, r.previous, r.trigger, r.actor, r.target])
    expect(audit(a)).toEqual([['warn', 'info', 'admin', 'admin', 'all']])
    expect(audit(b)).toEqual([['warn', 'info', 'replica', 'admin', 'all']])
    // pino's `level` is the line's own, once: an info line, whatever level it sets.
    const line = a.logs.lines.find((l) => l.includes('"action":"log-level"')) as string
    expect([line.match(/"level":/g)?.length, JSON.parse(line).level]).toEqual([1, 30])
    expect((await as(a, 'GET', '/admin/config')).json<{ settings: Setting[] }>().settings.find((s) => s.setting === 'logLevel')).toMatchObject({ value: 'warn', source: 'runtime', from: expect.stringMatching(/^PUT \/admin\/log-level by admin at /) })
    // The audit line of a change is written whatever the level.
    await as(a, 'PUT', '/admin/log-level', { level: 'silent' })
    expect(audit(a).at(-1)).toEqual(['silent', 'warn', 'admin', 'admin', 'all'])
    await as(a, 'PUT', '/admin/log-level', { level: 'info' })
    await report(a)
    expect(requestLines(a)).toBe(before + 1)
  })

  it('leaves the audit written whatever the level, silent included: in the log and in GET /admin/audit', async () => {
    const gw = await replica(false)
    for (const level of ['error', 'silent'] as const) {
      expect((await as(gw, 'PUT', '/admin/log-level', { level })).statusCode).toBe(200)
      const from = gw.logs.lines.length
      const token = sandbox.issueToken()
      expect((await as(gw, 'DELETE', '/admin/cache')).statusCode).toBe(200)
      expect((await as(gw, 'DELETE', '/admin/cache', undefined, VIEWER_TOKEN)).statusCode).toBe(403)
      expect((await as(gw, 'PUT', '/admin/token', { token })).json()).toMatchObject({ changed: true })
      await gw.proxy.inject({ method: 'POST', url: '/api/v1/campaign/banner/create', headers: { 'x-api-key': KEYS.writer }, payload: { userId: 101 } })
      await report(gw)
      // The audit lines, and no other: the request lines (info) stay unwritten.
      const written = gw.logs.records().slice(from)
      const expected = [
        ['report cache purged', 'admin'],
        ['admin call refused: a viewer\'s token may not change anything', 'viewer'],
        ['platform token changed', 'admin'],
        ['write call', undefined],
      ]
      expect(written.map((r) => [r.kind, r.msg, r.actor]), level).toEqual(expected.map(([msg, actor]) => ['audit', msg, actor]))
      const trail = (await as(gw, 'GET', '/admin/audit')).json<{ lines: Record<string, unknown>[] }>().lines
      // A refused call's line is kept for the console without the path its caller wrote.
      expect(trail.slice(0, expected.length).reverse(), level).toEqual(written.map(({ path, ...line }) => (line.action === 'admin-auth' ? line : { ...line, path })))
      expect(gw.logs.text()).not.toContain(token)
    }
  })

  it('counts refused admin authentications in audit lines whatever the level', async () => {
    const gw = await replica(false)
    await as(gw, 'PUT', '/admin/log-level', { level: 'silent' })
    const from = gw.logs.lines.length
    for (let i = 0; i < 3; i++) expect((await as(gw, 'GET', '/admin/status', undefined, 'a-wrong-admin-token-000000')).statusCode).toBe(401)
    // Closing ends the interval the refusals are counted in: its count is written then.
    await gw.close()
    expect(gw.logs.records().slice(from).map((r) => [r.kind, r.action ?? r.code, r.count])).toEqual([
      ['audit', 'admin-auth', undefined],
      ['audit', 'GW_UNAUTHORIZED', 2],
    ])
  })

  it('sets it on one named replica only, and refuses one that is not live', async () => {
    const a = await replica()
    const b = await replica()
    const idB = await idOf(b)
    const res = await as(a, 'PUT', '/admin/log-level', { level: 'debug', replica: idB })
    expect(res.json()).toEqual({ level: 'debug', previous: 'info', replicas: idB, applied: false })
    await waitFor('replica b to take the level', async () => b.log.level === 'debug', testTimeLeft(), 20)
    expect(a.log.level).toBe('info')
    const gone = await as(a, 'PUT', '/admin/log-level', { level: 'debug', replica: 'no-such-replica-000000' })
    expect(gone.statusCode).toBe(404)
    expect(gone.json().message).toMatch(/^no live replica named no-such-replica-000000/)
    for (const body of [{ level: 'verbose' }, { level: 'info', all: true }, {}]) expect((await as(a, 'PUT', '/admin/log-level', body)).statusCode, JSON.stringify(body)).toBe(400)
  })

  it('refuses a replica that stopped: listed as gone in the cluster for the hour, it is no longer live', async () => {
    const a = await replica()
    const b = await replica()
    const idB = await idOf(b)
    await b.close()
    const listed = (await as(a, 'GET', '/admin/cluster')).json<{ replicas: { id: string; gone: { how: string } | null }[] }>().replicas
    expect(listed.find((r) => r.id === idB)?.gone).toMatchObject({ how: 'stopped' })
    const res = await as(a, 'PUT', '/admin/log-level', { level: 'debug', replica: idB })
    expect(res.statusCode).toBe(404)
    expect(res.json()).toMatchObject({ code: 'GW_NOT_FOUND', message: expect.stringMatching(new RegExp(`^no live replica named ${idB}`)) })
    expect(a.log.level).toBe('info')
  })

  it('ignores a change published on the bus by anyone but a replica (no seal)', async () => {
    const gw = await replica()
    const other = await replica()
    await redis.client.publish('rgw:bus:log-level', JSON.stringify({ level: 'trace', replica: null, actor: 'mallory', from: 'mallory' }))
    // Redis delivers messages in the order it took them: once the replica's own change
    // (published after) has arrived, the forged one has been heard and dropped.
    await as(other, 'PUT', '/admin/log-level', { level: 'debug' })
    await waitFor('the sealed change to arrive', async () => gw.log.level === 'debug', testTimeLeft(), 20)
    expect(gw.logs.records().filter((r) => r.action === 'log-level').map((r) => r.actor)).toEqual(['admin'])
    expect((await gw.admin.inject({ method: 'GET', url: '/metrics' })).body).toMatch(/^gateway_redis_unverified_total\{what="message"\} [1-9]/m)
  })

  it('without Redis sets this replica only, and refuses to reach another', async () => {
    const gw = await replica(false)
    expect((await as(gw, 'PUT', '/admin/log-level', { level: 'debug' })).json()).toEqual({ level: 'debug', previous: 'info', replicas: 'this replica only', applied: true })
    const other = await as(gw, 'PUT', '/admin/log-level', { level: 'info', replica: 'another-replica-000000' })
    expect(other.statusCode).toBe(503)
    expect(other.json().code).toBe('GW_REDIS_UNAVAILABLE')
    expect(gw.log.level).toBe('debug')
  })
})
