/**
 * The OpenAPI document says what the proxy answers. An independent
 * validator (@apidevtools/swagger-parser) checks the document itself; then real requests
 * go to a gateway in front of the platform sandbox, and each answer (status, headers,
 * body) is checked against the document's response for that operation and status.
 */
import SwaggerParser from '@apidevtools/swagger-parser'
import { Ajv2020 } from 'ajv/dist/2020.js'
import { describe, expect, it } from 'vitest'
import { hashApiKey } from '../../src/access/api-keys.js'
import { buildGateway, closeAfterTest, KEYS, listen, TEAMS_YAML, testConfig, withLimitedWindow } from '../helpers/build-gateway.js'
import { fakeClock, onRealTimers } from '../helpers/clock.js'
import { useSandboxGateway } from '../helpers/fixtures.js'
import { mismatches, resolveRef, type Answer, type Json } from '../helpers/openapi-doc.js'
import { brokenHeadAnswers, rawHttp, rawRequest, SANDBOX_TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'


const ADMIN_TOKEN = 'openapi-contract-admin-token-0123456789'
// Team limited's window is 10000d (withLimitedWindow): its five calls in the sample of real
// requests fall in one window, where a minute's may end between the third and the fourth.
const env = useSandboxGateway({ env: { ADMIN_TOKEN }, yaml: withLimitedWindow('10000d', SANDBOX_TEAMS_YAML) })

async function documentOf(): Promise<Json> {
  const res = await fetch(`${env.url}/openapi.json`)
  expect(res.status).toBe(200)
  return (await res.json()) as Json
}



/** Requests of each kind of operation (health, this document, OPTIONS, a report read): method, URL, the document's path. */
const ANY_ROUTE = [
  ['GET', '/healthz', '/healthz'],
  ['GET', '/readyz', '/readyz'],
  ['GET', '/openapi.json', '/openapi.json'],
  ['OPTIONS', '/api/v1/report/campaigns/get', '/api/v1/report/{split}/get'],
  ['OPTIONS', '/api/v1/jobs/abc', '/api/v1/jobs/{id}'],
  ['GET', '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-10-01&dateTo=2026-10-02', '/api/v1/report/{split}/get'],
] as const

describe('the OpenAPI document against an independent validator and real answers', () => {
  it('validates with @apidevtools/swagger-parser (OpenAPI 3.1, every $ref resolves)', async () => {
    const doc = await documentOf()
    const api = (await SwaggerParser.validate(structuredClone(doc) as never)) as unknown as Json
    expect(api.openapi).toBe('3.1.0')
    expect(api.servers).toEqual(expect.arrayContaining([expect.objectContaining({ url: '/' })]))
  })

  it('lists the admin-only codes on no /api/v1 operation; platform 4xx answers are typed as the platform\'s', async () => {
    const doc = await documentOf()
    // 409 is a job's own answer (a cancel of a running job, a result not there yet), on no other path.
    const text = JSON.stringify(Object.entries(doc.paths as Json).filter(([path]) => !path.startsWith('/api/v1/jobs/')))
    const responses = JSON.stringify((doc.components as Json).responses)
    for (const code of ['GW_RELOAD_UNAVAILABLE', 'GW_CONFIG_INVALID', 'GW_TOKEN_REJECTED', 'GW_ADMIN_DISABLED', 'GW_REDIS_UNAVAILABLE']) {
      expect(responses, code).not.toContain(`schemas/${code}"`)
    }
    expect(text).not.toMatch(/"(409|422)"/)
    const post = (doc.paths as Record<string, Record<string, Json>>)['/api/v1/campaign/get']!.post!
    const notFound = resolveRef(doc, (post.responses as Json)['404'])
    expect(JSON.stringify(notFound)).toContain('#/components/schemas/PlatformError')
    expect(resolveRef(doc, (post.responses as Json)['4XX']).content).toEqual({ 'application/json': { schema: { $ref: '#/components/schemas/PlatformError' } } })
  })

  it('declares the 202 of a report read preferring respond-async (location, preference-applied, cache-control, vary, JobStatus) and a job status\'s cache-control and vary, and a real one, its job\'s status and a job\'s platform refusal validate', async () => {
    const doc = await documentOf()
    const REPORT = '/api/v1/report/{split}/get'
    for (const method of ['get', 'post']) {
      const accepted = resolveRef(doc, ((doc.paths as Record<string, Record<string, Json>>)[REPORT]![method]!.responses as Json)['202'])
      const headers = accepted.headers as Record<string, Json> | undefined
      for (const name of ['location', 'preference-applied', 'cache-control', 'vary', 'x-request-id']) expect(resolveRef(doc, headers?.[name]).required, `${method} 202 ${name}`).toBe(true)
      expect(accepted.content, method).toEqual({ 'application/json': { schema: { $ref: '#/components/schemas/JobStatus' } } })
      // The parameter that asks for it says so too, and does not deny the answer the operation lists.
      const parameters = ((doc.paths as Record<string, Record<string, Json>>)[REPORT]![method]!.parameters as Json[]).map((p) => resolveRef(doc, p))
      const prefer = parameters.find((p) => p.name === 'prefer')
      expect(prefer?.description, `${method} prefer`).toMatch(/`202`/)
      expect(prefer?.description, `${method} prefer`).not.toMatch(/not among this operation/)
    }
    // A job's status says it is kept by no cache, per key: the document says so too.
    const status = resolveRef(doc, ((doc.paths as Record<string, Record<string, Json>>)['/api/v1/jobs/{id}']!.get!.responses as Json)['200'])
    for (const name of ['cache-control', 'vary']) expect(resolveRef(doc, (status.headers as Record<string, Json> | undefined)?.[name]).required, `job status ${name}`).toBe(true)
    const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true })
    ajv.addSchema(doc, 'openapi.json')
    const call = async (url: string, init: RequestInit = {}): Promise<Answer> => {
      const res = await fetch(`${env.url}${url}`, { ...init, headers: { 'x-api-key': KEYS.all, ...(init.headers as Record<string, string> | undefined) } })
      return { status: res.status, headers: res.headers, body: await res.text() }
    }
    const problems: string[] = []
    const check = (what: string, path: string, method: string, answer: Answer, status: number) => {
      if (answer.status !== status) problems.push(`${what}: status ${answer.status}, expected ${status}: ${answer.body.slice(0, 200)}`)
      for (const p of mismatches(doc, ajv, path, method, answer)) problems.push(`${what}: ${p}`)
    }
    const asked = await call('/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2025-01-01&dateTo=2025-12-31', { headers: { prefer: 'respond-async' } })
    check('GET report, respond-async', REPORT, 'get', asked, 202)
    const posted = await call('/api/v1/report/campaigns/get', { method: 'POST', headers: { prefer: 'respond-async', 'content-type': 'application/json' }, body: JSON.stringify({ campaignIds: [1001], dateFrom: '2025-01-01', dateTo: '2025-06-30' }) })
    check('POST report, respond-async', REPORT, 'post', posted, 202)
    const refusedAsk = await call('/api/v1/report/campaigns/get?advertiserId=101&spentBased=EUR&dateFrom=2025-02-01&dateTo=2025-12-31', { headers: { prefer: 'respond-async' } })
    const { id } = JSON.parse(refusedAsk.body) as { id: string }
    await waitFor('the refused job ended', async () => (JSON.parse((await call(`/api/v1/jobs/${id}`)).body) as { state: string }).state === 'failed', testTimeLeft(), 20)
    check('a failed job\'s status', '/api/v1/jobs/{id}', 'get', await call(`/api/v1/jobs/${id}`), 200)
    check('a job\'s result the platform refused', '/api/v1/jobs/{id}/result', 'get', await call(`/api/v1/jobs/${id}/result`), 422)
    expect(problems).toEqual([])
  })

  it('describes the 431 the proxy listener answers to any request whose head is larger than Node reads, OPTIONS and the health routes included', async () => {
    const doc = await documentOf()
    const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true })
    ajv.addSchema(doc, 'openapi.json')
    const port = Number(new URL(env.url).port)
    const problems: string[] = []
    for (const [method, url, path] of ANY_ROUTE) {
      const raw = await rawRequest(port, rawHttp(method, url, { headers: { 'x-padding': 'a'.repeat(17_000) } }))
      if (raw.status !== 431) problems.push(`${method} ${url}: status ${raw.status}, expected 431`)
      for (const p of mismatches(doc, ajv, path, method.toLowerCase(), { status: raw.status, headers: new Headers(raw.headers), body: raw.body })) problems.push(`${method} ${url}: ${p}`)
    }
    expect(problems).toEqual([])
  })

  it('describes the 400 and the 408 the proxy listener answers whatever the path, the health routes included', async () => {
    const doc = await documentOf()
    const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true })
    ajv.addSchema(doc, 'openapi.json')
    // A head not whole within server.headersTimeout is answered 408 as one not whole within
    // server.requestTimeout: waited out on a gateway of its own with short ones.
    const quick = await listen(await buildGateway(testConfig({ PLATFORM_BASE_URL: env.sandbox.url, PLATFORM_TOKEN: env.sandbox.issueToken() }, `${TEAMS_YAML}server:\n  headersTimeout: 300ms\n  requestTimeout: 600ms\n`)))
    const problems: string[] = []
    try {
      for (const { method, url, path, expected, answer: raw } of await brokenHeadAnswers(env.port, ANY_ROUTE, `x-api-key: ${KEYS.all}\r\n`, quick.port)) {
        if (raw.status !== expected) problems.push(`${method} ${url}: status ${raw.status}, expected ${expected}`)
        for (const p of mismatches(doc, ajv, path, method.toLowerCase(), { status: raw.status, headers: new Headers(raw.headers), body: raw.body })) problems.push(`${method} ${url} (${expected}): ${p}`)
      }
    } finally {
      await closeAfterTest(quick)
    }
    expect(problems).toEqual([])
  })

  it('says what a refused cancel is, as the gateway answers it: a job running or ended is 409 GW_JOB_RUNNING naming its state', async () => {
    const doc = await documentOf()
    const asked = await fetch(`${env.url}/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2025-03-01&dateTo=2025-03-31`, { headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
    const { id } = (await asked.json()) as { id: string }
    await waitFor('the job ended', async () => ((await (await fetch(`${env.url}/api/v1/jobs/${id}`, { headers: { 'x-api-key': KEYS.all } })).json()) as { state: string }).state === 'done', testTimeLeft(), 20)
    const cancel = await fetch(`${env.url}/api/v1/jobs/${id}`, { method: 'DELETE', headers: { 'x-api-key': KEYS.all } })
    expect(cancel.status).toBe(409)
    expect(((await cancel.json()) as { code: string; message: string })).toMatchObject({ code: 'GW_JOB_RUNNING', message: expect.stringContaining('is done') })
    const op = (doc.paths as Record<string, Record<string, Json>>)['/api/v1/jobs/{id}']!.delete!
    const when = ((doc.components as Json).schemas as Record<string, Json>).GW_JOB_RUNNING!.description
    for (const text of [op.description, when, resolveRef(doc, (op.responses as Json)['409']).description]) expect(text).toMatch(/ended/)
  })

  it('describes the 502 of a platform 5xx that said when to come back: the platform\'s retry-after, on a report read and on a platform call', async () => {
    const doc = await documentOf()
    const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true })
    ajv.addSchema(doc, 'openapi.json')
    const problems: string[] = []
    const calls = [
      { what: 'report read', path: '/api/v1/report/{split}/get', method: 'get', url: '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-09-01&dateTo=2026-09-02', init: {} },
      { what: 'platform call', path: '/api/v1/campaign/get', method: 'post', url: '/api/v1/campaign/get', init: { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"userId":101}' } },
    ]
    for (const call of calls) {
      env.sandbox.setFailure({ kind: 'status', status: 503, headers: { 'retry-after': '7' }, times: 1 })
      const res = await fetch(`${env.url}${call.url}`, { ...call.init, headers: { 'x-api-key': KEYS.all, ...(call.init.headers as Record<string, string> | undefined) } })
      const answer = { status: res.status, headers: res.headers, body: await res.text() }
      expect([call.what, answer.status, answer.headers.get('retry-after')]).toEqual([call.what, 502, '7'])
      for (const p of mismatches(doc, ajv, call.path, call.method, answer)) problems.push(`${call.what}: ${p}`)
    }
    expect(problems).toEqual([])
  })

  // The gateway sends any JSON object or array the platform answers a report with (cache.reportFields
  // `[]`, the default), a list of fields an object holding one, `[*]` any JSON: the document
  // its listener serves says so, or a validating client or proxy refuses what it is sent.
  it.each([
    ['`[]` (the default): an array', '', [{ impressions: 1 }], [{ data: [] }, { rows: [1] }, [], [1, 'a']], ['"text"', 3, null]],
    ['`[]`: an object of other fields than data', '', { rows: [{ impressions: 1 }] }, [{ data: [] }, []], ['"text"', 3]],
    // The rows are the platform's as it sent them: the gateway reads none, so any shape of them goes.
    ['`[]`: rows of other fields than the sandbox\'s', '', { data: [{ impressions: 1, conversions: 2 }] }, [{ data: [{ date: 20260101, campaignId: 'x' }] }, { data: { rows: [] } }, { data: null }, { data: [1, 'a'] }], ['"text"']],
    ['`[rows, data]`: an object holding rows', 'cache: { reportFields: [rows, data] }\n', { rows: [{ impressions: 1 }] }, [{ data: [] }, { rows: 1, other: 2 }], [[], { other: 1 }, '"text"']],
    ['`[*]`: a number', 'cache: { reportFields: ["*"] }\n', 42, [[], {}, 'text', 3, null], []],
  ] as const)('describes the report the gateway sends by cache.reportFields %s', async (_what, yaml, body, taken, refused) => {
    const gw = await listen(await buildGateway(testConfig({ PLATFORM_BASE_URL: env.sandbox.url, PLATFORM_TOKEN: env.sandbox.issueToken() }, `${TEAMS_YAML}${yaml}`)))
    try {
      const doc = (await (await fetch(`${gw.url}/openapi.json`)).json()) as Json
      const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true })
      ajv.addSchema(doc, 'openapi.json')
      env.sandbox.setFailure({ kind: 'status', status: 200, headers: { 'content-type': 'application/json' }, body, times: 1 })
      const res = await fetch(`${gw.url}/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-08-01&dateTo=2026-08-02`, { headers: { 'x-api-key': KEYS.all } })
      const answer = { status: res.status, headers: res.headers, body: await res.text() }
      expect([answer.status, JSON.parse(answer.body)]).toEqual([200, body])
      expect(mismatches(doc, ajv, '/api/v1/report/{split}/get', 'get', answer)).toEqual([])
      const report = ajv.getSchema('openapi.json#/components/schemas/Report')!
      for (const value of taken) expect(report(value), JSON.stringify(value)).toBe(true)
      for (const value of refused) expect(report(typeof value === 'string' ? JSON.parse(value) : value), JSON.stringify(value)).toBe(false)
    } finally {
      await closeAfterTest(gw)
    }
  })

  it('describes every answer of a sample of real requests: status, headers and body', async () => {
    const doc = await documentOf()
    const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true })
    ajv.addSchema(doc, 'openapi.json')
    const report = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-10-01&dateTo=2026-10-02'
    const REPORT = '/api/v1/report/{split}/get'
    const calls: { what: string; path: string; method: string; url: string; init?: RequestInit; key?: string | null; status: number }[] = [
      { what: 'report MISS', path: REPORT, method: 'get', url: report, status: 200 },
      { what: 'report HIT', path: REPORT, method: 'get', url: report, status: 200 },
      { what: 'report, limited team', path: REPORT, method: 'get', url: report, key: KEYS.limited, status: 200 },
      { what: 'bad query', path: REPORT, method: 'get', url: report.replace('2026-10-01', '2026-02-30'), status: 400 },
      { what: 'no key', path: REPORT, method: 'get', url: report, key: null, status: 401 },
      { what: 'advertiser of another team', path: REPORT, method: 'get', url: report.replace('101', '103'), key: KEYS.growth, status: 403 },
      { what: 'unknown split: the platform\'s 404', path: REPORT, method: 'get', url: report.replace('campaigns', 'nosuchsplit'), status: 404 },
      { what: 'outside /api/v1', path: '/api/v1/campaign/{id}', method: 'get', url: '/api/v1/../../nope', status: 404 },
      { what: 'platform call', path: '/api/v1/campaign/get', method: 'post', url: '/api/v1/campaign/get', init: { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"userId":101}' }, status: 200 },
      { what: 'platform 422 passed through', path: '/api/v1/campaign/get', method: 'post', url: '/api/v1/campaign/get', init: { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"userId":"not-a-number"}' }, status: 422 },
      { what: 'healthz', path: '/healthz', method: 'get', url: '/healthz', status: 200 },
      { what: 'readyz', path: '/readyz', method: 'get', url: '/readyz', status: 200 },
      { what: 'this document', path: '/openapi.json', method: 'get', url: '/openapi.json', status: 200 },
    ]
    for (let i = 0; i < 4; i++) calls.push({ what: `limited team, call ${i + 2}`, path: REPORT, method: 'get', url: report, key: KEYS.limited, status: i < 2 ? 200 : 429 })
    // A request that holds a secret of the gateway's suspends its team: its next requests are 403 with retry-after (last: the team stays suspended).
    calls.push({ what: 'a secret in the query', path: REPORT, method: 'get', url: `${report}&note=${ADMIN_TOKEN}`, key: KEYS.writer, status: 400 })
    calls.push({ what: 'a suspended team', path: REPORT, method: 'get', url: report, key: KEYS.writer, status: 403 })
    const problems: string[] = []
    for (const call of calls) {
      const key = call.key === undefined ? KEYS.all : call.key
      const headers = { ...(key ? { 'x-api-key': key } : {}), ...(call.init?.headers as Record<string, string> | undefined) }
      const res = await fetch(`${env.url}${call.url}`, { ...call.init, headers })
      const answer = { status: res.status, headers: res.headers, body: await res.text() }
      if (answer.status !== call.status) problems.push(`${call.what}: status ${answer.status}, expected ${call.status}: ${answer.body.slice(0, 200)}`)
      for (const p of mismatches(doc, ajv, call.path, call.method, answer)) problems.push(`${call.what}: ${p}`)
    }
    expect(problems).toEqual([])
  })
})

