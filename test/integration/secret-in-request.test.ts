import { mkdtempSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { sha256Hex } from '../../src/config/secret-digest.js'
import { KEYS, TEAMS_YAML, sandboxLoginEnv, testConfig } from '../helpers/build-gateway.js'
import { useGateway, useRedis, useSandbox } from '../helpers/fixtures.js'
import { eachSecretAlone } from '../helpers/suspensions.js'

// Contract, "Calling the proxy listener": only the gateway's serialization of what it
// checked reaches the platform. A secret of the gateway's a caller pasted into a request
// (the admin token, the platform's token, the login's password or client secret) is refused
// as a team key is: the platform, the cache's keys and the log never hold it.

const ADMIN_TOKEN = 'admin-token-for-secrets-0123456789'
// An operator's token of ADMIN_TOKENS_FILE: the gateway holds its digest alone.
const NAMED_TOKEN = 'named.operator~token_0123456789'
// Another, of the characters a request id may hold: the log cannot find it either.
const PLAIN_NAMED_TOKEN = 'plain-operator-token_0123456789'
const tokensFile = join(mkdtempSync(join(tmpdir(), 'rgw-secrets-')), 'admin-tokens')
writeFileSync(tokensFile, `ops:sha256:${sha256Hex(NAMED_TOKEN)}\nplain:sha256:${sha256Hex(PLAIN_NAMED_TOKEN)}\n`)
// A space inside: the query's `+` spelling of it is one the platform decodes.
const GATEWAY_SECRET = 'gateway secret with spaces 0123456789'
const REPORT = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-07'

const sandbox = useSandbox()
const redis = useRedis()
const gw = useGateway(() =>
  testConfig({ PLATFORM_BASE_URL: sandbox.url, ...sandboxLoginEnv(sandbox), ADMIN_TOKEN, ADMIN_TOKENS_FILE: tokensFile, REDIS_URL: redis.server.url, GATEWAY_SECRET, LOG_LEVEL: 'debug' }, TEAMS_YAML),
  { listen: true },
)

eachSecretAlone(() => gw)

const platformToken = () => gw.tokens.get('default').current()?.token as string
const secrets = (): [string, string][] => [
  ['ADMIN_TOKEN', ADMIN_TOKEN],
  ['the platform token', platformToken()],
  ['PLATFORM_PASSWORD', sandbox.credentials.password],
  ['PLATFORM_CLIENT_SECRET', sandbox.credentials.clientSecret],
  ['GATEWAY_SECRET', GATEWAY_SECRET],
  ['a named token of ADMIN_TOKENS_FILE', NAMED_TOKEN],
]

// The gateway's login made, so that every request the platform sees after is a caller's.
beforeAll(async () => {
  expect((await gw.proxy.inject({ method: 'POST', url: '/api/v1/campaign/get', headers: { 'x-api-key': KEYS.all }, payload: { userId: 101 } })).statusCode).toBe(200)
  sandbox.clearRequests()
})

/** Every byte of `text` percent-encoded, in upper- or lower-case hex. */
const allEncoded = (text: string, lower = false) => [...Buffer.from(text)].map((b) => `%${b.toString(16).padStart(2, '0')[lower ? 'toLowerCase' : 'toUpperCase']()}`).join('')
/** Each other character percent-encoded, and a space as `+`. */
const partlyEncoded = (text: string) => [...text].map((c, i) => (c === ' ' ? '+' : i % 2 === 0 ? allEncoded(c) : encodeURIComponent(c))).join('')

// Where a caller may paste a value into a query, and how the platform decodes it.
const QUERIES: [string, (s: string) => string][] = [
  ['a value', (s) => `q=${encodeURIComponent(s)}`],
  ['a value every byte encoded', (s) => `q=${allEncoded(s)}`],
  ['a value in lower-case escapes', (s) => `q=${allEncoded(s, true)}`],
  ['a value partly encoded, + for a space', (s) => `q=${partlyEncoded(s)}`],
  ['a value after text', (s) => `q=${encodeURIComponent(`Bearer ${s}`)}`],
  ['a Laravel array value a[]=', (s) => `a[]=1&a[]=${encodeURIComponent(s)}`],
  ['a Laravel keyed value a[x]=', (s) => `a[x]=${encodeURIComponent(s)}`],
  ['a repeated parameter', (s) => `q=1&q=${encodeURIComponent(s)}&q=2`],
]

/** What the platform was sent but the gateway's own authorization: its paths, queries, bodies and other headers. */
function platformSaw(): string {
  return JSON.stringify(sandbox.requests.map((r) => ({ path: r.path, query: r.query, body: r.body, headers: { ...r.headers, authorization: undefined } })))
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

/** What the proxy listener answers `head`, sent on a connection of its own, once it closes the connection. */
function rawAnswer(head: string): Promise<string> {
  const { hostname, port } = new URL(gw.url as string)
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    const socket = connect({ host: hostname, port: Number(port) }, () => socket.end(head))
    socket.on('data', (chunk: Buffer) => chunks.push(chunk)).on('error', reject).on('close', () => resolve(Buffer.concat(chunks).toString('latin1')))
  })
}

