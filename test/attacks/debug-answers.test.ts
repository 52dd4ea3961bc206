import { gzipSync } from 'node:zlib'
import { beforeAll, describe, expect, it } from 'vitest'
import { KEYS, testConfig } from '../helpers/build-gateway.js'
import { useGateway, useSandbox } from '../helpers/fixtures.js'
import { answerOnce as answerRaw } from '../helpers/raw-answer.js'
import { SANDBOX_TEAMS_YAML } from '../helpers/sandbox-gateway.js'

// A platform running with APP_DEBUG=true answers an HTTP exception (a 404, 403, 405, 429)
// with Laravel's debug fields: `exception` (its class), `file` and `line` (where it was
// thrown) and `trace` (the call stack, each frame's file, line, class and function). Its
// 4xx bodies pass to callers (contract, "Errors"): the platform's paths, its framework's
// version in them, its code's layout, are no caller's. The gateway drops those four fields
// from a 4xx JSON body of Laravel's debug shape, on a proxied call and on a report read,
// and keeps what a caller acts on (`message`, `errors`, any other field).
// Laravel Debugbar, on whenever APP_DEBUG is, writes what it collected (queries, the
// database, files) in headers when its storage is off; Symfony's error renderer in debug
// mode names the exception and its file in x-debug-exception and x-debug-exception-file:
// none of them reaches the caller, on any answer.

const sandbox = useSandbox({ debug: true, debugbar: true })
let token: string
beforeAll(() => {
  token = sandbox.issueToken()
})
const gw = useGateway(() => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: token }, SANDBOX_TEAMS_YAML))

const DEBUG_FIELDS = ['exception', 'file', 'line', 'trace']
const list = (acceptEncoding?: string) =>
  gw.proxy.inject({
    method: 'POST',
    url: '/api/v1/campaign/get',
    headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json', ...(acceptEncoding === undefined ? {} : { 'accept-encoding': acceptEncoding }) },
    payload: '{"userId":101}',
  })
const REPORT = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-03-02&dateTo=2026-03-03'

