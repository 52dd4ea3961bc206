import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { sha256Hex } from '../../src/config/secret-digest.js'
import { KEYS, TEAMS_YAML, sandboxLoginEnv, testConfig } from '../helpers/build-gateway.js'
import { useGateway, useSandbox } from '../helpers/fixtures.js'
import { eachSecretAlone } from '../helpers/suspensions.js'

// A secret of the gateway's in a request is refused (secret-in-request.test.ts), so whether
// a request is refused so tells its caller whether its text holds a secret: a guess at it,
// and the search is for every window of the text, so one request guesses hundreds of
// candidates. Only a caller with a team key may learn it (its 400, as before); a caller
// without one, on the proxy listener or the admin listener (a viewer's token, a wrong
// token, none), gets the same answer whatever its text holds: the platform's password and
// the admin tokens are not guessed through the gateway faster than the platform and the
// admin listener's own bound of guesses allow.

const ADMIN_TOKEN = 'oracle-admin-token-0123456789abcdef'
const VIEWER_TOKEN = 'oracle-viewer-token-0123456789abcdef'
// An operator's token of ADMIN_TOKENS_FILE (its digest alone is known), of the characters an x-request-id may hold.
const NAMED_TOKEN = 'named-operator-token_0123456789'
const tokensFile = join(mkdtempSync(join(tmpdir(), 'rgw-oracle-')), 'admin-tokens')
writeFileSync(tokensFile, `ops:sha256:${sha256Hex(NAMED_TOKEN)}\n`)

const sandbox = useSandbox()
const gw = useGateway(() => testConfig({ PLATFORM_BASE_URL: sandbox.url, ...sandboxLoginEnv(sandbox), ADMIN_TOKEN, ADMIN_VIEWER_TOKEN: VIEWER_TOKEN, ADMIN_TOKENS_FILE: tokensFile, LOG_LEVEL: 'info' }, TEAMS_YAML), { listen: true })

eachSecretAlone(() => gw)

/** A text of the same length and kinds of characters as `secret` that is none of the gateway's secrets. */
function decoyOf(secret: string, n = 0): string {
  return [...secret].map((c, i) => (i === secret.length - 1 - (n % secret.length) ? (/[0-9]/.test(c) ? (c === '9' ? '8' : '9') : c === 'x' ? 'y' : 'x') : c)).join('').slice(0, secret.length)
}

/** The gateway's secrets a guesser is after: the login's password and client secret, and the admin tokens. */
const secrets = (): [string, string][] => [
  ['PLATFORM_PASSWORD', sandbox.credentials.password],
  ['PLATFORM_CLIENT_SECRET', sandbox.credentials.clientSecret],
  ['ADMIN_TOKEN', ADMIN_TOKEN],
  ['a named token of ADMIN_TOKENS_FILE', NAMED_TOKEN],
]

/** What a caller can tell of an answer: its status, its code, and whether it named the request by the caller's x-request-id. */
interface Seen {
  status: number
  code: string | undefined
  echoed: boolean
}

async function overHttp(path: string, headers: Record<string, string>): Promise<Seen> {
  const res = await fetch(`${gw.url}${path}`, { headers })
  const body = (await res.json()) as { code?: string }
  return { status: res.status, code: body.code, echoed: res.headers.get('x-request-id') === headers['x-request-id'] }
}

async function onAdmin(path: string, headers: Record<string, string>): Promise<Seen> {
  const res = await gw.admin.inject({ method: 'GET', url: path, headers })
  return { status: res.statusCode, code: (res.json() as { code?: string }).code, echoed: res.headers['x-request-id'] === headers['x-request-id'] }
}

const KEYLESS: [string, Record<string, string>][] = [
  ['no key', {}],
  ['an unknown key', { 'x-api-key': 'rgw_not_a_key_of_any_team_000000000000000' }],
]

