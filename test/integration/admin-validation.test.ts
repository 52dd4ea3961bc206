import { gzipSync } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH, WEEK_BY_DATE, sandboxLoginEnv, teamsYamlWith, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'

// Every admin call checks what it is sent against its route's schema (contract, "Admin
// listener"): a parameter it does not take, a malformed one, or a body where it takes
// none is 400 GW_BAD_REQUEST naming it, and nothing is changed. A typo in a purge's
// parameter used to be a purge of everything. A purge asked as a dry run drops nothing.

const ADMIN_TOKEN = 'admin-validation-admin-token-0123456789'
const REPORT = `${REPORT_PATH}?${WEEK_BY_DATE}`

const sandbox = useSandbox()
const redis = useRedis()
const gateways = useGateways()

// The calls here wait on Redis' answer, however slow a loaded machine makes it: a command
// timeout longer than any test's (the test's timeout is the bound) rather than the default
// 250 ms, past which a lift is answered as reaching this replica until Redis answers again.
const YAML = teamsYamlWith({ redis: { commandTimeout: '60s' } })

async function gateway(withRedis: boolean): Promise<TestGateway> {
  return gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, ...sandboxLoginEnv(sandbox), ADMIN_TOKEN, ...(withRedis ? { REDIS_URL: redis.server.url } : {}) }, YAML))
}

const admin = (gw: TestGateway, method: 'GET' | 'PUT' | 'POST' | 'DELETE', url: string, extra: { payload?: string | object; headers?: Record<string, string> } = {}) =>
  gw.admin.inject({ method, url, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...extra.headers }, ...(extra.payload === undefined ? {} : { payload: extra.payload }) })

async function read(gw: TestGateway): Promise<string> {
  const res = await gw.proxy.inject({ method: 'GET', url: REPORT, headers: { 'x-api-key': KEYS.all } })
  expect(res.statusCode).toBe(200)
  return res.headers['x-cache'] as string
}

