import { readFileSync } from 'node:fs'
import type { Server } from 'node:net'
import fastifySwagger, { type FastifyDynamicSwaggerOptions } from '@fastify/swagger'
import fastifySwaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'
import { stringify as stringifyYaml } from 'yaml'
import { PROXY_CHALLENGE } from '../server.js'
import { BEFORE_ROUTE, errorResponseComponents, errorResponses, errorSchemas, jobErrorResponses, PLATFORM_ERROR_SCHEMA, RATE_LIMIT_HEADERS } from './error-responses.js'
import { JOB_ENDED_WEBHOOK, JOB_STATUS_SCHEMA, jobSuccess } from './job-schemas.js'
import { knownPlatformPaths, operationName, plainParameters, type KnownOperation, type PlatformPathSettings } from './platform-paths.js'
import { headAndOptions, optionsOperation } from './implied-methods.js'
import { API_ALLOW } from '../methods.js'
import { REPORT_ROW_SCHEMA, reportSchema } from './report-rows.js'
import { PROVISIONAL_HEADER, SETTLED_HEADER, USAGE_HEADER } from '../reads/report-facts.js'
import { writtenOnce } from './written-once.js'
import { answerAsPages, DOCS_CSP } from '../admin/page-headers.js'
import { PROXY_ANSWER_HEADERS } from '../answer-fields.js'
import { healthSchema, READY_STATUS, readyStatusSchema } from '../admin/admin-schemas.js'

// The OpenAPI 3.1 document of the proxy listener, made by @fastify/swagger from
// the routes and their schemas (openapi/route-schemas.ts). What the route schemas cannot
// say is added here: the routes' documented paths, the platform paths the gateway knows,
// each under its own path (openapi/platform-paths.ts), the responses with their headers
// (`required` where the gateway always sends one) and the GW_* error shapes (from
// errors.ts), the report body (openapi/report-rows.ts), and the team key as a security
// scheme.

type Json = Record<string, unknown>

/** Where @fastify/swagger puts the operations of `/api/v1/*`, before completeDocument spreads them over the platform paths. */
const PLATFORM_CALL = '/api/v1/{path}'

const VERSION = (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }).version

/**
 * Wildcard routes as callers write them (a Fastify `*` is no OpenAPI path). `/api/v1/*`
 * is no path of the document: its operations describe each known platform path, and the
 * plain platform call of any other (completeDocument).
 */
const DOCUMENTED_PATHS: Record<string, string> = {
  '/api/v1/report/*': '/api/v1/report/{split}/get',
  '/api/v1/*': PLATFORM_CALL,
}

/** Routes without a schema of their own (health, this document): what the document says of them. */
const PLAIN_ROUTES: Record<string, Json> = {
  '/healthz': { tags: ['health'], operationId: 'healthz', summary: 'Liveness: the process answers' },
  '/readyz': {
    tags: ['health'],
    operationId: 'readyz',
    summary: 'Readiness of this replica',
    description: 'The body is `{"status"}` alone (`ready`, `starting`, `stopping`); 503 only while this replica cannot serve at all. What is degraded (a refused platform token, Redis down), and the credentials\' names, are the admin listener\'s `/readyz`: this listener answers anyone.',
  },
  '/openapi.json': { tags: ['description'], operationId: 'openapi', summary: 'This document' },
}

/** The health routes: their answers carry `cache-control: no-store` (health.ts). */
const HEALTH = new Set(['/healthz', '/readyz'])

const json = (schema: Json) => ({ 'application/json': { schema } })

/** The answers of the routes without a schema of their own, bodies declared: a validating client checks each. */
const PLAIN_RESPONSES: Record<string, Json> = {
  '/healthz': { '200': { description: 'The process answers: `{"status": "ok"}`.', content: json(healthSchema) } },
  '/readyz': {
    '200': { description: 'Ready: `{"status": "ready"}`.', content: json(readyStatusSchema(READY_STATUS[200])) },
    '503': { description: 'This replica cannot serve: starting or shutting down (`{"status": "starting"}`, `{"status": "stopping"}`).', content: json(readyStatusSchema(READY_STATUS[503])) },
  },
  '/openapi.json': {
    '200': {
      description: 'This document (OpenAPI 3.1), gzipped where `accept-encoding` takes gzip.',
      headers: {
        'content-encoding': { description: '`gzip` where the caller\'s `accept-encoding` takes it; none otherwise.', schema: { const: 'gzip' } },
        vary: { description: '`accept-encoding`: the document is gzipped by it.', required: true, schema: { const: 'accept-encoding' } },
      },
      // Its fields typed, so that a generated client reads them (an object of none reads as `{}`).
      content: json({ type: 'object', required: ['openapi', 'info', 'paths'], properties: { openapi: { type: 'string' }, info: { type: 'object' }, paths: { type: 'object' } } }),
    },
  },
}

