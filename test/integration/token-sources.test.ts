import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { startSandbox, type SandboxRequestRecord } from '../../src/sandbox/sandbox.js'
import { fingerprint } from '../../src/observe/fingerprint.js'
import { DEFAULT_TOKEN_LIFETIME_MS, jwtExpiry } from '../../src/platform/tokens/token-expiry.js'
import { TEAMS_YAML, sandboxLoginEnv, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useCleanups, useGateways, useSandbox } from '../helpers/fixtures.js'
import { shiftedClock, onRealTimers } from '../helpers/clock.js'
import { bearerOf, campaignList, checksDone, expectNoSecrets, fileReadsDone, tokenOf as currentToken } from '../helpers/gateway-calls.js'
import { waitFor } from '../helpers/wait.js'

// Token sources and expiry: the static token, the watched token file (with
// the symlink swap a Kubernetes Secret update makes), the password login and its
// errors, and where a token's expiry comes from; against the sandbox over loopback.

const ADMIN_TOKEN = 'sources-admin-token-0123456789abcdef'
const DAY = 86_400_000

const sandbox = useSandbox()
const cleanups = useCleanups()
const gateways = useGateways()

function gateway(env: Record<string, string>, yaml = TEAMS_YAML, now?: () => number): Promise<TestGateway> {
  return gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, ADMIN_TOKEN, ...env }, yaml), now ? { clock: onRealTimers(now) } : {})
}

function adminCall(gw: TestGateway, method: 'GET' | 'PUT' | 'POST', url: string, payload?: unknown) {
  return gw.admin.inject({ method, url, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, ...(payload === undefined ? {} : { payload: payload as object }) })
}

const isTokenRequest = (r: SandboxRequestRecord) => r.path === '/oauth/token'

/** A proxied read through `gw`: answered 200, and sent to the platform with `token`. */
async function expectReadWith(gw: TestGateway, token: string) {
  const res = await campaignList(gw)
  expect(res.statusCode).toBe(200)
  expect(bearerOf(sandbox.requests.at(-1))).toBe(token)
  return res
}

function records(gw: TestGateway, msg: string | RegExp): Record<string, unknown>[] {
  return gw.logs.records().filter((r) => (typeof msg === 'string' ? r.msg === msg : msg.test(String(r.msg))))
}


describe('static PLATFORM_TOKEN', () => {
  it('injects the configured token and reports it as static, by fingerprint only', async () => {
    const token = sandbox.issueToken()
    const gw = await gateway({ PLATFORM_TOKEN: token })
    const res = await expectReadWith(gw, token)
    const info = await adminCall(gw, 'GET', '/admin/token')
    expect(info.json()).toMatchObject({ source: 'static', fingerprint: fingerprint(token, null) })
    expectNoSecrets([info.body, res.body, gw.logs.text()], [token, ADMIN_TOKEN])
  })
})

