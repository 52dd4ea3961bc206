import fastifySwagger, { type FastifyDynamicSwaggerOptions } from '@fastify/swagger'
import type { FastifyInstance } from 'fastify'
import { ADMIN_GUESSES, ADMIN_GUESS_WINDOW_MS } from '../../access/admin-guesses.js'
import { buildInfo } from '../../observe/build-info.js'
import { ADMIN_CHALLENGE } from '../server.js'
import { ADMIN_BODY_TOO_LARGE, healthSchema, READY_STATUS, readySchema } from '../admin/admin-schemas.js'
import { CONSOLE_CSP, DOCS_CSP } from '../admin/page-headers.js'
import { errorCodes, errorSchemas } from './error-responses.js'
import { listenerServers } from './document.js'

// The OpenAPI 3.1 document of the admin listener, served at GET /admin/openapi.json and
// written to docs/admin-openapi.json by `npm run openapi`. @fastify/swagger makes it from
// the routes as they are registered: the /admin/* routes' schemas are the ones Fastify
// validates their query, path and body with (admin/admin-schemas.ts), and their answers'
// schemas the ones they serialize with. Each admin route's schema also names, under
// `x-errors`, the GW_* codes it answers with beyond those of every call; they become its
// error answers here (with the GW_* shapes of errors.ts). The routes that take nothing
// (health, metrics, the console's files, Swagger UI) are described below by their URL.

type Json = Record<string, unknown>

/** What a code means on the admin listener, unless an operation says more; every code the document names has one. */
const WHEN: Record<string, string> = {
  GW_BAD_REQUEST: 'A request the listener cannot take, whatever its path: a malformed head, no `Host` or more than one, a path that is not valid percent-encoding. On `/admin/*` also a parameter, the path or the body that breaks the call\'s rules (a parameter the call does not take, a malformed value, a body where the call takes none). The message names it; nothing was changed.',
  GW_UNAUTHORIZED: 'No `authorization: Bearer <admin token>`, or a token that is not one of `ADMIN_TOKEN`, `ADMIN_VIEWER_TOKEN` or `ADMIN_TOKENS_FILE`.',
  GW_FORBIDDEN: 'The admin token is a viewer\'s: it may read, not change; nothing was changed.',
  GW_NOT_FOUND: 'Nothing of that name: a credential, a team, a replica, a file of the console.',
  GW_REQUEST_TIMEOUT: 'The request was not whole in time: its head within `server.headersTimeout`, all of it within `server.requestTimeout`, or its body within `limits.bodyTimeout` of the headers; the connection is closed.',
  GW_PAYLOAD_TOO_LARGE: ADMIN_BODY_TOO_LARGE,
  GW_TOKEN_REJECTED: 'The platform refused the token offered; the token in use stays.',
  GW_CONFIG_INVALID: 'A teams reload was refused: a file does not validate; the running teams stay. A setting written in a file is named with its line there (`; line N of TEAMS_FILE (<path>)`); `errors` lists the problems each apart, with the setting, the file and the line.',
  GW_RELOAD_UNAVAILABLE: 'There is no file to reload the teams from.',
  GW_PLATFORM_AUTH: 'The password login failed.',
  GW_UPSTREAM: 'A call to the platform failed.',
  GW_ADMIN_HOST: 'The request\'s `Host`, or the host its target names in absolute form (`GET http://host/path`), names neither an IP address, `localhost`, nor a name of `admin.hosts` (`ADMIN_HOSTS`): a page of another site whose name was made to resolve to this address (DNS rebinding). Nothing was read or changed.',
  GW_RATE_LIMITED: `The caller's address sent ${ADMIN_GUESSES} admin tokens this replica refused within ${ADMIN_GUESS_WINDOW_MS / 1000} s of the first: every \`/admin/*\` call from it without a right admin token is refused until those ${ADMIN_GUESS_WINDOW_MS / 1000} s end (\`retry-after\` says when); a right token passes whatever its address sent.`,
  GW_ADMIN_DISABLED: 'No admin token is configured (`ADMIN_TOKEN`, `ADMIN_VIEWER_TOKEN`, `ADMIN_TOKENS_FILE`): every `/admin/*` call is refused.',
  GW_REDIS_UNAVAILABLE: 'Redis could not be reached.',
  GW_JOBS_UNAVAILABLE: 'Report jobs and their deliveries are kept in Redis, which cannot be read now; `retry-after` says when to ask again.',
  GW_SHUTTING_DOWN: 'This replica is shutting down and its grace ended before the call was answered; another replica answers a retry.',
  GW_HEADERS_TOO_LARGE: 'The request line and header fields together are larger than Node reads (16 KiB, `maxHeaderSize`); nothing of the request was read, and the connection is closed.',
  GW_INTERNAL: 'An unexpected fault of the gateway; details only in its log, under the answer\'s `x-request-id`.',
}

