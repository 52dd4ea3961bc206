/**
 * A client generated from docs/openapi.json by openapi-typescript, run with openapi-fetch
 * (each from npm, as an app developer installs them), type-checked with tsc and run on
 * Node against a gateway in front of the platform sandbox: it calls every platform path
 * the document names by that path, never an escaped `/api/v1/campaign%2Fget`. Slow by
 * nature (a whole tsc run); the document's paths themselves are checked in
 * test/slow/openapi-tools.test.ts.
 */
import { execFile, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import openapiTS, { astToString, COMMENT_HEADER, type OpenAPI3 } from 'openapi-typescript'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { KEYS } from '../helpers/build-gateway.js'
import { useSandboxGateway } from '../helpers/fixtures.js'
import { SANDBOX_TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import type { Json } from '../helpers/openapi-doc.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const TSC = join(ROOT, 'node_modules/.bin/tsc')

const ADMIN_TOKEN = 'generated-client-admin-token-0123456789'
// One job runs at a time: a job asked behind one held at the platform stays queued.
const env = useSandboxGateway({ env: { ADMIN_TOKEN }, yaml: `${SANDBOX_TEAMS_YAML}jobs:\n  perReplica: 1\n` })

let proxyDoc: Json
let adminDoc: Json
let adminUrl = ''

beforeAll(async () => {
  proxyDoc = (await (await fetch(`${env.url}/openapi.json`)).json()) as Json
  await env.gw.admin.listen({ host: '127.0.0.1', port: 0 })
  adminUrl = `http://127.0.0.1:${(env.gw.admin.server.address() as AddressInfo).port}`
  adminDoc = (await (await fetch(`${adminUrl}/admin/openapi.json`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as Json
})

describe('clients generated from docs/openapi.json and docs/admin-openapi.json with openapi-typescript, run with openapi-fetch', () => {
  let dir = ''
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it('type-checks and calls each platform path by its real path, typed as the platform validates its forms, with the request headers the README names (if-none-match on a report and on a job\'s result, prefer, x-request-id); and purges with dryRun: true', async () => {
    // Outside the repository (Node strips no types under node_modules), its packages the repository's.
    dir = mkdtempSync(join(tmpdir(), 'rgw-generated-client-'))
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'))
    const ast = await openapiTS(structuredClone(proxyDoc) as unknown as OpenAPI3, { silent: true })
    writeFileSync(join(dir, 'schema.d.ts'), `${COMMENT_HEADER}${astToString(ast)}`)
    const adminAst = await openapiTS(structuredClone(adminDoc) as unknown as OpenAPI3, { silent: true })
    writeFileSync(join(dir, 'admin-schema.d.ts'), `${COMMENT_HEADER}${astToString(adminAst)}`)
    writeFileSync(join(dir, 'admin-app.ts'), GENERATED_ADMIN_APP)
    writeFileSync(join(dir, 'package.json'), '{"type": "module", "private": true}\n')
    writeFileSync(join(dir, 'app.ts'), GENERATED_APP)
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', lib: ['ES2022', 'DOM'], types: ['node'], strict: true, noEmit: true, allowImportingTsExtensions: true }, include: ['app.ts', 'schema.d.ts', 'admin-app.ts', 'admin-schema.d.ts'] }),
    )
    const checked = spawnSync(TSC, ['-p', 'tsconfig.json'], { cwd: dir, encoding: 'utf8' })
    expect(checked.stdout + checked.stderr).toBe('')
    expect(checked.status).toBe(0)
    // Node 24 runs the TypeScript as it is (its types stripped); the gateway answering runs in this process.
    env.sandbox.setRouteFailure('/api/v1/report/creatives/get', { kind: 'held', times: 1 })
    const run = await promisify(execFile)(process.execPath, ['--no-warnings', 'app.ts', env.url, KEYS.all, KEYS.writer], { cwd: dir, encoding: 'utf8', timeout: 60_000 }).finally(() => env.sandbox.releaseHeld())
    const out = JSON.parse(run.stdout) as Record<string, unknown>
    expect(out.sent).toEqual([
      'GET /api/v1/report/campaigns/get',
      'POST /api/v1/report/campaigns/get',
      'POST /api/v1/campaign/get',
      'POST /api/v1/campaign/banner/create',
      expect.stringMatching(/^DELETE \/api\/v1\/campaign\/banner\/delete\/101\d{3}$/),
      'GET /api/v1/report/campaigns/get',
    ])
    expect(out.statuses).toEqual([200, 200, 200, 201, 200, 401])
    expect(out.rows).toBe(3)
    expect(out.listed).toEqual([101])
    expect(out.challenge).toBe('ApiKey realm="report-gateway"')
    // The headers a generated client sends typed: 304 to each etag, 202 to respond-async, the caller's id on the job's status.
    expect(out.conditional).toEqual({ report: 304, asked: 202, jobState: 'done', statusId: expect.stringMatching(/^generated-client-status-\d$/), result: 200, resultAgain: 304 })
    // Every job operation and the listener's own, as the document types them.
    expect(out.others).toEqual({
      queued: [202, 204],
      refusedCancel: [409, 'GW_JOB_RUNNING'],
      heads: [200, 200, true],
      allow: ['GET, HEAD, DELETE, OPTIONS', 'GET, HEAD, OPTIONS'],
      health: 'ok',
      ready: 'ready',
      described: '3.1.0',
    })
    // A boolean dryRun, sent as `dryRun=true` and `dryRun=false`: a dry run, then the purge.
    const purged = await promisify(execFile)(process.execPath, ['--no-warnings', 'admin-app.ts', adminUrl, ADMIN_TOKEN], { cwd: dir, encoding: 'utf8', timeout: 60_000 })
    const { sent, answers } = JSON.parse(purged.stdout) as { sent: string[]; answers: [{ wouldDrop: number }, { dropped: number }] }
    expect(sent).toEqual(['DELETE /admin/cache?dryRun=true', 'DELETE /admin/cache?dryRun=false'])
    // The reports the app above read are what the dry run counts and the purge drops.
    expect(answers[0]).toEqual({ purged: 'all', dryRun: true, wouldDrop: expect.any(Number) })
    expect(answers[0].wouldDrop).toBeGreaterThan(0)
    expect(answers[1]).toEqual({ purged: 'all', dryRun: false, dropped: answers[0].wouldDrop })
  }, 120_000)

  it('with --path-params-as-types, TypeScript refuses the job result path beside the job path, and the README says to leave the option off', async () => {
    // The option writes each path as a template literal key; `${string}` matches a slash,
    // so `/api/v1/jobs/${string}/result` is also a `/api/v1/jobs/${string}` of another
    // operation (TS2413). Nothing in the document can say otherwise; the README says so.
    const own = mkdtempSync(join(tmpdir(), 'rgw-path-params-as-types-'))
    try {
      const ast = await openapiTS(structuredClone(proxyDoc) as unknown as OpenAPI3, { silent: true, pathParamsAsTypes: true })
      writeFileSync(join(own, 'schema.d.ts'), `${COMMENT_HEADER}${astToString(ast)}`)
      writeFileSync(join(own, 'tsconfig.json'), JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', lib: ['ES2022'], types: [], strict: true, noEmit: true }, include: ['schema.d.ts'] }))
      const checked = spawnSync(TSC, ['-p', 'tsconfig.json'], { cwd: own, encoding: 'utf8' })
      const refused = [...(checked.stdout + checked.stderr).matchAll(/error (TS\d+): '`([^`]+)`' index type/g)].map(([, code, path]) => `${code} ${path}`)
      expect(refused).toEqual(['TS2413 /api/v1/jobs/${string}/result'])
    } finally {
      rmSync(own, { recursive: true, force: true })
    }
    expect(readFileSync(join(ROOT, 'README.md'), 'utf8')).toMatch(/`--path-params-as-types`[^.]*TS2413/)
  }, 120_000)

  it("type-checks configuration.md's openapi-fetch line that tells a report from a job's status, its rows' callback filled in", async () => {
    // The line a reader copies; `…` stands for the callback they write.
    const configuration = readFileSync(join(ROOT, 'docs/configuration.md'), 'utf8')
    const line = /as with openapi-fetch\s+`([^`]+)`/.exec(configuration)?.[1]
    expect(line).toMatch(/^if \(data && 'data' in data/)
    const own = mkdtempSync(join(tmpdir(), 'rgw-configuration-line-'))
    try {
      symlinkSync(join(ROOT, 'node_modules'), join(own, 'node_modules'))
      writeFileSync(join(own, 'package.json'), '{"type": "module", "private": true}\n')
      const ast = await openapiTS(structuredClone(proxyDoc) as unknown as OpenAPI3, { silent: true })
      writeFileSync(join(own, 'schema.d.ts'), `${COMMENT_HEADER}${astToString(ast)}`)
      writeFileSync(
        join(own, 'app.ts'),
        `import createClient from 'openapi-fetch'
import type { paths } from './schema.d.ts'
const api = createClient<paths>({ baseUrl: 'http://127.0.0.1:8080', headers: { 'x-api-key': 'rgw_x' } })
const { data } = await api.GET('/api/v1/report/{split}/get', { params: { path: { split: 'campaigns' }, query: { advertiserId: 101, dateFrom: '2026-05-01', dateTo: '2026-05-03' } } })
${line!.replaceAll('…', '(row) => row')}
`,
      )
      writeFileSync(join(own, 'tsconfig.json'), JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', lib: ['ES2022', 'DOM'], types: [], strict: true, noEmit: true, allowImportingTsExtensions: true }, include: ['app.ts', 'schema.d.ts'] }))
      const checked = spawnSync(TSC, ['-p', 'tsconfig.json'], { cwd: own, encoding: 'utf8' })
      expect(checked.stdout + checked.stderr).toBe('')
      expect(checked.status).toBe(0)
    } finally {
      rmSync(own, { recursive: true, force: true })
    }
  }, 120_000)
})

// The app a developer writes on the generated types: each call by its real path.
const GENERATED_APP = `import createClient from 'openapi-fetch'
import type { paths } from './schema.d.ts'

const [baseUrl, key, writerKey] = process.argv.slice(2) as [string, string, string]
const sent: string[] = []
const statuses: number[] = []
const fetchAndNote = async (request: Request): Promise<Response> => {
  sent.push(\`\${request.method} \${new URL(request.url).pathname}\`)
  const response = await fetch(request)
  statuses.push(response.status)
  return response
}
const api = createClient<paths>({ baseUrl, headers: { 'x-api-key': key }, fetch: fetchAndNote })
const writer = createClient<paths>({ baseUrl, headers: { 'x-api-key': writerKey }, fetch: fetchAndNote })

const report = await api.GET('/api/v1/report/{split}/get', { params: { path: { split: 'campaigns' }, query: { advertiserId: 101, dateFrom: '2026-05-01', dateTo: '2026-05-03', byDate: true, byCampaign: false } } })
// Its 2xx is the report (200), a job's status (202, asked with prefer: respond-async) or the
// platform's 204 (no content): told apart by its body, each typed. A report is the platform's
// JSON as it answered it (cache.reportFields): its rows under data when it has them, any JSON
// the gateway does not read (the platform's known rows are components['schemas']['ReportRow']).
const rows: number = report.data && 'data' in report.data && Array.isArray(report.data.data) ? report.data.data.length : -1
await api.POST('/api/v1/report/{split}/get', { params: { path: { split: 'campaigns' } }, body: { campaignIds: [101001], dateFrom: '2026-05-01', dateTo: '2026-05-03', byDate: true } })
const listed = await api.POST('/api/v1/campaign/get', { params: { query: { per_page: 50 } }, body: { userId: 101 } })
const created = await writer.POST('/api/v1/campaign/banner/create', {
  body: { userId: 101, name: 'Generated', adDomain: 'example.com', clickUrl: 'https://example.com/', autoStart: false, dates: { from: '2026-05-01', to: '2026-05-31' }, country: 'KE', bid: 1.5, budget: { daily: 10, total: 100 }, creativeSetIds: [1010011] },
})
const id: number = created.data?.data.id ?? 0
await writer.DELETE('/api/v1/campaign/banner/delete/{id}', { params: { path: { id }, query: { userId: 101 } } })
const refused = await createClient<paths>({ baseUrl, fetch: fetchAndNote }).GET('/api/v1/report/{split}/get', { params: { path: { split: 'campaigns' }, query: { advertiserId: 101, dateFrom: '2026-05-01', dateTo: '2026-05-03' } } })

// The request headers the README names, typed by the document: a report read revalidated with
// its etag, and a report asked as a job, its status asked under an id of the caller's and its
// result revalidated with its etag (jobs.md: a job's result answers as a report read does).
const quiet = createClient<paths>({ baseUrl, headers: { 'x-api-key': key } })
const reportQuery = { advertiserId: 101, dateFrom: '2026-05-01', dateTo: '2026-05-03', byDate: true, byCampaign: false }
const reportEtag = report.response.headers.get('etag') ?? ''
const revalidated = await quiet.GET('/api/v1/report/{split}/get', { params: { path: { split: 'campaigns' }, query: reportQuery, header: { 'if-none-match': reportEtag } } })
const jobQuery = { advertiserId: 101, dateFrom: '2026-04-01', dateTo: '2026-04-03' }
const asked = await quiet.GET('/api/v1/report/{split}/get', { params: { path: { split: 'campaigns' }, query: jobQuery, header: { prefer: 'respond-async' } } })
const jobId = (asked.response.headers.get('location') ?? '').split('/').pop() ?? ''
let jobState = ''
let statusId: string | null = null
for (let tries = 0; tries < 10 && jobState !== 'done' && jobState !== 'failed'; tries++) {
  const status = await quiet.GET('/api/v1/jobs/{id}', { params: { path: { id: jobId }, query: { wait: 5 }, header: { 'x-request-id': \`generated-client-status-\${tries}\` } } })
  jobState = status.data?.state ?? 'none'
  statusId = status.response.headers.get('x-request-id')
}
const result = await quiet.GET('/api/v1/jobs/{id}/result', { params: { path: { id: jobId } } })
const resultAgain = await quiet.GET('/api/v1/jobs/{id}/result', { params: { path: { id: jobId }, header: { 'if-none-match': result.response.headers.get('etag') ?? '' } } })
const conditional = { report: revalidated.response.status, asked: asked.response.status, jobState, statusId, result: result.response.status, resultAgain: resultAgain.response.status }

// The document's other operations, each called as typed: a job asked and cancelled while
// queued (204) behind one held at the platform, a done job's cancel refused (its GW_* code typed), a job's status and result
// as HEAD, what OPTIONS allows, the health routes and the document itself.
// One job at a time (jobs.perReplica: 1), the first held at the platform: the next one waits, queued.
await quiet.GET('/api/v1/report/{split}/get', { params: { path: { split: 'creatives' }, query: { advertiserId: 102, dateFrom: '2025-01-01', dateTo: '2025-12-31' }, header: { prefer: 'respond-async' } } })
const queuedAsk = await quiet.GET('/api/v1/report/{split}/get', { params: { path: { split: 'campaigns' }, query: { advertiserId: 102, dateFrom: '2025-01-01', dateTo: '2025-12-31' }, header: { prefer: 'respond-async' } } })
const queuedId = (queuedAsk.response.headers.get('location') ?? '').split('/').pop() ?? ''
const cancelled = await quiet.DELETE('/api/v1/jobs/{id}', { params: { path: { id: queuedId } } })
const refusedCancel = await quiet.DELETE('/api/v1/jobs/{id}', { params: { path: { id: jobId } } })
const refusedCode: string | undefined = refusedCancel.error?.code
const statusHead = await quiet.HEAD('/api/v1/jobs/{id}', { params: { path: { id: jobId } } })
const resultHead = await quiet.HEAD('/api/v1/jobs/{id}/result', { params: { path: { id: jobId } } })
const jobOptions = await quiet.OPTIONS('/api/v1/jobs/{id}', { params: { path: { id: jobId } } })
const resultOptions = await quiet.OPTIONS('/api/v1/jobs/{id}/result', { params: { path: { id: jobId } } })
const health: 'ok' | undefined = (await quiet.GET('/healthz')).data?.status
const ready: 'ready' | undefined = (await quiet.GET('/readyz')).data?.status
const described: string | undefined = (await quiet.GET('/openapi.json')).data?.openapi
const others = {
  queued: [queuedAsk.response.status, cancelled.response.status],
  refusedCancel: [refusedCancel.response.status, refusedCode],
  heads: [statusHead.response.status, resultHead.response.status, resultHead.response.headers.get('etag') === result.response.headers.get('etag')],
  allow: [jobOptions.response.headers.get('allow'), resultOptions.response.headers.get('allow')],
  health,
  ready,
  described,
}

export function typedAsThePlatformValidates(): void {
  // @ts-expect-error a POST report form names its campaigns: the platform answers 422 without them
  void api.POST('/api/v1/report/{split}/get', { params: { path: { split: 'campaigns' } }, body: { dateFrom: '2026-05-01', dateTo: '2026-05-03' } })
  // @ts-expect-error a campaign is created with a name
  void writer.POST('/api/v1/campaign/banner/create', { body: { userId: 101, adDomain: 'example.com', clickUrl: 'https://example.com/', dates: { from: '2026-05-01', to: '2026-05-31' }, country: 'KE', bid: 1.5, budget: { daily: 10, total: 100 }, creativeSetIds: [1] } })
  // @ts-expect-error a query flag is a boolean or 1, true, 0, false: anything else is 400
  void api.GET('/api/v1/report/{split}/get', { params: { path: { split: 'campaigns' }, query: { advertiserId: 101, dateFrom: '2026-05-01', dateTo: '2026-05-03', byDate: 'yes' } } })
  // @ts-expect-error no operation takes a whole platform path as one parameter
  void api.GET('/api/v1/{path}', { params: { path: { path: 'campaign/get' } } })
}

console.log(JSON.stringify({
  sent,
  statuses,
  rows,
  listed: [...new Set((listed.data?.data ?? []).map((campaign) => campaign.userId))],
  challenge: refused.response.headers.get('www-authenticate'),
  conditional,
  others,
}))
`

// An operator's script on the admin document's generated types: a purge's dry run, then the purge.
const GENERATED_ADMIN_APP = `import createClient from 'openapi-fetch'
import type { paths } from './admin-schema.d.ts'

const [baseUrl, token] = process.argv.slice(2) as [string, string]
const sent: string[] = []
const admin = createClient<paths>({ baseUrl, headers: { authorization: \`Bearer \${token}\` }, fetch: (request: Request) => {
  const url = new URL(request.url)
  sent.push(\`\${request.method} \${url.pathname}\${url.search}\`)
  return fetch(request)
} })
const dry = await admin.DELETE('/admin/cache', { params: { query: { dryRun: true } } })
const purge = await admin.DELETE('/admin/cache', { params: { query: { dryRun: false } } })

export function typedAsTheGatewayValidates(): void {
  // @ts-expect-error a query flag is a boolean or 1, true, 0, false: anything else is 400
  void admin.DELETE('/admin/cache', { params: { query: { dryRun: 'yes' } } })
}

console.log(JSON.stringify({ sent, answers: [dry.data, purge.data] }))
`