describe('a caller without a team key guessing at the gateway\'s secrets on the proxy listener', () => {
  it.each(KEYLESS)('with %s, is answered the same whether its target holds a secret or not', async (_who, headers) => {
    for (const [name, secret] of secrets()) {
      const guessed = await overHttp(`/api/v1/campaign/list?userId=101&q=${encodeURIComponent(secret)}`, headers)
      const missed = await overHttp(`/api/v1/campaign/list?userId=101&q=${encodeURIComponent(decoyOf(secret))}`, headers)
      expect(guessed, name).toEqual(missed)
      expect(guessed, name).toMatchObject({ status: 401, code: 'GW_UNAUTHORIZED' })
    }
  })

  it('learns nothing from one target holding a hundred candidates, the password among them', async () => {
    const password = sandbox.credentials.password
    const candidates = Array.from({ length: 100 }, (_, i) => decoyOf(password, i))
    const misses = await overHttp(`/api/v1/campaign/list?userId=101&${candidates.map((c) => `q=${encodeURIComponent(c)}`).join('&')}`, {})
    const hit = await overHttp(`/api/v1/campaign/list?userId=101&${[...candidates, password].map((c) => `q=${encodeURIComponent(c)}`).join('&')}`, {})
    expect(hit).toEqual(misses)
  })

  it.each(KEYLESS)('with %s, is answered the same whether its x-request-id holds a secret or not', async (_who, headers) => {
    for (const [name, secret] of secrets()) {
      if (!/^[\w.:-]+$/.test(secret)) continue
      const guessed = await overHttp('/api/v1/campaign/list?userId=101', { ...headers, 'x-request-id': secret })
      const missed = await overHttp('/api/v1/campaign/list?userId=101', { ...headers, 'x-request-id': decoyOf(secret) })
      expect(guessed, name).toEqual(missed)
      expect(guessed.status, name).toBe(401)
    }
    expect(sandbox.requests).toHaveLength(0)
  })
})

// Where a refusal of the target names what the caller wrote (a parameter's name), before the key is read.
// `plain`: the refusal comes for a plain name only (a secret of other characters is refused as a name not plain).
const NAMED_IN_TARGET: [string, (guess: string) => string, boolean][] = [
  ['a parameter name that is not plain', (guess) => `/api/v1/campaign/list?userId=101&x${encodeURIComponent(guess)}!=1`, false],
  ['a parameter name that is not UTF-8', (guess) => `/api/v1/campaign/list?userId=101&x${encodeURIComponent(guess)}%FF=1`, false],
  ['a parameter whose value is not UTF-8', (guess) => `/api/v1/campaign/list?userId=101&${encodeURIComponent(guess)}=%FF`, true],
  ['a parameter whose value holds a control character', (guess) => `/api/v1/campaign/list?userId=101&${encodeURIComponent(guess)}=%01`, true],
]

async function answerOver(path: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  const res = await fetch(`${gw.url}${path}`, { headers })
  return { status: res.status, body: await res.text() }
}

describe('a caller guessing at the gateway\'s secrets where a refusal of its target names what it wrote', () => {
  it.each(NAMED_IN_TARGET)('in %s: answered the same whether it holds a secret or not, with a key or without', async (_where, target, plain) => {
    for (const headers of [{}, { 'x-api-key': KEYS.growth }] as Record<string, string>[]) {
      for (const [name, secret] of secrets()) {
        if (plain && !/^[A-Za-z0-9_.-]+$/.test(secret)) continue
        const guessed = await answerOver(target(secret), headers)
        const missed = await answerOver(target(decoyOf(secret)), headers)
        expect(guessed.status, name).toBe(400)
        expect(guessed.body.replaceAll(secret, '<sent>'), name).toBe(missed.body.replaceAll(decoyOf(secret), '<sent>'))
      }
    }
    expect(sandbox.requests).toHaveLength(0)
  })
})