/**
 * Codes every call of the listener may answer with (a malformed head, one too large, a
 * request not whole in time and a `Host` it does not answer to are refused before any
 * route is chosen); /admin/* calls also these (a token refused, or too many refused from
 * the caller's address), and those that change something
 * GW_FORBIDDEN.
 */
const EVERY_CALL = ['GW_BAD_REQUEST', 'GW_ADMIN_HOST', 'GW_REQUEST_TIMEOUT', 'GW_SHUTTING_DOWN', 'GW_INTERNAL', 'GW_HEADERS_TOO_LARGE']
const EVERY_ADMIN_CALL = ['GW_UNAUTHORIZED', 'GW_RATE_LIMITED', 'GW_ADMIN_DISABLED']
const CHANGES = new Set(['put', 'post', 'delete', 'patch'])

const text = (type: string, description: string) => ({ description, content: { [type]: { schema: { type: 'string' } } } })

/** The routes without an admin schema of their own, as route schemas: what the document says of them. */
const PLAIN_ROUTES: Record<string, Json> = {
  '/metrics': { tags: ['state'], operationId: 'getMetrics', summary: 'Prometheus metrics', response: { 200: text('text/plain', 'Prometheus text format 0.0.4.') } },
  '/healthz': { tags: ['health'], operationId: 'healthz', summary: 'Liveness: the process answers', response: { 200: { ...healthSchema, description: 'The process runs.' } } },
  '/readyz': {
    tags: ['health'],
    operationId: 'readyz',
    summary: 'Readiness of this replica',
    description: 'The body lists what is degraded (a refused platform token, a platform whose latest calls failed, Redis down); 503 only while this replica cannot serve at all.',
    response: { 200: { ...readySchema(READY_STATUS[200]), description: 'Ready; the body lists what is degraded.' }, 503: { ...readySchema(READY_STATUS[503]), description: 'Starting or shutting down.' } },
  },
  '/console': { tags: ['console'], operationId: 'getConsole', summary: 'The operations console (it asks for the admin token itself)', response: { 200: text('text/html', 'The page.') } },
  '/console/console.css': { tags: ['console'], operationId: 'getConsoleStyle', summary: 'The console\'s style', response: { 200: text('text/css', 'The style sheet.') } },
  '/console/icon.svg': { tags: ['console'], operationId: 'getConsoleIcon', summary: 'The console\'s icon', response: { 200: text('image/svg+xml', 'The icon (SVG).') } },
  '/console/uPlot.iife.min.js': { tags: ['console'], operationId: 'getChartScript', summary: 'The console\'s chart library (uPlot)', response: { 200: text('text/javascript', 'The script.') } },
  '/console/uPlot.min.css': { tags: ['console'], operationId: 'getChartStyle', summary: 'The chart library\'s style', response: { 200: text('text/css', 'The style sheet.') } },
  '/console/:file': {
    tags: ['console'],
    operationId: 'getConsoleScript',
    summary: 'The console\'s scripts',
    params: { type: 'object', required: ['file'], properties: { file: { type: 'string', pattern: '^[\\w.-]+\\.js$', description: 'A script of the console, e.g. `console-page.js`.' } } },
    response: { 200: text('text/javascript', 'The script.') },
    'x-errors': { GW_NOT_FOUND: 'No script of the console has that name.' },
  },
  '/docs/': { tags: ['description'], operationId: 'getDocs', summary: 'Swagger UI of the proxy listener\'s document', response: { 200: text('text/html', 'The page.') } },
  '/docs/yaml': { tags: ['description'], operationId: 'getProxyDocumentYaml', summary: 'The proxy listener\'s OpenAPI document as YAML', response: { 200: text('application/x-yaml', 'The proxy listener\'s document.') } },
  '/docs/static/*': {
    tags: ['description'],
    operationId: 'getDocsFile',
    summary: 'Swagger UI\'s own files (its scripts, styles and images)',
    description: '`index.html` is answered `302` to `/docs/`.',
    params: { type: 'object', required: ['file'], properties: { file: { type: 'string', description: 'A file of Swagger UI, e.g. `swagger-ui.css`.' } } },
    response: { 200: { description: 'The file.', content: { '*/*': { schema: { type: 'string' } } } }, 302: { description: 'To `/docs/` (for `index.html`).' } },
    'x-errors': { GW_NOT_FOUND: 'No file of Swagger UI has that name.' },
  },
  '/docs/json': {
    tags: ['description'],
    operationId: 'getProxyDocument',
    summary: 'The proxy listener\'s OpenAPI document (as its `GET /openapi.json`)',
    response: { 200: { type: 'object', description: 'The proxy listener\'s document.' } },
  },
}