const header = (description: string, schema: Json = { type: 'string' }) => ({ description, schema })
/** A header the gateway always sends on the answers that name it: `required`, so that a validator holds an answer without it to be wrong. */
const always = (description: string, schema: Json = { type: 'string' }) => ({ description, required: true, schema })

const X_CACHE = '`HIT`, `MISS`, `STALE` (an expired entry, served while one background refresh runs or because the platform failed), `REFRESH` (a team given `refresh: true` sent `cache-control: no-cache` without a validator, and the copy was older than `cache.refreshMinAge`), `BYPASS` (not cacheable: a platform error passed through, a `no-store` answer, one whose `vary` is `*` or names `x-request-id` or `traceparent`, or a body over `cache.maxEntryBytes`).'
const X_CACHE_SCHEMA = { type: 'string', enum: ['HIT', 'MISS', 'STALE', 'REFRESH', 'BYPASS'] }
const CACHE_STATUS =
  'RFC 9211: what the gateway\'s cache did with this read, one member named `report-gateway`. Served from a copy: `hit; ttl=<freshness left in seconds>` (negative for a stale copy). Sent on to the platform: `fwd=uri-miss` (no copy), `fwd=stale` (a copy too old to serve) or `fwd=request` (a forced refresh: `REFRESH`), then `collapsed` when the read waited for another read\'s platform call, and `stored; ttl=<seconds>` for the copy it stored, or `fwd-status=<status>` for an answer passed on uncached (`BYPASS`); a `STALE` copy served because the platform failed has `fwd=…; ttl=<negative>`, a copy still fresh served because a forced refresh failed `fwd=request; ttl=<positive>` (`HIT`).'
const CACHE_STATUS_SCHEMA = { type: 'string', pattern: '^report-gateway; (hit; ttl=-?\\d+|fwd=(uri-miss|stale|request)(; collapsed)?(; stored)?(; ttl=-?\\d+|; fwd-status=\\d{3}))$' }
const PASSED_ONLY = ' On the platform\'s own answer passed on (`BYPASS`), not on the gateway\'s own error.'

const USAGE =
  'What the answer cost and the team\'s use of the platform (an RFC 9651 dictionary, platform-seconds: the seat-time calls held the platform, from their sending to their answer\'s headers): `fill` the platform-seconds of the call that filled this answer (0: from the cache without a call); `minute` the team\'s platform-seconds over the last 60 s (this replica\'s calls); `share` (when known) `minute` as a percentage of the team\'s share of its credential\'s limit over a minute (its weight among the credential\'s teams), over 100 while it uses seats others leave idle; `day` the team\'s platform-seconds of the UTC day, every replica\'s (another replica\'s within two `usage.flush`); `day-limit` the team\'s `platformSecondsPerDay`, when set; `reset` seconds until the UTC day ends. E.g. `fill=0.412, minute=3.250, share=27, day=812.500, day-limit=3600.000, reset=43100`.'
const USAGE_SCHEMA = { type: 'string', pattern: '^fill=\\d+(\\.\\d{1,3})?, minute=\\d+\\.\\d{3}(, share=\\d+)?, day=\\d+\\.\\d{3}(, day-limit=\\d+\\.\\d{3})?, reset=\\d+$' }

const SETTLED = 'The last day (`YYYY-MM-DD`, the platform\'s calendar: `cache.timeZone`) whose figures in this answer no longer change: the day before the `cache.settledAfterDays` days before the day the answer was fetched from the platform.'
const SETTLED_SCHEMA = { type: 'string', format: 'date' }
const PROVISIONAL = 'The report\'s days whose figures may still change, `<first>/<last>` (ISO 8601, the platform\'s calendar), or `none`: its days after `report-settled-through`.'
const PROVISIONAL_SCHEMA = { type: 'string', pattern: '^(none|\\d{4}-\\d{2}-\\d{2}/\\d{4}-\\d{2}-\\d{2})$' }

