import { buildInfo } from '../../observe/build-info.js'
import { GATEWAY_TEAM } from '../../platform/governor/gateway-team.js'
import { credentialsSchema, healthSchema, purgeSchema, readySchema, reloadSchema, tokenBody, tokenChangeSchema, tokenViewSchema, usageSchema } from '../admin/admin-schemas.js'
import { auditSchema, statusSchema } from '../admin/admin-status.js'
import { MAX_USAGE_DAYS, USAGE_COLUMNS, USAGE_FORMATS } from '../admin/admin-usage.js'
import { clusterSchema } from '../admin/cluster-route.js'
import { errorCodes, errorSchemas } from './error-responses.js'

// The OpenAPI 3.1 document of the admin listener, served at GET /admin/openapi.json and
// written to docs/admin-openapi.json by `npm run openapi`. The proxy's document is made
// from its routes' schemas; the admin calls check their input themselves, with their own
// messages, so this one is written out: one entry per operation in ADMIN_OPERATIONS, with
// the answers' schemas of admin/admin-schemas.ts and of the routes that serialize with
// one, and the GW_* error shapes of errors.ts (openapi/error-responses.ts).
//
// A new route of the admin listener is one more entry in ADMIN_OPERATIONS: its method and
// path, a summary, its parameters or body, its answers (a schema under SCHEMAS, shared
// with the route where the route serializes with it) and the GW_* codes it answers with
// beyond those of every call. test/integration/admin-openapi.test.ts fails for a route
// the document does not list, and checks a real answer of each against its schema.

type Json = Record<string, unknown>

/** One operation of the admin listener. */
interface AdminOperation {
  method: 'get' | 'put' | 'post' | 'delete'
  /** As OpenAPI writes it: `{name}` for Fastify's `:name`. Under /admin/ it needs the admin token. */
  path: string
  operationId: string
  tag: 'token' | 'cache' | 'teams' | 'state' | 'console' | 'health' | 'description'
  summary: string
  description?: string
  parameters?: Json[]
  body?: Json
  /** The answers that are not GW_* errors, by status. */
  responses: Record<string, Json>
  /** GW_* codes this call answers with besides those every call may give, with when it does. */
  errors?: Record<string, string>
}

/** Schemas the operations name, as `components.schemas`. */
const SCHEMAS: Record<string, unknown> = {
  TokenView: tokenViewSchema,
  TokenChange: tokenChangeSchema,
  Credentials: credentialsSchema,
  Purge: purgeSchema,
  Reload: reloadSchema,
  Usage: usageSchema,
  Status: statusSchema,
  Audit: auditSchema,
  Cluster: clusterSchema,
  Health: healthSchema,
  Ready: readySchema,
}

/** What a code means on the admin listener, unless an operation says more; every code the document names has one. */
const WHEN: Record<string, string> = {
  GW_BAD_REQUEST: 'A parameter or the body breaks the call\'s rules; the message names the field.',
  GW_UNAUTHORIZED: 'No `authorization: Bearer <admin token>`, or a token that is neither `ADMIN_TOKEN` nor one of `ADMIN_TOKENS_FILE`.',
  GW_NOT_FOUND: 'Nothing of that name: a credential, a team, a file of the console.',
  GW_REQUEST_TIMEOUT: 'The body did not arrive within `limits.bodyTimeout` of the headers, or the request not whole within `server.requestTimeout`.',
  GW_PAYLOAD_TOO_LARGE: 'The body is over `bodyLimit`.',
  GW_TOKEN_REJECTED: 'The platform refused the token offered; the token in use stays.',
  GW_CONFIG_INVALID: 'A teams reload was refused: a file does not validate; the running teams stay.',
  GW_RELOAD_UNAVAILABLE: 'There is no file to reload the teams from.',
  GW_PLATFORM_AUTH: 'The password login failed.',
  GW_UPSTREAM: 'A call to the platform failed.',
  GW_ADMIN_DISABLED: 'No admin token is configured (`ADMIN_TOKEN`, `ADMIN_TOKENS_FILE`): every `/admin/*` call is refused.',
  GW_REDIS_UNAVAILABLE: 'Redis could not be reached.',
  GW_SHUTTING_DOWN: 'This replica is shutting down; another replica answers a retry.',
  GW_INTERNAL: 'An unexpected fault of the gateway; details only in its log, under the answer\'s `x-request-id`.',
}