/** Every key in Redis, and every string value. */
async function redisHolds(): Promise<string> {
  const keys = await redis.client.keys('*')
  const values = await Promise.all(keys.map(async (key) => ((await redis.client.type(key)) === 'string' ? await redis.client.get(key) : '')))
  return JSON.stringify([keys, values])
}

async function reportKeys(): Promise<number> {
  return (await redis.client.keys('*report:v*')).length
}

function expectRefused(res: { statusCode: number; json: () => unknown; body: string }, where: string, secret: string) {
  expect(res.statusCode).toBe(400)
  // What is done and what to do: the team is suspended from this refusal on (its next call is the 403).
  const said = `^${where}: holds a secret of the gateway's \\(an admin or platform credential\\); it is never sent to the platform \\(the value is not shown\\)\\. Team all is suspended from now for \\d+ s \\(limits\\.secretSuspension\\), every request with its keys refused: tell the gateway's operators, who replace the secret and lift the suspension$`
  expect(res.json()).toMatchObject({ code: 'GW_BAD_REQUEST', message: expect.stringMatching(new RegExp(said)) })
  expect(res.body).not.toContain(secret)
  expect(res.body).not.toContain(encodeURIComponent(secret))
}

describe('a secret of the gateway in a request', () => {
  describe.each([
    ['a report read', REPORT],
    ['a proxied call', '/api/v1/campaign/list?userId=101'],
  ])('%s', (_kind, url) => {
    it.each(QUERIES)('is refused in %s, for every secret, and reaches neither the platform nor Redis', async (_how, spell) => {
      const reports = await reportKeys()
      for (const [name, secret] of secrets()) {
        const res = await gw.proxy.inject({ method: 'GET', url: `${url}&${spell(secret)}`, headers: { 'x-api-key': KEYS.all } })
        expectRefused(res, 'request target', secret)
        expect(sandbox.requests, name).toHaveLength(0)
      }
      expect(await reportKeys()).toBe(reports)
      const held = await redisHolds()
      for (const [, secret] of secrets()) expect(held).not.toContain(secret)
    })
  })

  it.each(['user-agent', 'accept-language'])('is refused in %s, a header the gateway passes on', async (header) => {
    for (const [, secret] of secrets()) {
      const res = await gw.proxy.inject({ method: 'GET', url: '/api/v1/campaign/list?userId=101', headers: { 'x-api-key': KEYS.all, [header]: `client/1.0 (${secret})` } })
      expectRefused(res, header, secret)
    }
    expect(sandbox.requests).toHaveLength(0)
  })

  it.each([
    ['user-agent', '2026-02-07'],
    ['accept-language', '2026-02-08'],
  ])("is no refusal in a report read's %s, which no fill sends on", async (header, dateTo) => {
    for (const [, secret] of secrets()) {
      const res = await gw.proxy.inject({ method: 'GET', url: `/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-02-01&dateTo=${dateTo}`, headers: { 'x-api-key': KEYS.all, [header]: `client/1.0 (${secret})` } })
      expect(res.statusCode).toBe(200)
    }
    expect(sandbox.requests.length).toBeGreaterThan(0)
    for (const request of sandbox.requests) expect(JSON.stringify(request.headers)).not.toContain('client/1.0')
  })

  it.each([
    ['a report read', REPORT],
    ['a proxied call', '/api/v1/campaign/list?userId=101'],
  ])('is refused in x-request-id, which the platform gets with the calls made for it: %s', async (_kind, url) => {
    for (const [, secret] of secrets()) {
      const res = await gw.proxy.inject({ method: 'GET', url, headers: { 'x-api-key': KEYS.all, 'x-request-id': secret } })
      expectRefused(res, 'x-request-id', secret)
    }
    expect(sandbox.requests).toHaveLength(0)
  })

  it('in a refused x-request-id is neither echoed nor logged: the answer and its log lines carry a fresh id', async () => {
    const ids = [...secrets().map(([, secret]) => secret), PLAIN_NAMED_TOKEN]
    for (const secret of ids) {
      for (const url of [REPORT, '/api/v1/campaign/list?userId=101']) {
        const res = await gw.proxy.inject({ method: 'GET', url, headers: { 'x-api-key': KEYS.all, 'x-request-id': secret } })
        expectRefused(res, 'x-request-id', secret)
        expect(res.headers['x-request-id']).toMatch(UUID)
      }
      // The admin listener names every call by an id of its own (decisions/secret-guesses.md).
      const admin = await gw.admin.inject({ method: 'GET', url: '/admin/usage', headers: { authorization: 'Bearer wrong-admin-token-0123456789', 'x-request-id': secret } })
      expect(admin.statusCode).toBe(401)
      expect(admin.headers['x-request-id']).toMatch(UUID)
    }
    // An answer written before the router (a CONNECT) names the request by the same id.
    for (const secret of ids) {
      const answer = await rawAnswer(`CONNECT example.com:443 HTTP/1.1\r\nhost: example.com:443\r\nx-request-id: ${secret}\r\n\r\n`)
      expect(answer).toMatch(/^HTTP\/1\.1 405 /)
      expect(answer).not.toContain(secret)
    }
    expect(sandbox.requests).toHaveLength(0)
    expect(gw.logs.text()).not.toContain(PLAIN_NAMED_TOKEN)
  })

  it('is refused in a form body and in a JSON body, escaped or not', async () => {
    for (const [, secret] of secrets()) {
      const form = await gw.proxy.inject({ method: 'POST', url: '/api/v1/campaign/get', headers: { 'x-api-key': KEYS.all, 'content-type': 'application/x-www-form-urlencoded' }, payload: `userId=101&note=${allEncoded(secret)}` })
      expectRefused(form, 'body', secret)
      const escaped = JSON.stringify({ userId: 101, note: secret }).replace(/[a-z]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
      const json = await gw.proxy.inject({ method: 'POST', url: '/api/v1/campaign/get', headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json' }, payload: escaped })
      expectRefused(json, 'body', secret)
    }
    expect(sandbox.requests).toHaveLength(0)
  })

  it('holds for a platform token rotated at run time: the new one and the one it replaced', async () => {
    const replaced = platformToken()
    const next = sandbox.issueToken()
    const put = await gw.admin.inject({ method: 'PUT', url: '/admin/token', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { token: next } })
    expect(put.statusCode).toBe(200)
    expect(platformToken()).toBe(next)
    sandbox.clearRequests()
    for (const token of [next, replaced]) {
      const res = await gw.proxy.inject({ method: 'GET', url: `${REPORT}&q=${encodeURIComponent(token)}`, headers: { 'x-api-key': KEYS.all } })
      expectRefused(res, 'request target', token)
    }
    expect(sandbox.requests).toHaveLength(0)
  })

  it('is refused on a real connection too, and the platform is called for the same request without it', async () => {
    const read = (query: string) => fetch(`${gw.url}${REPORT}&${query}`, { headers: { 'x-api-key': KEYS.all } })
    const proxied = (agent: string) => fetch(`${gw.url}/api/v1/campaign/get`, { method: 'POST', headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json', 'user-agent': agent }, body: JSON.stringify({ userId: 101 }) })
    for (const [, secret] of secrets()) {
      for (const res of [await read(`q=${allEncoded(secret)}`), await proxied(`client/1.0 ${secret}`)]) {
        expect(res.status).toBe(400)
        expect(await res.text()).not.toContain(secret)
      }
    }
    expect(sandbox.requests).toHaveLength(0)
    expect((await read('q=plain')).status).toBe(200)
    expect((await proxied('client/1.0')).status).toBe(200)
    expect(sandbox.requests.map((r) => r.path)).toEqual(['/api/v1/report/campaigns/get', '/api/v1/campaign/get'])
    for (const [, secret] of secrets()) expect(platformSaw()).not.toContain(secret)
  })

  it('leaves no secret in any log line', () => {
    const text = gw.logs.text()
    // A named token of ADMIN_TOKENS_FILE too, known by its digest alone: a caller's path or
    // user-agent holding one is written [REDACTED] whole.
    for (const [, secret] of secrets()) {
      expect(text).not.toContain(secret)
      expect(text).not.toContain(encodeURIComponent(secret))
    }
  })
})