const HEADERS: Json = {
  'x-request-id': always('The caller\'s `x-request-id` when it is a plain token outside the gateway\'s own prefixes (`ownership-`, `token-probe-`, `job-`, `refresh-ahead-`) not shaped like a team key (`rgw_…`), sent with a team key the gateway knows, and holding no secret of the gateway\'s (such a request is refused 400), else a new one; also sent to the platform. On every answer.'),
  'x-content-type-options': always('`nosniff`: a browser reads the answer as its `content-type` says, never as a page. On every answer.', { const: PROXY_ANSWER_HEADERS['x-content-type-options'] }),
  'content-security-policy': always('A page a browser makes of the answer anyway (a platform\'s HTML error page passed on) loads nothing, runs no script, is framed nowhere and has an origin of its own; the platform\'s own policy never reaches the caller. On every answer.', { const: PROXY_ANSWER_HEADERS['content-security-policy'] }),
  'x-cache': always(X_CACHE, X_CACHE_SCHEMA),
  'cache-status': always(CACHE_STATUS, CACHE_STATUS_SCHEMA),
  // The same two on an answer that is either the gateway's error or the platform's answer passed on.
  'x-cache-if-passed': header(`${X_CACHE}${PASSED_ONLY}`, X_CACHE_SCHEMA),
  'cache-status-if-passed': header(`${CACHE_STATUS}${PASSED_ONLY}`, CACHE_STATUS_SCHEMA),
  'www-authenticate': always(`The challenge of every 401 (RFC 9110, 11.6.1): the team key, as \`x-api-key\` or \`authorization: Bearer\`.`, { const: PROXY_CHALLENGE }),
  age: header('Seconds since the entry was fetched from the platform; on `HIT` and `STALE`.', { type: 'integer', minimum: 0 }),
  'cache-control': header('`private, max-age=<seconds of freshness of the entry>`: with `age`, the freshness left is `max-age - age`; on a job\'s result at most the whole seconds left to its `expiresAt` (at least 0), when it becomes `410`; `private, no-store` on `BYPASS`, an answer the gateway keeps no copy of; `no-store` on a refusal of the gateway\'s own.'),
  'refusal-cache-control': header('`no-store`: a refusal of the gateway\'s own answers one key at one moment, and no cache keeps it (a cache keeps a 404 or a 405 by default, under its URL alone).'),
  etag: header('Strong validator of the body, one per representation (`"<tag>"`, `"<tag>-gzip"`); send it back in `if-none-match` for a 304 while it has not changed.'),
  vary: header('`accept-encoding, authorization, prefer, x-api-key`: a browser keeps a copy for one key, not for another, and not for a read that prefers `respond-async`.'),
  'proxied-cache-control': header('The platform\'s own `cache-control` (its lines as one), without what lets a shared cache keep the answer (`public`, `s-maxage`, `proxy-revalidate`), and `private` unless it says `private` or `no-store` already (`public, max-age=600` and `max-age=600` become `max-age=600, private`; none becomes `private`): no cache between the caller and the gateway keeps it for another key. A refusal of the gateway\'s own: `no-store`.'),
  'redirect-location': always('Where the platform\'s redirect leads; a URL on the platform\'s own origin is written on the gateway (its path, query and fragment). Never followed by the gateway, nor by the typed client (`CLIENT_REDIRECT`).', { type: 'string' }),
  'proxied-vary': header('The platform\'s own `vary` (its lines as one) with `accept-encoding, authorization, x-api-key` added (`*` when a line says `*`), on every answer of the platform passed on: a cache between the caller and the gateway keeps the answer for the key that asked, never for another, and for the codings it accepts.'),
  'content-encoding': header('`gzip` when the caller accepts gzip: the stored bytes as they are.'),
  'content-language': header('The platform\'s, when its answer had one (language tags only): on a copy as on the answer that filled it; not on a 304.'),
  'retry-after': always('Seconds to wait before trying again; on every 429 and 503 (the platform\'s own 429 passed on gets the pause it drew: its own `retry-after` in whole seconds, at most `platform.maxPause`, else 1 s; `0` from a replica shutting down: another replica answers a retry now).', { type: 'integer', minimum: 0 }),
  'retry-after-suspended': header('Seconds until the team\'s suspension ends (`GW_TEAM_SUSPENDED`, the one 403 that carries it).', { type: 'integer', minimum: 0 }),
  'retry-after-passed': header('The platform\'s own `retry-after`, in whole seconds rounded up and at most `platform.maxPause`, when its 5xx carried one that is a time: when the platform said to come back.', { type: 'integer', minimum: 0 }),
  ratelimit: header('For a team with a rate limit: what is left of it and when its window ends, e.g. `"default";r=599;t=42` (draft-ietf-httpapi-ratelimit-headers).', {
    type: 'string',
    pattern: '^"default";r=\\d+;t=\\d+$',
  }),
  'ratelimit-policy': header('For a team with a rate limit: its quota and window in seconds, e.g. `"default";q=600;w=60`.', { type: 'string', pattern: '^"default";q=\\d+;w=\\d+$' }),
  location: always('Where the job is: `/api/v1/jobs/{id}`; its status there, its result at `/result` once it ended (its report, or its failure).', { type: 'string', pattern: '^/api/v1/jobs/[A-Za-z0-9_-]{1,64}$' }),
  'preference-applied': always('`respond-async` (RFC 7240): the read was taken as a job.', { const: 'respond-async' }),
  'job-cache-control': always('`private, no-store`: a job\'s status is its team\'s and changes as the job runs; no cache keeps it.', { const: 'private, no-store' }),
  'accepted-vary': always('`accept-encoding, authorization, prefer, x-api-key`, as the read\'s own answer would vary.', { const: 'accept-encoding, authorization, prefer, x-api-key' }),
  'state-cache-control': always('`no-store`: the answer is this replica\'s state as it is asked; no cache keeps it.', { const: 'no-store' }),
  'job-vary': always('`authorization, x-api-key`: a job\'s status varies with the key that reads it (its path names the job).', { const: 'authorization, x-api-key' }),
  [USAGE_HEADER]: always(USAGE, USAGE_SCHEMA),
  'accepted-platform-usage': always(`${USAGE} On a \`202\`: \`fill=0\`, the job's call still to come (its status's \`tookSeconds\` and its result's \`fill\` say what it held), the team's other figures as the asking left them; no finality headers: a job holds no figures yet.`, USAGE_SCHEMA),
  // The same on a report read's failure: its 5xx, and a 429 that is GW_PLATFORM_TIME_SPENT (not the other 429s).
  'platform-usage-on-failure': header(`${USAGE} On a report read's 5xx (and a failed job's result, its failure as the read's), \`fill\` is the platform-seconds its own failed calls held (0 when it made none); on a \`GW_PLATFORM_TIME_SPENT\` refusal \`fill=0\` (no call was made), with the \`day\` the team spent, its \`day-limit\` and \`reset\`; on a failed job's \`413 GW_JOB_RESULT_TOO_LARGE\` (its report came, too large to keep), \`fill\` is what its call held; not on the other 4xx.`, USAGE_SCHEMA),
  [SETTLED_HEADER]: always(SETTLED, SETTLED_SCHEMA),
  [PROVISIONAL_HEADER]: always(PROVISIONAL, PROVISIONAL_SCHEMA),
  // The cost on an answer that is either the gateway's error or the platform's answer to a
  // report read passed on; such an answer holds no figures: it says no finality.
  [`${USAGE_HEADER}-if-passed`]: header(`${USAGE}${PASSED_ONLY}`, USAGE_SCHEMA),
}