/** Codes every call of the listener may answer with; /admin/* calls also these. */
const EVERY_CALL = ['GW_SHUTTING_DOWN', 'GW_INTERNAL']
const EVERY_ADMIN_CALL = ['GW_UNAUTHORIZED', 'GW_ADMIN_DISABLED']

const json = (schema: Json, description: string) => ({ description, content: { 'application/json': { schema } } })
const named = (schema: string) => ({ $ref: `#/components/schemas/${schema}` })
const text = (type: string, description: string) => ({ description, content: { [type]: { schema: { type: 'string' } } } })

const CREDENTIAL = { name: 'name', in: 'path', required: true, description: 'A credential: `default`, or a name under `credentials:`.', schema: { type: 'string' } }
const NO_CREDENTIAL = { GW_NOT_FOUND: 'No credential of that name.' }

const PUT_TOKEN = {
  description:
    'Checks the token with the probe call (`platform.probe`), then uses it on every replica (through Redis when configured). ' +
    'The token in use offered again changes nothing: no probe, `changed: false`.',
  body: tokenBody,
  responses: { '200': json(named('TokenChange'), 'The token\'s view, and whether it changed.') },
  errors: {
    GW_BAD_REQUEST: 'The body is not `{"token": "…"}` with a plausible token; the message names the field.',
    GW_REQUEST_TIMEOUT: 'The body did not arrive within `limits.bodyTimeout` of the headers.',
    GW_PAYLOAD_TOO_LARGE: 'The body is over `bodyLimit`.',
    GW_TOKEN_REJECTED: 'The probe call answered 401 or 403 to the offered token; the token in use stays.',
    GW_UPSTREAM: 'The probe call failed (no answer); the token was not changed.',
  },
}

const REFRESH = {
  description: 'Runs the password login again (the credential\'s token request).',
  responses: { '200': json(named('TokenView'), 'The new token\'s view.') },
  errors: {
    GW_BAD_REQUEST: 'The credential has no password login.',
    GW_PLATFORM_AUTH: 'The login failed; the token in use stays.',
  },
}

const USAGE_CSV =
  `One header row, then one row per day and team, CRLF line ends (RFC 4180): ${USAGE_COLUMNS.map((c) => `\`${c}\``).join(', ')}. ` +
  'A cell a spreadsheet would read as a formula (starting with `=`, `+`, `-`, `@`, a tab or a carriage return) starts with `\'`.'

