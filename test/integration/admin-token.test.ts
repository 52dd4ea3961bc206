import { afterEach, describe, expect, it } from 'vitest'
import { fingerprint } from '../../src/observe/fingerprint.js'
import { CREDENTIAL_KEYS, KEYS, TEAMS_YAML, credentialTeams, sandboxLoginEnv, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useSandbox } from '../helpers/fixtures.js'
import { bearerOf, expectNoSecrets as expectNoneOf } from '../helpers/gateway-calls.js'

// The admin calls on the platform token (contract, "Admin listener"): GET, PUT
// (with the probe call) and refresh, for the default credential and for named ones;
// the audit lines they leave; and that no token, password or secret is ever shown.

const ADMIN_TOKEN = 'admin-token-for-admin-tests-0123456789'
const PARTNER_KEY = CREDENTIAL_KEYS.partner
const AGENCY_KEY = CREDENTIAL_KEYS.agency
const REPORT = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-07'

const CREDENTIALS_YAML = credentialTeams('partner', 'agency')

const sandbox = useSandbox()
const gateways = useGateways()
/** Every response body the tests saw, checked for secrets at the end of each test. */
const bodies: string[] = []

afterEach(() => {
  bodies.length = 0
})

async function gateway(env: Record<string, string>, yaml = TEAMS_YAML): Promise<TestGateway> {
  const gw = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, ...env }, yaml))
  // What the tests count starts here, after the start's own token check.
  sandbox.clearRequests()
  return gw
}

async function admin(gw: TestGateway, method: 'GET' | 'PUT' | 'POST', url: string, payload?: unknown, auth: string | null = `Bearer ${ADMIN_TOKEN}`) {
  const res = await gw.admin.inject({
    method,
    url,
    headers: auth === null ? {} : { authorization: auth },
    ...(payload === undefined ? {} : { payload: payload as object }),
  })
  bodies.push(res.body)
  return res
}

async function call(gw: TestGateway, key: string, url = '/api/v1/campaign/get') {
  const res = url.startsWith('/api/v1/report/')
    ? await gw.proxy.inject({ method: 'GET', url, headers: { 'x-api-key': key } })
    : await gw.proxy.inject({ method: 'POST', url, headers: { 'x-api-key': key }, payload: { userId: 101 } })
  bodies.push(res.body)
  return res
}

function audits(gw: TestGateway): Record<string, unknown>[] {
  return gw.logs.records().filter((r) => r.kind === 'audit')
}

function expectNoSecrets(gw: TestGateway, secrets: string[]): void {
  expectNoneOf([...bodies, gw.logs.text()], secrets)
}

const loginEnv = (prefix: string) => sandboxLoginEnv(sandbox, prefix)