describe('PLATFORM_TOKEN_FILE', () => {
  function tempDir(): string {
    const dir = mkdtempSync(join(tmpdir(), 'rgw-token-'))
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    return dir
  }

  /**
   * A mounted Secret as the kubelet lays it out: `token -> ..data/token`,
   * `..data -> ..<timestamp>`; an update writes a new timestamped folder and renames a
   * new `..data_tmp` symlink over `..data` (atomic), then removes the old folder.
   */
  function kubernetesSecret(initial: string | null) {
    const dir = tempDir()
    let generation = 0
    let current: string | null = null
    const publish = (content: string | null) => {
      generation += 1
      const folder = `..2026_01_01_00_00_0${generation}.${process.pid}`
      mkdirSync(join(dir, folder))
      if (content !== null) writeFileSync(join(dir, folder, 'token'), content)
      symlinkSync(folder, join(dir, '..data_tmp'))
      renameSync(join(dir, '..data_tmp'), join(dir, '..data'))
      if (current) rmSync(join(dir, current), { recursive: true, force: true })
      current = folder
    }
    publish(initial)
    symlinkSync('..data/token', join(dir, 'token'))
    return { path: join(dir, 'token'), swap: publish }
  }

  /** A gateway reading its token from a mounted Secret that holds `initial`. */
  async function gatewayOnSecret(initial: string, yaml = TEAMS_YAML) {
    const secret = kubernetesSecret(initial)
    return { secret, gw: await gateway({ PLATFORM_TOKEN_FILE: secret.path }, yaml) }
  }

  /** Rewrites the Secret with `content` and checks the rewrite is refused: an error line matching `error` (and `fields`, when given), the token in use `kept`, reads still made with it. */
  async function expectRewriteRefused(gw: TestGateway, secret: { swap(content: string | null): void }, content: string | null, error: RegExp, kept: string, fields?: Record<string, unknown>) {
    secret.swap(content)
    await waitFor(`an error matching ${error}`, () => records(gw, error).length > 0)
    if (fields) expect(records(gw, error)[0]).toMatchObject(fields)
    expect(currentToken(gw)).toBe(kept)
    await expectReadWith(gw, kept)
  }

  // The file's change is taken at the next read of it (besides its folder's watch): a read every
  // platform.tokenFilePoll, 1 s by default, is what takes a change in within 2 s. The tests wait for
  // the change itself; the poll period they check.
  it('uses a file rewritten in place, read again every platform.tokenFilePoll (1 s)', async () => {
    const dir = tempDir()
    const path = join(dir, 'token')
    const first = sandbox.issueToken()
    const second = sandbox.issueToken()
    writeFileSync(path, `${first}\n`)
    const gw = await gateway({ PLATFORM_TOKEN_FILE: path })
    expect(currentToken(gw)).toBe(first)
    expect((await adminCall(gw, 'GET', '/admin/token')).json()).toMatchObject({ source: 'file', fingerprint: fingerprint(first, null) })

    expect(gw.config.platform.tokenFilePollMs).toBe(1000)
    writeFileSync(path, `${second}\n`)
    await waitFor('the rewritten file\'s token in use', () => currentToken(gw) === second)
    await expectReadWith(gw, second)
  })

  it('follows the Kubernetes symlink swap of a mounted Secret, read again every platform.tokenFilePoll (1 s)', async () => {
    const first = sandbox.issueToken()
    const second = sandbox.issueToken()
    const { secret, gw } = await gatewayOnSecret(first)
    expect(currentToken(gw)).toBe(first)

    expect(gw.config.platform.tokenFilePollMs).toBe(1000)
    secret.swap(second)
    await waitFor('the swapped Secret\'s token in use', () => currentToken(gw) === second)
    await expectReadWith(gw, second)
    const audit = gw.logs.records().filter((r) => r.kind === 'audit' && r.reason === 'file')
    expect(audit).toHaveLength(1)
    expect(audit[0]).toMatchObject({ credential: 'default', oldFingerprint: fingerprint(first, null), newFingerprint: fingerprint(second, null) })
    expectNoSecrets([gw.logs.text()], [first, second])
  })

  it('keeps the current token and logs a warning (operator input, no fault of the gateway) when the file becomes empty', async () => {
    const first = sandbox.issueToken()
    const { secret, gw } = await gatewayOnSecret(first)

    await expectRewriteRefused(gw, secret, '  \n', /token file is empty/, first, { level: 40, credential: 'default' })
  })

  it('keeps the current token and logs a warning, without the content, when the file is rewritten with a line break inside (the start refuses such a file)', async () => {
    const first = sandbox.issueToken()
    const second = sandbox.issueToken()
    const third = sandbox.issueToken()
    const { secret, gw } = await gatewayOnSecret(first)

    // Two tokens where one belongs: the old one left above the new.
    await expectRewriteRefused(gw, secret, `${first}\n${second}\n`, /token file holds control characters/, first, { level: 40, credential: 'default' })
    expectNoSecrets([gw.logs.text()], [first, second])

    secret.swap(third)
    await waitFor('the next good token in use', () => currentToken(gw) === third)
  })

  it('keeps the current token and logs a warning, without the content, when the file is rewritten as a header writes it, in quotes, or with a character no header carries (the start refuses such a file)', async () => {
    const first = sandbox.issueToken()
    const second = sandbox.issueToken()
    const { secret, gw } = await gatewayOnSecret(first)

    // `Bearer <token>` copied from a header: sent as `Bearer Bearer <token>`, refused by the platform.
    await expectRewriteRefused(gw, secret, `Bearer ${second}\n`, /token file starts with "Bearer "/, first, { level: 40, credential: 'default' })

    // A typographic quote pasted after it: no HTTP client sends such a header.
    await expectRewriteRefused(gw, secret, `${second}\u2019\n`, /token file holds a space or a character outside printable ASCII/, first)

    // Copied with its quotes from JSON or YAML: sent as it was, refused by the platform.
    await expectRewriteRefused(gw, secret, `"${second}"\n`, /token file is wrapped in quotes, which no token has/, first)
    expectNoSecrets([gw.logs.text()], [first, second])

    secret.swap(second)
    await waitFor('the next good token in use', () => currentToken(gw) === second)
  })

  it('keeps the current token and logs a warning while the file cannot be read, then takes the next good one', async () => {
    const first = sandbox.issueToken()
    const third = sandbox.issueToken()
    const { secret, gw } = await gatewayOnSecret(first)

    // The new folder lacks the key: `token` now dangles (ENOENT).
    secret.swap(null)
    await waitFor('a warning about the unreadable file', () => records(gw, /token file cannot be read/).length > 0)
    expect(records(gw, /token file cannot be read/)[0]).toMatchObject({ level: 40, code: 'ENOENT' })
    expect(currentToken(gw)).toBe(first)
    expect((await gw.proxy.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200)

    secret.swap(third)
    await waitFor('the next good token in use', () => currentToken(gw) === third)
  })

  it('a token set by PUT /admin/token stays while the file is unchanged; a later change of the file wins', async () => {
    const POLL_MS = 200
    const first = sandbox.issueToken()
    const pasted = sandbox.issueToken()
    const next = sandbox.issueToken()
    const { secret, gw } = await gatewayOnSecret(first, `${TEAMS_YAML}\nplatform:\n  tokenFilePoll: ${POLL_MS}ms\n`)

    expect((await adminCall(gw, 'PUT', '/admin/token', { token: pasted })).statusCode).toBe(200)
    // Several reads of the unchanged file go by: none undoes the PUT.
    await fileReadsDone([gw], 3)
    expect(currentToken(gw)).toBe(pasted)

    secret.swap(next)
    await waitFor('the changed file\'s token in use', () => currentToken(gw) === next)
  })

  it('a missing file stops the start; one that disappears later keeps the token, logged once, not once per poll', async () => {
    const dir = tempDir()
    const path = join(dir, 'token')
    expect(() => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN_FILE: path })).toThrow(
      `PLATFORM_TOKEN_FILE: ${path} cannot be read (ENOENT); it must hold the platform token`,
    )
    const token = sandbox.issueToken()
    writeFileSync(path, token)
    const gw = await gateway({ PLATFORM_TOKEN_FILE: path }, `${TEAMS_YAML}\nplatform:\n  tokenFilePoll: 100ms\n`)
    // Reads of the file started before it goes would succeed after the first failure.
    await new Promise((r) => setTimeout(r, 300))
    rmSync(path)
    await waitFor('a warning about the missing file', () => records(gw, /token file cannot be read/).length > 0)
    // Several reads of the missing file later, still the one line.
    await fileReadsDone([gw], 3)
    expect(records(gw, /token file cannot be read/)).toHaveLength(1)
    expect(currentToken(gw)).toBe(token)
    expect((await campaignList(gw)).statusCode).toBe(200)
  })
})