const ADMIN_OPERATIONS: AdminOperation[] = [
  {
    method: 'get',
    path: '/admin/token',
    operationId: 'getToken',
    tag: 'token',
    summary: 'The default credential\'s platform token, without the token',
    responses: { '200': json(named('TokenView'), 'The token\'s view.') },
  },
  { method: 'put', path: '/admin/token', operationId: 'putToken', tag: 'token', summary: 'Replace the default credential\'s platform token', ...PUT_TOKEN },
  { method: 'post', path: '/admin/token/refresh', operationId: 'refreshToken', tag: 'token', summary: 'Log the default credential in again', ...REFRESH },
  {
    method: 'get',
    path: '/admin/credentials',
    operationId: 'getCredentials',
    tag: 'token',
    summary: 'Every credential\'s platform token, without the tokens',
    responses: { '200': json(named('Credentials'), 'One view per credential, `default` first.') },
  },
  {
    method: 'get',
    path: '/admin/credentials/{name}/token',
    operationId: 'getCredentialToken',
    tag: 'token',
    summary: 'A credential\'s platform token, without the token',
    parameters: [CREDENTIAL],
    responses: { '200': json(named('TokenView'), 'The token\'s view.') },
    errors: NO_CREDENTIAL,
  },
  {
    method: 'put',
    path: '/admin/credentials/{name}/token',
    operationId: 'putCredentialToken',
    tag: 'token',
    summary: 'Replace a credential\'s platform token',
    parameters: [CREDENTIAL],
    ...PUT_TOKEN,
    errors: { ...PUT_TOKEN.errors, ...NO_CREDENTIAL },
  },
  {
    method: 'post',
    path: '/admin/credentials/{name}/token/refresh',
    operationId: 'refreshCredentialToken',
    tag: 'token',
    summary: 'Log a credential in again',
    parameters: [CREDENTIAL],
    ...REFRESH,
    errors: { ...REFRESH.errors, ...NO_CREDENTIAL },
  },
  {
    method: 'delete',
    path: '/admin/cache',
    operationId: 'purgeCache',
    tag: 'cache',
    summary: 'Drop report entries on every replica',
    description: 'Every report entry, or one advertiser\'s with `advertiserId`; in Redis and in each replica\'s memory. Audited with the operator.',
    parameters: [{ name: 'advertiserId', in: 'query', description: 'Only this advertiser\'s entries: a positive integer, digits only.', schema: { type: 'string', pattern: '^[0-9]{1,15}$' } }],
    responses: { '200': json(named('Purge'), 'What was dropped.') },
    errors: {
      GW_BAD_REQUEST: '`advertiserId` is not a positive integer.',
      GW_REDIS_UNAVAILABLE: 'This replica dropped its entries in memory, but Redis could not be reached; repeat the call.',
    },
  },
  {
    method: 'post',
    path: '/admin/reload',
    operationId: 'reloadTeams',
    tag: 'teams',
    summary: 'Reload the teams on every replica',
    description: 'Reads `TEAMS_FILE` or `CONFIG_FILE` again; a file that does not validate is refused whole and the running teams stay.',
    responses: { '200': json(named('Reload'), 'The teams now in use, and the keys added and removed.') },
    errors: {
      GW_RELOAD_UNAVAILABLE: 'Neither `CONFIG_FILE` nor `TEAMS_FILE` is set, or the gateway runs in demo mode.',
      GW_CONFIG_INVALID: 'A file does not validate, or both declare teams; the running teams stay. The message names the file variables, then the problems.',
    },
  },
  {
    method: 'get',
    path: '/admin/usage',
    operationId: 'getUsage',
    tag: 'teams',
    summary: 'Daily totals per team',
    description:
      'Per UTC day and team: requests, cache hits, platform calls, bytes, 429s and 5xx answers. This replica\'s counts are flushed first; ' +
      'other replicas\' may lag by `usage.flush`. `?format=csv` gives the same rows as a CSV file for a spreadsheet.',
    parameters: [
      { name: 'from', in: 'query', description: 'First UTC day, `YYYY-MM-DD`; default: `to`.', schema: { type: 'string', format: 'date' } },
      { name: 'to', in: 'query', description: `Last UTC day, included; default: today. At most ${MAX_USAGE_DAYS} days from \`from\`.`, schema: { type: 'string', format: 'date' } },
      { name: 'team', in: 'query', description: `One team (or \`${GATEWAY_TEAM}\`); default: every team.`, schema: { type: 'string' } },
      { name: 'format', in: 'query', description: 'The answer\'s form; default `json`.', schema: { type: 'string', enum: [...USAGE_FORMATS] } },
    ],
    responses: {
      '200': {
        description: `The totals (\`format=json\`), or the same rows as CSV (\`format=csv\`). ${USAGE_CSV}`,
        headers: { 'content-disposition': { $ref: '#/components/headers/content-disposition' } },
        content: {
          'application/json': { schema: named('Usage') },
          'text/csv': { schema: { type: 'string', description: USAGE_CSV } },
        },
      },
    },
    errors: {
      GW_BAD_REQUEST: 'A parameter is malformed: a date that is no date, `from` after `to`, a range over the limit, a team name no team can have, an unknown `format`.',
      GW_NOT_FOUND: '`team` names no running team, and no team of that name has usage in the range.',
      GW_REDIS_UNAVAILABLE: 'Redis could not be read; try again.',
    },
  },
  {
    method: 'get',
    path: '/admin/status',
    operationId: 'getStatus',
    tag: 'state',
    summary: 'This replica\'s state in one answer',
    description: 'Build, credentials, Redis, cache, teams and governors, as the operations console shows them; never a token or a password.',
    responses: { '200': json(named('Status'), 'This replica\'s state.') },
  },
  {
    method: 'get',
    path: '/admin/audit',
    operationId: 'getAudit',
    tag: 'state',
    summary: 'This replica\'s last audit lines, newest first',
    responses: { '200': json(named('Audit'), 'The log\'s JSON lines with `"kind":"audit"`, as they were logged.') },
  },
  {
    method: 'get',
    path: '/admin/cluster',
    operationId: 'getCluster',
    tag: 'state',
    summary: 'Every live replica and its last hour',
    responses: { '200': json(named('Cluster'), 'The replicas that announced themselves in Redis (this one only without Redis).') },
  },
  {
    method: 'get',
    path: '/admin/openapi.json',
    operationId: 'getAdminDocument',
    tag: 'description',
    summary: 'This document',
    responses: { '200': json({ type: 'object', description: 'An OpenAPI 3.1 document.' }, 'This document.') },
  },
  { method: 'get', path: '/metrics', operationId: 'getMetrics', tag: 'state', summary: 'Prometheus metrics', responses: { '200': text('text/plain', 'Prometheus text format 0.0.4.') } },
  { method: 'get', path: '/healthz', operationId: 'healthz', tag: 'health', summary: 'Liveness: the process answers', responses: { '200': json(named('Health'), 'The process runs.') } },
  {
    method: 'get',
    path: '/readyz',
    operationId: 'readyz',
    tag: 'health',
    summary: 'Readiness of this replica',
    description: 'The body lists what is degraded (a refused platform token, Redis down); 503 only while this replica cannot serve at all.',
    responses: { '200': json(named('Ready'), 'Ready; the body lists what is degraded.'), '503': json(named('Ready'), 'Starting or shutting down.') },
  },
  { method: 'get', path: '/console', operationId: 'getConsole', tag: 'console', summary: 'The operations console (it asks for the admin token itself)', responses: { '200': text('text/html', 'The page.') } },
  { method: 'get', path: '/console/console.css', operationId: 'getConsoleStyle', tag: 'console', summary: 'The console\'s style', responses: { '200': text('text/css', 'The style sheet.') } },
  { method: 'get', path: '/console/uPlot.iife.min.js', operationId: 'getChartScript', tag: 'console', summary: 'The console\'s chart library (uPlot)', responses: { '200': text('text/javascript', 'The script.') } },
  { method: 'get', path: '/console/uPlot.min.css', operationId: 'getChartStyle', tag: 'console', summary: 'The chart library\'s style', responses: { '200': text('text/css', 'The style sheet.') } },
  {
    method: 'get',
    path: '/console/{file}',
    operationId: 'getConsoleScript',
    tag: 'console',
    summary: 'The console\'s scripts',
    parameters: [{ name: 'file', in: 'path', required: true, description: 'A script of the console, e.g. `console-page.js`.', schema: { type: 'string', pattern: '^[\\w.-]+\\.js$' } }],
    responses: { '200': text('text/javascript', 'The script.') },
    errors: { GW_NOT_FOUND: 'No script of the console has that name.' },
  },
  { method: 'get', path: '/docs', operationId: 'getDocs', tag: 'description', summary: 'Swagger UI of the proxy listener\'s document', responses: { '200': text('text/html', 'The page.') } },
  {
    method: 'get',
    path: '/docs/json',
    operationId: 'getProxyDocument',
    tag: 'description',
    summary: 'The proxy listener\'s OpenAPI document (as its `GET /openapi.json`)',
    responses: { '200': json({ type: 'object', description: 'An OpenAPI 3.1 document.' }, 'The proxy listener\'s document.') },
  },
]