describe.each([
  ['with Redis', true],
  ['without Redis', false],
])('admin calls %s', (_name, withRedis) => {
  it('refuses a purge whose parameter is misspelt, naming it, and drops nothing', async () => {
    const gw = await gateway(withRedis)
    expect(await read(gw)).toBe('MISS')
    for (const url of ['/admin/cache?advertiserID=101', '/admin/cache?advertiser=101', '/admin/cache?advertiserId=101&all=1']) {
      const res = await admin(gw, 'DELETE', url)
      expect(res.statusCode, url).toBe(400)
      const bad = [...new URL(url, 'http://x').searchParams.keys()].find((k) => k !== 'advertiserId') as string
      expect(res.json(), url).toMatchObject({ code: 'GW_BAD_REQUEST', message: expect.stringContaining(`${bad}: not a parameter of this call (it takes advertiserId, dryRun)`) })
    }
    expect(await read(gw)).toBe('HIT')
    expect(gw.logs.records().filter((r) => r.action === 'purge')).toEqual([])
  })

  it('refuses a malformed advertiser, and a body sent to a purge that takes none', async () => {
    const gw = await gateway(withRedis)
    await read(gw)
    for (const id of ['x', '0', '-1', '1.5', '1e3', '1234567890123456']) {
      const res = await admin(gw, 'DELETE', `/admin/cache?advertiserId=${id}`)
      expect(res.statusCode, id).toBe(400)
      expect(res.json().message, id).toMatch(/^advertiserId: must be a positive integer, digits only/)
    }
    const form = await admin(gw, 'DELETE', '/admin/cache', { payload: 'advertiserId=101', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
    expect(form.statusCode).toBe(400)
    expect(form.json()).toMatchObject({ code: 'GW_BAD_REQUEST', message: 'body: DELETE /admin/cache takes no body; nothing was changed' })
    const json = await admin(gw, 'DELETE', '/admin/cache', { payload: { advertiserId: 101 } })
    expect(json.statusCode).toBe(400)
    expect(await read(gw)).toBe('HIT')
  })

  it('answers a call that takes no body and is sent none, whatever content-type a client sends by habit, as the proxy listener does', async () => {
    // `curl -H 'content-type: application/json' -X DELETE …` in an operator's alias or
    // script, or a client with a default content-type header: nothing is sent, so there is
    // no JSON that is "not valid".
    const gw = await gateway(withRedis)
    await read(gw)
    for (const headers of [{ 'content-type': 'application/json' }, { 'content-type': 'application/json', 'content-length': '0' }, { 'content-type': 'application/x-www-form-urlencoded' }] as Record<string, string>[]) {
      const tag = JSON.stringify(headers)
      const dry = await admin(gw, 'DELETE', '/admin/cache?dryRun=1', { headers })
      expect([dry.statusCode, dry.json()], tag).toEqual([200, { purged: 'all', dryRun: true, wouldDrop: 1 }])
      const lift = await admin(gw, 'DELETE', '/admin/suspensions/growth', { headers })
      expect([lift.statusCode, lift.json()], tag).toEqual([200, { team: 'growth', lifted: false, replicas: withRedis ? 'all' : 'this replica only' }])
      const refresh = await admin(gw, 'POST', '/admin/token/refresh', { headers })
      expect(refresh.statusCode, tag).toBe(200)
    }
    // A call that takes a body still needs one.
    const noToken = await admin(gw, 'PUT', '/admin/token', { headers: { 'content-type': 'application/json' } })
    expect([noToken.statusCode, noToken.json().message]).toEqual([400, 'body: not valid JSON'])
    expect(await read(gw)).toBe('HIT')
  })

  it('answers a path no admin call serves 404, with a body or without: the body is no slip of a call there is', async () => {
    const gw = await gateway(withRedis)
    for (const payload of [undefined, { advertiserId: 101 }]) {
      const res = await admin(gw, 'POST', '/admin/cache/purge', payload === undefined ? {} : { payload })
      expect([res.statusCode, res.json().code], JSON.stringify(payload)).toEqual([404, 'GW_NOT_FOUND'])
    }
  })

  it('answers a dry run with what the purge would drop, and drops nothing; the purge then drops that', async () => {
    const gw = await gateway(withRedis)
    await read(gw)
    const dry = await admin(gw, 'DELETE', '/admin/cache?advertiserId=101&dryRun=1')
    expect(dry.json()).toEqual({ purged: 'advertiser', advertiserId: 101, dryRun: true, wouldDrop: 1 })
    expect((await admin(gw, 'DELETE', '/admin/cache?advertiserId=102&dryRun=true')).json()).toEqual({ purged: 'advertiser', advertiserId: 102, dryRun: true, wouldDrop: 0 })
    expect((await admin(gw, 'DELETE', '/admin/cache?dryRun=1')).json()).toEqual({ purged: 'all', dryRun: true, wouldDrop: 1 })
    expect(await read(gw)).toBe('HIT')
    expect(gw.logs.records().filter((r) => r.action === 'purge').map((r) => [r.outcome, r.scope, r.actor])).toEqual([
      ['dry-run', 'advertiser', 'admin'],
      ['dry-run', 'advertiser', 'admin'],
      ['dry-run', 'all', 'admin'],
    ])
    expect((await admin(gw, 'DELETE', '/admin/cache?advertiserId=101&dryRun=0')).json()).toEqual({ purged: 'advertiser', advertiserId: 101, dryRun: false, dropped: 1 })
    expect(await read(gw)).toBe('MISS')
  })
})

describe('every admin call', () => {
  it('refuses a parameter it does not take with 400 naming it, whatever the route', async () => {
    const gw = await gateway(true)
    const doc = (await admin(gw, 'GET', '/admin/openapi.json')).json<{ paths: Record<string, Record<string, unknown>> }>()
    const calls = Object.entries(doc.paths)
      .filter(([path]) => path.startsWith('/admin/'))
      .flatMap(([path, item]) => Object.keys(item).map((method) => [method.toUpperCase() as 'GET' | 'PUT' | 'POST' | 'DELETE', path.replace('{name}', 'default').replace('{team}', 'growth')] as const))
      // A report's entry needs its URL: given, so that the parameter is what is wrong.
      .map(([method, path]) => [method, path === '/admin/cache/entry' ? `${path}?url=${encodeURIComponent(REPORT)}&` : `${path}?`] as const)
    expect(calls.length).toBeGreaterThanOrEqual(13)
    for (const [method, path] of calls) {
      // A PUT's body is checked first: a good one, so that the parameter is what is wrong.
      const body = path === '/admin/log-level?' ? { level: 'info' } : { token: sandbox.issueToken() }
      const res = await admin(gw, method, `${path}tema=growth`, method === 'PUT' ? { payload: body } : {})
      expect(res.statusCode, `${method} ${path}`).toBe(400)
      expect(res.json().message, `${method} ${path}`).toMatch(/^tema: not a parameter of this call/)
    }
    // The usage call's own parameters still answer: a typo is not a quiet team.
    expect((await admin(gw, 'GET', '/admin/usage?team=growth')).statusCode).toBe(200)
    expect((await admin(gw, 'GET', '/admin/usage?format=xml')).json().message).toMatch(/^format: must be/)
  })

  it('says a parameter given twice was given twice, and changes nothing', async () => {
    const gw = await gateway(true)
    expect(await read(gw)).toBe('MISS')
    expect((await admin(gw, 'GET', '/admin/usage?format=json&format=csv')).json()).toMatchObject({ statusCode: 400, message: 'format: given more than once' })
    const purge = await admin(gw, 'DELETE', '/admin/cache?advertiserId=101&advertiserId=102')
    expect([purge.statusCode, purge.json().message]).toEqual([400, 'advertiserId: given more than once'])
    expect(await read(gw)).toBe('HIT')
  })

  it('refuses a token body with a field it does not take, and keeps the token', async () => {
    const gw = await gateway(false)
    const before = gw.tokens.get('default').current()?.fingerprint
    const res = await admin(gw, 'PUT', '/admin/token', { payload: { token: sandbox.issueToken(), force: true } })
    expect(res.statusCode).toBe(400)
    expect(res.json().message).toBe('force: not a field of the body of this call (it takes token)')
    expect(gw.tokens.get('default').current()?.fingerprint).toBe(before)
  })

  it('words a malformed or mistyped body as the proxy listener does, naming the body, and keeps the token', async () => {
    const gw = await gateway(false)
    const before = gw.tokens.get('default').current()?.fingerprint
    const sent: [string, string, string][] = [
      ['application/json', '{bad', 'body: not valid JSON'],
      ['application/json', '', 'body: not valid JSON'],
      ['application/xml', '<a/>', 'body: must be application/json'],
      // What fetch() labels a string body.
      ['text/plain;charset=UTF-8', '{"token":"abcdefghijklmnopqrstuvwxyz"}', 'body: must be application/json (fetch labels a string body text/plain: add content-type: application/json)'],
      // What `curl -d '{...}'` sends without `-H content-type`.
      ['application/x-www-form-urlencoded', '{"token":"abcdefghijklmnopqrstuvwxyz"}', "body: must be application/json (curl -d sends a form: add -H 'content-type: application/json')"],
      ['application/x-www-form-urlencoded; charset=utf-8', '{"token":"abcdefghijklmnopqrstuvwxyz"}', 'body: must be application/json'],
      // JSON that is no object: a report POST says so in these words.
      ['application/json', '[1]', 'body: must be a JSON object'],
      ['application/json', '"abcdefghijklmnopqrstuvwxyz"', 'body: must be a JSON object'],
      // Valid JSON holding a prototype's key, which the listener's parser refuses: it was
      // 'body: not valid JSON'.
      ['application/json', '{"token":"abcdefghijklmnopqrstuvwxyz","__proto__":{"x":1}}', "body: __proto__: a key of a JavaScript object's prototype, which no call takes; nothing was changed"],
      ['application/json', '{"token":"abcdefghijklmnopqrstuvwxyz","constructor":{"prototype":{"x":1}}}', "body: constructor: a key of a JavaScript object's prototype, which no call takes; nothing was changed"],
    ]
    for (const [type, payload, message] of sent) {
      const res = await admin(gw, 'PUT', '/admin/token', { payload, headers: { 'content-type': type } })
      expect(res.statusCode, `${type} ${payload}`).toBe(400)
      expect(res.json(), `${type} ${payload}`).toMatchObject({ code: 'GW_BAD_REQUEST', message })
    }
    const none = await admin(gw, 'PUT', '/admin/token')
    expect(none.json()).toMatchObject({ code: 'GW_BAD_REQUEST', message: 'body: must be a JSON object' })
    // The proxy listener's own words for the same slip.
    const proxied = await gw.proxy.inject({ method: 'POST', url: '/api/v1/campaign/get', headers: { 'x-api-key': KEYS.growth, 'content-type': 'application/json' }, payload: '{bad' })
    expect(proxied.json()).toMatchObject({ code: 'GW_BAD_REQUEST', message: 'body: not valid JSON' })
    expect(gw.tokens.get('default').current()?.fingerprint).toBe(before)
  })

  it('refuses a body with a content-encoding in the proxy listener\'s words, as plain or as gzip, and changes nothing', async () => {
    const gw = await gateway(false)
    const before = gw.tokens.get('default').current()?.fingerprint
    const encoded = 'body: content-encoding is not accepted; send the body uncompressed'
    const level = JSON.stringify({ level: 'debug' })
    // Labelled gzip and sent plain: read as if uncoded, it set the level; sent gzip: "not valid JSON".
    for (const [coding, payload] of [['gzip', level], ['gzip', gzipSync(level)], ['br', level]] as const) {
      const res = await gw.admin.inject({ method: 'PUT', url: '/admin/log-level', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json', 'content-encoding': coding }, payload })
      expect([res.statusCode, res.json()], coding).toEqual([400, { statusCode: 400, code: 'GW_BAD_REQUEST', error: 'Bad Request', message: encoded }])
    }
    expect((await admin(gw, 'GET', '/admin/config')).json().settings.find((s: { setting: string }) => s.setting === 'logLevel')?.value).toBe('info')
    const token = await admin(gw, 'PUT', '/admin/token', { payload: JSON.stringify({ token: sandbox.issueToken() }), headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } })
    expect(token.json().message).toBe(encoded)
    expect(gw.tokens.get('default').current()?.fingerprint).toBe(before)
    const none = await admin(gw, 'PUT', '/admin/token')
    expect(none.json()).toMatchObject({ code: 'GW_BAD_REQUEST', message: 'body: must be a JSON object' })
    // The proxy listener's own words for the same slip.
    const proxied = await gw.proxy.inject({ method: 'POST', url: '/api/v1/campaign/get', headers: { 'x-api-key': KEYS.growth, 'content-type': 'application/json', 'content-encoding': 'gzip' }, payload: gzipSync('{"userId":101}') })
    expect(proxied.json()).toMatchObject({ code: 'GW_BAD_REQUEST', message: encoded })
  })

  it('checks the admin token before the parameters: no token is 401, not 400', async () => {
    const gw = await gateway(false)
    const res = await gw.admin.inject({ method: 'DELETE', url: '/admin/cache?advertiserID=101' })
    expect(res.statusCode).toBe(401)
  })
})
