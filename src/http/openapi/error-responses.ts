import { STATUS_CODES } from 'node:http'
import { allErrors } from '../../errors.js'
import { USAGE_HEADER } from '../reads/report-facts.js'

// The gateway's own error answers (contract, "Errors") as OpenAPI components, made from
// the error classes of errors.ts, so that a new GW_* code shows up in the document.

type Json = Record<string, unknown>

/** GW_INTERNAL is no class: http/server.ts's error handler writes it for an unexpected fault. */
const INTERNAL = { code: 'GW_INTERNAL', statusCode: 500 }

/**
 * Codes no operation of the document answers with: the admin listener's (the document
 * describes the proxy listener), and the 405 of a method no operation has.
 */
const NO_OPERATION = new Set(['GW_ADMIN_DISABLED', 'GW_ADMIN_HOST', 'GW_TOKEN_REJECTED', 'GW_REDIS_UNAVAILABLE', 'GW_RELOAD_UNAVAILABLE', 'GW_CONFIG_INVALID', 'GW_METHOD_NOT_ALLOWED'])

/**
 * 4xx statuses the platform's own answer may also carry, passed through: any but 401,
 * which the gateway answers itself (GW_PLATFORM_AUTH or GW_PLATFORM_REFUSED, 502), and
 * 407, a proxy before the platform asking for the gateway's credentials (GW_UPSTREAM, 502).
 */
const passesThrough = (status: number): boolean => status >= 400 && status < 500 && status !== 401 && status !== 407

/** The platform's (Laravel's) error body, as it passes through: `{"message": …}`, 422 with `errors`. */
export const PLATFORM_ERROR_SCHEMA = {
  type: 'object',
  description: 'The platform\'s own answer, passed through as it is (Laravel\'s shape: `message`, and on 422 `errors` by field). It has no `GW_*` code.',
  required: ['message'],
  properties: {
    message: { type: 'string' },
    errors: { type: 'object', additionalProperties: { type: 'array', items: { type: 'string' } } },
  },
  examples: [{ message: 'Not Found' }, { message: 'The given data was invalid.', errors: { dateFrom: ['The date from field is required.'] } }],
}

/** Codes only report reads (and a job's result, which is a report's answer) answer with. */
const REPORT_ONLY = new Set(['GW_BAD_QUERY', 'GW_JOBS_FULL', 'GW_PLATFORM_TIME_SPENT'])

/**
 * Codes only a call whose body is read answers with: Fastify reads no body of a GET or a
 * HEAD (a report's or a platform call's), which goes unread whatever its size.
 */
const BODY_ONLY = new Set(['GW_PAYLOAD_TOO_LARGE', 'GW_BODY_BUDGET'])

/** Codes only the job operations answer with. */
const JOB_ONLY = new Set(['GW_JOB_RESULT_TOO_LARGE', 'GW_JOB_NOT_DONE', 'GW_JOB_RUNNING', 'GW_JOB_EXPIRED', 'GW_JOBS_UNAVAILABLE', 'GW_WAITS_FULL'])

/** What any job call answers: its request, its key, its team's suspension, its rate limit, no such job, Redis. */
const JOB_ASKED = ['GW_BAD_REQUEST', 'GW_UNAUTHORIZED', 'GW_TEAM_SUSPENDED', 'GW_NOT_FOUND', 'GW_REQUEST_TIMEOUT', 'GW_HEADERS_TOO_LARGE', 'GW_RATE_LIMITED', 'GW_INTERNAL', 'GW_JOBS_UNAVAILABLE']

/**
 * A job's status and its cancel read the job's record alone (no report, no platform call):
 * what they answer is JOB_ASKED and their own refusal, a wait's place (`?wait`) or a cancel
 * of a job no longer queued; never a read's failure nor a platform answer passed on.
 */
const JOB_RECORD_CODES: Record<'job-status' | 'job-cancel', ReadonlySet<string>> = {
  // A status waited for (`?wait`) is refused once a reload moved the team to another credential (Admission.stillAdmitted).
  'job-status': new Set([...JOB_ASKED, 'GW_FORBIDDEN', 'GW_WAITS_FULL']),
  'job-cancel': new Set([...JOB_ASKED, 'GW_JOB_RUNNING']),
}