function whenOf(code: string): string {
  const when = WHEN[code]
  if (when === undefined) throw new Error(`admin document: say what ${code} means on the admin listener (WHEN)`)
  return when
}

/** The codes an operation may answer with, with when, each under its status. */
function errorsOf(op: AdminOperation): Map<number, [code: string, when: string][]> {
  const statuses = errorCodes()
  const codes: Record<string, string> = {}
  for (const code of [...(op.path.startsWith('/admin/') ? EVERY_ADMIN_CALL : []), ...EVERY_CALL]) codes[code] = whenOf(code)
  Object.assign(codes, op.errors)
  const byStatus = new Map<number, [string, string][]>()
  for (const [code, when] of Object.entries(codes).sort(([a], [b]) => a.localeCompare(b))) {
    const status = statuses.get(code)?.[0]
    if (status === undefined) throw new Error(`admin document: ${code} is not a code of errors.ts`)
    byStatus.set(status, [...(byStatus.get(status) ?? []), [code, when]])
  }
  return byStatus
}

function operation(op: AdminOperation): Json {
  const admin = op.path.startsWith('/admin/')
  const responses: Record<string, Json> = structuredClone(op.responses)
  for (const [status, codes] of errorsOf(op)) {
    const refs = codes.map(([code]) => named(code))
    const description = codes.map(([code, when]) => `\`${code}\`: ${when}`).join(' ')
    const answer = responses[String(status)]
    // A status that is also an answer of the call (503 of /readyz): either body.
    if (answer) {
      const content = answer.content as Record<string, { schema: Json }>
      content['application/json'] = { schema: { anyOf: [content['application/json']?.schema, ...refs].filter(Boolean) } }
      answer.description = `${answer.description as string} Or ${description}`
    } else responses[String(status)] = { description, content: { 'application/json': { schema: refs.length === 1 ? refs[0] : { anyOf: refs } } } }
  }
  for (const [status, { description, headers, content }] of Object.entries(responses)) {
    responses[status] = {
      description,
      headers: {
        'x-request-id': { $ref: '#/components/headers/x-request-id' },
        ...(admin ? { 'cache-control': { $ref: '#/components/headers/cache-control' } } : {}),
        ...(headers as Json | undefined),
      },
      content,
    }
  }
  return {
    tags: [op.tag],
    operationId: op.operationId,
    summary: op.summary,
    ...(op.description ? { description: op.description } : {}),
    ...(admin ? {} : { security: [] }),
    ...(op.parameters ? { parameters: op.parameters } : {}),
    ...(op.body ? { requestBody: { required: true, content: { 'application/json': { schema: op.body } } } } : {}),
    responses: Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b))),
  }
}