describe('password login', () => {
  const loginEnv = () => sandboxLoginEnv(sandbox)
  const secretsOf = () => [sandbox.credentials.password, sandbox.credentials.clientSecret, ADMIN_TOKEN]

  it('posts the five fields as JSON (client_id a number) and uses access_token from the reply', async () => {
    const gw = await gateway(loginEnv())
    const logins = sandbox.requests.filter(isTokenRequest)
    expect(logins).toHaveLength(1)
    const login = logins[0] as SandboxRequestRecord
    expect(login.method).toBe('POST')
    expect(login.headers['content-type']).toMatch(/^application\/json/)
    const body = JSON.parse(login.body) as Record<string, unknown>
    expect(body).toEqual({
      grant_type: 'platform_dsp',
      username: sandbox.credentials.username,
      password: sandbox.credentials.password,
      client_id: sandbox.credentials.clientId,
      client_secret: sandbox.credentials.clientSecret,
    })
    expect(typeof body.client_id).toBe('number')

    const token = currentToken(gw) as string
    expect(token.split('.')).toHaveLength(3)
    const res = await expectReadWith(gw, token)
    const info = await adminCall(gw, 'GET', '/admin/token')
    expect(info.json()).toMatchObject({ source: 'login', fingerprint: fingerprint(token, null) })
    expectNoSecrets([info.body, res.body, gw.logs.text()], [...secretsOf(), token])
  })

  it('takes an absolute PLATFORM_TOKEN_URL and a configured grant type', async () => {
    const other = await startSandbox({ grantType: 'acme_dsp' })
    cleanups.push(() => other.close())
    const gw = await gateway({ ...loginEnv(), PLATFORM_TOKEN_URL: `${other.url}/oauth/token`, PLATFORM_GRANT_TYPE: 'acme_dsp' })
    expect(other.countRequests(isTokenRequest)).toBe(1)
    expect(sandbox.countRequests(isTokenRequest)).toBe(0)
    expect(gw.tokens.get('default').current()?.source).toBe('login')
  })

  it.each<{ label: string; env: Record<string, string>; status: number; code: string }>([
    { label: 'a wrong password', env: { PLATFORM_PASSWORD: 'wrong-password-value' }, status: 400, code: 'invalid_grant' },
    { label: 'a wrong username', env: { PLATFORM_USERNAME: 'nobody@sandbox.local' }, status: 400, code: 'invalid_grant' },
    { label: 'a wrong client secret', env: { PLATFORM_CLIENT_SECRET: 'wrong-client-secret-value' }, status: 401, code: 'invalid_client' },
    { label: 'a wrong client id', env: { PLATFORM_CLIENT_ID: '999' }, status: 401, code: 'invalid_client' },
    { label: 'a client id that is not a number', env: { PLATFORM_CLIENT_ID: 'not-a-number' }, status: 400, code: 'invalid_request' },
    { label: 'a grant type the platform does not know', env: { PLATFORM_GRANT_TYPE: 'other_dsp' }, status: 400, code: 'unsupported_grant_type' },
  ])('$label: $status $code is reported with the platform error code and without secrets', async ({ env, status, code }) => {
    const gw = await gateway({ ...loginEnv(), ...env })
    // Start does not fail: the gateway runs degraded (still ready, cached
    // reports can be served) and keeps trying.
    const failedAtStart = records(gw, /platform login failed at start/)
    expect(failedAtStart).toHaveLength(1)
    expect(JSON.stringify(failedAtStart[0])).toContain(`answered ${status} (${code})`)
    // A refusal handled as documented (readiness degraded, 502 to callers): a warn line with its code, no stack.
    expect(failedAtStart[0]).toMatchObject({ level: 40, code: 'GW_PLATFORM_AUTH' })
    expect(JSON.stringify(failedAtStart[0])).not.toContain('"stack"')
    const ready = await gw.admin.inject({ method: 'GET', url: '/readyz' })
    expect(ready.statusCode).toBe(200)
    expect(ready.json()).toMatchObject({ platformToken: { default: 'missing' }, degraded: ['platformToken:default'] })

    const refresh = await adminCall(gw, 'POST', '/admin/token/refresh')
    expect(refresh.statusCode).toBe(502)
    expect(refresh.json()).toMatchObject({ code: 'GW_PLATFORM_AUTH' })
    expect(refresh.json().message).toContain(`answered ${status} (${code})`)
    const call = await campaignList(gw)
    expect(call.statusCode).toBe(502)
    expect(call.json()).toMatchObject({ code: 'GW_PLATFORM_AUTH' })
    expectNoSecrets([refresh.body, call.body, ready.body, gw.logs.text()], [...secretsOf(), ...Object.values(env).filter((v) => v.length > 8)])
  })

  it('an unreachable token endpoint is reported with the network error code', async () => {
    const gw = await gateway({ ...loginEnv(), PLATFORM_TOKEN_URL: 'http://127.0.0.1:1/oauth/token' })
    const refresh = await adminCall(gw, 'POST', '/admin/token/refresh')
    expect(refresh.statusCode).toBe(502)
    expect(refresh.json().message).toMatch(/ECONNREFUSED/)
    expectNoSecrets([refresh.body, gw.logs.text()], secretsOf())
  })
})

