/**
 * The OpenAPI documents with the tools callers really run, against a gateway in front of
 * the platform sandbox:
 * - docs/openapi.json names every platform path by that path, never by a parameter that
 *   would hold a slash (a client generated from it, type-checked and run, is in
 *   test/slow/openapi-generated-client.test.ts: a whole tsc run);
 * - Prism (@stoplight/prism-http), the validating proxy: its router routes each of those
 *   calls to its operation, its proxy forwards them to the gateway without a violation,
 *   and its response validator holds real answers of every status the contract lists
 *   (status, required headers, body) to the documents of both listeners.
 */
import { createRequire } from 'node:module'
import type { IHttpOperation } from '@stoplight/types'
import pino from 'pino'
import { beforeAll, describe, expect, it } from 'vitest'
import { hashApiKey } from '../../src/access/api-keys.js'
import { KEYS, listen, teamsYamlWith, testConfig } from '../helpers/build-gateway.js'
import { onRealTimers } from '../helpers/clock.js'
import { useGateways, useSandboxGateway } from '../helpers/fixtures.js'
import { newCampaign, rawRequest, SANDBOX_TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import type { Json } from '../helpers/openapi-doc.js'
import { waitFor } from '../helpers/wait.js'

// Prism's packages are CommonJS: required as they are.
const require = createRequire(import.meta.url)
const { getHttpOperationsFromSpec } = require('@stoplight/prism-http') as typeof import('@stoplight/prism-http')
const { createClientFromOperations } = require('@stoplight/prism-http/dist/client.js') as typeof import('@stoplight/prism-http/dist/client.js')
const { default: route } = require('@stoplight/prism-http/dist/router/index.js') as typeof import('@stoplight/prism-http/dist/router/index.js')
const { validateOutput } = require('@stoplight/prism-http/dist/validator/index.js') as typeof import('@stoplight/prism-http/dist/validator/index.js')

const ADMIN_TOKEN = 'openapi-tools-admin-token-0123456789'
const VIEWER_TOKEN = 'openapi-tools-viewer-token-0123456789'
// A team of its own for the platform's 429 (and the pause it draws): the others are not paused.
const THROTTLED_KEY = 'rgw_test_throttled_key_666666666666666666666666'
const YAML = `${SANDBOX_TEAMS_YAML.trimEnd()}
  throttled:
    keys: ["${hashApiKey(THROTTLED_KEY)}"]
    advertisers: ["*"]
    write: true
`
// The 408 and the 504 wait out limits.bodyTimeout and platform.timeout: on a gateway of their
// own with short ones. The file's gateway has the defaults (30 s), which no body or call on a
// loaded machine comes near.
const QUICK_YAML = `${SANDBOX_TEAMS_YAML.trimEnd()}
limits:
  bodyTimeout: 400ms
platform:
  timeout: 2s
`

const env = useSandboxGateway({ yaml: YAML, env: { ADMIN_TOKEN, ADMIN_VIEWER_TOKEN: VIEWER_TOKEN } })
const gateways = useGateways()

const REPORT = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-04-01&dateTo=2026-04-03'
const REPORT_PATH = '/api/v1/report/{split}/get'
const json = (body: unknown) => ({ headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })

let proxyDoc: Json
let adminDoc: Json
let proxyOps: IHttpOperation[]
let adminOps: IHttpOperation[]

beforeAll(async () => {
  proxyDoc = (await (await fetch(`${env.url}/openapi.json`)).json()) as Json
  const admin = await env.gw.admin.inject({ method: 'GET', url: '/admin/openapi.json', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  adminDoc = admin.json<Json>()
  proxyOps = await getHttpOperationsFromSpec(structuredClone(proxyDoc))
  adminOps = await getHttpOperationsFromSpec(structuredClone(adminDoc))
})

/** An answer as the wire gave it. */
interface Answer {
  status: number
  headers: Record<string, string>
  body: string
}

/** `path` of the file's gateway, or of the gateway at `init.url`. */
async function send(path: string, init: { method?: string; key?: string | null; headers?: Record<string, string>; body?: string; url?: string } = {}): Promise<Answer> {
  const key = init.key === undefined ? KEYS.all : init.key
  const res = await fetch(`${init.url ?? env.url}${path}`, {
    method: init.method ?? 'GET',
    headers: { ...(key ? { 'x-api-key': key } : {}), ...init.headers },
    ...(init.body === undefined ? {} : { body: init.body }),
  })
  return { status: res.status, headers: Object.fromEntries(res.headers), body: await res.text() }
}

/** The operation of `ops` that Prism's router picks for a request, as `METHOD /path`, or its refusal. */
function routed(ops: IHttpOperation[], method: string, url: string): string {
  const [path, query = ''] = url.split('?') as [string, string?]
  const input = { method: method.toLowerCase() as 'get', url: { path, query: Object.fromEntries([...new URLSearchParams(query)].map(([k, v]) => [k, [v]])) }, headers: {} }
  const found = route({ resources: ops, input })
  return found._tag === 'Right' ? `${found.right.method.toUpperCase()} ${found.right.path}` : `not routed: ${found.left.message}`
}

/** What Prism's response validator finds wrong with an answer of an operation (`METHOD /path`), as lines. */
function violations(ops: IHttpOperation[], operation: string, answer: Answer): string[] {
  const [method, path] = operation.split(' ') as [string, string]
  const resource = ops.find((op) => op.method === method.toLowerCase() && op.path === path)
  if (!resource) return [`${operation} is not an operation of the document`]
  const type = answer.headers['content-type'] ?? ''
  const body = type.includes('json') && answer.body !== '' ? (JSON.parse(answer.body) as unknown) : answer.body === '' ? undefined : answer.body
  const result = validateOutput({ resource, element: { statusCode: answer.status, headers: answer.headers, body } })
  return result._tag === 'Right' ? [] : result.left.map((d) => `${d.path?.join('.') ?? ''}: ${d.message}`)
}

/** A platform answer for one call of `path` (the sandbox's route failure), for as many calls as `times`. */
function failNext(path: string, mode: Record<string, unknown>): void {
  env.sandbox.setRouteFailure(path, mode as never)
}

// The client generated from these paths is type-checked and run in test/slow/openapi-generated-client.test.ts.
describe('docs/openapi.json, the source of a generated client', () => {
  it('names every platform path the gateway knows as a path of its own: no parameter that would hold a slash', () => {
    const paths = Object.keys(proxyDoc.paths as Json)
    expect(paths).toEqual(expect.arrayContaining([REPORT_PATH, '/api/v1/campaign/get', '/api/v1/campaign/banner/create', '/api/v1/campaign/banner/delete/{id}']))
    expect(paths).not.toContain('/api/v1/{path}')
    // Each platform route of the sandbox, the platform's stand-in, with its methods.
    const operations = new Set(Object.entries(proxyDoc.paths as Record<string, Json>).flatMap(([path, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${path}`)))
    for (const op of ['GET /api/v1/report/{split}/get', 'POST /api/v1/report/{split}/get', 'POST /api/v1/campaign/get', 'POST /api/v1/campaign/banner/create', 'DELETE /api/v1/campaign/banner/delete/{id}']) expect(operations).toContain(op)
    // The campaign paths of the configuration (ownership.campaignPaths) too.
    for (const path of ['/api/v1/campaign/banner/update/{id}', '/api/v1/campaign/banner/{id}', '/api/v1/campaign/{id}']) expect(paths).toContain(path)
  })
})

describe('Prism, the validating proxy', () => {
  it('routes each platform call to its own operation', () => {
    const calls: [string, string, string][] = [
      ['GET', REPORT, 'GET /api/v1/report/{split}/get'],
      ['POST', '/api/v1/report/creatives/get', 'POST /api/v1/report/{split}/get'],
      ['POST', '/api/v1/campaign/get?per_page=200', 'POST /api/v1/campaign/get'],
      ['POST', '/api/v1/campaign/banner/create', 'POST /api/v1/campaign/banner/create'],
      ['DELETE', '/api/v1/campaign/banner/delete/101001', 'DELETE /api/v1/campaign/banner/delete/{id}'],
    ]
    expect(calls.map(([method, url]) => routed(proxyOps, method, url))).toEqual(calls.map(([, , op]) => op))
  })

  it('forwards platform calls to the gateway and finds nothing wrong with the calls or their answers', async () => {
    const client = createClientFromOperations(proxyOps, {
      mock: false,
      upstream: new URL(env.url),
      upstreamProxy: undefined,
      isProxy: true,
      validateRequest: true,
      validateResponse: true,
      checkSecurity: true,
      errors: false,
      logger: pino({ level: 'silent' }) as never,
    } as never)
    const headers = { 'x-api-key': KEYS.all, 'content-type': 'application/json' }
    const writer = { ...headers, 'x-api-key': KEYS.writer }
    const results = [
      await client.request(REPORT, { method: 'get', headers }),
      await client.request('/api/v1/report/campaigns/get', { method: 'post', headers, body: { campaignIds: [101001, 101002], dateFrom: '2026-04-01', dateTo: '2026-04-02' } }),
      await client.request('/api/v1/campaign/get?per_page=20', { method: 'post', headers, body: { userId: 101 } }),
    ]
    const created = await client.request('/api/v1/campaign/banner/create', { method: 'post', headers: writer, body: newCampaign(101) })
    results.push(created, await client.request(`/api/v1/campaign/banner/delete/${(created.data as { data: { id: number } }).data.id}?userId=101`, { method: 'delete', headers: writer }))
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 201, 200])
    expect(results.map((r) => r.violations)).toEqual(results.map(() => ({ input: [], output: [] })))
  })
})

describe('Prism with HEAD and OPTIONS, and the 202 of a report job', () => {
  it('routes HEAD of every GET under /api/v1/ and OPTIONS of every path under it to operations of their own', () => {
    const calls: [string, string, string][] = [
      ['HEAD', REPORT, `HEAD ${REPORT_PATH}`],
      ['OPTIONS', REPORT, `OPTIONS ${REPORT_PATH}`],
      ['HEAD', '/api/v1/jobs/abc', 'HEAD /api/v1/jobs/{id}'],
      ['OPTIONS', '/api/v1/jobs/abc', 'OPTIONS /api/v1/jobs/{id}'],
      ['HEAD', '/api/v1/jobs/abc/result', 'HEAD /api/v1/jobs/{id}/result'],
      ['OPTIONS', '/api/v1/jobs/abc/result', 'OPTIONS /api/v1/jobs/{id}/result'],
      ['OPTIONS', '/api/v1/campaign/get', 'OPTIONS /api/v1/campaign/get'],
      ['OPTIONS', '/api/v1/campaign/banner/delete/101001', 'OPTIONS /api/v1/campaign/banner/delete/{id}'],
    ]
    expect(calls.map(([method, url]) => routed(proxyOps, method, url))).toEqual(calls.map(([, , op]) => op))
  })

  it('holds real HEAD, OPTIONS and 202 answers to their operations: no body, allow, location and preference-applied', async () => {
    const problems: string[] = []
    const check = (what: string, operation: string, answer: Answer, status: number): void => {
      if (answer.status !== status) problems.push(`${what}: status ${answer.status}, expected ${status}: ${answer.body.slice(0, 200)}`)
      for (const v of violations(proxyOps, operation, answer)) problems.push(`${what} (${answer.status}): ${v}`)
    }
    const year = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2025-01-01&dateTo=2025-12-31'
    const asked = await send(year, { headers: { prefer: 'respond-async' } })
    check('a report asked as a job: 202', `GET ${REPORT_PATH}`, asked, 202)
    check('a report asked as a job by HEAD: 202', `HEAD ${REPORT_PATH}`, await send(year.replace('2025-12-31', '2025-11-30'), { method: 'HEAD', headers: { prefer: 'respond-async' } }), 202)
    const { id } = JSON.parse(asked.body) as { id: string }
    await waitFor('the job done', async () => (JSON.parse((await send(`/api/v1/jobs/${id}`)).body) as { state: string }).state === 'done')
    check('HEAD of a report', `HEAD ${REPORT_PATH}`, await send(REPORT, { method: 'HEAD' }), 200)
    check('HEAD of a job', 'HEAD /api/v1/jobs/{id}', await send(`/api/v1/jobs/${id}`, { method: 'HEAD' }), 200)
    check('HEAD of a job\'s result', 'HEAD /api/v1/jobs/{id}/result', await send(`/api/v1/jobs/${id}/result`, { method: 'HEAD' }), 200)
    check('HEAD of another team\'s job: 404', 'HEAD /api/v1/jobs/{id}', await send(`/api/v1/jobs/${id}`, { method: 'HEAD', key: KEYS.growth }), 404)
    check('OPTIONS of a report', `OPTIONS ${REPORT_PATH}`, await send(REPORT, { method: 'OPTIONS', key: null }), 204)
    check('OPTIONS of a job', 'OPTIONS /api/v1/jobs/{id}', await send(`/api/v1/jobs/${id}`, { method: 'OPTIONS', key: null }), 204)
    check('OPTIONS of a job\'s result', 'OPTIONS /api/v1/jobs/{id}/result', await send(`/api/v1/jobs/${id}/result`, { method: 'OPTIONS', key: null }), 204)
    check('OPTIONS of a platform path', 'OPTIONS /api/v1/campaign/get', await send('/api/v1/campaign/get', { method: 'OPTIONS', key: null }), 204)
    // The validator holds allow to what the path serves.
    const wrong = await send(`/api/v1/jobs/${id}`, { method: 'OPTIONS', key: null })
    expect(violations(proxyOps, 'OPTIONS /api/v1/jobs/{id}', { ...wrong, headers: { ...wrong.headers, allow: 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS' } }).join('\n')).toContain('allow')
    expect(problems).toEqual([])
  })

  it('holds the job calls\' answers to their operations: the 202, a status running, queued, waited for and done, the result before and after, cancels, and the jobs\' 400, 404, 409 and 429', async () => {
    const jobs = { perReplica: 1, maxOpenPerTeam: 3, maxWaitsPerTeam: 1 }
    const gw = await listen(await gateways.build(testConfig({ PLATFORM_BASE_URL: env.sandbox.url, PLATFORM_TOKEN: env.sandbox.issueToken(), ADMIN_TOKEN }, teamsYamlWith({ jobs }))))
    const problems: string[] = []
    const check = (what: string, operation: string, answer: Answer, status: number): void => {
      if (answer.status !== status) problems.push(`${what}: status ${answer.status}, expected ${status}: ${answer.body.slice(0, 200)}`)
      for (const v of violations(proxyOps, operation, answer)) problems.push(`${what} (${answer.status}): ${v}`)
    }
    const on = (path: string, init: Parameters<typeof send>[1] = {}) => send(path, { ...init, url: gw.url })
    const ask = (query: string) => on(`/api/v1/report/campaigns/get?${query}`, { headers: { prefer: 'respond-async' } })
    const GET_REPORT = `GET ${REPORT_PATH}`
    const STATUS = 'GET /api/v1/jobs/{id}'
    const RESULT = 'GET /api/v1/jobs/{id}/result'
    const CANCEL = 'DELETE /api/v1/jobs/{id}'
    const atPlatform = () => env.sandbox.countRequests((r) => r.path === '/api/v1/report/campaigns/get')
    const before = atPlatform()
    // The replica's one runner holds the first job at the platform: the next ones queue.
    env.sandbox.setRouteFailure('/api/v1/report/campaigns/get', { kind: 'held', times: 1 })
    let id = ''
    try {
      const asked = await ask('advertiserId=101&dateFrom=2024-01-01&dateTo=2024-12-31')
      check('a job asked: 202', GET_REPORT, asked, 202)
      id = (JSON.parse(asked.body) as { id: string }).id
      await waitFor('the job at the platform', () => atPlatform() === before + 1)
      const queued = await ask('advertiserId=102&dateFrom=2024-01-01&dateTo=2024-12-31')
      check('a job queued behind it: 202', GET_REPORT, queued, 202)
      const other = (JSON.parse(queued.body) as { id: string }).id
      check('a running job\'s status', STATUS, await on(`/api/v1/jobs/${id}`), 200)
      check('a queued job\'s status', STATUS, await on(`/api/v1/jobs/${other}`), 200)
      check('a running job\'s result: 409 GW_JOB_NOT_DONE', RESULT, await on(`/api/v1/jobs/${id}/result`), 409)
      check('a running job cancelled: 409 GW_JOB_RUNNING', CANCEL, await on(`/api/v1/jobs/${id}`, { method: 'DELETE' }), 409)
      check('wait given twice: 400', STATUS, await on(`/api/v1/jobs/${id}?wait=1&wait=2`), 400)
      check('an unknown job: 404', STATUS, await on('/api/v1/jobs/nosuchjob000000000000000'), 404)
      check('a third job: 202', GET_REPORT, await ask('advertiserId=102&dateFrom=2023-01-01&dateTo=2023-12-31'), 202)
      check('one open job past maxOpenPerTeam: 429 GW_JOBS_FULL', GET_REPORT, await ask('advertiserId=102&dateFrom=2022-01-01&dateTo=2022-12-31'), 429)
      const held = on(`/api/v1/jobs/${other}?wait=30`)
      let full: Answer | undefined
      await waitFor('the team\'s one wait held', async () => (full = await on(`/api/v1/jobs/${other}?wait=1`)).status === 429)
      check('one wait past maxWaitsPerTeam: 429 GW_WAITS_FULL', STATUS, full!, 429)
      check('a queued job cancelled: 204', CANCEL, await on(`/api/v1/jobs/${other}`, { method: 'DELETE' }), 204)
      check('the wait on the job cancelled: 404', STATUS, await held, 404)
    } finally {
      env.sandbox.releaseHeld()
    }
    await waitFor('the first job done', async () => (JSON.parse((await on(`/api/v1/jobs/${id}`)).body) as { state: string }).state === 'done')
    check('a done job\'s status, its wait answered at once', STATUS, await on(`/api/v1/jobs/${id}?wait=30`), 200)
    const result = await on(`/api/v1/jobs/${id}/result`)
    check('its result', RESULT, result, 200)
    check('its result, gzip', RESULT, await on(`/api/v1/jobs/${id}/result`, { headers: { 'accept-encoding': 'gzip' } }), 200)
    check('its result, its ETag: 304', RESULT, await on(`/api/v1/jobs/${id}/result`, { headers: { 'if-none-match': result.headers.etag ?? '' } }), 304)
    check('an ended job cancelled: 409 GW_JOB_RUNNING', CANCEL, await on(`/api/v1/jobs/${id}`, { method: 'DELETE' }), 409)
    // A purge of the job's advertiser after its fill: its result is 410 GW_JOB_EXPIRED.
    await waitFor('a purge after the fill', async () => {
      await gw.admin.inject({ method: 'DELETE', url: '/admin/cache?advertiserId=101', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
      return (await on(`/api/v1/jobs/${id}/result`)).status === 410
    })
    check('a purged result: 410 GW_JOB_EXPIRED', RESULT, await on(`/api/v1/jobs/${id}/result`), 410)
    expect(problems).toEqual([])
  })

  it('routes the admin listener\'s Swagger UI files, its document as YAML included, to operations', () => {
    expect(['/docs', '/docs/json', '/docs/yaml', '/docs/static/swagger-ui.css'].map((url) => routed(adminOps, 'GET', url))).toEqual(['GET /docs', 'GET /docs/json', 'GET /docs/yaml', 'GET /docs/static/{file}'])
  })
})

describe('Prism\'s response validator against real answers of every status the contract lists', () => {
  it('finds what the document requires missing: the validator is not lenient', async () => {
    const answer = await send(REPORT)
    expect(violations(proxyOps, 'GET /api/v1/report/{split}/get', answer)).toEqual([])
    for (const name of ['x-request-id', 'x-cache', 'cache-status']) {
      const { [name]: _, ...rest } = answer.headers
      expect(violations(proxyOps, 'GET /api/v1/report/{split}/get', { ...answer, headers: rest }).join('\n'), name).toContain(name)
    }
    const limited = await send('/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-04-01&dateTo=2026-04-01&byDate=x', { key: KEYS.limited })
    expect(limited.status).toBe(400)
    expect(violations(proxyOps, 'GET /api/v1/report/{split}/get', { ...limited, status: 429 }).join('\n')).toContain('retry-after')
  })

  it('holds the proxy listener\'s answers, 200 to 504, to docs/openapi.json', async () => {
    const problems: string[] = []
    const check = (what: string, operation: string, answer: Answer, status: number): void => {
      if (answer.status !== status) problems.push(`${what}: status ${answer.status}, expected ${status}: ${answer.body.slice(0, 200)}`)
      for (const v of violations(proxyOps, operation, answer)) problems.push(`${what} (${answer.status}): ${v}`)
    }
    const GET_REPORT = 'GET /api/v1/report/{split}/get'
    const POST_REPORT = 'POST /api/v1/report/{split}/get'
    const LIST = 'POST /api/v1/campaign/get'
    const CREATE = 'POST /api/v1/campaign/banner/create'
    const DELETE = 'DELETE /api/v1/campaign/banner/delete/{id}'

    const miss = await send(REPORT)
    check('a report, MISS', GET_REPORT, miss, 200)
    check('a report, HIT', GET_REPORT, await send(REPORT), 200)
    check('a report, its ETag: 304', GET_REPORT, await send(REPORT, { headers: { 'if-none-match': miss.headers.etag! } }), 304)
    check('a report of a team with a rate limit', GET_REPORT, await send(REPORT, { key: KEYS.limited }), 200)
    check('a report, the POST form', POST_REPORT, await send('/api/v1/report/campaigns/get', { method: 'POST', ...json({ campaignIds: [101001], dateFrom: '2026-04-01', dateTo: '2026-04-03' }) }), 200)
    check('a POST report naming no campaign: the platform\'s 422', POST_REPORT, await send('/api/v1/report/campaigns/get', { method: 'POST', ...json({ advertiserId: 101, dateFrom: '2026-04-01', dateTo: '2026-04-03' }) }), 422)
    check('a bad query: 400 GW_BAD_QUERY', GET_REPORT, await send(REPORT.replace('2026-04-01', '2026-02-30')), 400)
    check('a body that is no JSON: 400 GW_BAD_REQUEST', LIST, await send('/api/v1/campaign/get', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"userId":' }), 400)
    check('no key: 401', GET_REPORT, await send(REPORT, { key: null }), 401)
    check('an unknown key: 401', LIST, await send('/api/v1/campaign/get', { method: 'POST', key: 'rgw_not_a_key_of_any_team_000000000000000', ...json({ userId: 101 }) }), 401)
    check('another team\'s advertiser: 403', GET_REPORT, await send(REPORT.replace('101', '103'), { key: KEYS.growth }), 403)
    check('a write of a reader: 403', DELETE, await send('/api/v1/campaign/banner/delete/101001', { method: 'DELETE', key: KEYS.growth }), 403)
    check('an escaped slash: 404 GW_NOT_FOUND', GET_REPORT, await send(REPORT.replace('campaigns/get', 'campaigns%2Fget')), 404)
    check('a split the platform lacks: its 404', GET_REPORT, await send(REPORT.replace('campaigns', 'nosuchsplit')), 404)
    check('a body over bodyLimit: 413', LIST, await send('/api/v1/campaign/get', { method: 'POST', ...json({ userId: 101, pad: 'x'.repeat(1_100_000) }) }), 413)
    check('the platform lists campaigns', LIST, await send('/api/v1/campaign/get?per_page=2', { method: 'POST', ...json({ userId: 102 }) }), 200)
    check('the platform\'s 422 passed through', LIST, await send('/api/v1/campaign/get', { method: 'POST', ...json({ userId: 'not-a-number' }) }), 422)
    const created = await send('/api/v1/campaign/banner/create', { method: 'POST', key: KEYS.writer, ...json(newCampaign(101)) })
    check('a campaign created', CREATE, created, 201)
    check('a campaign deleted', DELETE, await send(`/api/v1/campaign/banner/delete/${(JSON.parse(created.body) as { data: { id: number } }).data.id}?userId=101`, { method: 'DELETE', key: KEYS.writer }), 200)
    check('a campaign that is not there: the platform\'s 404', DELETE, await send('/api/v1/campaign/banner/delete/101999', { method: 'DELETE', key: THROTTLED_KEY }), 404)

    const quick = await listen(await gateways.build(testConfig({ PLATFORM_BASE_URL: env.sandbox.url, PLATFORM_TOKEN: env.sandbox.issueToken() }, QUICK_YAML)))
    // 408: headers that announce a body which never comes, within limits.bodyTimeout.
    const raw = await rawRequest(quick.port, `POST /api/v1/campaign/get HTTP/1.1\r\nhost: 127.0.0.1\r\nx-api-key: ${KEYS.all}\r\ncontent-type: application/json\r\ncontent-length: 40\r\n\r\n{"userId":`)
    check('a body that stops half-way: 408', LIST, { status: raw.status, headers: raw.headers, body: raw.body }, 408)

    // 429: the team's rate limit (3 a minute), then the platform's own 429, passed on with a retry-after.
    let limited: Answer | undefined
    await waitFor('the limited team refused', async () => (limited = await send(REPORT, { key: KEYS.limited })).status === 429)
    check('the team\'s rate limit: 429', GET_REPORT, limited!, 429)
    // 503: that 429 pauses the team on that route for 1 s of its gateway's clock. Drawn from a
    // gateway of its own whose clock stands still: the pause covers the next call however long
    // a loaded machine takes to send it.
    const still = Date.now()
    const pausing = await listen(await gateways.build(testConfig({ PLATFORM_BASE_URL: env.sandbox.url, PLATFORM_TOKEN: env.sandbox.issueToken() }, YAML), { clock: onRealTimers(() => still) }))
    failNext('/api/v1/campaign/get', { kind: 'status', status: 429, body: { message: 'Too Many Attempts.' }, times: 1 })
    const throttled = await send('/api/v1/campaign/get', { method: 'POST', key: THROTTLED_KEY, url: pausing.url, ...json({ userId: 101 }) })
    check('the platform\'s 429, passed on', LIST, throttled, 429)
    check('a call the pause covers: 503 GW_OVERLOADED', LIST, await send('/api/v1/campaign/get', { method: 'POST', key: THROTTLED_KEY, url: pausing.url, ...json({ userId: 101 }) }), 503)
    env.sandbox.clearRouteFailures()

    // 502 and 504: the platform fails, or hangs past platform.timeout (a write: never retried).
    failNext('/api/v1/campaign/banner/create', { kind: 'status', status: 500, times: 1 })
    check('the platform fails: 502 GW_UPSTREAM', CREATE, await send('/api/v1/campaign/banner/create', { method: 'POST', key: KEYS.writer, ...json(newCampaign(101)) }), 502)
    failNext('/api/v1/campaign/banner/create', { kind: 'hang', times: 1 })
    check('the platform hangs: 504 GW_UPSTREAM_TIMEOUT', CREATE, await send('/api/v1/campaign/banner/create', { method: 'POST', key: KEYS.writer, url: quick.url, ...json(newCampaign(101)) }), 504)
    env.sandbox.clearRouteFailures()

    for (const [path, status] of [['/healthz', 200], ['/readyz', 200], ['/openapi.json', 200]] as const) check(path, `GET ${path}`, await send(path, { key: null }), status)
    expect(problems).toEqual([])
  }, 60_000)

  it('holds a 503 GW_SHUTTING_DOWN, and a 405 to its schema', async () => {
    const gw = await gateways.build(testConfig({ PLATFORM_BASE_URL: env.sandbox.url, PLATFORM_TOKEN: env.sandbox.issueToken() }, SANDBOX_TEAMS_YAML))
    env.sandbox.setRouteFailure('/api/v1/campaign/banner/create', { kind: 'hang', times: 1 })
    env.sandbox.clearRequests()
    const pending = gw.proxy.inject({ method: 'POST', url: '/api/v1/campaign/banner/create', headers: { 'x-api-key': KEYS.writer, 'content-type': 'application/json' }, payload: newCampaign(101) })
    await waitFor('the call at the platform', () => env.sandbox.requests.some((r) => r.path === '/api/v1/campaign/banner/create'))
    gw.abortPlatformCalls()
    const res = await pending
    env.sandbox.clearRouteFailures()
    const answer = { status: res.statusCode, headers: res.headers as Record<string, string>, body: res.body }
    expect(res.json()).toMatchObject({ code: 'GW_SHUTTING_DOWN' })
    expect(violations(proxyOps, 'POST /api/v1/campaign/banner/create', answer)).toEqual([])

    // TRACE is no operation of the document: its answer's body is the GW_METHOD_NOT_ALLOWED shape.
    const trace = await rawRequest(env.port, `TRACE /api/v1/campaign/get HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n`)
    expect(trace.status).toBe(405)
    const schemas = (proxyDoc.components as { schemas: Record<string, Json> }).schemas
    const shape = schemas.GW_METHOD_NOT_ALLOWED!
    expect(Object.keys(JSON.parse(trace.body) as Json).sort()).toEqual([...(shape.required as string[])].sort())
    expect(trace.headers['x-request-id']).toBeTruthy()
  })

  it('holds the admin listener\'s answers, 200 to 503, to docs/admin-openapi.json, WWW-Authenticate on its 401', async () => {
    const problems: string[] = []
    const admin = async (what: string, operation: string, method: string, url: string, status: number, token: string | null = ADMIN_TOKEN, payload?: unknown) => {
      const res = await env.gw.admin.inject({
        method: method as 'GET',
        url,
        headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
      })
      const answer = { status: res.statusCode, headers: res.headers as Record<string, string>, body: res.body }
      if (answer.status !== status) problems.push(`${what}: status ${answer.status}, expected ${status}: ${answer.body.slice(0, 200)}`)
      for (const v of violations(adminOps, operation, answer)) problems.push(`${what} (${answer.status}): ${v}`)
      return answer
    }
    await admin('status', 'GET /admin/status', 'GET', '/admin/status', 200)
    await admin('a parameter it does not take: 400', 'DELETE /admin/cache', 'DELETE', '/admin/cache?advertiserID=101', 400)
    const refused = await admin('no admin token: 401', 'GET /admin/status', 'GET', '/admin/status', 401, null)
    expect(refused.headers['www-authenticate']).toBe('Bearer realm="report-gateway admin"')
    await admin('a wrong admin token: 401', 'DELETE /admin/cache', 'DELETE', '/admin/cache', 401, 'not-the-admin-token-0123456789')
    await admin('a viewer\'s change: 403', 'DELETE /admin/cache', 'DELETE', '/admin/cache', 403, VIEWER_TOKEN)
    await admin('no such credential: 404', 'GET /admin/credentials/{name}/token', 'GET', '/admin/credentials/nope/token', 404)
    await admin('no teams file to reload: 409', 'POST /admin/reload', 'POST', '/admin/reload', 409)
    const revoked = env.sandbox.issueToken()
    env.sandbox.revokeToken(revoked)
    await admin('a token the platform refuses: 422', 'PUT /admin/token', 'PUT', '/admin/token', 422, ADMIN_TOKEN, { token: revoked })
    const bare = await gateways.build(testConfig({ PLATFORM_BASE_URL: env.sandbox.url, PLATFORM_TOKEN: env.sandbox.issueToken() }))
    const disabled = await bare.admin.inject({ method: 'GET', url: '/admin/status', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(disabled.statusCode).toBe(503)
    for (const v of violations(adminOps, 'GET /admin/status', { status: 503, headers: disabled.headers as Record<string, string>, body: disabled.body })) problems.push(`admin disabled (503): ${v}`)
    expect(problems).toEqual([])
  })

  it('says in both documents that a 401 carries WWW-Authenticate, and marks the headers always sent as required', () => {
    const headersOf = (doc: Json, response: unknown): Record<string, Json> => {
      let r = response as Json
      while (typeof r.$ref === 'string') r = (r.$ref as string).slice(2).split('/').reduce<Json>((at, p) => at[p] as Json, doc)
      return Object.fromEntries(Object.entries((r.headers ?? {}) as Record<string, Json>).map(([name, h]) => {
        let header = h
        while (typeof header.$ref === 'string') header = (header.$ref as string).slice(2).split('/').reduce<Json>((at, p) => at[p] as Json, doc)
        return [name, header]
      }))
    }
    for (const [doc, challenge] of [[proxyDoc, 'ApiKey realm="report-gateway"'], [adminDoc, 'Bearer realm="report-gateway admin"']] as const) {
      let unauthorized = 0
      for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, Json>>)) {
        for (const [method, op] of Object.entries(item)) {
          for (const [status, response] of Object.entries(op.responses as Json)) {
            const headers = headersOf(doc, response)
            const where = `${method.toUpperCase()} ${path} ${status}`
            expect(headers['x-request-id']?.required, where).toBe(true)
            if (status === '401') {
              unauthorized += 1
              expect(headers['www-authenticate'], where).toMatchObject({ required: true, schema: { const: challenge } })
              expect(Object.keys(headers).filter((h) => h.startsWith('ratelimit')), where).toEqual([])
            }
            // Every 429 and 503 of a call says when to come back (readiness's 503 is the orchestrator's, not a caller's).
            if (doc === proxyDoc && path !== '/readyz' && (status === '429' || status === '503')) expect(headers['retry-after']?.required, where).toBe(true)
            if (doc === proxyDoc && path === REPORT_PATH && (status === '200' || status === '304')) {
              for (const h of ['x-cache', 'cache-status']) expect(headers[h]?.required, `${where} ${h}`).toBe(true)
            }
          }
        }
      }
      expect(unauthorized).toBeGreaterThan(3)
    }
  })
})