/**
 * A job's result answers JOB_ASKED, a result refused (not done, expired or purged, its
 * scope or credential changed), and a failed job's kept failure: its platform answer
 * passed on (any 4xx but 429, which puts the job back in the queue), or its read's own
 * failure as jobs/job-runner.ts keeps it (GW_ANSWER_BUDGET once its jobs.retries are
 * spent). Never an ask's refusal (GW_BAD_QUERY,
 * GW_JOBS_FULL), nor GW_OVERLOADED or GW_SHUTTING_DOWN, which put the job back in the
 * queue too, nor GW_PAYLOAD_TOO_LARGE: a GET's body is never read.
 */
const JOB_RESULT_CODES: ReadonlySet<string> = new Set([
  ...JOB_ASKED,
  'GW_FORBIDDEN', 'GW_JOB_NOT_DONE', 'GW_JOB_EXPIRED', 'GW_JOB_RESULT_TOO_LARGE',
  'GW_PLATFORM_TIME_SPENT', 'GW_PLATFORM_AUTH', 'GW_PLATFORM_REFUSED', 'GW_UPSTREAM', 'GW_UPSTREAM_TIMEOUT', 'GW_ANSWER_BUDGET',
])

/** What a code means on a job call, where it means another thing than on a read (WHEN). */
const JOB_WHEN: Record<string, string> = {
  GW_NOT_FOUND: 'No such job for this key\'s team: the id is unknown, the job was cancelled, its record ended (an hour after it expired) or was lost with Redis\'s data, or it is another team\'s (the same answer: an id tells nothing of other teams\' jobs); or another method or spelling of a job path, whose message names the job calls.',
  GW_FORBIDDEN: 'A reload moved the team to another credential than the one the job was asked through (a status after its `?wait`); a result also once a reload took the report\'s advertiser out of the team\'s `advertisers`, or the credential\'s token acts for another platform account than the job was asked for, or the job failed so.',
  GW_ANSWER_BUDGET: 'The job failed: each of its tries (`jobs.retries` + 1, each after the last one\'s `retry-after`, held to `platform.maxPause`) found the answers on their way to callers holding all of `platform.bufferTotalBytes` on its replica, none of which could be cut off for it (a try that finds room is done). Ask it again.',
  GW_BAD_REQUEST: 'A parameter a job call does not take (`wait` is the only one, on a status), `wait` not whole seconds from 0 to 30 or given twice, a team key or a secret of the gateway\'s in the target or `x-request-id`; a request Node cannot read (a malformed head, no `Host`).',
}