function whenOf(code: string): string {
  const when = WHEN[code]
  if (when === undefined) throw new Error(`admin document: say what ${code} means on the admin listener (WHEN)`)
  return when
}

/** The codes an operation may answer with, with when, each under its status. */
function errorsOf(path: string, method: string, own: Record<string, string>): Map<number, [code: string, when: string][]> {
  const statuses = errorCodes()
  const admin = path.startsWith('/admin/')
  const codes: Record<string, string> = {}
  const every = [...(admin ? EVERY_ADMIN_CALL : []), ...(admin && CHANGES.has(method) ? ['GW_FORBIDDEN'] : []), ...EVERY_CALL]
  for (const code of every) codes[code] = whenOf(code)
  for (const [code, when] of Object.entries(own)) codes[code] = code in codes ? `${codes[code]} ${when}` : when
  const byStatus = new Map<number, [string, string][]>()
  for (const [code, when] of Object.entries(codes).sort(([a], [b]) => a.localeCompare(b))) {
    const status = statuses.get(code)?.[0]
    if (status === undefined) throw new Error(`admin document: ${code} is not a code of errors.ts`)
    byStatus.set(status, [...(byStatus.get(status) ?? []), [code, when]])
  }
  return byStatus
}

const named = (schema: string) => ({ $ref: `#/components/schemas/${schema}` })
const header = (name: string) => ({ $ref: `#/components/headers/${name}` })

/** On every /admin/* answer, refusals included (contract, "Admin listener"). */
const ADMIN_HEADERS = { 'cache-control': header('cache-control'), 'x-frame-options': header('x-frame-options'), 'x-content-type-options': header('x-content-type-options') }
/** Paths whose own answers tell this replica's state as it is asked: `cache-control: no-store` (health.ts, metrics-route.ts). */
const STATE_PATHS = new Set(['/metrics', '/healthz', '/readyz'])
/** On the console's page and files as served, and its 404s (admin/page-headers.ts). */
const CONSOLE_HEADERS = { 'content-security-policy': header('content-security-policy'), 'x-frame-options': header('x-frame-options'), 'x-content-type-options': header('x-content-type-options'), 'cross-origin-opener-policy': header('cross-origin-opener-policy') }
/**
 * The answers of the console's and Swagger UI's routes themselves: a page, a file, a
 * redirect, or a 404 of a file not served (page-headers.ts, answerAsPages). The 400, 408
 * and 431 the listener gives before any route does not carry them.
 */