describe('expiry', () => {
  /** A token endpoint on loopback answering with an opaque (non-JWT) token and a chosen expires_in. */
  async function opaqueTokenServer(reply: () => Record<string, unknown>, delayMs = 0): Promise<string> {
    const server: Server = createServer((req, res) => {
      req.resume()
      req.on('end', () => {
        setTimeout(() => {
          res.writeHead(200, { 'content-type': 'application/json' })
          res.end(JSON.stringify(reply()))
        }, delayMs)
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())))
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/oauth/token`
  }

  const loginEnv = (tokenUrl: string) => ({
    PLATFORM_USERNAME: 'someone',
    PLATFORM_PASSWORD: 'some-password-value',
    PLATFORM_CLIENT_ID: '7',
    PLATFORM_CLIENT_SECRET: 'some-client-secret-value',
    PLATFORM_TOKEN_URL: tokenUrl,
  })

  it('comes from the JWT exp, and /metrics shows the seconds left', async () => {
    const token = sandbox.issueToken({ ttlSeconds: 3 * 86_400 })
    const exp = jwtExpiry(token) as number
    const gw = await gateway({ PLATFORM_TOKEN: token })
    const info = (await adminCall(gw, 'GET', '/admin/token')).json()
    expect(Date.parse(info.expiresAt)).toBe(exp)
    expect(info.secondsLeft).toBeGreaterThan(3 * 86_400 - 10)
    expect(info.secondsLeft).toBeLessThanOrEqual(3 * 86_400)
    const metrics = await gw.admin.inject({ method: 'GET', url: '/metrics' })
    const left = /gateway_platform_token_seconds_left\{credential="default"\} (\d+)/.exec(metrics.body)
    expect(Number(left?.[1])).toBeGreaterThan(3 * 86_400 - 10)
    expect(metrics.body).toMatch(/gateway_platform_token_usable\{credential="default"\} 1/)
  })

  it('comes from expires_in when the token is not a JWT', async () => {
    const url = await opaqueTokenServer(() => ({ token_type: 'Bearer', access_token: 'opaque-access-token-0001', expires_in: 5000 }))
    const before = Date.now()
    const gw = await gateway(loginEnv(url))
    const state = gw.tokens.get('default').current()
    expect(state?.token).toBe('opaque-access-token-0001')
    expect((state?.expiresAt ?? 0) - (state?.obtainedAt ?? 0)).toBe(5_000_000)
    expect(state?.obtainedAt).toBeGreaterThanOrEqual(before)
    const info = (await adminCall(gw, 'GET', '/admin/token')).json()
    expect(Date.parse(info.expiresAt) - Date.parse(info.obtainedAt)).toBe(5_000_000)
  })

  it('is one year after it was obtained for an opaque token without expires_in', async () => {
    const url = await opaqueTokenServer(() => ({ access_token: 'opaque-access-token-0002' }))
    const gw = await gateway(loginEnv(url))
    const state = gw.tokens.get('default').current()
    expect((state?.expiresAt ?? 0) - (state?.obtainedAt ?? 0)).toBe(DEFAULT_TOKEN_LIFETIME_MS)

    // The same for a pasted opaque static token.
    const pasted = await gateway({ PLATFORM_TOKEN: 'hand-made-dashboard-token-0003' })
    const info = (await adminCall(pasted, 'GET', '/admin/token')).json()
    expect(Date.parse(info.expiresAt) - Date.parse(info.obtainedAt)).toBe(365 * DAY)
  })

  it('warns once at 30 days left and once at 7 days left', async () => {
    const clock = shiftedClock()
    const token = sandbox.issueToken({ ttlSeconds: 40 * 86_400 })
    const gw = await gateway({ PLATFORM_TOKEN: token }, `${TEAMS_YAML}\nplatform:\n  maintenanceInterval: 20ms\n`, clock.now)
    const warnings = () => records(gw, 'platform token expires soon')

    await checksDone([gw], 3)
    expect(warnings()).toHaveLength(0)

    clock.offset = 11 * DAY // 29 days left
    await waitFor('the 30-day warning', () => warnings().length === 1)
    await checksDone([gw], 3)
    expect(warnings()).toHaveLength(1)
    expect(warnings()[0]).toMatchObject({ level: 40, credential: 'default', thresholdDays: 30, daysLeft: 28, fingerprint: fingerprint(token, null) })

    clock.offset = 34 * DAY // 6 days left
    await waitFor('the 7-day warning', () => warnings().length === 2)
    await checksDone([gw], 3)
    expect(warnings()).toHaveLength(2)
    expect(warnings()[1]).toMatchObject({ thresholdDays: 7, daysLeft: 5 })
    expectNoSecrets([gw.logs.text()], [token])
  })

  it('with a password login, fetches a new token 7 days before expiry by default', async () => {
    const clock = shiftedClock()
    const gw = await gateway(
      sandboxLoginEnv(sandbox),
      `${TEAMS_YAML}\nplatform:\n  maintenanceInterval: 20ms\n`,
      clock.now,
    )
    const first = currentToken(gw)
    const expiresAt = gw.tokens.get('default').current()?.expiresAt as number

    clock.offset = expiresAt - Date.now() - 8 * DAY // 8 days left: not yet
    await checksDone([gw], 3)
    expect(sandbox.countRequests(isTokenRequest)).toBe(1)
    expect(currentToken(gw)).toBe(first)

    clock.offset = expiresAt - Date.now() - 6 * DAY // 6 days left
    await waitFor('a re-login 7 days before expiry', () => currentToken(gw) !== first)
    // One login, not one per maintenance tick.
    await checksDone([gw], 3)
    expect(sandbox.countRequests(isTokenRequest)).toBe(2)
    const audit = gw.logs.records().filter((r) => r.kind === 'audit' && r.oldFingerprint === fingerprint(first as string, null))
    expect(audit).toHaveLength(1)
    expect((await campaignList(gw)).statusCode).toBe(200)
  })

  it('a login slower than the maintenance interval is not started twice', async () => {
    let logins = 0
    const url = await opaqueTokenServer(() => ({ access_token: `opaque-access-token-1${++logins}00`, expires_in: 3600 }), 200)
    const clock = shiftedClock()
    const gw = await gateway(loginEnv(url), `${TEAMS_YAML}\nplatform:\n  maintenanceInterval: 20ms\n`, clock.now)
    expect(logins).toBe(1)
    // A one-hour token is due for its re-login a minute after it was obtained.
    clock.offset = 61_000
    await waitFor('the second login\'s token in use', () => currentToken(gw) === 'opaque-access-token-1200')
    await checksDone([gw], 3)
    expect(logins).toBe(2)
  })

  it('the re-login lead time is configurable (platform.refreshBefore)', async () => {
    const clock = shiftedClock()
    const gw = await gateway(
      sandboxLoginEnv(sandbox),
      `${TEAMS_YAML}\nplatform:\n  maintenanceInterval: 20ms\n  refreshBefore: 30d\n`,
      clock.now,
    )
    const first = currentToken(gw)
    const expiresAt = gw.tokens.get('default').current()?.expiresAt as number
    clock.offset = expiresAt - Date.now() - 29 * DAY
    await waitFor('a re-login 30 days before expiry', () => currentToken(gw) !== first)
  })
})