const WHEN: Record<string, string> = {
  GW_BAD_QUERY: 'A report parameter is invalid; the message names it, e.g. `dateFrom: not a calendar date (2026-02-30)`.',
  GW_BAD_REQUEST: 'A malformed request target or body: `#`, control characters or non-ASCII in the target, a parameter name that is not plain, `_method` (also a multipart part so named), a team key in the target or the body, a body that is not valid JSON or UTF-8, too deep or with too many keys, a `Connection` naming a header the gateway reads; a request Node cannot read (a malformed head, no `Host`).',
  GW_UNAUTHORIZED: 'No key, or an unknown, expired or revoked one.',
  GW_FORBIDDEN: 'The team may not use this advertiser or campaign, may not write, or did not name its account where the platform reads it.',
  GW_TEAM_SUSPENDED: 'A request of the team held a secret of the gateway\'s (refused 400 `holds a secret of the gateway\'s`): every request with any of its keys, on every replica, is refused for `limits.secretSuspension` (7 days by default) unless an operator lifts it; `retry-after` says when it ends.',
  GW_NOT_FOUND: 'A path outside `/api/v1/`, the platform\'s token request path, or a path that would leave `/api/v1/` once decoded.',
  GW_METHOD_NOT_ALLOWED: 'A method the gateway does not forward, under `/api/v1/` (TRACE, CONNECT, QUERY, …), whatever the key: never sent to the platform; `allow` lists the methods taken (GET, HEAD, POST, PUT, PATCH, DELETE, and OPTIONS, which the gateway answers 204).',
  GW_REQUEST_TIMEOUT: 'The request was not whole in time: its head within `server.headersTimeout`, all of it within `server.requestTimeout`, or its body within `limits.bodyTimeout` of the headers; the connection is closed.',
  GW_HEADERS_TOO_LARGE: 'The request line and header fields together are larger than Node reads (16 KiB, `maxHeaderSize`): a long request target too. Nothing of the request was read; the connection is closed.',
  GW_PAYLOAD_TOO_LARGE: 'The body is over `bodyLimit` (a POST report body: over `limits.reportBody`).',
  GW_RATE_LIMITED: 'The team\'s rate limit is spent; `retry-after` says when to try again.',
  GW_PLATFORM_TIME_SPENT: 'The team spent its platform-seconds of the UTC day (`teams.<name>.platformSecondsPerDay`) and the cache has no copy of the report to answer; `retry-after` says when the day ends. Cached copies are still answered, however old (to their stale-if-error end).',
  GW_PLATFORM_AUTH: 'The platform refused the gateway\'s token and no new one could be had. Cached reports are still served.',
  GW_PLATFORM_REFUSED: 'The platform answered 401 to this call although it accepts the gateway\'s token (its probe call says so): a route the token may not use. The token stays in use; nothing was retried.',
  GW_UPSTREAM: 'The platform failed (a 5xx, a broken connection, or an answer that carried the gateway\'s token back) and no stale copy exists.',
  GW_UPSTREAM_TIMEOUT: 'The platform did not answer within `platform.timeout` and no stale copy exists; or the call was not sent to the platform, as it could not end before its deadline (calls of its kind take longer than the deadline leaves: the message says `not sent to the platform`; ask a shorter range, or as a report job).',
  GW_OVERLOADED: 'The credential\'s queue of platform calls is full, the wait timed out, or the platform paused the credential (its 429) for longer than the call may wait, or the team has used its share of the platform\'s count of the token\'s calls (the message says so); `retry-after` says when to try again: when the calls ahead of a retry have gone to platform seats, the pause\'s time left, or when the team\'s oldest call counted leaves the count\'s window.',
  GW_ANSWER_BUDGET: 'The answers on their way to callers hold all the memory `platform.bufferTotalBytes` gives them, and none could be cut off for this one; `retry-after` says when the readers\' pace frees the room.',
  GW_BODY_BUDGET: 'The request bodies and answers under way on this replica hold all of `platform.bufferTotalBytes`, or this team\'s bodies the quarter of it one team may hold (a body is held from its first byte until its call\'s answer has gone, with what its parsed form holds); `retry-after` says when the room comes free at the pace it has of late.',
  GW_JOBS_FULL: 'A report asked with `Prefer: respond-async` while the team has `jobs.maxOpenPerTeam` jobs queued or running (ask again when one ends), or keeps `jobs.maxKeptPerTeam` jobs (an ended job is kept `jobs.keep` and an hour after; the message says which).',
  GW_WAITS_FULL: 'A status call with `?wait` of a job still open while the team holds `jobs.maxWaitsPerTeam` waits on the replica, or the replica `jobs.maxWaits`: answered at once; ask again after `retry-after`, or without `?wait`.',
  GW_JOB_RESULT_TOO_LARGE: 'A job\'s report is larger than `cache.maxEntryBytes`, or would take the team\'s kept job results over its bound (`jobs.resultBytesPerTeam`, or its part of the room for results in Redis, `jobs.resultsRoom`): the job failed with it, its message naming the bound.',
  GW_JOB_NOT_DONE: 'The result of a job still queued or running was asked: GET its status (with `?wait=N`) first.',
  GW_JOB_RUNNING: 'DELETE of a job already running or ended (done, failed, expired): only a queued job is cancelled; the message names the job\'s state.',
  GW_JOB_EXPIRED: 'The result of a job past its `expiresAt` was asked, or one a purge after its fill reaches (a purge is final; the message says which): ask the report again.',
  GW_JOBS_UNAVAILABLE: 'Jobs are kept in Redis, which cannot be read now; `retry-after` says when to try again. (A report read with `prefer: respond-async` is then answered as if it had none.)',
  GW_SHUTTING_DOWN: 'This replica is shutting down and its grace (`shutdownGrace`) ended before the call could be answered (a platform call still under way is aborted then); with `retry-after: 0`: another replica answers a retry.',
  GW_INTERNAL: 'An unexpected fault of the gateway; details only in its log, under the response\'s `x-request-id`.',
  GW_RELOAD_UNAVAILABLE: '(admin listener) `POST /admin/reload` without `CONFIG_FILE` or `TEAMS_FILE`, or in demo mode.',
  GW_CONFIG_INVALID: '(admin listener) `POST /admin/reload`: a file does not validate, or both declare teams; the running teams stay; the message names the file variables (`CONFIG_FILE`, `TEAMS_FILE`) before the problems, each setting written in a file followed by its line there (`; line 7 of TEAMS_FILE (<path>)`); `errors` lists the problems each apart, with the setting (`path`), the file (`variable`, `file`) and the `line`.',
  GW_ADMIN_DISABLED: '(admin listener) No admin token is configured.',
  GW_ADMIN_HOST: '(admin listener) The request\'s `Host` names neither an IP address, `localhost`, nor a name of `admin.hosts`: a page of another site whose name was made to resolve to the listener\'s address (DNS rebinding).',
  GW_TOKEN_REJECTED: '(admin listener) The platform refused the new token; the old one stays.',
  GW_REDIS_UNAVAILABLE: '(admin listener) A purge reached this replica but not Redis, or Redis is out of memory and refused its record; repeat it.',
}