/** Every report answer's cost and finality (http/reads/report-facts.ts). */
const REPORT_FACTS = [USAGE_HEADER, SETTLED_HEADER, PROVISIONAL_HEADER]

const ref = (name: string) => ({ $ref: `#/components/headers/${name}` })

/** What a platform call may send: JSON or a form, checked and re-serialized by the gateway (contract, "Calling the proxy listener"). */
const PLATFORM_BODY = {
  required: false,
  content: {
    'application/json': { schema: { description: 'Any JSON the platform call takes, e.g. `{"userId": 101}`.' } },
    'application/x-www-form-urlencoded': { schema: { type: 'object', additionalProperties: { type: 'string' } } },
  },
}

const PASSED_THROUGH = {
  description: 'The platform\'s own 4xx answer (e.g. 422 with its validation errors), passed through as it is. The gateway\'s own 4xx answers are listed by status.',
  headers: { 'x-request-id': ref('x-request-id'), 'cache-control': ref('proxied-cache-control'), vary: ref('proxied-vary'), ...RATE_LIMIT_HEADERS },
  content: { 'application/json': { schema: { $ref: '#/components/schemas/PlatformError' } } },
}

/** The platform's redirect (a 3xx other than 304), passed on with its location and no content. */
const PASSED_REDIRECT = {
  description: 'The platform\'s redirect (a `3xx` other than `304`), passed on with its `location` and no content (`content-length: 0`); the gateway follows none.',
  headers: { location: ref('redirect-location'), 'x-request-id': ref('x-request-id'), 'cache-control': ref('proxied-cache-control'), vary: ref('proxied-vary'), ...RATE_LIMIT_HEADERS },
}