const servedAsPage = (status: string) => /^[23]/.test(status) || status === '404'
/** The documents, written once and gzipped where the caller's `accept-encoding` takes it (written-once.ts). */
const GZIPPED_DOCUMENTS = new Set(['/admin/openapi.json', '/docs/json', '/docs/yaml'])
const GZIPPED_HEADERS = { vary: header('vary-accept-encoding'), 'content-encoding': header('content-encoding-gzip') }
/** On Swagger UI's page, its files and the documents it shows, as served: the console's, under Swagger UI's policy. */
const DOCS_HEADERS = { ...CONSOLE_HEADERS, 'content-security-policy': header('docs-content-security-policy') }

/** An operation as @fastify/swagger made it, with its error answers and the headers every answer carries. */
function completeOperation(path: string, method: string, op: Json, used: Set<string>): void {
  const admin = path.startsWith('/admin/')
  const responses = op.responses as Record<string, Json>
  // The call's own answers, before the refusals every call may give join them.
  const own = new Set(Object.keys(responses))
  for (const [status, codes] of errorsOf(path, method, (op['x-errors'] as Record<string, string> | undefined) ?? {})) {
    for (const [code] of codes) used.add(code)
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
  delete op['x-errors']
  for (const [status, response] of Object.entries(responses)) {
    response.headers = {
      'x-request-id': { $ref: '#/components/headers/x-request-id' },
      ...(admin ? ADMIN_HEADERS : {}),
      ...(STATE_PATHS.has(path) && own.has(status) ? { 'cache-control': header('cache-control') } : {}),
      ...(path.startsWith('/console') && servedAsPage(status) ? CONSOLE_HEADERS : {}),
      ...(path.startsWith('/docs') && servedAsPage(status) ? DOCS_HEADERS : {}),
      ...(GZIPPED_DOCUMENTS.has(path) && status === '200' ? GZIPPED_HEADERS : {}),
      ...(status === '401' ? { 'www-authenticate': { $ref: '#/components/headers/www-authenticate' } } : {}),
      ...(response.headers as Json | undefined),
    }
  }
  op.responses = Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b)))
  if (!admin) op.security = []
}

/** Fills in what route schemas cannot hold; see the top of this file. */
export function completeAdminDocument(doc: Json): Json {
  const used = new Set<string>()
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, Json>>)) {
    // HEAD of a GET is left out on this listener, as Fastify's own; Swagger UI's files route it beside GET.
    delete item.head
    for (const [method, op] of Object.entries(item)) {
      // The methods of one route share one operation object.
      const own = structuredClone(op)
      item[method] = own
      completeOperation(path, method, own, used)
    }
  }
  const errors = Object.fromEntries(
    Object.entries(errorSchemas())
      .filter(([code]) => used.has(code))
      .map(([code, schema]) => [code, { ...(schema as Json), description: whenOf(code) }]),
  )
  const components = (doc.components ?? {}) as Json
  doc.components = {
    ...components,
    schemas: { ...(components.schemas as Json | undefined), ...errors },
    // `required`: the gateway always sends them on the answers that name them.
    headers: {
      'x-request-id': { description: 'The id of the call, the admin listener\'s own (a caller\'s `x-request-id` is not taken: whether it were would tell a caller without the token whether the id holds a secret of the gateway\'s); log and audit lines of the call carry it. On every answer.', required: true, schema: { type: 'string' } },
      'cache-control': { description: '`no-store`: no cache keeps an admin answer. On every `/admin/*` answer, refusals included, and on the answers of `/metrics`, `/healthz` and `/readyz` (this replica\'s state as it is asked).', required: true, schema: { const: 'no-store' } },
      'x-frame-options': { description: '`DENY`: no page frames an admin answer, the console or Swagger UI. On every `/admin/*` answer, refusals included, on the console\'s page and files, and on Swagger UI\'s (`/docs`).', required: true, schema: { const: 'DENY' } },
      'x-content-type-options': { description: '`nosniff`: a browser reads an answer as its `content-type` says. On every `/admin/*` answer, refusals included, on the console\'s page and files, and on Swagger UI\'s (`/docs`).', required: true, schema: { const: 'nosniff' } },
      'content-security-policy': { description: 'What the browser may do with the console: its own scripts and style only, calls to this listener only, in no frame.', required: true, schema: { const: CONSOLE_CSP } },
      'cross-origin-opener-policy': { description: '`same-origin`: the console and Swagger UI are in a window of their own origin alone; a page of another origin that opened one holds a handle that reads as closed and sends it nowhere. On the console\'s page and files, and on Swagger UI\'s (`/docs`), their 404s included.', required: true, schema: { const: 'same-origin' } },
      'docs-content-security-policy': { description: 'What the browser may do with Swagger UI (`/docs`): the console\'s policy, with images from `data:` URLs besides (its style sheet\'s icons).', required: true, schema: { const: DOCS_CSP } },
      'vary-accept-encoding': { description: '`accept-encoding`: the document is gzipped by it.', required: true, schema: { const: 'accept-encoding' } },
      'content-encoding-gzip': { description: '`gzip` where the caller\'s `accept-encoding` takes it; none otherwise.', schema: { const: 'gzip' } },
      'www-authenticate': {
        description: 'The challenge of every 401 (RFC 9110, 11.6.1): `authorization: Bearer <admin token>`.',
        required: true,
        schema: { const: ADMIN_CHALLENGE },
      },
    },
  }
  return doc
}

