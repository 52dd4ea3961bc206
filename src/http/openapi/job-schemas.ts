import type { FastifySchema } from 'fastify'
import { MAX_WAIT_SECONDS } from '../../jobs/jobs.js'

// The job routes' descriptions (http/reads/job-routes.ts); the answers are filled in by
// document.ts (jobResponses), as for the report routes.

const JOB_ID = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$', description: 'The job\'s id, from the `location` of its 202.' } },
} as const

// The request headers a job call reads (connection-options.ts): its id, and on its result the
// validator a report read takes, so that a generated client sends them typed.
const REQUEST_ID = {
  type: 'string',
  description: 'Returned on the answer and carried by its log lines (a job call reaches no platform); one is made when absent, malformed, or starting with a prefix of the gateway\'s own calls (`ownership-`, `token-probe-`, `job-`, `refresh-ahead-`).',
} as const

const JOB_HEADERS = { type: 'object', properties: { 'x-request-id': REQUEST_ID } } as const

const RESULT_HEADERS = {
  type: 'object',
  properties: {
    'if-none-match': {
      type: 'string',
      description: 'The `etag` of the result the caller holds (either form, or `*`): `304` with no body while the result is the same.',
    },
    'x-request-id': REQUEST_ID,
  },
} as const

export function jobStatusSchema(): FastifySchema {
  return {
    tags: ['jobs'],
    operationId: 'getJob',
    summary: 'A report job\'s status',
    description: 'Its state (`queued`, `running`, `done`, `failed`, `expired`), when it was asked, started and ended, its place in its team\'s queue, the platform-seconds it is expected to take and took, its failure\'s `GW_*` code and message, and when its result expires. A job of another team is 404.',
    params: JOB_ID,
    querystring: {
      type: 'object',
      properties: { wait: { type: 'integer', minimum: 0, maximum: MAX_WAIT_SECONDS, description: `Holds the answer until the job's state changes, at most this many seconds (0-${MAX_WAIT_SECONDS}).` } },
    },
    headers: JOB_HEADERS,
  }
}

export function jobResultSchema(): FastifySchema {
  return {
    tags: ['jobs'],
    operationId: 'getJobResult',
    summary: 'A done report job\'s report',
    description: 'The report, answered as a report read answers it (`etag`, `cache-status`, `304` to a matching `if-none-match`). A failed job answers its failure as a synchronous read would have: its `GW_*` error, or the platform\'s own 4xx passed on as it is (`x-cache: BYPASS`, its error `GW_PLATFORM_ANSWER`); one not done yet 409 `GW_JOB_NOT_DONE`; an expired one 410 `GW_JOB_EXPIRED`.',
    params: JOB_ID,
    headers: RESULT_HEADERS,
  }
}

export function jobCancelSchema(): FastifySchema {
  return {
    tags: ['jobs'],
    operationId: 'cancelJob',
    summary: 'Cancel a queued report job',
    description: 'Removes a job still queued (204); one running or ended (done, failed, expired) is 409 `GW_JOB_RUNNING`, its message naming the job\'s state.',
    params: JOB_ID,
    headers: JOB_HEADERS,
  }
}

type Json = Record<string, unknown>

const TIME = { type: ['string', 'null'], format: 'date-time' }

/** `components.schemas.JobStatus`: what GET /api/v1/jobs/{id} answers (jobs/job.ts, jobStatus). */
export const JOB_STATUS_SCHEMA: Json = {
  type: 'object',
  required: ['id', 'state', 'askedAt', 'startedAt', 'endedAt', 'placeInQueue', 'expectedSeconds', 'tookSeconds', 'error', 'retry', 'expiresAt', 'result', 'settledThrough', 'provisionalDays'],
  properties: {
    id: { type: 'string' },
    state: { type: 'string', enum: ['queued', 'running', 'done', 'failed', 'expired'], description: '`expired`: its result is gone, past `expiresAt` or reached by a purge of the report cache (a purge is final); its result is then 410 `GW_JOB_EXPIRED`.' },
    askedAt: { type: 'string', format: 'date-time' },
    startedAt: { ...TIME, description: 'When its current run started; null while queued.' },
    endedAt: TIME,
    placeInQueue: { type: ['integer', 'null'], minimum: 1, description: 'Among its team\'s queued jobs (1: next); null unless queued.' },
    expectedSeconds: { type: ['number', 'null'], description: 'Platform-seconds a call of its kind takes for the team, learned from its own calls of that kind only; null: none of them has ended yet.' },
    tookSeconds: { type: ['number', 'null'], description: 'Platform-seconds (seat-time) of the call its result came from: its own, or the one it joined (an identical job, a caller\'s fill, another replica\'s); 0 when a copy the cache had answered it. A job tried again (`retry`) counts every try\'s calls too.' },
    error: {
      type: ['object', 'null'],
      required: ['code', 'message'],
      description: 'A failed job\'s failure: the `GW_*` error a synchronous read of its report would have answered, which its result answers; `GW_PLATFORM_ANSWER` when the platform refused the report with a 4xx (a 422 of its validation, a 404 of an unknown split): its result is then the platform\'s own answer, with that status, as a synchronous read passes it on.',
      properties: {
        code: { type: 'string' },
        message: { type: 'string' },
        statusCode: { type: 'integer', description: 'The status its result answers (the platform\'s, for `GW_PLATFORM_ANSWER`).' },
      },
    },
    retry: {
      type: ['object', 'null'],
      required: ['tries', 'nextTryAt', 'lastError'],
      description: 'While it waits (`queued`) to be tried again after a try that met the platform down (no answer: a connection refused, reset or closed, the platform\'s timeout; its 5xx; a 200 page rather than JSON; no token for a password login that got no answer or a 5xx) or whose answer found no room in `platform.bufferTotalBytes` (`GW_ANSWER_BUDGET`, tried again after its `retry-after`), `jobs.retries` times at most: the tries given back so far, when the next one starts at the earliest, and the last one\'s failure (its `error` if it fails). Null otherwise.',
      properties: {
        tries: { type: 'integer', minimum: 1 },
        nextTryAt: { type: 'string', format: 'date-time' },
        lastError: { type: 'object', required: ['code', 'message', 'statusCode'], properties: { code: { type: 'string' }, message: { type: 'string' }, statusCode: { type: 'integer' } } },
      },
    },
    expiresAt: { ...TIME, description: 'When its result (or failure) expires; its state is `expired` from then.' },
    result: { type: ['string', 'null'], description: 'Where its result is once it ended, until it expires: its report when done, its failure when failed (the status and body `error` names); null while queued or running, and once expired (or purged).' },
    settledThrough: { type: ['string', 'null'], format: 'date', description: 'The last day whose figures are settled (`cache.settledAfterDays` in `cache.timeZone`), as its report answer\'s `report-settled-through` says: of when its result\'s figures were fetched (a copy it answered with may be older than the job), or of now while it is open; null once it ended with a result that holds no figures (it failed, or kept the platform\'s redirect), whose answer says no finality either.' },
    provisionalDays: { type: ['string', 'null'], description: 'Its report\'s days whose figures may still change, `<first>/<last>` or `none`, as its answer\'s `report-provisional-days` says; null when `settledThrough` is.' },
  },
}