/** A platform call's success: a known operation's, else any 2xx. */
function platformSuccess(known: KnownOperation | null): Json {
  const headers = { 'x-request-id': ref('x-request-id'), 'cache-control': ref('proxied-cache-control'), vary: ref('proxied-vary'), ...RATE_LIMIT_HEADERS }
  if (known === null) {
    return {
      '2XX': {
        description: 'The platform\'s answer, passed back as it is (without its cookies and hop-by-hop headers).',
        headers,
        content: { 'application/json': { schema: { description: 'The platform\'s JSON, whatever the call answers.' } } },
      },
    }
  }
  return { [known.success.status]: { description: `${known.success.description} The platform's answer, passed back as it is.`, headers, content: { 'application/json': { schema: known.success.schema } } } }
}

/** The methods whose body Fastify never reads (the operations' keys). */
const BODYLESS_METHODS = new Set(['get', 'head'])

/** The headers of the platform's 204 that a report read passes on: a BYPASS's, with its cost and finality. */
function passedSuccessHeaders(): Json {
  return { ...Object.fromEntries(['x-cache', 'cache-status', 'cache-control', 'vary', 'content-encoding', 'content-language', 'x-request-id', ...REPORT_FACTS].map((h) => [h, ref(h)])), ...RATE_LIMIT_HEADERS }
}

/** A report read's answers; `bodyless`: its GET (and HEAD), whose body is never read. */
function reportResponses(bodyless = false): Json {
  return {
    '200': {
      description: 'The platform\'s report, byte for byte (from the cache, or fetched now).',
      headers: { ...Object.fromEntries(['x-cache', 'cache-status', 'age', 'cache-control', 'etag', 'vary', 'content-encoding', 'content-language', 'x-request-id', ...REPORT_FACTS].map((h) => [h, ref(h)])), ...RATE_LIMIT_HEADERS },
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Report' } } },
    },
    '202': {
      description: 'Asked with `prefer: respond-async` and no copy answers it now: a report job (docs/jobs.md), its status in the body; `location` is where to read it.',
      headers: { ...Object.fromEntries(['location', 'preference-applied', 'x-request-id'].map((h) => [h, ref(h)])), 'cache-control': ref('job-cache-control'), vary: ref('accepted-vary'), [USAGE_HEADER]: ref('accepted-platform-usage'), ...RATE_LIMIT_HEADERS },
      content: { 'application/json': { schema: { $ref: '#/components/schemas/JobStatus' } } },
    },
    // The platform's 204 is passed on uncached (docs/jobs.md), with what its call cost and its
    // figures' finality. Its other 2xx (a 201, a 203) are passed on as they came too, and left
    // out of the document: declared with the platform's JSON, they type every read's body as
    // `unknown` in a generated client (decisions/other-2xx-in-openapi.md).
    '204': { description: `The platform's \`204\`, passed on uncached (\`x-cache: BYPASS\`): no content.`, headers: passedSuccessHeaders() },
    '304': {
      description: '`if-none-match` names the entry about to be answered (`HIT`, `STALE`, `MISS` or `REFRESH`): no body.',
      headers: Object.fromEntries(['x-cache', 'cache-status', 'age', 'cache-control', 'etag', 'vary', 'x-request-id', ...REPORT_FACTS].map((h) => [h, ref(h)])),
    },
    ...errorResponses('report', bodyless),
    // A report's platform 4xx is passed on uncached: `x-cache: BYPASS` and its cache-status say so;
    // what its call cost, and no finality (it holds no figures: reports/finality.ts holdsFigures).
    '4XX': { ...PASSED_THROUGH, headers: { ...PASSED_THROUGH.headers, 'cache-control': ref('cache-control'), vary: ref('vary'), 'x-cache': ref('x-cache'), 'cache-status': ref('cache-status'), [USAGE_HEADER]: ref(USAGE_HEADER) } },
    // A report's platform redirect is passed on uncached as its 4xx is: what its call cost, no finality.
    '3XX': { ...PASSED_REDIRECT, headers: { ...PASSED_REDIRECT.headers, 'cache-control': ref('cache-control'), vary: ref('vary'), 'x-cache': ref('x-cache'), 'cache-status': ref('cache-status'), [USAGE_HEADER]: ref(USAGE_HEADER) } },
  }
}