describe('the OpenAPI document against every kind of report and job answer', () => {
  it('describes each as the gateway sends it: STALE, REFRESH, 304, HEAD, a passed-on refusal and redirect, a 502, the spent day\'s 429, a 202, a job\'s status, wait, result and HEAD, a cancel, a failed job', async () => {
    const doc = await documentOf()
    const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true })
    ajv.addSchema(doc, 'openapi.json')
    const BOUNDED = 'rgw_test_openapi_bounded_key_000000000000000'
    const yaml = `${TEAMS_YAML}  bounded:\n    keys: ["${hashApiKey(BOUNDED)}"]\n    advertisers: ["*"]\n    platformSecondsPerDay: 0.001\ncache:\n  refreshAhead: false\n  refreshMinAge: 0s\njobs:\n  retries: 1\n`
    const clock = fakeClock(Date.parse('2026-03-10T12:00:00Z'))
    const gw = await listen(await buildGateway(testConfig({ PLATFORM_BASE_URL: env.sandbox.url, PLATFORM_TOKEN: env.sandbox.issueToken() }, yaml), { clock: onRealTimers(clock.now) }))
    const REPORT = '/api/v1/report/{split}/get'
    const report = (advertiser: number, from = '2026-03-08', to = '2026-03-09') => `/api/v1/report/campaigns/get?advertiserId=${advertiser}&dateFrom=${from}&dateTo=${to}`
    const stateOf = async (id: string) => ((await (await fetch(`${gw.url}/api/v1/jobs/${id}`, { headers: { 'x-api-key': KEYS.all } })).json()) as { state: string }).state
    const problems: string[] = []
    const answers = new Map<string, Response>()
    const call = async (what: string, path: string, url: string, status: number, init: RequestInit = {}, key = KEYS.all): Promise<{ headers: Headers; body: string }> => {
      const method = (init.method ?? 'GET').toLowerCase()
      const res = await fetch(`${gw.url}${url}`, { ...init, redirect: 'manual', headers: { 'x-api-key': key, ...(init.headers as Record<string, string> | undefined) } })
      answers.set(what, res)
      const answer = { status: res.status, headers: res.headers, body: await res.text() }
      if (answer.status !== status) problems.push(`${what}: status ${answer.status}, expected ${status}: ${answer.body.slice(0, 200)}`)
      for (const p of mismatches(doc, ajv, path, method, answer)) problems.push(`${what}: ${p}`)
      return answer
    }
    try {
      const miss = await call('MISS', REPORT, report(101), 200)
      const etag = miss.headers.get('etag') ?? ''
      await call('304', REPORT, report(101), 304, { headers: { 'if-none-match': etag } })
      await call('HEAD', REPORT, report(101), 200, { method: 'HEAD' })
      await call('REFRESH', REPORT, report(101), 200, { headers: { 'cache-control': 'no-cache' } })
      // Past its freshness (5 min: its days are recent), the platform failing: the copy, STALE.
      clock.advance(6 * 60_000)
      env.sandbox.setFailure({ kind: 'status', status: 500, times: 10 })
      await call('STALE', REPORT, report(101), 200)
      await call('HEAD STALE', REPORT, report(101), 200, { method: 'HEAD' })
      await call('304 STALE', REPORT, report(101), 304, { headers: { 'if-none-match': etag } })
      // No copy and the platform failing: 502.
      await call('502', REPORT, report(102), 502)
      env.sandbox.setFailure({ kind: 'none' })
      env.sandbox.setFailure({ kind: 'status', status: 422, body: { message: 'The given data was invalid.' }, times: 1 })
      await call('a platform refusal passed on', REPORT, report(103), 422)
      env.sandbox.setFailure({ kind: 'redirect', location: '/api/v1/elsewhere', times: 1 })
      await call('a platform redirect passed on', REPORT, report(103, '2026-03-03', '2026-03-04'), 302)
      env.sandbox.setFailure({ kind: 'redirect', location: '/api/v1/elsewhere', status: 307, times: 1 })
      await call('a platform redirect of a platform call', '/api/v1/campaign/get', '/api/v1/campaign/get', 307, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"userId":101}' })
      env.sandbox.setFailure({ kind: 'redirect', location: '/api/v1/elsewhere', times: 1 })
      const redirected = await call('202 of a job the platform redirects', REPORT, report(103, '2025-01-01', '2025-06-30'), 202, { headers: { prefer: 'respond-async' } })
      const kept = (JSON.parse(redirected.body) as { id: string }).id
      await waitFor('the redirected job done', async () => (await stateOf(kept)) === 'done', testTimeLeft())
      await call('a job result that kept a platform redirect', '/api/v1/jobs/{id}/result', `/api/v1/jobs/${kept}/result`, 302)
      // The platform's 204 is passed on, read now or kept by a job (docs/jobs.md); its other 2xx
      // are left out of the document (decisions/other-2xx-in-openapi.md).
      for (const [i, other] of [{ status: 204 }].entries()) {
        const from = `2026-02-1${i}`
        env.sandbox.setFailure({ kind: 'status', ...other, times: 1 })
        await call(`a platform ${other.status} passed on`, REPORT, report(103, from, from), other.status)
        env.sandbox.setFailure({ kind: 'status', ...other, times: 1 })
        await call(`HEAD of a platform ${other.status} passed on`, REPORT, report(104, from, from), other.status, { method: 'HEAD' })
        env.sandbox.setFailure({ kind: 'status', ...other, times: 1 })
        const asked = await call(`202 of a job the platform answers ${other.status}`, REPORT, report(103, `2025-0${i + 7}-01`, `2025-0${i + 7}-28`), 202, { headers: { prefer: 'respond-async' } })
        const job = (JSON.parse(asked.body) as { id: string }).id
        await waitFor(`the job the platform answered ${other.status} done`, async () => (await stateOf(job)) === 'done', testTimeLeft())
        await call(`a job result that kept a platform ${other.status}`, '/api/v1/jobs/{id}/result', `/api/v1/jobs/${job}/result`, other.status)
        await call(`HEAD of a job result that kept a platform ${other.status}`, '/api/v1/jobs/{id}/result', `/api/v1/jobs/${job}/result`, other.status, { method: 'HEAD' })
      }
      env.sandbox.setFailure({ kind: 'none' })
      // A job: asked, its status (waited for), its result, each as GET and HEAD.
      const asked = await call('202', REPORT, report(101, '2025-01-01', '2025-12-31'), 202, { headers: { prefer: 'respond-async' } })
      const id = (JSON.parse(asked.body) as { id: string }).id
      await call('job status, waited for', '/api/v1/jobs/{id}', `/api/v1/jobs/${id}?wait=20`, 200)
      await waitFor('the job done', async () => (await stateOf(id)) === 'done', testTimeLeft())
      await call('job status', '/api/v1/jobs/{id}', `/api/v1/jobs/${id}`, 200)
      await call('HEAD job status', '/api/v1/jobs/{id}', `/api/v1/jobs/${id}`, 200, { method: 'HEAD' })
      const result = await call('job result', '/api/v1/jobs/{id}/result', `/api/v1/jobs/${id}/result`, 200)
      await call('HEAD job result', '/api/v1/jobs/{id}/result', `/api/v1/jobs/${id}/result`, 200, { method: 'HEAD' })
      await call('304 job result', '/api/v1/jobs/{id}/result', `/api/v1/jobs/${id}/result`, 304, { headers: { 'if-none-match': result.headers.get('etag') ?? '' } })
      await call('job of no one', '/api/v1/jobs/{id}', '/api/v1/jobs/0mx40zbyc0001Nv0ZuPzNajELtOO3', 404)
      await call('cancel of a done job', '/api/v1/jobs/{id}', `/api/v1/jobs/${id}`, 409, { method: 'DELETE' })
      // A job the platform fails: its status while it waits to be tried again (jobs.retries: 1),
      // then once failed, and its result (the failure as the read's).
      env.sandbox.setFailure({ kind: 'status', status: 500, times: 10 })
      const failing = await call('202 of a job that fails', REPORT, report(104, '2025-01-01', '2025-12-31'), 202, { headers: { prefer: 'respond-async' } })
      const failed = (JSON.parse(failing.body) as { id: string }).id
      const retryOf = async () => ((await (await fetch(`${gw.url}/api/v1/jobs/${failed}`, { headers: { 'x-api-key': KEYS.all } })).json()) as { retry: unknown }).retry
      await waitFor('the job given back', async () => (await retryOf()) !== null, testTimeLeft())
      await call('job status, waiting to be tried again', '/api/v1/jobs/{id}', `/api/v1/jobs/${failed}`, 200)
      clock.advance(1_000)
      await waitFor('the job failed', async () => (await stateOf(failed)) === 'failed', testTimeLeft())
      env.sandbox.setFailure({ kind: 'none' })
      await call('failed job status', '/api/v1/jobs/{id}', `/api/v1/jobs/${failed}`, 200)
      await call('failed job result', '/api/v1/jobs/{id}/result', `/api/v1/jobs/${failed}/result`, 502)
      // A team past its platform-seconds of the day.
      await call('bounded MISS', REPORT, report(101, '2026-02-01', '2026-02-02'), 200, {}, BOUNDED)
      await call('429 day spent', REPORT, report(102, '2026-02-01', '2026-02-02'), 429, {}, BOUNDED)
      await call('429 day spent, a job asked', REPORT, report(102, '2026-02-01', '2026-02-03'), 429, { headers: { prefer: 'respond-async' } }, BOUNDED)
      await call('HEAD 429 day spent', REPORT, report(102, '2026-02-01', '2026-02-02'), 429, { method: 'HEAD' }, BOUNDED)
    } finally {
      env.sandbox.setFailure({ kind: 'none' })
      await closeAfterTest(gw)
    }
    expect(problems).toEqual([])
    expect([...answers].filter(([, res]) => res.headers.get('x-cache') === 'STALE').map(([what]) => what)).toEqual(['STALE', 'HEAD STALE', '304 STALE'])
  })
})