describe("the sandbox in debug mode (APP_DEBUG=true)", () => {
  it("writes Laravel's debug fields on an HTTP exception's answer, as the platform would", async () => {
    sandbox.setFailure({ kind: 'status', status: 404, times: 1 })
    const res = await fetch(`${sandbox.url}/api/v1/campaign/get`, { method: 'POST', headers: { authorization: `Bearer ${token}`, accept: 'application/json' } })
    const body = (await res.json()) as Record<string, unknown>
    expect(res.status).toBe(404)
    expect(Object.keys(body)).toEqual(['message', ...DEBUG_FIELDS])
    expect(body.file).toMatch(/^\/var\/www\//)
  })
})

/** The names of `headers` a debug tool of the platform writes. */
const debugHeaders = (headers: Record<string, unknown>): string[] => Object.keys(headers).filter((name) => /^(phpdebugbar|x-debug-|x-xdebug-)/i.test(name))

describe('Laravel Debugbar, and debug headers, on the platform', () => {
  it('the sandbox writes Debugbar\'s data in phpdebugbar headers, to a request that wants JSON', async () => {
    const res = await fetch(`${sandbox.url}/api/v1/campaign/get`, { method: 'POST', headers: { authorization: `Bearer ${token}`, accept: 'application/json', 'content-type': 'application/json' }, body: '{"userId":101}' })
    expect(res.status).toBe(200)
    const parts = [res.headers.get('phpdebugbar')]
    for (let i = 1; res.headers.has(`phpdebugbar-${i}`); i++) parts.push(res.headers.get(`phpdebugbar-${i}`))
    expect(parts.length).toBeGreaterThan(1)
    const data = JSON.parse(decodeURIComponent(parts.join(''))) as { data: { queries: { statements: { database: string }[] } } }
    expect(data.data.queries.statements[0]?.database).toBe('platform_prod')
  })

  it.each([
    ['the campaign list (200)', 200],
    ['a refusal (404)', 404],
  ])('%s of a proxied call carries none of them', async (_name, status) => {
    if (status !== 200) sandbox.setFailure({ kind: 'status', status, times: 1 })
    const res = await list()
    expect(res.statusCode).toBe(status)
    expect(debugHeaders(res.headers)).toEqual([])
  })

  it("a proxied answer carries no x-debug-* of Symfony's error renderer (the exception's message, its file and line)", async () => {
    answerRaw(sandbox, '404 Not Found', ['content-type: application/json', 'x-debug-exception: No%20query%20results%20for%20model%20%5BApp%5CModels%5CCampaign%5D', 'x-debug-exception-file: %2Fvar%2Fwww%2Fplatform%2Fvendor%2Flaravel%2Fframework%2Fsrc%2FIlluminate%2FDatabase%2FEloquent%2FBuilder.php:614'], Buffer.from('{"message":"Not Found"}'))
    const res = await list()
    expect(res.statusCode).toBe(404)
    expect(debugHeaders(res.headers)).toEqual([])
  })

  it("a proxied answer carries no x-xdebug-* of Xdebug's profiler (the path of its profile on the platform's disk)", async () => {
    answerRaw(sandbox, '200 OK', ['content-type: application/json', 'x-xdebug-profile-filename: /tmp/xdebug/cachegrind.out.8123.gz'], Buffer.from('{"data":[]}'))
    const res = await list()
    expect(res.statusCode).toBe(200)
    expect(debugHeaders(res.headers)).toEqual([])
  })

  it('a report read, a copy or a refusal, carries none of them', async () => {
    const read = await gw.proxy.inject({ method: 'GET', url: REPORT.replace('03-03', '03-04'), headers: { 'x-api-key': KEYS.all } })
    expect([read.statusCode, debugHeaders(read.headers)]).toEqual([200, []])
    sandbox.setFailure({ kind: 'status', status: 403, times: 1 })
    const refused = await gw.proxy.inject({ method: 'GET', url: REPORT.replace('03-03', '03-05'), headers: { 'x-api-key': KEYS.all } })
    expect([refused.statusCode, debugHeaders(refused.headers)]).toEqual([403, []])
  })
})

describe("a platform 4xx with Laravel's debug fields", () => {
  it.each([403, 404, 405, 409])('%i on a proxied call: passed with its message, without exception, file, line or trace', async (status) => {
    sandbox.setFailure({ kind: 'status', status, times: 1 })
    const res = await list()
    expect(res.statusCode).toBe(status)
    const body = res.json<Record<string, unknown>>()
    expect(Object.keys(body)).toEqual(['message'])
    expect(res.body).not.toContain('/var/www/')
  })

  it('in gzip, to a caller that accepts gzip: passed decoded, without them', async () => {
    const debug = JSON.stringify({ message: 'Not Found', exception: 'Symfony\\Component\\HttpKernel\\Exception\\NotFoundHttpException', file: '/var/www/platform/vendor/laravel/framework/src/Illuminate/Routing/AbstractRouteCollection.php', line: 45, trace: [{ file: '/var/www/platform/app/Http/Kernel.php', line: 12, function: 'handle', class: 'Illuminate\\Foundation\\Http\\Kernel', type: '->' }] })
    answerRaw(sandbox, '404 Not Found', ['content-type: application/json', 'content-encoding: gzip'], gzipSync(debug))
    const res = await list('gzip')
    expect(res.statusCode).toBe(404)
    expect(res.headers['content-encoding']).toBeUndefined()
    expect(res.json()).toEqual({ message: 'Not Found' })
  })

  it("keeps a refusal's own fields: `errors` of a 422, any field the platform added, a body of another shape byte for byte", async () => {
    const refusal = { message: 'The user id field is required.', errors: { userId: ['The user id field is required.'] }, exception: 'Illuminate\\Validation\\ValidationException', file: '/var/www/x.php', line: 1, trace: [] }
    sandbox.setFailure({ kind: 'status', status: 422, body: refusal, times: 1 })
    expect((await list()).json()).toEqual({ message: refusal.message, errors: refusal.errors })
    // No `trace` list: not Laravel's debug shape, passed as it came.
    const own = '{"message":"Campaign locked.","file":"report.csv","line":3,"exception":"locked"}'
    answerRaw(sandbox, '409 Conflict', ['content-type: application/json'], Buffer.from(own))
    expect((await list()).body).toBe(own)
  })

  it('on a report read: the refusal passed through (BYPASS) without them', async () => {
    sandbox.setFailure({ kind: 'status', status: 403, times: 1 })
    const res = await gw.proxy.inject({ method: 'GET', url: REPORT, headers: { 'x-api-key': KEYS.all } })
    expect(res.statusCode).toBe(403)
    expect(res.json()).toEqual({ message: 'Forbidden' })
  })
})