/** A platform call's answers; `method`: its method, whose body a GET or HEAD never has read. */
function platformResponses(known: KnownOperation | null, method: string): Json {
  return { ...platformSuccess(known), '3XX': PASSED_REDIRECT, ...errorResponses('platform', BODYLESS_METHODS.has(method)), '4XX': PASSED_THROUGH }
}

/**
 * The operations of `/api/v1/*`, as @fastify/swagger made them under PLATFORM_CALL, spread
 * over the platform paths the gateway knows; and the plain platform call, of any other
 * path, as `components.pathItems.PlatformCall` (a path item no path uses: what a call by a
 * path of one's own is, for a client that types one, as the typed client does).
 */
function platformPaths(generic: Record<string, Json>, settings: PlatformPathSettings): { paths: Record<string, Record<string, Json>>; call: Record<string, Json> } {
  const base = (method: string): Json => {
    const op = structuredClone(generic[method] as Json)
    // `{path}` is the platform path itself, which no path parameter can hold: each path names its own.
    op.parameters = ((op.parameters as Json[] | undefined) ?? []).filter((p) => p.in !== 'path')
    delete op.operationId
    return op
  }
  const call: Record<string, Json> = {}
  for (const method of Object.keys(generic)) {
    const op = base(method)
    op.summary = 'Any other platform call, by its real path (forwarded)'
    op.responses = platformResponses(null, method)
    if (method !== 'get' && method !== 'head') op.requestBody = structuredClone(PLATFORM_BODY)
    call[method] = op
  }
  const paths: Record<string, Record<string, Json>> = {}
  for (const [path, methods] of Object.entries(knownPlatformPaths(settings))) {
    const item: Record<string, Json> = {}
    for (const [method, known] of Object.entries(methods)) {
      const op = base(method)
      const parameters = op.parameters as Json[]
      if (known === 'plain') {
        op.operationId = `${method}${operationName(path)}`
        op.summary = 'A platform call on a campaign (forwarded)'
        op.description = `A path whose \`{id}\` names a campaign (\`ownership.campaignPaths\`); what the platform takes on it is the platform's. ${op.description as string}`
        op.parameters = [...plainParameters(path, method), ...parameters]
        op.responses = platformResponses(null, method)
        if (method !== 'get') op.requestBody = structuredClone(PLATFORM_BODY)
      } else {
        op.operationId = known.operationId
        op.summary = known.summary
        op.description = `${known.description} ${op.description as string}`
        op.parameters = [...(known.parameters ?? []), ...parameters]
        op.responses = platformResponses(known, method)
        if (known.body) op.requestBody = { required: true, content: { 'application/json': { schema: known.body } } }
      }
      item[method] = op
    }
    paths[path] = item
  }
  return { paths, call }
}

/** What the document follows of the config: the platform paths the gateway knows (`ownership`) and what it passes on as a report (`cache.reportFields`). */
export type DocumentSettings = PlatformPathSettings & { reportFields: readonly string[] }