const STATUS_CONTENT = { 'application/json': { schema: { $ref: '#/components/schemas/JobStatus' } } }

/** The answers of a job operation: its own success (a status answer with `statusHeaders` besides `headers`), and the gateway's errors of `errors`. */
export function jobSuccess(operationId: string, headers: Json, report: Json, statusHeaders: Json): Json {
  // A job's result may be the platform's own 204, 4xx or redirect it kept, passed on as a read passes it on.
  if (operationId === 'getJobResult') return { '200': report['200'], '204': report['204'], '304': report['304'], '3XX': report['3XX'], '4XX': report['4XX'] }
  if (operationId === 'cancelJob') return { '204': { description: 'Cancelled: the job is gone.', headers } }
  return { '200': { description: 'The job\'s status.', headers: { ...headers, ...statusHeaders }, content: STATUS_CONTENT } }
}

/**
 * `webhooks.jobEnded`: the push a team's webhook gets when one of its jobs ends
 * (jobs/webhook-deliveries.ts), signed the Standard Webhooks way (jobs/webhook-signature.ts):
 * what a receiver's generated types and checks read.
 */
export const JOB_ENDED_WEBHOOK: Json = {
  post: {
    operationId: 'jobEnded',
    summary: 'A report job of the team ended (done or failed; expired when a purge reached its result before its end)',
    description:
      'POSTed to the team\'s `webhook.url` (docs/jobs.md, "Pushed when done"), at least once: every attempt carries the same `webhook-id` and body, and is signed again at its own `webhook-timestamp`. ' +
      'The receiver checks the signature with the team\'s `webhook.secret`, refuses a timestamp far from its clock (5 minutes), and drops an id it took already (keeping ids for `jobs.webhookRetryFor`): docs/jobs.md prints such a receiver.',
    security: [],
    parameters: [
      { in: 'header', name: 'webhook-id', required: true, description: '`msg_<job id>`: the same on every attempt.', schema: { type: 'string', pattern: '^msg_' } },
      { in: 'header', name: 'webhook-timestamp', required: true, description: 'Epoch seconds of the attempt.', schema: { type: 'string', pattern: '^[0-9]+$' } },
      {
        in: 'header',
        name: 'webhook-signature',
        required: true,
        description: '`v1,` and the base64 of the HMAC-SHA256, keyed by the bytes of the secret after `whsec_` (base64), of `{webhook-id}.{webhook-timestamp}.{body}`; a receiver reads a space-separated list of such signatures.',
        schema: { type: 'string', pattern: '^v1,[A-Za-z0-9+/]+={0,2}( v1,[A-Za-z0-9+/]+={0,2})*$' },
      },
      { in: 'header', name: 'user-agent', required: true, description: '`report-gateway/<version>`: the gateway\'s version as `GET /admin/status` and `gateway_build_info` say it.', schema: { type: 'string', pattern: '^report-gateway/' } },
    ],
    requestBody: { required: true, description: 'The job\'s status, as `GET /api/v1/jobs/{id}` answers it then.', content: STATUS_CONTENT },
    responses: {
      '2XX': { description: 'Taken: the delivery is done (a repeat is answered so too).' },
      default: { description: 'Not taken. No answer, `408`, `429` or a `5xx` is tried again (1 s, 2 s, 4 s… at most 5 min apart, for `jobs.webhookRetryFor`); any other `4xx`, a `401` of a refused signature among them, or a `3xx` ends the delivery.' },
    },
  },
}