function build(): Json {
  const paths: Record<string, Record<string, Json>> = {}
  for (const op of ADMIN_OPERATIONS) (paths[op.path] ??= {})[op.method] = operation(op)
  const used = new Set(ADMIN_OPERATIONS.flatMap((op) => [...errorsOf(op).values()].flat().map(([code]) => code)))
  const errors = Object.fromEntries(
    Object.entries(errorSchemas())
      .filter(([code]) => used.has(code))
      .map(([code, schema]) => [code, { ...(schema as Json), description: whenOf(code) }]),
  )
  return {
    openapi: '3.1.0',
    info: {
      title: 'Report gateway: admin listener',
      version: buildInfo({}).version,
      description:
        'The operators\' calls of one replica (`ADMIN_PORT`, default 8081): its platform tokens, the report cache, the teams, usage per team, its state, metrics and health. ' +
        '`/admin/*` needs `authorization: Bearer <admin token>` (this document too); `/metrics`, `/healthz`, `/readyz`, `/console` and `/docs` need none. ' +
        'Errors are JSON `{statusCode, code, error, message}` with a `GW_*` code.',
    },
    servers: [
      { url: '/', description: 'The admin listener this document was read from.' },
      {
        url: '{scheme}://{host}:{port}',
        description: 'A replica\'s admin listener by address (`ADMIN_HOST`, `ADMIN_PORT`).',
        variables: { scheme: { enum: ['http', 'https'], default: 'http' }, host: { default: '127.0.0.1' }, port: { default: '8081' } },
      },
    ],
    security: [{ adminToken: [] }],
    tags: [
      { name: 'token', description: 'The platform tokens of the credentials.' },
      { name: 'cache', description: 'The report cache.' },
      { name: 'teams', description: 'The teams and their usage.' },
      { name: 'state', description: 'This replica\'s state, the cluster\'s, the audit lines and the metrics.' },
      { name: 'console', description: 'The operations console.' },
      { name: 'health', description: 'Liveness and readiness (also on the proxy listener).' },
      { name: 'description', description: 'The listeners\' OpenAPI documents.' },
    ],
    paths,
    components: {
      securitySchemes: {
        adminToken: { type: 'http', scheme: 'bearer', description: '`ADMIN_TOKEN`, or a token of `ADMIN_TOKENS_FILE` (audit lines name its operator).' },
      },
      schemas: { ...SCHEMAS, ...errors },
      headers: {
        'x-request-id': { description: 'The caller\'s `x-request-id` when it is a plain token, else a new one; log lines of the call carry it.', schema: { type: 'string' } },
        'cache-control': { description: '`no-store`: no cache keeps an admin answer.', schema: { const: 'no-store' } },
        'content-disposition': { description: 'With `format=csv`: `attachment; filename="usage-<from>-<to>.csv"`.', schema: { type: 'string', pattern: '^attachment; filename="usage-\\d{4}-\\d{2}-\\d{2}-\\d{4}-\\d{2}-\\d{2}\\.csv"$' } },
      },
    },
  }
}

let built: Json | null = null

/** The admin listener's OpenAPI document (the same for every replica of a version). */
export function adminDocument(): Json {
  built ??= build()
  return built
}

/** As docs/admin-openapi.json holds it. */
export function renderAdminDocument(): string {
  return `${JSON.stringify(adminDocument(), null, 2)}\n`
}