/** Fills in what route schemas cannot hold; see the top of this file. */
export function completeDocument(doc: Json, settings: DocumentSettings): Json {
  const paths = doc.paths as Record<string, Record<string, Json>>
  const generic = paths[PLATFORM_CALL]
  delete paths[PLATFORM_CALL]
  for (const [path, item] of Object.entries(paths)) {
    for (const [method, shared] of Object.entries(item)) {
      // The methods of one route share one operation object.
      const op = structuredClone(shared)
      item[method] = op
      const tags = (op.tags as string[] | undefined) ?? []
      if (tags.includes('reports')) op.responses = reportResponses(BODYLESS_METHODS.has(method))
      else if (tags.includes('jobs')) op.responses = { ...jobSuccess(op.operationId as string, { 'x-request-id': ref('x-request-id'), ...RATE_LIMIT_HEADERS }, reportResponses(), { 'cache-control': ref('job-cache-control'), vary: ref('job-vary') }), ...jobErrorResponses(op.operationId as string) }
      else op.security = []
      const plain = PLAIN_RESPONSES[path]
      if (plain) op.responses = structuredClone(plain)
      if (!tags.includes('reports') && !tags.includes('jobs')) {
        for (const response of Object.values(op.responses as Record<string, Json>)) response.headers = { 'x-request-id': ref('x-request-id'), ...(HEALTH.has(path) ? { 'cache-control': ref('state-cache-control') } : {}), ...(response.headers as Json | undefined) }
      }
    }
  }
  const platform = generic ? platformPaths(generic, settings) : { paths: {}, call: {} }
  Object.assign(paths, platform.paths)
  const components = (doc.components ?? {}) as Json
  doc.components = {
    ...components,
    schemas: { ...(components.schemas as Json | undefined), ...errorSchemas(), PlatformError: PLATFORM_ERROR_SCHEMA, JobStatus: JOB_STATUS_SCHEMA, Report: reportSchema(settings.reportFields), ReportRow: REPORT_ROW_SCHEMA },
    headers: HEADERS,
    responses: errorResponseComponents(),
    pathItems: { PlatformCall: platform.call },
  }
  doc.webhooks = { jobEnded: structuredClone(JOB_ENDED_WEBHOOK) }
  headAndOptions(paths, (doc.components as { responses: Record<string, Json> }).responses, ref('x-request-id'))
  platform.call.options = optionsOperation(API_ALLOW, ref('x-request-id'))
  // The listener refuses a malformed head, one too large and a request not whole in time
  // before any route is chosen: every operation may answer them.
  const allOps = [...Object.values(paths).flatMap((item) => Object.values(item)), ...Object.values(platform.call as Record<string, Json>)]
  for (const op of allOps) {
    const responses = { ...(op.responses as Record<string, Json>) }
    for (const [status, name] of Object.entries(BEFORE_ROUTE)) responses[status] ??= { $ref: `#/components/responses/${name}` }
    op.responses = Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b)))
  }
  // Every answer of the listener carries PROXY_ANSWER_HEADERS (answer-fields.ts): each
  // response of an operation and each shared one they refer to declares them. New objects:
  // the responses may be this module's constants, which the next document starts from.
  const answerHeaders = Object.fromEntries(Object.keys(PROXY_ANSWER_HEADERS).map((name) => [name, ref(name)]))
  const withAnswerHeaders = (responses: Json): Json =>
    Object.fromEntries(Object.entries(responses as Record<string, Json>).map(([status, r]) => [status, '$ref' in r ? r : { ...r, headers: { ...(r.headers as Json | undefined), ...answerHeaders } }]))
  for (const op of allOps) op.responses = withAnswerHeaders(op.responses as Json)
  const shared = doc.components as { responses: Json }
  shared.responses = withAnswerHeaders(shared.responses)
  return doc
}

/**
 * The servers a document names: first, relative, the listener that served it; second, for
 * a generated client, a listener by address, `port` its default (the served documents name
 * the listener's own: atPort).
 */
export function listenerServers(listener: 'proxy' | 'admin', byAddress: string, port: number) {
  return [
    // The proxy's document is served by the admin listener too (`/docs/json`, for its Swagger UI): `/` is then not the proxy.
    { url: '/', description: listener === 'proxy' ? 'The proxy listener, where this document was read from it (`/openapi.json`); the copy the admin listener serves at `/docs/json` for its Swagger UI names the proxy by address below.' : 'The admin listener this document was read from.' },
    {
      url: '{scheme}://{host}:{port}',
      description: byAddress,
      variables: { scheme: { enum: ['http', 'https'], default: 'http' }, host: { default: '127.0.0.1' }, port: { default: String(port) } },
    },
  ]
}

/**
 * The port a listener names in its documents: the one its server is bound to (`PORT=0` has
 * it choose one), else its setting's (a document asked by inject before it listens).
 */
export function listenerPort(server: Server, setting: number): number {
  const address = server.address()
  return typeof address === 'object' && address !== null ? address.port : setting
}

/**
 * `doc` as a listener on `port` serves it: its server by address names that port. The
 * document @fastify/swagger makes, and the committed one, name the default port.
 */
export function atPort(doc: unknown, port: number): unknown {
  const { servers } = doc as { servers: ReturnType<typeof listenerServers> }
  return { ...(doc as object), servers: servers.map((s) => ('variables' in s ? { ...s, variables: { ...s.variables, port: { default: String(port) } } } : s)) }
}