describe('an admin viewer guessing at the gateway\'s secrets as a parameter an admin call does not take', () => {
  it('is answered the same whether the name holds a secret or not', async () => {
    for (const [name, secret] of secrets()) {
      for (const target of [(guess: string) => `/admin/status?${encodeURIComponent(guess)}=1`, (guess: string) => `/admin/status?x${encodeURIComponent(guess)}=1`]) {
        const guessed = await gw.admin.inject({ method: 'GET', url: target(secret), headers: { authorization: `Bearer ${VIEWER_TOKEN}` } })
        const missed = await gw.admin.inject({ method: 'GET', url: target(decoyOf(secret)), headers: { authorization: `Bearer ${VIEWER_TOKEN}` } })
        expect(guessed.statusCode, name).toBe(400)
        expect(guessed.body.replaceAll(secret, '<sent>'), name).toBe(missed.body.replaceAll(decoyOf(secret), '<sent>'))
      }
    }
  })
})

describe('a caller guessing at the gateway\'s secrets through the admin listener\'s x-request-id', () => {
  it.each([
    ['no token', {}],
    ['a wrong token', { authorization: 'Bearer wrong-admin-token-0123456789abcdef' }],
    ['a viewer\'s token', { authorization: `Bearer ${VIEWER_TOKEN}` }],
  ] as [string, Record<string, string>][])('with %s, is answered the same whether the id holds a secret or not', async (_who, headers) => {
    for (const [name, secret] of secrets()) {
      if (!/^[\w.:-]+$/.test(secret)) continue
      const guessed = await onAdmin('/admin/status', { ...headers, 'x-request-id': secret })
      const missed = await onAdmin('/admin/status', { ...headers, 'x-request-id': decoyOf(secret) })
      expect(guessed, name).toEqual(missed)
    }
  })
})

describe('a caller with a team key', () => {
  it('is still refused a secret in its target, and its x-request-id: nothing of it reaches the platform', async () => {
    for (const [name, secret] of secrets()) {
      const target = await overHttp(`/api/v1/campaign/list?userId=101&q=${encodeURIComponent(secret)}`, { 'x-api-key': KEYS.all })
      expect(target, name).toMatchObject({ status: 400, code: 'GW_BAD_REQUEST' })
      if (!/^[\w.:-]+$/.test(secret)) continue
      const id = await overHttp('/api/v1/campaign/list?userId=101', { 'x-api-key': KEYS.all, 'x-request-id': secret })
      expect(id, name).toEqual({ status: 400, code: 'GW_BAD_REQUEST', echoed: false })
    }
    expect(sandbox.requests).toHaveLength(0)
  })
})

// Where an admin answer, or an audit line a viewer reads, names what the caller wrote: a
// path's name, a query's value, the Host. Each was written `[REDACTED]` when it held a
// secret of the gateway's (the answers' scrub, the log's), and as sent otherwise.
const VIEWER_ECHOES: [string, 'GET' | 'PUT' | 'POST' | 'DELETE', (guess: string) => string][] = [
  ['a credential named in the path', 'GET', (guess) => `/admin/credentials/${encodeURIComponent(guess)}/token`],
  ['a change of a credential named in the path', 'PUT', (guess) => `/admin/credentials/${encodeURIComponent(guess)}/token`],
  ['a login of a credential named in the path', 'POST', (guess) => `/admin/credentials/${encodeURIComponent(guess)}/token/refresh`],
  ['a suspension lifted for a team named in the path', 'DELETE', (guess) => `/admin/suspensions/${encodeURIComponent(guess)}`],
  ['the usage of a team named in the query', 'GET', (guess) => `/admin/usage?team=${encodeURIComponent(guess)}`],
  ['the keys of a team named in the query', 'GET', (guess) => `/admin/keys?team=${encodeURIComponent(guess)}`],
  ['a cached report looked up by a URL', 'GET', (guess) => `/admin/cache/entry?url=${encodeURIComponent(`/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-02&q=${guess}`)}`],
  ['a cache entry\'s URL naming an account that is no number', 'GET', (guess) => `/admin/cache/entry?url=${encodeURIComponent(`/api/v1/report/campaigns/get?advertiserId=${guess}&dateFrom=2026-01-01&dateTo=2026-01-02`)}`],
  ['a cache entry\'s URL naming a day that is no date', 'GET', (guess) => `/admin/cache/entry?url=${encodeURIComponent(`/api/v1/report/campaigns/get?advertiserId=101&dateFrom=${guess}&dateTo=2026-01-02`)}`],
]