/** Every code of errors.ts (and GW_INTERNAL) with the statuses it is answered with. */
export function errorCodes(): Map<string, number[]> {
  const codes = new Map<string, number[]>()
  const found = Object.values(allErrors).map((E) => {
    const e = new E('' as never)
    return { code: e.code, statusCode: e.statusCode ?? 500 }
  })
  for (const { code, statusCode } of [...found, INTERNAL]) {
    const statuses = codes.get(code) ?? []
    if (!statuses.includes(statusCode)) statuses.push(statusCode)
    codes.set(code, statuses.sort())
  }
  return codes
}

const nullable = (type: string, description: string): Json => ({ type: [type, 'null'], description })

// The fields a code's answer has besides the four of every error (http/server.ts's error handler).
const MORE_FIELDS: Record<string, { properties: Json; example: Json }> = {
  GW_CONFIG_INVALID: {
    properties: {
      errors: {
        type: 'array',
        description: 'The problems of the message, each apart, in its order: for a console or a script to point at the line.',
        items: {
          type: 'object',
          required: ['message', 'path', 'variable', 'file', 'line'],
          properties: {
            message: { type: 'string', description: 'The problem, as the message says it without its line (`teams.growth.advertisers.0: must be …`).' },
            path: nullable('string', 'The setting the problem names, as a dotted path (`teams.growth.advertisers.0`); null when it names none (a variable, both files).'),
            variable: nullable('string', 'The file variable whose file writes the setting (`CONFIG_FILE`, `TEAMS_FILE`); null when no file does (a variable, a default) or it cannot be read now.'),
            file: nullable('string', 'That file\'s path, as its variable gives it.'),
            line: nullable('integer', 'The line of that file (from 1) that writes the setting; a required setting missing: the line of the mapping that lacks it.'),
          },
        },
      },
    },
    example: { errors: [{ message: 'teams.growth.advertisers.0: must be an advertiser id (a whole number, at least 1), or "*" alone for every advertiser (got 0)', path: 'teams.growth.advertisers.0', variable: 'TEAMS_FILE', file: '/etc/gateway/teams.yaml', line: 7 }] },
  },
}

/** `components.schemas`: one schema per GW_* code. */
export function errorSchemas(): Json {
  const schemas: Json = {}
  for (const [code, statuses] of [...errorCodes()].sort(([a], [b]) => a.localeCompare(b))) {
    const more = MORE_FIELDS[code]
    schemas[code] = {
      type: 'object',
      description: WHEN[code] ?? `The gateway's ${code} answer.`,
      required: ['statusCode', 'code', 'error', 'message', ...Object.keys(more?.properties ?? {})],
      properties: {
        statusCode: statuses.length === 1 ? { const: statuses[0] } : { enum: statuses },
        code: { const: code },
        error: { type: 'string', description: 'The HTTP reason phrase, e.g. `Bad Request`.' },
        message: { type: 'string', description: 'What was wrong and, where it helps, what to do.' },
        ...more?.properties,
      },
      examples: [{ statusCode: statuses[0], code, error: STATUS_CODES[statuses[0] as number], message: '…', ...more?.example }],
    }
  }
  return schemas
}

/** `job`: a job's result, a report's answer (a failed job's, the failure its read would have answered). */
type Kind = 'report' | 'platform' | 'job' | keyof typeof JOB_RECORD_CODES

const isRecordKind = (kind: Kind): kind is keyof typeof JOB_RECORD_CODES => kind in JOB_RECORD_CODES