/** @fastify/swagger's options for the proxy listener; `settings` name the platform paths the gateway knows and what it passes on as a report. */
export const swaggerOptions = (settings: DocumentSettings): FastifyDynamicSwaggerOptions => ({
  openapi: {
    openapi: '3.1.0',
    info: {
      title: 'Report gateway',
      version: VERSION,
      description:
        'One in-house URL in front of the advertising platform\'s API: the platform token stays server-side, reports are cached, and every team calls with its own API key. ' +
        'Errors are JSON `{statusCode, code, error, message}` with a `GW_*` code; the platform\'s own 4xx answers pass through as they are.',
    },
    servers: listenerServers('proxy', 'A gateway by address (`PORT`, default 8080).', 8080),
    security: [{ teamKey: [] }, { teamBearer: [] }],
    components: {
      securitySchemes: {
        teamKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'The team\'s API key (`rgw_…`).' },
        teamBearer: { type: 'http', scheme: 'bearer', description: 'The same team key as `authorization: Bearer <key>`.' },
      },
    },
    tags: [
      { name: 'reports', description: 'Report reads, validated, normalized and cached.' },
      {
        name: 'platform',
        description:
          'Every other call under `/api/v1/`, forwarded to the platform. The platform paths the gateway knows have operations of their own; a call of any other path under `/api/v1/` is forwarded the same way (`components.pathItems.PlatformCall` describes it), by its real path.',
      },
      { name: 'jobs', description: 'Report jobs: a report read asked with `prefer: respond-async`, its status, its result, its cancel.' },
      { name: 'methods', description: 'OPTIONS of every path under `/api/v1/`: the methods it takes, answered by the gateway. HEAD of every GET is the GET without its body.' },
      { name: 'health', description: 'Liveness and readiness (also on the admin listener).' },
      { name: 'description', description: 'This document.' },
    ],
  },
  transform: ({ schema, url }) => ({
    schema: { ...(schema as Json | undefined), ...PLAIN_ROUTES[url] } as never,
    url: DOCUMENTED_PATHS[url] ?? url,
  }),
  transformObject: (documents) => completeDocument((documents as { openapiObject: Json }).openapiObject, settings) as never,
})

/**
 * Collects the proxy's routes from here on, and serves the document at
 * `GET /openapi.json` with no key: it describes the API, never a secret.
 */
export async function describeProxy(proxy: FastifyInstance, settings: DocumentSettings, port: () => number): Promise<void> {
  await proxy.register(fastifySwagger, swaggerOptions(settings))
  const written = writtenOnce(() => JSON.stringify(atPort(proxy.swagger(), port())))
  proxy.get('/openapi.json', async (request, reply) => {
    reply.type('application/json; charset=utf-8')
    return written(request, reply)
  })
}

/**
 * Swagger UI at `/docs` on the admin listener, showing the proxy's document. Like
 * /metrics it needs no admin token: it shows what /openapi.json shows. The admin
 * listener's own swagger plugin (describeAdmin) serves it its files; the document shown
 * is the proxy's, as JSON and as YAML, each written once (written-once.ts) and answered
 * before Swagger UI's own handlers of those two paths, which would write it at every ask.
 */
export async function docsUi(admin: FastifyInstance, proxy: FastifyInstance, proxyPort: () => number): Promise<void> {
  const documents: Record<string, { type: string; written: ReturnType<typeof writtenOnce> }> = {
    '/docs/json': { type: 'application/json; charset=utf-8', written: writtenOnce(() => JSON.stringify(atPort(proxy.swagger(), proxyPort()))) },
    '/docs/yaml': { type: 'application/x-yaml', written: writtenOnce(() => stringifyYaml(atPort(proxy.swagger(), proxyPort()))) },
  }
  // A scope of its own: the page's headers on every answer of Swagger UI's routes (its
  // files, which @fastify/static writes, included), and on no other route.
  await admin.register(async (docs) => {
    answerAsPages(docs, DOCS_CSP)
    await docs.register(fastifySwaggerUi, {
      routePrefix: '/docs',
      uiHooks: {
        onRequest: async (request, reply) => {
          const document = documents[request.routeOptions.url ?? '']
          if (document) return reply.type(document.type).send(document.written(request, reply))
        },
      },
      // No "Try it out": it would send team keys to the admin listener, which has no /api/v1.
      // No top bar (BaseLayout): its box would load any document typed in, and its logo is
      // an inline SVG whose <style> the page's policy refuses.
      uiConfig: { deepLinking: true, supportedSubmitMethods: [], layout: 'BaseLayout' },
    })
  })
}