/** An admin answer as its caller compares two: status and body, the text it sent as `<sent>`. */
async function adminAnswer(method: 'GET' | 'PUT' | 'POST' | 'DELETE', url: string, headers: Record<string, string>, sent: string): Promise<{ status: number; body: string }> {
  const res = await gw.admin.inject({ method, url, headers, ...(method === 'PUT' ? { payload: {} } : {}) })
  return { status: res.statusCode, body: res.body.replaceAll(encodeURIComponent(sent), '<sent>').replaceAll(sent, '<sent>') }
}

describe('an admin viewer guessing at the gateway\'s secrets where an admin answer names what it wrote', () => {
  it.each(VIEWER_ECHOES)('in %s: answered the same whether it holds a secret or not', async (_where, method, target) => {
    for (const [name, secret] of secrets()) {
      const headers = { authorization: `Bearer ${VIEWER_TOKEN}` }
      const guessed = await adminAnswer(method, target(secret), headers, secret)
      const missed = await adminAnswer(method, target(decoyOf(secret)), headers, decoyOf(secret))
      expect(guessed, name).toEqual(missed)
    }
  })
})

describe('a caller without a token guessing at the gateway\'s secrets through the admin listener\'s Host', () => {
  it('is answered the same whether the name holds a secret or not', async () => {
    for (const [name, secret] of secrets()) {
      if (!/^[A-Za-z0-9.-]+$/.test(secret)) continue
      const guessed = await adminAnswer('GET', '/metrics', { host: secret }, secret)
      const missed = await adminAnswer('GET', '/metrics', { host: decoyOf(secret) }, decoyOf(secret))
      expect(guessed.status, name).toBe(421)
      expect(guessed, name).toEqual(missed)
    }
  })
})

describe('an admin viewer reading the audit lines of calls refused to a guesser', () => {
  it('reads the same lines whether what the guesser wrote held a secret or not', async () => {
    const headers = { authorization: `Bearer ${VIEWER_TOKEN}` }
    const auditOf = async (guess: string, from: string): Promise<Record<string, unknown>[]> => {
      await gw.admin.inject({ method: 'GET', url: `/admin/x${guess}`, remoteAddress: from })
      await gw.admin.inject({ method: 'DELETE', url: `/admin/suspensions/${guess}`, headers, remoteAddress: from })
      await gw.admin.inject({ method: 'GET', url: '/metrics', headers: { host: guess }, remoteAddress: from })
      const lines = (await gw.admin.inject({ method: 'GET', url: '/admin/audit', headers })).json() as { lines: Record<string, unknown>[] }
      return lines.lines.filter((l) => l.source === from).map(({ time: _t, reqId: _r, pid: _p, ...l }) => JSON.parse(JSON.stringify(l).replaceAll(guess, '<sent>')) as Record<string, unknown>)
    }
    for (const [i, [name, secret]] of secrets().entries()) {
      if (!/^[A-Za-z0-9.-]+$/.test(secret)) continue
      const guessed = await auditOf(secret, `127.0.1.${i}`)
      const missed = await auditOf(decoyOf(secret), `127.0.2.${i}`)
      expect(guessed.length, name).toBe(3)
      expect(guessed.map(({ source: _s, ...l }) => l), name).toEqual(missed.map(({ source: _s, ...l }) => l))
    }
  })
})