/** Whether an operation of this kind answers with `code`; `bodyless`: a GET or HEAD, whose body is never read. */
function answers(kind: Kind, code: string, bodyless: boolean): boolean {
  if (NO_OPERATION.has(code) || (bodyless && BODY_ONLY.has(code))) return false
  if (isRecordKind(kind)) return JOB_RECORD_CODES[kind].has(code)
  if (kind === 'job') return JOB_RESULT_CODES.has(code)
  return !(kind === 'platform' && REPORT_ONLY.has(code)) && !JOB_ONLY.has(code)
}

/** A limited team's answers after its key was read carry both (contract, "Rate limits"). */
export const RATE_LIMIT_HEADERS = { ratelimit: { $ref: '#/components/headers/ratelimit' }, 'ratelimit-policy': { $ref: '#/components/headers/ratelimit-policy' } }

// The codes each status can carry on an operation of this kind.
function codesByStatus(kind: Kind, bodyless: boolean): [number, string[]][] {
  const byStatus = new Map<number, string[]>()
  for (const [code, statuses] of errorCodes()) {
    if (!answers(kind, code, bodyless)) continue
    for (const status of statuses) byStatus.set(status, [...(byStatus.get(status) ?? []), code].sort())
  }
  return [...byStatus].sort(([a], [b]) => a - b)
}

/**
 * The listener's refusals of a request before a route reads it, whatever its path (a head
 * Node cannot read or that is too large, a repeated `Host`, a request not whole in time),
 * by status: the response of each operation that has no other of that status.
 */
export const BEFORE_ROUTE: Record<string, string> = { '400': 'malformed-request', '408': 'request-timeout', '431': 'headers-too-large' }

/** What a malformed request is, whatever the operation. */
const MALFORMED = 'A request the listener cannot take, whatever its path: a malformed head, no `Host` or more than one, a path that is not valid percent-encoding; nothing of it was done.'

// The gateway's own refusal is kept by no cache (server.ts, its error handler).
const REFUSAL_CACHE_CONTROL = { 'cache-control': { $ref: '#/components/headers/refusal-cache-control' } }

const refusal = (code: string, when: string): Json => ({
  description: `\`${code}\`: ${when}`,
  headers: { 'x-request-id': { $ref: '#/components/headers/x-request-id' }, ...REFUSAL_CACHE_CONTROL },
  content: { 'application/json': { schema: { $ref: `#/components/schemas/${code}` } } },
})

/**
 * The kinds of operation, each with whether its body is read: a report's and a platform
 * call's GET and HEAD (`-bodyless`) answer neither 413 nor GW_BODY_BUDGET; the job
 * operations read none and list neither anyway.
 */
const VARIANTS: readonly (readonly [Kind, boolean])[] = [
  ['report', false], ['report', true], ['platform', false], ['platform', true], ['job', false], ['job-status', false], ['job-cancel', false],
]

/**
 * The component of a kind's status: a bodyless operation's own (`report-bodyless-503`) only
 * where its codes are not those of the kind's operations that read a body.
 */
function componentName(kind: Kind, bodyless: boolean, status: number): string {
  const codes = (readsBody: boolean) => codesByStatus(kind, !readsBody).find(([s]) => s === status)?.[1].join()
  return bodyless && codes(false) !== codes(true) ? `${kind}-bodyless-${status}` : `${kind}-${status}`
}

