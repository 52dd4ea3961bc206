import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { AddressInfo } from 'node:net'
import { readFileSync } from 'node:fs'
import { gunzipSync } from 'node:zlib'
import { parse as parseYaml } from 'yaml'
import { renderDocument } from '../../src/cli/openapi-render.js'
import { allErrors } from '../../src/errors.js'
import { canonicalGetReport } from '../../src/reports/report-query.js'
import { buildGateway, KEYS, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { rawRequest } from '../helpers/sandbox-gateway.js'
import { documentedOperations, itIsValidAndCommitted, resolveRef, routeTable, type Json } from '../helpers/openapi-doc.js'

const COMMITTED = new URL('../../docs/openapi.json', import.meta.url)
// The methods forwarded to the platform; OPTIONS and the refused methods are the gateway's own answers.
const OPERATIONS = ['get', 'put', 'post', 'delete', 'head', 'patch']

type Doc = {
  openapi: string
  paths: Record<string, Record<string, { operationId?: string; responses: Record<string, unknown>; security?: unknown[] }>>
  components: { schemas: Record<string, { properties: { code: { const: string } } }> }
}


let gw: TestGateway
let doc: Doc

beforeAll(async () => {
  gw = await buildGateway(testConfig({ PLATFORM_BASE_URL: 'http://127.0.0.1:9', PLATFORM_TOKEN: 'openapi-test-token', ADMIN_TOKEN: 'admin-token-0123456789' }))
  const res = await gw.proxy.inject({ method: 'GET', url: '/openapi.json' })
  expect(res.statusCode).toBe(200)
  doc = res.json<Doc>()
})
afterAll(async () => {
  await gw?.close()
})

describe('OpenAPI document of the proxy listener', () => {
  itIsValidAndCommitted(COMMITTED, renderDocument, () => doc)

  it("declares on a job's result that kept the platform's 4xx what it carries, as a report read's passed-on 4xx: its cost, vary and cache-control", () => {
    const responses = (doc as unknown as { components: { responses: Record<string, { headers: Record<string, unknown> }> } }).components.responses
    for (const status of [403, 404]) {
      expect(Object.keys(responses[`job-${status}`]?.headers ?? {}).sort(), String(status)).toEqual(Object.keys(responses[`report-${status}`]?.headers ?? {}).sort())
      expect(Object.keys(responses[`job-${status}`]?.headers ?? {}), String(status)).toEqual(expect.arrayContaining(['platform-usage', 'vary', 'cache-control']))
    }
  })

  it('lists every route of the proxy listener, with its methods', () => {
    const documented = documentedOperations(doc)
    const table = routeTable(gw.proxy.printRoutes({ commonPrefix: false }))
    expect(table.size).toBeGreaterThanOrEqual(4)
    for (const [url, methods] of table) {
      // Wildcard routes are documented as callers write them (below); HEAD of a GET is Fastify's own;
      // a route with a trailing slash is another spelling of the report path documented without it;
      // /api/v1/jobs is only the gateway's 404, as the wildcard below it (job-routes.ts jobPaths).
      if (url.includes('*') || url === '/api/v1/jobs') continue
      for (const method of methods.filter((m) => m !== 'HEAD')) expect(documented, `${method} ${url}`).toContain(`${method} ${url.replace(/:(\w+)/g, '{$1}').replace(/(.)\/$/, '$1')}`)
    }
    expect(documented).toContain('GET /api/v1/report/{split}/get')
    expect(documented).toContain('POST /api/v1/report/{split}/get')
    // `/api/v1/*` is documented path by path (openapi-tools.test.ts), its plain call beside them.
    expect(doc.paths['/api/v1/{path}']).toBeUndefined()
    // OPTIONS, which the gateway answers, beside the methods forwarded.
    expect(Object.keys((doc.components as unknown as { pathItems: Record<string, object> }).pathItems.PlatformCall!).sort()).toEqual([...OPERATIONS, 'options'].sort())
    // Each documented operation is one Fastify answers.
    const fastifyUrl = (path: string) => path.replace('{split}', 'campaigns').replace('{id}', '101001')
    for (const entry of documented) {
      const [method, path] = entry.split(' ') as [string, string]
      expect(gw.proxy.findRoute({ method: method as 'GET', url: fastifyUrl(path) }), entry).not.toBeNull()
    }
  })

  it('describes every report parameter and its rules, and the report response headers', () => {
    const get = doc.paths['/api/v1/report/{split}/get']!.get as unknown as { parameters: { name: string; in: string; required?: boolean; schema: Record<string, unknown> }[]; responses: Record<string, { headers?: Record<string, unknown> }> }
    const params = new Map(get.parameters.map((p) => [`${p.in}:${p.name}`, p]))
    for (const name of ['advertiserId', 'dateFrom', 'dateTo']) expect(params.get(`query:${name}`)?.required, name).toBe(true)
    expect(params.get('query:advertiserId')?.schema).toMatchObject({ type: 'integer', minimum: 1 })
    expect(params.get('query:dateFrom')?.schema).toMatchObject({ format: 'date' })
    // A boolean as a query sends it (`true`, `false`), or one of the four strings; a generated client types `byDate: true`.
    for (const name of ['byDate', 'byCampaign'] as const) {
      const schema = params.get(`query:${name}`)!.schema as { type: string[]; enum: unknown[] }
      expect(schema.type, name).toEqual(['boolean', 'string'])
      expect(schema.enum, name).toEqual([true, false, '1', 'true', '0', 'false'])
      // Each value the document names, as a query string writes it, is one the gateway reads, and says what it says.
      for (const value of schema.enum) {
        const report = canonicalGetReport('/api/v1/report/campaigns/get', `advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-02&${name}=${String(value)}`, { maxRangeDays: 400 })
        expect(report[name], `${name}=${String(value)}`).toBe(value === true || value === '1' || value === 'true')
      }
    }
    expect(params.has('query:spentBased')).toBe(true)
    expect(params.has('path:split')).toBe(true)
    expect(params.has('header:cache-control')).toBe(true)
    expect(Object.keys(get.responses['200']!.headers!).sort()).toEqual(['age', 'cache-control', 'cache-status', 'content-encoding', 'content-language', 'etag', 'platform-usage', 'ratelimit', 'ratelimit-policy', 'report-provisional-days', 'content-security-policy', 'report-settled-through', 'vary', 'x-cache', 'x-content-type-options', 'x-request-id'].sort())
    expect(Object.keys(get.responses['304']!.headers!).sort()).toEqual(['age', 'cache-control', 'cache-status', 'content-security-policy', 'etag', 'platform-usage', 'report-provisional-days', 'report-settled-through', 'vary', 'x-cache', 'x-content-type-options', 'x-request-id'].sort())
    expect(get.responses['429']).toEqual({ $ref: '#/components/responses/report-429' })
    const post = doc.paths['/api/v1/report/{split}/get']!.post as unknown as { requestBody: { content: Record<string, { schema: { required: string[]; properties: Record<string, unknown> } }> } }
    const body = post.requestBody.content['application/json']!.schema
    expect(body.required).toEqual(['campaignIds', 'dateFrom', 'dateTo'])
    expect(Object.keys(body.properties)).toEqual(expect.arrayContaining(['advertiserId', 'campaignIds', 'dateFrom', 'dateTo', 'byDate', 'byCampaign']))
  })

  it('declares on each /api/v1 operation the request headers the gateway reads there, so that a generated client types them', () => {
    // The headers of connection-options.ts a caller sets on a call: the key is the security
    // schemes', framing is the client's own, `traceparent` and `tracestate` its tracer's.
    const reportRead = ['cache-control', 'if-modified-since', 'if-none-match', 'pragma', 'prefer', 'x-cache-warm', 'x-request-id']
    const expected: Record<string, string[]> = {
      'get /api/v1/report/{split}/get': reportRead,
      'head /api/v1/report/{split}/get': reportRead,
      'post /api/v1/report/{split}/get': reportRead,
      // A job's result is answered as a report read is: 304 to a matching if-none-match (jobs.md).
      'get /api/v1/jobs/{id}/result': ['if-none-match', 'x-request-id'],
      'head /api/v1/jobs/{id}/result': ['if-none-match', 'x-request-id'],
      'get /api/v1/jobs/{id}': ['x-request-id'],
      'head /api/v1/jobs/{id}': ['x-request-id'],
      'delete /api/v1/jobs/{id}': ['x-request-id'],
    }
    type Parameter = { in: string; name: string }
    const headersOf = (item: Record<string, unknown>, method: string): string[] =>
      [...((item.parameters as Parameter[] | undefined) ?? []), ...(((item[method] as { parameters?: Parameter[] }).parameters) ?? [])]
        .filter((p) => p.in === 'header')
        .map((p) => p.name)
        .sort()
    const found: Record<string, string[]> = {}
    for (const [path, item] of Object.entries(doc.paths)) {
      if (!path.startsWith('/api/v1/')) continue
      for (const method of Object.keys(item).filter((m) => m !== 'parameters' && m !== 'options')) {
        const key = `${method} ${path}`
        // Every forwarded platform call takes x-request-id, which the platform receives too.
        found[key] = headersOf(item, method)
        expected[key] ??= ['x-request-id']
      }
    }
    expect(found).toEqual(expected)
  })

  it('has a schema for every GW_* code of errors.ts, and GW_INTERNAL', () => {
    const codes = new Set([...Object.values(allErrors).map((E) => new E('' as never).code), 'GW_INTERNAL'])
    for (const code of codes) expect(doc.components.schemas[code]?.properties.code.const, code).toBe(code)
    // The team key is required on /api/v1 only.
    expect(doc.paths['/openapi.json']!.get!.security).toEqual([])
    expect(doc.paths['/api/v1/campaign/get']!.post!.security).toBeUndefined()
  })

  // A job's status and its cancel read the job's record and nothing else: no platform call, no report. A client
  // generated from the document (swagger-typescript-api, openapi-typescript) types their errors from these lists.
  it("declares on a job's status and its cancel the answers they give, none of a report read's or of the platform's", () => {
    const json = doc as unknown as Json
    const codesOf = (path: string, method: string): Record<string, string[]> => {
      const responses = (doc.paths[path] as unknown as Record<string, { responses: Json }>)[method]!.responses
      return Object.fromEntries(Object.entries(responses).filter(([status]) => status >= '400').map(([status, response]) => [status, [...JSON.stringify(resolveRef(json, response)).matchAll(/#\/components\/schemas\/(\w+)/g)].map((m) => m[1]!).sort()]))
    }
    const asked = { '400': ['GW_BAD_REQUEST'], '401': ['GW_UNAUTHORIZED'], '403': ['GW_FORBIDDEN', 'GW_TEAM_SUSPENDED'], '404': ['GW_NOT_FOUND'], '408': ['GW_REQUEST_TIMEOUT'], '431': ['GW_HEADERS_TOO_LARGE'], '500': ['GW_INTERNAL'], '503': ['GW_JOBS_UNAVAILABLE'] }
    const status = { ...asked, '429': ['GW_RATE_LIMITED', 'GW_WAITS_FULL'] }
    expect(codesOf('/api/v1/jobs/{id}', 'get')).toEqual(status)
    // HEAD's answers are GET's without a body: the same statuses.
    expect(Object.keys(codesOf('/api/v1/jobs/{id}', 'head'))).toEqual(Object.keys(status))
    // A cancel reads no scope: its 403 is the team's suspension alone.
    expect(codesOf('/api/v1/jobs/{id}', 'delete')).toEqual({ ...asked, '403': ['GW_TEAM_SUSPENDED'], '409': ['GW_JOB_RUNNING'], '429': ['GW_RATE_LIMITED'] })
    // The result is a report's answer, a failed job's the failure its read would have answered
    // (jobs/job-runner.ts): never a cancel's refusal nor a wait's, nor an ask's (a bad query, the
    // jobs full), nor what puts a job back in the queue (no seat, a pause, the platform's 429, a
    // shutdown); a GET's body is never read. The answers' budget full fails a job, kept with it.
    expect(codesOf('/api/v1/jobs/{id}/result', 'get')).toEqual({
      ...asked,
      '400': ['GW_BAD_REQUEST', 'PlatformError'],
      '403': ['GW_FORBIDDEN', 'GW_TEAM_SUSPENDED', 'PlatformError'],
      '404': ['GW_NOT_FOUND', 'PlatformError'],
      '408': ['GW_REQUEST_TIMEOUT', 'PlatformError'],
      '409': ['GW_JOB_NOT_DONE', 'PlatformError'],
      '410': ['GW_JOB_EXPIRED', 'PlatformError'],
      '413': ['GW_JOB_RESULT_TOO_LARGE', 'PlatformError'],
      '429': ['GW_PLATFORM_TIME_SPENT', 'GW_RATE_LIMITED'],
      '431': ['GW_HEADERS_TOO_LARGE', 'PlatformError'],
      '4XX': ['PlatformError'],
      '502': ['GW_PLATFORM_AUTH', 'GW_PLATFORM_REFUSED', 'GW_UPSTREAM'],
      '503': ['GW_ANSWER_BUDGET', 'GW_JOBS_UNAVAILABLE'],
      '504': ['GW_UPSTREAM_TIMEOUT'],
    })
    expect(Object.keys(codesOf('/api/v1/jobs/{id}/result', 'head'))).toEqual(Object.keys(codesOf('/api/v1/jobs/{id}/result', 'get')))
    // Each refusal says what it means on a job call: a 404 is no such job of the key's team, not a path outside /api/v1/.
    for (const [path, method] of [['/api/v1/jobs/{id}', 'get'], ['/api/v1/jobs/{id}', 'delete'], ['/api/v1/jobs/{id}/result', 'get']] as const) {
      const described = (status: string) => resolveRef(json, ((doc.paths[path] as unknown as Record<string, { responses: Json }>)[method]!.responses)[status]).description as string
      expect(described('404'), `${method} ${path}`).toMatch(/^`GW_NOT_FOUND`: No such job for this key's team/)
      expect(described('404'), `${method} ${path}`).not.toMatch(/outside `\/api\/v1\/`/)
      if (method !== 'delete') expect(described('403'), `${method} ${path}`).toMatch(/another credential/)
      expect(described('400'), `${method} ${path}`).toMatch(/parameter/)
    }
    // Nor a header of a report answer's on a status or cancel refusal: they hold no report and cost no platform time.
    for (const method of ['get', 'head', 'delete']) {
      const text = JSON.stringify(Object.values((doc.paths['/api/v1/jobs/{id}'] as unknown as Record<string, { responses: Json }>)[method]!.responses).map((r) => resolveRef(json, r)))
      for (const header of ['platform-usage', 'x-cache', 'cache-status']) expect(text, `${method} ${header}`).not.toContain(`headers/${header}`)
    }
  })
})

describe("the refusals of a body, on the operations that read one", () => {
  const codesOf = (path: string, method: string): string[] => {
    const responses = (doc.paths[path] as unknown as Record<string, { responses: Json }>)[method]!.responses
    return [...JSON.stringify(Object.values(responses).map((r) => resolveRef(doc as unknown as Json, r))).matchAll(/#\/components\/schemas\/(GW_\w+)/g)].map((m) => m[1]!)
  }
  const BODY_CODES = ['GW_PAYLOAD_TOO_LARGE', 'GW_BODY_BUDGET']

  it('lists 413 GW_PAYLOAD_TOO_LARGE and 503 GW_BODY_BUDGET on a POST, PUT, PATCH and DELETE, never on a GET or HEAD', () => {
    const REPORT = '/api/v1/report/{split}/get'
    for (const [path, method] of [[REPORT, 'post'], ['/api/v1/campaign/{id}', 'put'], ['/api/v1/campaign/{id}', 'patch'], ['/api/v1/campaign/{id}', 'delete'], ['/api/v1/campaign/get', 'post']] as const) {
      expect(codesOf(path, method), `${method} ${path}`).toEqual(expect.arrayContaining(BODY_CODES))
    }
    for (const [path, method] of [[REPORT, 'get'], [REPORT, 'head'], ['/api/v1/campaign/{id}', 'get'], ['/api/v1/campaign/{id}', 'head']] as const) {
      expect(codesOf(path, method).filter((code) => BODY_CODES.includes(code)), `${method} ${path}`).toEqual([])
    }
  })

  it('reads no body of a GET: one past bodyLimit is neither 413 nor GW_BODY_BUDGET', async () => {
    const body = JSON.stringify({ pad: 'x'.repeat(gw.config.bodyLimit + 1) })
    for (const url of ['/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-07', '/api/v1/campaign/101001']) {
      const res = await gw.proxy.inject({ method: 'GET', url, payload: body, headers: { 'content-type': 'application/json', 'x-api-key': KEYS.all } })
      expect(res.statusCode, url).not.toBe(413)
      expect(res.json<{ code?: string }>().code, url).not.toMatch(/GW_PAYLOAD_TOO_LARGE|GW_BODY_BUDGET/)
    }
  })
})

describe('every GW_* code is described by its sentence, in both documents', () => {
  it('no code schema has the placeholder description, and no response describes a code by its own name', async () => {
    const admin = await gw.admin.inject({ method: 'GET', url: '/admin/openapi.json', headers: { authorization: 'Bearer admin-token-0123456789' } })
    expect(admin.statusCode).toBe(200)
    for (const [name, document] of [['proxy', doc], ['admin', admin.json<Doc>()]] as const) {
      const schemas = Object.entries(document.components.schemas as Record<string, { description?: string }>).filter(([code]) => code.startsWith('GW_'))
      expect(schemas.length, name).toBeGreaterThan(5)
      expect(schemas.filter(([, s]) => s.description === undefined || /^The gateway's GW_/.test(s.description)).map(([code]) => code), name).toEqual([])
      const text = JSON.stringify(document)
      expect(text.match(/`(GW_[A-Z_]+)`: \1(?![A-Z_])/g), name).toBeNull()
    }
  })
})

describe('a code answered in several cases names each of them, as the configuration reference\'s Errors table does', () => {
  // A client developer reads these sentences in the generated types: a 504 of a call never sent
  // (its deadline could not be met) is not a platform that took too long, and calls for another fix.
  it('GW_UPSTREAM_TIMEOUT: a call not sent before its deadline; GW_OVERLOADED: a platform pause; GW_JOBS_FULL: the jobs a team keeps', () => {
    const said = (code: string) => (doc.components.schemas[code] as { description?: string } | undefined)?.description ?? ''
    expect(said('GW_UPSTREAM_TIMEOUT')).toMatch(/not sent/)
    expect(said('GW_UPSTREAM_TIMEOUT')).toMatch(/deadline/)
    expect(said('GW_OVERLOADED')).toMatch(/paused/)
    expect(said('GW_OVERLOADED')).toMatch(/429/)
    expect(said('GW_JOBS_FULL')).toMatch(/jobs\.maxKeptPerTeam/)
  })
})

describe('the prefer header of a report read', () => {
  // A client that asks every report as a job reads here that a large one comes as a read:
  // its 200 (or refusal), no 202 nor preference-applied (docs/jobs.md).
  it('says that a report taking more than 16 KiB in a job\'s record is answered as a read without the preference, on each operation that takes it', () => {
    const prefers = Object.values(doc.paths).flatMap((item) => Object.values(item))
      .flatMap((op) => ((op as { parameters?: { in: string; name: string; description?: string }[] }).parameters ?? []))
      .filter((p) => p.in === 'header' && p.name === 'prefer')
    expect(prefers.length).toBeGreaterThanOrEqual(2)
    for (const p of prefers) expect(p.description).toMatch(/more than 16 KiB in a job's record .*answered as a read without the preference/)
  })
})

describe('route schemas only describe: the gateway checks /api/v1 calls itself', () => {
  const bad = '/api/v1/report/campaigns/get?advertiserId=abc&dateFrom=2026-02-30&dateTo=2026-03-01&byDate=yes'

  it('checks the key before the query', async () => {
    const res = await gw.proxy.inject({ method: 'GET', url: bad })
    expect(res.statusCode).toBe(401)
    expect(res.json()).toMatchObject({ code: 'GW_UNAUTHORIZED' })
  })

  it("answers a bad query with the gateway's own 400 GW_BAD_QUERY message, not Fastify's validation", async () => {
    const res = await gw.proxy.inject({ method: 'GET', url: bad, headers: { 'x-api-key': KEYS.all } })
    expect(res.statusCode).toBe(400)
    expect(res.json()).toEqual({ statusCode: 400, code: 'GW_BAD_QUERY', error: 'Bad Request', message: 'advertiserId: must be a positive integer (abc)' })
    const missing = await gw.proxy.inject({ method: 'GET', url: '/api/v1/report/campaigns/get?advertiserId=101', headers: { 'x-api-key': KEYS.all } })
    expect(missing.json()).toMatchObject({ code: 'GW_BAD_QUERY', message: 'dateFrom: required' })
  })

  it('checks the key before the body of a POST report, then the body with its own messages', async () => {
    const noKey = await gw.proxy.inject({ method: 'POST', url: '/api/v1/report/campaigns/get', headers: { 'content-type': 'application/json' }, payload: '{"dateFrom":"x"' })
    expect(noKey.statusCode).toBe(401)
    const badBody = await gw.proxy.inject({
      method: 'POST',
      url: '/api/v1/report/campaigns/get',
      headers: { 'content-type': 'application/json', 'x-api-key': KEYS.all },
      payload: { dateFrom: '2026-01-01', dateTo: '2026-01-02', byDate: 'yes' },
    })
    expect(badBody.statusCode).toBe(400)
    expect(badBody.json()).toMatchObject({ code: 'GW_BAD_QUERY', message: expect.stringMatching(/^byDate: must be true, false/) })
  })
})

describe('Swagger UI on the admin listener', () => {
  it('serves /docs and the proxy document without the admin token (like /metrics); /admin/* still needs it', async () => {
    const page = await gw.admin.inject({ method: 'GET', url: '/docs/' })
    expect(page.statusCode).toBe(200)
    expect(page.headers['content-type']).toMatch(/text\/html/)
    const json = await gw.admin.inject({ method: 'GET', url: '/docs/json' })
    expect(json.statusCode).toBe(200)
    expect(json.json()).toEqual(doc)
    const asset = await gw.admin.inject({ method: 'GET', url: '/docs/static/swagger-ui-bundle.js' })
    expect(asset.statusCode).toBe(200)
    expect((await gw.admin.inject({ method: 'GET', url: '/admin/token' })).statusCode).toBe(401)
    expect((await gw.proxy.inject({ method: 'GET', url: '/docs/' })).statusCode).toBe(404)
  })

  // @fastify/static refuses a path that leaves its root (a dot segment, plain or encoded, an
  // encoded \ or NUL) with its own 403 'Forbidden', which read as 400 GW_BAD_REQUEST saying
  // 'Forbidden'. No file is there: the listener's 404, as to a file Swagger UI does not have.
  // Sent raw: inject, as fetch and curl, resolves dot segments before sending.
  it("answers a path outside Swagger UI's files 404 GW_NOT_FOUND, as a file it does not have", async () => {
    await gw.admin.listen({ host: '127.0.0.1', port: 0 })
    const port = (gw.admin.server.address() as AddressInfo).port
    for (const url of ['/docs/static/nope.js', '/docs/static/%2e%2e/', '/docs/static/../', '/docs/static/%2e%2e/%2e%2e/package.json', '/docs/static/..%5c..%5cpackage.json', '/docs/static/%00', '/docs/static/a/..']) {
      const res = await rawRequest(port, `GET ${url} HTTP/1.1\r\nHost: 127.0.0.1\r\nconnection: close\r\n\r\n`)
      expect([res.status, JSON.parse(res.body)], url).toEqual([404, { statusCode: 404, code: 'GW_NOT_FOUND', error: 'Not Found', message: 'not found' }])
      expect(res.headers['cache-control'], url).toBe('no-store')
    }
  })

  // A page for a browser, as the console is: the same headers, written by the same function.
  it('answers the page, its files and the documents with the console\'s headers: a policy, nosniff, no frame, no referrer, no-store', async () => {
    const console = await gw.admin.inject({ method: 'GET', url: '/console' })
    const wanted = ['x-content-type-options', 'x-frame-options', 'referrer-policy', 'cache-control']
    for (const url of ['/docs', '/docs/', '/docs/json', '/docs/yaml', '/docs/static/swagger-ui.css', '/docs/static/swagger-ui-bundle.js', '/docs/static/swagger-initializer.js', '/docs/static/favicon-32x32.png', '/docs/static/index.html']) {
      const res = await gw.admin.inject({ method: 'GET', url })
      expect(res.statusCode, url).toBe(url.endsWith('index.html') ? 302 : 200)
      // The console's policy, with the images of Swagger UI's style sheet and logo (data: URLs) besides.
      expect(res.headers['content-security-policy'], url).toBe(String(console.headers['content-security-policy']).replace("img-src 'self'", "img-src 'self' data:"))
      expect(wanted.map((name) => [name, res.headers[name]]), url).toEqual(wanted.map((name) => [name, console.headers[name]]))
    }
  })

  // The documents are the listeners' routes, fixed once they listen: each is written at its
  // first ask (the YAML of the proxy document takes some 100 ms), and every ask after is
  // answered those bytes. Shown by a change to the object a document is written from after
  // the first ask: no later answer shows it.
  it('writes /docs/json, /docs/yaml and /admin/openapi.json once, at the first ask', async () => {
    const admin = { authorization: 'Bearer admin-token-0123456789' }
    const asks = [
      { url: '/docs/json', headers: {}, source: gw.proxy.swagger() as unknown as { info: { title: string } } },
      { url: '/docs/yaml', headers: {}, source: gw.proxy.swagger() as unknown as { info: { title: string } } },
      { url: '/admin/openapi.json', headers: admin, source: gw.admin.swagger() as unknown as { info: { title: string } } },
    ]
    for (const { url, headers, source } of asks) {
      const first = await gw.admin.inject({ method: 'GET', url, headers })
      expect(first.statusCode, url).toBe(200)
      const title = source.info.title
      source.info.title = 'changed after the first ask'
      try {
        const again = await gw.admin.inject({ method: 'GET', url, headers })
        expect([again.statusCode, again.headers['content-type'], again.body], url).toEqual([200, first.headers['content-type'], first.body])
      } finally {
        source.info.title = title
      }
    }
  })
})

// The documents named a listener by address with the default port (8080, 8081) whatever the
// gateway listened on: Swagger UI's copy on the admin listener (/docs/json) sent a reader of it
// to 8080 where PORT was another. The committed documents are a default gateway's: 8080, 8081.
describe('the served documents name the port each listener is on', () => {
  const byAddress = (document: unknown) => (document as { servers: { url: string; variables?: { port: { default: string } } }[] }).servers.map((s) => [s.url, s.variables?.port.default])
  const admin = { authorization: 'Bearer admin-token-0123456789' }
  const env = { PLATFORM_BASE_URL: 'http://127.0.0.1:9', PLATFORM_TOKEN: 'openapi-test-token', ADMIN_TOKEN: 'admin-token-0123456789' }
  const asks = (other: TestGateway) => [
    { inject: other.proxy.inject.bind(other.proxy), url: '/openapi.json', headers: {}, read: (body: string) => JSON.parse(body) as unknown },
    { inject: other.admin.inject.bind(other.admin), url: '/docs/json', headers: {}, read: (body: string) => JSON.parse(body) as unknown },
    { inject: other.admin.inject.bind(other.admin), url: '/docs/yaml', headers: {}, read: (body: string) => parseYaml(body, { maxAliasCount: -1 }) as unknown },
    { inject: other.admin.inject.bind(other.admin), url: '/admin/openapi.json', headers: admin, read: (body: string) => JSON.parse(body) as unknown },
  ]

  it('names PORT and ADMIN_PORT, where the committed documents name the defaults', async () => {
    const other = await buildGateway(testConfig({ ...env, PORT: '9123', ADMIN_PORT: '9124' }))
    try {
      for (const { inject, url, headers, read } of asks(other)) {
        const res = await inject({ method: 'GET', url, headers })
        expect([res.statusCode, byAddress(read(res.body))], url).toEqual([200, [['/', undefined], ['{scheme}://{host}:{port}', url.startsWith('/admin/') ? '9124' : '9123']]])
      }
    } finally {
      await other.close()
    }
    expect(byAddress(doc)).toEqual([['/', undefined], ['{scheme}://{host}:{port}', '8080']])
    expect(byAddress(JSON.parse(readFileSync(new URL('../../docs/admin-openapi.json', import.meta.url), 'utf8')))).toEqual([['/', undefined], ['{scheme}://{host}:{port}', '8081']])
  })

  it('names the ports the listeners are bound to where PORT=0 and ADMIN_PORT=0 let them choose', async () => {
    const other = await buildGateway(testConfig({ ...env, PORT: '0', ADMIN_PORT: '0' }))
    try {
      await other.proxy.listen({ host: '127.0.0.1', port: 0 })
      await other.admin.listen({ host: '127.0.0.1', port: 0 })
      const proxyPort = String((other.proxy.server.address() as AddressInfo).port)
      const adminPort = String((other.admin.server.address() as AddressInfo).port)
      for (const { inject, url, headers, read } of asks(other)) {
        const res = await inject({ method: 'GET', url, headers })
        expect([res.statusCode, byAddress(read(res.body))], url).toEqual([200, [['/', undefined], ['{scheme}://{host}:{port}', url.startsWith('/admin/') ? adminPort : proxyPort]]])
      }
    } finally {
      await other.close()
    }
  })
})

// The proxy's document is some 360 KB of JSON (33 KB gzipped): a browser, fetch() and the generators that
// fetch it accept gzip, and take it gzipped; a caller that accepts none takes it as it is.
describe('the documents, gzipped where the caller accepts it', () => {
  const admin = { authorization: 'Bearer admin-token-0123456789' }
  const asks = () => [
    { inject: gw.proxy.inject.bind(gw.proxy), url: '/openapi.json', headers: {} },
    { inject: gw.admin.inject.bind(gw.admin), url: '/docs/json', headers: {} },
    { inject: gw.admin.inject.bind(gw.admin), url: '/docs/yaml', headers: {} },
    { inject: gw.admin.inject.bind(gw.admin), url: '/admin/openapi.json', headers: admin },
  ]

  it('answers gzip to an accept-encoding that takes it, the same document, a fifth of its size at most; vary names accept-encoding', async () => {
    for (const { inject, url, headers } of asks()) {
      const plain = await inject({ method: 'GET', url, headers })
      const coded = await inject({ method: 'GET', url, headers: { ...headers, 'accept-encoding': 'br;q=1, gzip;q=0.8' } })
      expect([plain.statusCode, plain.headers['content-encoding'], plain.headers.vary], url).toEqual([200, undefined, 'accept-encoding'])
      expect([coded.statusCode, coded.headers['content-encoding'], coded.headers.vary, coded.headers['content-type']], url).toEqual([200, 'gzip', 'accept-encoding', plain.headers['content-type']])
      expect(gunzipSync(coded.rawPayload).toString(), url).toBe(plain.body)
      expect(coded.rawPayload.length, url).toBeLessThan(plain.rawPayload.length / 5)
    }
  })

  it('answers the document as it is where gzip is refused (q=0) or only another coding is accepted', async () => {
    for (const { inject, url, headers } of asks()) {
      const plain = await inject({ method: 'GET', url, headers })
      for (const accept of ['gzip;q=0, identity', 'br', 'identity']) {
        const res = await inject({ method: 'GET', url, headers: { ...headers, 'accept-encoding': accept } })
        expect([res.statusCode, res.headers['content-encoding'], res.body === plain.body], `${url} ${accept}`).toEqual([200, undefined, true])
      }
    }
  })

  it('is read by fetch() as the document, gzipped on the wire', async () => {
    const address = await gw.proxy.listen({ host: '127.0.0.1', port: 0 })
    const res = await fetch(`${address}/openapi.json`)
    expect([res.status, res.headers.get('content-encoding')]).toEqual([200, 'gzip'])
    expect(await res.json()).toEqual(doc)
  })
})