export const adminSwaggerOptions: FastifyDynamicSwaggerOptions = {
  openapi: {
    openapi: '3.1.0',
    info: {
      title: 'Report gateway: admin listener',
      version: buildInfo({}).version,
      description:
        'The operators\' calls of one replica (`ADMIN_PORT`, default 8081): its platform tokens, the report cache, the teams, usage per team, its state, metrics and health. ' +
        '`/admin/*` needs `authorization: Bearer <admin token>` (this document too): a viewer\'s token reads, an operator\'s also changes (PUT, POST, DELETE); `/metrics`, `/healthz`, `/readyz`, `/console` and `/docs` need none. ' +
        'Every `/admin/*` call validates its query, path and body against the schemas below: a parameter it does not take is 400 `GW_BAD_REQUEST` naming it, and nothing is changed. ' +
        'Errors are JSON `{statusCode, code, error, message}` with a `GW_*` code.',
    },
    servers: listenerServers('admin', 'A replica\'s admin listener by address (`ADMIN_HOST`, `ADMIN_PORT`).', 8081),
    security: [{ adminToken: [] }],
    tags: [
      { name: 'token', description: 'The platform tokens of the credentials.' },
      { name: 'cache', description: 'The report cache.' },
      { name: 'teams', description: 'The teams and their usage.' },
      { name: 'state', description: 'This replica\'s state, the cluster\'s, the audit lines and the metrics.' },
      { name: 'console', description: 'The operations console.' },
      { name: 'health', description: 'Liveness and readiness (also on the proxy listener, whose readiness is its status alone).' },
      { name: 'description', description: 'The listeners\' OpenAPI documents.' },
    ],
    components: {
      securitySchemes: {
        adminToken: {
          type: 'http',
          scheme: 'bearer',
          description: '`ADMIN_TOKEN` (an operator, `admin` in audit lines), `ADMIN_VIEWER_TOKEN` (a viewer, `viewer`), or a token of `ADMIN_TOKENS_FILE` with its role (audit lines name its holder).',
        },
      },
    },
  },
  // Swagger UI's page is its prefix's `/` route: `/docs/`, which Fastify also serves as `/docs`;
  // its files' route (`/docs/static/*`) is a path of one file.
  transform: ({ schema, url }) => ({ schema: (PLAIN_ROUTES[url] ?? schema) as never, url: url === '/docs/' ? '/docs' : url === '/docs/static/*' ? '/docs/static/{file}' : url }),
  transformObject: (documents) => completeAdminDocument((documents as { openapiObject: Json }).openapiObject) as never,
}

/** Collects the admin listener's routes from here on: its document is `admin.swagger()`. */
export async function describeAdmin(admin: FastifyInstance): Promise<void> {
  await admin.register(fastifySwagger, adminSwaggerOptions)
}