describe('the OpenAPI document against every error the proxy answers', () => {
  it('declares each error\'s status on the operation that answers it (its own status or its class, never only `default`), its body as sent: 400, 401, 403, 404, 409, 413, 415, 422, 429, 502, 503, 504', async () => {
    const doc = await documentOf()
    const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true })
    ajv.addSchema(doc, 'openapi.json')
    const yaml = `${TEAMS_YAML}bodyLimit: 1KiB\nplatform:\n  timeout: 1s\njobs:\n  maxWaitsPerTeam: 1\n`
    const gateways = [await listen(await buildGateway(testConfig({ PLATFORM_BASE_URL: env.sandbox.url, PLATFORM_TOKEN: env.sandbox.issueToken() }, yaml)))]
    let gw = gateways[0]!
    const REPORT = '/api/v1/report/{split}/get'
    const CAMPAIGN = '/api/v1/campaign/get'
    const report = (advertiser: number, from = '2026-03-08', to = '2026-03-09') => `/api/v1/report/campaigns/get?advertiserId=${advertiser}&dateFrom=${from}&dateTo=${to}`
    const json = (body: string): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body })
    const problems: string[] = []
    const call = async (what: string, path: string, url: string, status: number, init: RequestInit = {}, key: string | null = KEYS.all): Promise<string> => {
      const method = (init.method ?? 'GET').toLowerCase()
      const res = await fetch(`${gw.url}${url}`, { ...init, redirect: 'manual', headers: { ...(key === null ? {} : { 'x-api-key': key }), ...(init.headers as Record<string, string> | undefined) } })
      const answer = { status: res.status, headers: res.headers, body: await res.text() }
      if (answer.status !== status) problems.push(`${what}: status ${answer.status}, expected ${status}: ${answer.body.slice(0, 200)}`)
      const responses = ((doc.paths as Record<string, Record<string, Json>>)[path]?.[method]?.responses ?? {}) as Record<string, unknown>
      if (!(String(answer.status) in responses) && !(`${String(answer.status)[0]}XX` in responses)) problems.push(`${what}: ${answer.status} is not declared on ${method.toUpperCase()} ${path} (${Object.keys(responses).join(', ')})`)
      for (const p of mismatches(doc, ajv, path, method, answer)) problems.push(`${what}: ${p}`)
      return answer.body
    }
    try {
      const asked = await call('202', REPORT, report(101, '2025-01-01', '2025-12-31'), 202, { headers: { prefer: 'respond-async' } })
      const id = (JSON.parse(asked) as { id: string }).id
      await call('job status, no key', '/api/v1/jobs/{id}', `/api/v1/jobs/${id}`, 401, {}, null)
      await call('job result, no key', '/api/v1/jobs/{id}/result', `/api/v1/jobs/${id}/result`, 401, {}, null)
      await call('cancel, no key', '/api/v1/jobs/{id}', `/api/v1/jobs/${id}`, 401, { method: 'DELETE' }, null)
      await call('job status, another team\'s', '/api/v1/jobs/{id}', `/api/v1/jobs/${id}`, 404, {}, KEYS.growth)
      await call('job result, unknown', '/api/v1/jobs/{id}/result', '/api/v1/jobs/0mx40zbyc0001Nv0ZuPzNajELtOO3/result', 404)
      await call('job status, bad wait', '/api/v1/jobs/{id}', `/api/v1/jobs/${id}?wait=soon`, 400)
      await call('report, no key', REPORT, report(101), 401, {}, null)
      await call('report, bad key', REPORT, report(101), 401, {}, 'rgw_not_a_key_of_anyone_0000000000000000000')
      await call('report, another team\'s advertiser', REPORT, report(103), 403, {}, KEYS.growth)
      await call('platform call, too large', CAMPAIGN, CAMPAIGN, 413, json(JSON.stringify({ userId: 101, pad: 'x'.repeat(4096) })))
      env.sandbox.setFailure({ kind: 'status', status: 415, body: { message: 'Unsupported Media Type' }, times: 1 })
      await call('platform call, the platform\'s 415', CAMPAIGN, CAMPAIGN, 415, json('{"userId":101}'))
      await call('platform call, the platform\'s 422', CAMPAIGN, CAMPAIGN, 422, json('{"userId":"x"}'))
      env.sandbox.setFailure({ kind: 'status', status: 409, body: { message: 'Conflict' }, times: 1 })
      await call('platform call, the platform\'s 409', CAMPAIGN, CAMPAIGN, 409, json('{"userId":101}'))
      // The platform throttling a report (passed on, its route paused for its retry-after: 503 until then), down for a platform call (502).
      env.sandbox.setFailure({ kind: 'status', status: 429, headers: { 'retry-after': '30' }, times: 1 })
      await call('report, the platform throttling', REPORT, report(102), 429)
      env.sandbox.setFailure({ kind: 'status', status: 503, headers: { 'retry-after': '30' }, times: 1 })
      await call('platform call, the platform down', CAMPAIGN, CAMPAIGN, 502, json('{"userId":101}'))
      await call('report, its route paused', REPORT, report(102, '2026-03-05', '2026-03-06'), 503)
      await call('job start, its route paused', REPORT, report(102, '2025-03-05', '2025-03-06'), 202, { headers: { prefer: 'respond-async' } })
      // The platform silent past the deadline, on a gateway of its own (the routes above are paused).
      gw = await listen(await buildGateway(testConfig({ PLATFORM_BASE_URL: env.sandbox.url, PLATFORM_TOKEN: env.sandbox.issueToken() }, yaml)))
      gateways.push(gw)
      env.sandbox.setFailure({ kind: 'hang', times: 2 })
      await call('report, the platform silent', REPORT, report(102, '2026-03-03', '2026-03-04'), 504)
      await call('platform call, the platform silent', CAMPAIGN, CAMPAIGN, 504, json('{"userId":101}'))
      env.sandbox.setFailure({ kind: 'none' })
    } finally {
      env.sandbox.setFailure({ kind: 'none' })
      for (const open of gateways) await closeAfterTest(open)
    }
    expect(problems).toEqual([])
  }, 60_000)
})