/** `components.responses`: the gateway's error answers by operation kind and status; `retry-after` with 429 and 503 (and the platform's, when it sent one, with a read's or a call's 502; the suspension's end with `GW_TEAM_SUSPENDED`'s 403), `www-authenticate` with 401. */
export function errorResponseComponents(): Json {
  const responses: Json = {
    [BEFORE_ROUTE['400'] as string]: refusal('GW_BAD_REQUEST', MALFORMED),
    [BEFORE_ROUTE['408'] as string]: refusal('GW_REQUEST_TIMEOUT', WHEN.GW_REQUEST_TIMEOUT as string),
    [BEFORE_ROUTE['431'] as string]: refusal('GW_HEADERS_TOO_LARGE', WHEN.GW_HEADERS_TOO_LARGE as string),
  }
  for (const [kind, bodyless] of VARIANTS) {
    // A read's answer, and a job's result, which is one: what it cost, the platform's answer passed on.
    const readsReport = kind === 'report' || kind === 'job'
    for (const [status, codes] of codesByStatus(kind, bodyless)) {
      const name = componentName(kind, bodyless, status)
      if (name in responses) continue
      const refs = codes.map((code) => ({ $ref: `#/components/schemas/${code}` }))
      // The platform's 429 to a job puts it back in the queue: no result passes one on.
      const platform = !isRecordKind(kind) && passesThrough(status) && !(kind === 'job' && status === 429)
      // anyOf, not oneOf: a platform body and a GW_* body both carry `message`.
      if (platform) refs.push({ $ref: '#/components/schemas/PlatformError' })
      const when = (code: string): string => (kind === 'job' || isRecordKind(kind) ? JOB_WHEN[code] : undefined) ?? WHEN[code] ?? code
      responses[name] = {
        description:
          codes.map((code) => `\`${code}\`: ${when(code)}`).join(' ') + (platform ? ` Or the platform's own ${status} answer, passed through (\`PlatformError\`, no \`code\`).` : ''),
        headers: {
          'x-request-id': { $ref: '#/components/headers/x-request-id' },
          ...(status === 429 || status === 503 ? { 'retry-after': { $ref: '#/components/headers/retry-after' } } : {}),
          // A 502 for a platform 5xx passes on the platform's retry-after (withRetryAfter); a job's kept failure has none.
          ...(status === 502 && kind !== 'job' ? { 'retry-after': { $ref: '#/components/headers/retry-after-passed' } } : {}),
          // A suspended team's 403 says when the suspension ends; the other 403s say nothing of time.
          ...(codes.includes('GW_TEAM_SUSPENDED') ? { 'retry-after': { $ref: '#/components/headers/retry-after-suspended' } } : {}),
          // A 401 names how to authenticate; it comes before the key is known, so with no rate-limit standing.
          ...(status === 401 ? { 'www-authenticate': { $ref: '#/components/headers/www-authenticate' } } : RATE_LIMIT_HEADERS),
          // A report's platform answer passed on uncached (a job's result too) says so: `x-cache: BYPASS`, its cache-status (not the gateway's own error).
          ...(platform && kind !== 'platform' ? { 'x-cache': { $ref: '#/components/headers/x-cache-if-passed' }, 'cache-status': { $ref: '#/components/headers/cache-status-if-passed' } } : {}),
          // A report read's platform answer passed on (a job's result that kept one too) carries the read's `cache-control` and `vary` and its cost (no finality: it holds no figures);
          // a platform call's, the platform's made the key's; the gateway's own refusal, `no-store`.
          ...(platform && readsReport ? { 'cache-control': { $ref: '#/components/headers/cache-control' }, vary: { $ref: '#/components/headers/vary' }, [USAGE_HEADER]: { $ref: `#/components/headers/${USAGE_HEADER}-if-passed` } }
          : platform && kind === 'platform' ? { 'cache-control': { $ref: '#/components/headers/proxied-cache-control' }, vary: { $ref: '#/components/headers/proxied-vary' } }
          : REFUSAL_CACHE_CONTROL),
          // A read's failure (a job's result too) says what it cost, a read refused for the team's spent day that day (report-facts.ts).
          ...(readsReport && (status >= 500 || codes.includes('GW_PLATFORM_TIME_SPENT')) ? { 'platform-usage': { $ref: '#/components/headers/platform-usage-on-failure' } } : {}),
        },
        content: { 'application/json': { schema: refs.length === 1 ? refs[0] : { anyOf: refs } } },
      }
    }
  }
  return responses
}

/** The error responses of an operation of this kind, by status; `bodyless`: a GET or HEAD, whose body is never read. */
export function errorResponses(kind: Kind, bodyless = false): Json {
  return Object.fromEntries(codesByStatus(kind, bodyless).map(([status]) => [String(status), { $ref: `#/components/responses/${componentName(kind, bodyless, status)}` }]))
}

/** The job operations' kinds by operationId: a result's answers are a report's, a status's and a cancel's their record's. */
const JOB_OPERATIONS: Record<string, Kind> = { getJob: 'job-status', cancelJob: 'job-cancel', getJobResult: 'job' }

/** The error responses of the job operation `operationId`, by status. */
export function jobErrorResponses(operationId: string): Json {
  const kind = JOB_OPERATIONS[operationId]
  if (kind === undefined) throw new Error(`no job operation ${operationId}`)
  return errorResponses(kind)
}