describe('admin authentication', () => {
  it('without ADMIN_TOKEN every token call answers 503 GW_ADMIN_DISABLED; /metrics stays open', async () => {
    const gw = await gateway({ PLATFORM_TOKEN: sandbox.issueToken() })
    for (const [method, url, body] of [
      ['GET', '/admin/token', undefined],
      ['PUT', '/admin/token', { token: sandbox.issueToken() }],
      ['POST', '/admin/token/refresh', undefined],
      ['GET', '/admin/credentials/default/token', undefined],
    ] as const) {
      const res = await admin(gw, method, url, body, 'Bearer anything-at-all-0123456789')
      expect(res.statusCode, `${method} ${url}`).toBe(503)
      // The message names each variable that enables admin calls (contract, "Configuration"), the viewer's too.
      expect(res.json()).toEqual({
        statusCode: 503,
        code: 'GW_ADMIN_DISABLED',
        error: 'Service Unavailable',
        message: 'admin calls are disabled: no admin token is configured; set ADMIN_TOKEN, ADMIN_VIEWER_TOKEN (or their _FILE forms) or ADMIN_TOKENS_FILE',
      })
    }
    expect((await gw.admin.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(200)
  })

  it.each([
    ['no authorization header', null],
    ['a wrong admin token', 'Bearer not-the-admin-token-0123456789'],
    ['the admin token with a suffix', `Bearer ${ADMIN_TOKEN}x`],
    ['the admin token under another scheme', `Basic ${ADMIN_TOKEN}`],
  ])('%s: 401 GW_UNAUTHORIZED, and nothing changes', async (_label, auth) => {
    const token = sandbox.issueToken()
    const gw = await gateway({ PLATFORM_TOKEN: token, ADMIN_TOKEN })
    const get = await admin(gw, 'GET', '/admin/token', undefined, auth)
    expect(get.statusCode).toBe(401)
    expect(get.json()).toMatchObject({ code: 'GW_UNAUTHORIZED' })
    const put = await admin(gw, 'PUT', '/admin/token', { token: sandbox.issueToken() }, auth)
    expect(put.statusCode).toBe(401)
    expect(gw.tokens.get('default').current()?.token).toBe(token)
    expect(sandbox.countRequests()).toBe(0)
    expectNoSecrets(gw, [token, ADMIN_TOKEN])
  })
})

describe('GET /admin/token', () => {
  it('answers {source, fingerprint, obtainedAt, expiresAt, secondsLeft}, never the token', async () => {
    const token = sandbox.issueToken({ ttlSeconds: 10 * 86_400 })
    const before = Date.now()
    const gw = await gateway({ PLATFORM_TOKEN: token, ADMIN_TOKEN })
    const res = await admin(gw, 'GET', '/admin/token')
    expect(res.statusCode).toBe(200)
    const body = res.json()
    expect(body).toEqual({
      source: 'static',
      fingerprint: fingerprint(token, null),
      obtainedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      expiresAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      secondsLeft: expect.any(Number),
      usable: true,
    })
    expect(Date.parse(body.obtainedAt)).toBeGreaterThanOrEqual(before - 1)
    expect(body.secondsLeft).toBeGreaterThan(10 * 86_400 - 10)
    expect(body.secondsLeft).toBeLessThanOrEqual(10 * 86_400)
    expect(fingerprint(token, null)).toMatch(/^[0-9a-f]{12}$/)
    expect((await admin(gw, 'GET', '/admin/credentials/default/token')).json()).toEqual({ ...body, secondsLeft: expect.any(Number) })
    expectNoSecrets(gw, [token, ADMIN_TOKEN])
  })
})

describe('PUT /admin/token', () => {
  it('checks the new token with the probe call, switches to it, and audits the change', async () => {
    const old = sandbox.issueToken()
    const gw = await gateway({ PLATFORM_TOKEN: old, ADMIN_TOKEN })
    const next = sandbox.issueToken()

    const res = await admin(gw, 'PUT', '/admin/token', { token: `  ${next}\n` })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ source: 'admin', fingerprint: fingerprint(next, null), usable: true })
    // The probe: the configured call (default POST /api/v1/campaign/get) with the new token.
    expect(sandbox.requests).toHaveLength(1)
    expect(sandbox.requests[0]).toMatchObject({ method: 'POST', path: '/api/v1/campaign/get' })
    expect(bearerOf(sandbox.requests[0])).toBe(next)

    expect((await call(gw, KEYS.all)).statusCode).toBe(200)
    expect(bearerOf(sandbox.requests.at(-1))).toBe(next)

    const lines = audits(gw).filter((r) => r.reason === 'admin')
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatchObject({
      kind: 'audit',
      credential: 'default',
      oldFingerprint: fingerprint(old, null),
      newFingerprint: fingerprint(next, null),
      actor: 'admin',
      time: expect.any(Number),
    })
    expectNoSecrets(gw, [old, next, ADMIN_TOKEN])
  })

  it('refuses a token the platform rejects (422 GW_TOKEN_REJECTED) and keeps the old one', async () => {
    const old = sandbox.issueToken()
    const gw = await gateway({ PLATFORM_TOKEN: old, ADMIN_TOKEN })
    const bogus = 'not-a-platform-token-0123456789abcdef'

    const res = await admin(gw, 'PUT', '/admin/token', { token: bogus })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toMatchObject({ statusCode: 422, code: 'GW_TOKEN_REJECTED' })
    expect(gw.tokens.get('default').current()?.token).toBe(old)
    expect((await admin(gw, 'GET', '/admin/token')).json()).toMatchObject({ source: 'static', fingerprint: fingerprint(old, null) })
    expect((await call(gw, KEYS.all)).statusCode).toBe(200)
    expect(bearerOf(sandbox.requests.at(-1))).toBe(old)

    // No change, so no change line; the refused attempt is audited with fingerprints only.
    expect(audits(gw).filter((r) => r.reason === 'admin')).toHaveLength(0)
    expect(audits(gw).filter((r) => r.outcome === 'refused')).toEqual([
      expect.objectContaining({ action: 'replace', credential: 'default', offeredFingerprint: fingerprint(bogus, null), currentFingerprint: fingerprint(old, null), actor: 'admin' }),
    ])
    expectNoSecrets(gw, [old, bogus, ADMIN_TOKEN])
  })

  it('a token the platform refused is no secret of the gateway\'s: a team\'s request holding it is served, and no team is suspended', async () => {
    const gw = await gateway({ PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN })
    // What an operator may paste by mistake: a word a campaign or a report's query may hold too.
    const pasted = 'summer-sale-2026'
    expect((await admin(gw, 'PUT', '/admin/token', { token: pasted })).statusCode).toBe(422)
    const asked = () => gw.proxy.inject({ method: 'POST', url: '/api/v1/campaign/get', headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json' }, payload: { userId: 101, name: pasted } })
    const first = await asked()
    expect(first.statusCode, first.body).toBe(200)
    expect((await asked()).statusCode).toBe(200)
    expect(gw.logs.records().filter((r) => String(r.msg ?? '').startsWith('team suspended'))).toEqual([])
  })

  it('refuses, before any probe, a token that is a secret the platform never gets: an admin token, a team key, GATEWAY_SECRET, the login\'s password', async () => {
    const viewer = 'viewer-token-for-admin-tests-0123456789'
    const gatewaySecret = 'admin-token-tests-gateway-secret-0000'
    const gw = await gateway({ ...sandboxLoginEnv(sandbox), ADMIN_TOKEN, ADMIN_VIEWER_TOKEN: viewer, GATEWAY_SECRET: gatewaySecret })
    sandbox.clearRequests()
    const offered = [ADMIN_TOKEN, viewer, ` ${ADMIN_TOKEN}\n`, KEYS.writer, gatewaySecret, sandbox.credentials.password, sandbox.credentials.clientSecret]
    for (const token of offered) {
      const res = await admin(gw, 'PUT', '/admin/token', { token })
      expect([res.statusCode, res.json().code, res.json().message]).toEqual([400, 'GW_BAD_REQUEST', expect.stringMatching(/^token: is (an admin token|a team key|a secret of the gateway's), which is never sent to the platform; the token in use stays \(the value is not shown\)$/)])
    }
    expect(sandbox.requests).toEqual([])
    expect(audits(gw).filter((r) => r.action === 'replace' && r.outcome === 'refused')).toHaveLength(offered.length)
    expect(audits(gw).every((r) => r.offeredFingerprint === undefined || r.offeredFingerprint === null)).toBe(true)
    expectNoSecrets(gw, [ADMIN_TOKEN, viewer, KEYS.writer, gatewaySecret, sandbox.credentials.password, sandbox.credentials.clientSecret])
  })

  // A token copied with its quotes (from JSON or YAML) was sent to the platform in the probe, answered 422 as if the platform had refused a token.
  it('refuses, before any probe, a token wrapped in quotes, as the token file and PLATFORM_TOKEN are', async () => {
    const gw = await gateway({ PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN })
    const token = sandbox.issueToken()
    sandbox.clearRequests()
    for (const quoted of [`"${token}"`, `'${token}'`]) {
      const res = await admin(gw, 'PUT', '/admin/token', { token: quoted })
      expect([res.statusCode, res.json().code, res.json().message]).toEqual([400, 'GW_BAD_REQUEST', 'token: is wrapped in quotes, which no token has; it must hold the token alone, without them (the content is not shown)'])
    }
    expect(sandbox.requests).toEqual([])
    expect(audits(gw).filter((r) => r.action === 'replace' && r.outcome === 'refused')).toHaveLength(2)
    expectNoSecrets(gw, [token])
  })

  // A team's webhook secret left the gateway's secrets (it may spell anything a team sends:
  // webhook-secret-oracle.test.ts), and with them this check: the probe sent it to the
  // platform as the bearer, answered 422 GW_TOKEN_REJECTED.
  it("refuses, before any probe, a token that is a team's webhook secret, whole or its key's base64", async () => {
    const bare = 'Q2hhbmdlZC1XZWJob29rLUtleS0wMTIzNDU2Nzg5'
    const yaml = `jobs:\n  webhookHosts: [localhost]\n${TEAMS_YAML.replace('    write: true\n', `    write: true\n    webhook: { url: "http://localhost:9/hook", secret: "whsec_${bare}" }\n`)}`
    const gw = await gateway({ PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN }, yaml)
    sandbox.clearRequests()
    for (const token of [`whsec_${bare}`, bare]) {
      const res = await admin(gw, 'PUT', '/admin/token', { token })
      expect([token === bare, res.statusCode, res.json().message]).toEqual([token === bare, 400, "token: is a team's webhook secret, which is never sent to the platform; the token in use stays (the value is not shown)"])
    }
    expect(sandbox.requests).toEqual([])
    expectNoSecrets(gw, [`whsec_${bare}`, bare])
  })

  it('an expired token is refused too', async () => {
    const gw = await gateway({ PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN })
    const expired = sandbox.issueToken({ ttlSeconds: 0 })
    const res = await admin(gw, 'PUT', '/admin/token', { token: expired })
    expect(res.statusCode).toBe(422)
    expectNoSecrets(gw, [expired])
  })

  it('the probe call is configurable', async () => {
    const yaml = `${TEAMS_YAML}\nplatform:\n  probe: { method: GET, path: /api/v1/report/campaigns/get }\n`
    const gw = await gateway({ PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN }, yaml)
    const next = sandbox.issueToken()
    // The platform answers 422 (missing parameters) with a good token: not a refusal.
    expect((await admin(gw, 'PUT', '/admin/token', { token: next })).statusCode).toBe(200)
    expect(sandbox.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['GET /api/v1/report/campaigns/get'])
    expect((await admin(gw, 'PUT', '/admin/token', { token: 'rejected-by-the-platform-000000' })).statusCode).toBe(422)
  })

  it('with probe: null the token is taken without a check', async () => {
    const gw = await gateway({ PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN }, `${TEAMS_YAML}\nplatform:\n  probe: null\n`)
    const unchecked = 'unchecked-token-0123456789abcdef'
    const res = await admin(gw, 'PUT', '/admin/token', { token: unchecked })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ source: 'admin', fingerprint: fingerprint(unchecked, null) })
    expect(sandbox.countRequests()).toBe(0)
  })

  const MUST = 'token: must be the platform token: 8 to 8192 printable ASCII characters, no spaces inside'
  it.each([
    ['no token', {}, 'token: required'],
    ['a short token', { token: 'short' }, MUST],
    ['only whitespace', { token: '                ' }, MUST],
    ['a token with a line break inside', { token: 'abcdefgh\r\nx-injected: 1' }, 'token: holds control characters (a line break inside?); it must hold the secret alone (the content is not shown)'],
    // An operator pastes the value of a curl line's authorization header: the answer says what is wrong, not only what a token is.
    ['a token with "Bearer " before it', { token: 'Bearer eyJhbGciOiJIUzI1NiJ9.payload.signature' }, 'token: starts with "Bearer ", as an authorization header does; it must hold the token alone (the content is not shown)'],
    ['a token with "bearer " before it', { token: 'bearer  eyJhbGciOiJIUzI1NiJ9.payload.signature' }, 'token: starts with "Bearer ", as an authorization header does; it must hold the token alone (the content is not shown)'],
    ['a token with a space inside', { token: 'eyJhbGciOiJIUzI1NiJ9 .payload.signature' }, 'token: holds a space or a character outside printable ASCII, which no authorization header carries; it must hold the token alone (the content is not shown)'],
  ])('%s: 400 and nothing changes', async (_label, payload, expected) => {
    const token = sandbox.issueToken()
    const gw = await gateway({ PLATFORM_TOKEN: token, ADMIN_TOKEN })
    const res = await admin(gw, 'PUT', '/admin/token', payload)
    expect(res.statusCode).toBe(400)
    // The contract's code and what the field must be, never Fastify's FST_* code.
    expect(res.json()).toMatchObject({ code: 'GW_BAD_REQUEST', message: expected })
    expect(res.body).not.toContain('FST_')
    expect(gw.tokens.get('default').current()?.token).toBe(token)
    expect(sandbox.countRequests()).toBe(0)
    const offered = (payload as { token?: unknown }).token
    if (typeof offered === 'string' && offered.trim().length >= 8) expect(res.body).not.toContain(offered)
  })
})

describe('POST /admin/token/refresh', () => {
  it('runs the password login again, switches, and audits it with the operator name', async () => {
    const gw = await gateway({ ...loginEnv('PLATFORM_'), ADMIN_TOKEN })
    const old = gw.tokens.get('default').current()?.token as string
    sandbox.clearRequests()

    const res = await admin(gw, 'POST', '/admin/token/refresh')
    expect(res.statusCode).toBe(200)
    const next = gw.tokens.get('default').current()?.token as string
    expect(next).not.toBe(old)
    expect(res.json()).toMatchObject({ source: 'login', fingerprint: fingerprint(next, null) })
    expect(sandbox.requests.map((r) => r.path)).toEqual(['/oauth/token'])
    expect(audits(gw).filter((r) => r.reason === 'refresh')).toEqual([
      expect.objectContaining({ credential: 'default', oldFingerprint: fingerprint(old, null), newFingerprint: fingerprint(next, null), actor: 'admin' }),
    ])
    expectNoSecrets(gw, [old, next, ADMIN_TOKEN, sandbox.credentials.password, sandbox.credentials.clientSecret])
  })

  it('a credential without a password login: 400, nothing runs, and the refused attempt is audited as a failed refresh is', async () => {
    const token = sandbox.issueToken()
    const gw = await gateway({ PLATFORM_TOKEN: token, ADMIN_TOKEN })
    const res = await admin(gw, 'POST', '/admin/token/refresh')
    expect(res.statusCode).toBe(400)
    expect(res.json().message).toMatch(/no password login/)
    expect(sandbox.countRequests()).toBe(0)
    expect(gw.tokens.get('default').current()?.token).toBe(token)
    expect(audits(gw).filter((r) => r.action === 'refresh' && r.outcome === 'refused')).toEqual([
      expect.objectContaining({ credential: 'default', actor: 'admin', reason: 'credential default has no password login to run again' }),
    ])
  })

  it('a failed refresh keeps the current token and is audited', async () => {
    const gw = await gateway({ ...loginEnv('PLATFORM_'), ADMIN_TOKEN })
    const old = gw.tokens.get('default').current()?.token as string
    // The token endpoint itself is fine, the network to it is not: a closed port.
    const broken = await gateway({ ...loginEnv('PLATFORM_'), ADMIN_TOKEN, PLATFORM_TOKEN_URL: 'http://127.0.0.1:1/oauth/token' })
    const res = await admin(broken, 'POST', '/admin/token/refresh')
    expect(res.statusCode).toBe(502)
    expect(res.json()).toMatchObject({ code: 'GW_PLATFORM_AUTH' })
    expect(audits(broken).filter((r) => r.action === 'refresh' && r.outcome === 'refused')).toHaveLength(1)
    expect(gw.tokens.get('default').current()?.token).toBe(old)
    expectNoSecrets(broken, [ADMIN_TOKEN, sandbox.credentials.password, sandbox.credentials.clientSecret])
  })

  // The login's own words (the token request's address, `connection reset`) are an
  // operator's: the admin's 502 says them; a caller's GW_PLATFORM_AUTH says only that the
  // login got no answer or a 5xx (contract, "Errors").
  it('a login that got no answer: the admin\'s 502 names the token request and says it in words; a caller\'s GW_PLATFORM_AUTH says the login got no answer', async () => {
    const gw = await gateway({ ...loginEnv('PLATFORM_'), ADMIN_TOKEN })
    sandbox.revokeToken(gw.tokens.get('default').current()?.token as string)
    sandbox.setRouteFailure('/oauth/token', { kind: 'reset' })
    try {
      const res = await admin(gw, 'POST', '/admin/token/refresh')
      expect([res.statusCode, res.json()]).toEqual([502, expect.objectContaining({ code: 'GW_PLATFORM_AUTH', message: `platform login failed: token request to ${sandbox.url}/oauth/token failed (connection reset)` })])
      const read = await call(gw, KEYS.all, REPORT)
      expect([read.statusCode, read.json()]).toEqual([502, expect.objectContaining({ code: 'GW_PLATFORM_AUTH', message: expect.stringMatching(/: its password login got no answer or a 5xx from the platform$/) })])
      expect(read.body).not.toContain(sandbox.url)
    } finally {
      sandbox.clearRouteFailures()
    }
  })

  it('a login answered 429 is the platform busy: 502 GW_PLATFORM_AUTH with the seconds left of its retry-after', async () => {
    const gw = await gateway({ ...loginEnv('PLATFORM_'), ADMIN_TOKEN })
    sandbox.setRouteFailure('/oauth/token', { kind: 'status', status: 429, headers: { 'retry-after': '30' } })
    try {
      const res = await admin(gw, 'POST', '/admin/token/refresh')
      expect(res.statusCode).toBe(502)
      expect(res.json()).toMatchObject({ code: 'GW_PLATFORM_AUTH', message: 'platform login failed: the platform answered 429 (no error code)' })
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(25)
      expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(30)
    } finally {
      sandbox.clearRouteFailures()
    }
  })

  it('a login refused for a wrong password: a caller\'s GW_PLATFORM_AUTH says the platform refused it, with its status', async () => {
    const gw = await gateway({ ...loginEnv('PLATFORM_'), PLATFORM_PASSWORD: 'not-the-sandbox-password', ADMIN_TOKEN })
    const read = await call(gw, KEYS.all, REPORT)
    expect([read.statusCode, read.json()]).toEqual([502, expect.objectContaining({ code: 'GW_PLATFORM_AUTH', message: "the platform refused the gateway token: credential default has no usable token: its password login was refused by the platform (400); the gateway's operators must give it a token the platform accepts (its /readyz names the credential under degraded): retry once they have" })])
    expect(read.headers['retry-after']).toBeUndefined()
    expectNoSecrets(gw, [ADMIN_TOKEN, 'not-the-sandbox-password', sandbox.credentials.clientSecret])
  })

  // The platform's answer to a refused login may quote what it was sent: a caller is told
  // its status alone, never its error code nor any other word of it.
  it('a login refused after a 401: a caller\'s GW_PLATFORM_AUTH names the status, no word of the platform\'s answer', async () => {
    const gw = await gateway({ ...loginEnv('PLATFORM_'), ADMIN_TOKEN })
    sandbox.revokeToken(gw.tokens.get('default').current()?.token as string)
    const { username, password } = sandbox.credentials
    sandbox.setRouteFailure('/oauth/token', { kind: 'status', status: 401, body: { error: 'invalid_client', message: `client of ${username} with ${password} refused` } })
    try {
      const read = await call(gw, KEYS.all, REPORT)
      expect([read.statusCode, read.json()]).toEqual([502, expect.objectContaining({ code: 'GW_PLATFORM_AUTH', message: expect.stringMatching(/: its password login was refused by the platform \(401\); the gateway's operators must give it a token the platform accepts \(its \/readyz names the credential under degraded\): retry once they have$/) })])
      expect(read.body).not.toContain('invalid_client')
      expect(read.body).not.toContain(sandbox.url)
      expectNoSecrets(gw, [ADMIN_TOKEN, username, password, sandbox.credentials.clientSecret])
    } finally {
      sandbox.clearRouteFailures()
    }
  })
})

describe('several credentials', () => {
  async function credentialsGateway() {
    const defaultToken = sandbox.issueToken()
    const partnerToken = sandbox.issueToken()
    const gw = await gateway({ PLATFORM_TOKEN: defaultToken, CREDENTIAL_PARTNER_TOKEN: partnerToken, ...loginEnv('CREDENTIAL_AGENCY_'), ADMIN_TOKEN }, CREDENTIALS_YAML)
    const agencyToken = gw.tokens.get('agency').current()?.token as string
    sandbox.clearRequests()
    return { gw, defaultToken, partnerToken, agencyToken }
  }

  it('each credential has its own source, token and admin calls; teams use the one they name', async () => {
    const { gw, defaultToken, partnerToken, agencyToken } = await credentialsGateway()
    expect((await admin(gw, 'GET', '/admin/credentials/partner/token')).json()).toMatchObject({ source: 'static', fingerprint: fingerprint(partnerToken, null) })
    expect((await admin(gw, 'GET', '/admin/credentials/agency/token')).json()).toMatchObject({ source: 'login', fingerprint: fingerprint(agencyToken, null) })
    expect((await admin(gw, 'GET', '/admin/token')).json()).toMatchObject({ source: 'static', fingerprint: fingerprint(defaultToken, null) })
    const list = (await admin(gw, 'GET', '/admin/credentials')).json() as { credentials: { name: string; fingerprint: string }[] }
    expect(list.credentials.map((c) => [c.name, c.fingerprint])).toEqual([
      ['default', fingerprint(defaultToken, null)],
      ['partner', fingerprint(partnerToken, null)],
      ['agency', fingerprint(agencyToken, null)],
    ])
    const unknown = await admin(gw, 'GET', '/admin/credentials/nobody/token')
    expect(unknown.statusCode).toBe(404)
    expect(unknown.json()).toMatchObject({ code: 'GW_NOT_FOUND' })

    for (const [key, token] of [[KEYS.all, defaultToken], [PARTNER_KEY, partnerToken], [AGENCY_KEY, agencyToken]] as const) {
      expect((await call(gw, key)).statusCode).toBe(200)
      expect(bearerOf(sandbox.requests.at(-1))).toBe(token)
    }

    const metrics = (await gw.admin.inject({ method: 'GET', url: '/metrics' })).body
    for (const name of ['default', 'partner', 'agency']) {
      expect(metrics).toMatch(new RegExp(`gateway_platform_token_seconds_left\\{credential="${name}"\\} \\d+`))
      expect(metrics).toMatch(new RegExp(`gateway_platform_token_usable\\{credential="${name}"\\} 1`))
    }
    expectNoSecrets(gw, [defaultToken, partnerToken, agencyToken, ADMIN_TOKEN, sandbox.credentials.password, sandbox.credentials.clientSecret])
  })

  it('PUT and refresh on a named credential change that credential only, and are audited under its name', async () => {
    const { gw, defaultToken, partnerToken, agencyToken } = await credentialsGateway()
    const next = sandbox.issueToken()
    const put = await admin(gw, 'PUT', '/admin/credentials/partner/token', { token: next })
    expect(put.statusCode).toBe(200)
    expect(put.json()).toMatchObject({ source: 'admin', fingerprint: fingerprint(next, null) })
    expect(gw.tokens.get('partner').current()?.token).toBe(next)
    expect(gw.tokens.get('default').current()?.token).toBe(defaultToken)
    expect(gw.tokens.get('agency').current()?.token).toBe(agencyToken)

    const refresh = await admin(gw, 'POST', '/admin/credentials/agency/token/refresh')
    expect(refresh.statusCode).toBe(200)
    const agencyNext = gw.tokens.get('agency').current()?.token as string
    expect(agencyNext).not.toBe(agencyToken)
    expect((await admin(gw, 'POST', '/admin/credentials/partner/token/refresh')).statusCode).toBe(400)

    expect(audits(gw).filter((r) => r.reason === 'admin' || r.reason === 'refresh')).toEqual([
      expect.objectContaining({ credential: 'partner', reason: 'admin', oldFingerprint: fingerprint(partnerToken, null), newFingerprint: fingerprint(next, null), actor: 'admin' }),
      expect.objectContaining({ credential: 'agency', reason: 'refresh', oldFingerprint: fingerprint(agencyToken, null), newFingerprint: fingerprint(agencyNext, null), actor: 'admin' }),
    ])
    expectNoSecrets(gw, [defaultToken, partnerToken, agencyToken, agencyNext, next, ADMIN_TOKEN, sandbox.credentials.password])
  })

  it('report cache entries are per credential: the same report for two credentials is two platform calls', async () => {
    const { gw, defaultToken, partnerToken } = await credentialsGateway()
    const reports = () => sandbox.requests.filter((r) => r.path === '/api/v1/report/campaigns/get')
    const a = await call(gw, KEYS.all, REPORT)
    const b = await call(gw, PARTNER_KEY, REPORT)
    expect([a.headers['x-cache'], b.headers['x-cache']]).toEqual(['MISS', 'MISS'])
    expect(reports().map(bearerOf)).toEqual([defaultToken, partnerToken])
    const again = await call(gw, PARTNER_KEY, REPORT)
    expect(again.headers['x-cache']).toBe('HIT')
    expect(reports()).toHaveLength(2)
  })

  it('a refused token makes only its own credential unusable', async () => {
    const { gw, partnerToken } = await credentialsGateway()
    sandbox.revokeToken(partnerToken)
    const res = await call(gw, PARTNER_KEY)
    expect(res.statusCode).toBe(502)
    expect(res.json()).toMatchObject({ code: 'GW_PLATFORM_AUTH' })
    const ready = await gw.admin.inject({ method: 'GET', url: '/readyz' })
    expect(ready.statusCode).toBe(200)
    expect(ready.json()).toMatchObject({ platformToken: { default: 'ok', partner: 'rejected', agency: 'ok' }, degraded: ['platformToken:partner'] })
    expect((await call(gw, KEYS.all)).statusCode).toBe(200)
    expect((await admin(gw, 'GET', '/admin/credentials/partner/token')).json()).toMatchObject({ usable: false })
  })
})
