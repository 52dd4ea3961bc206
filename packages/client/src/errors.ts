import type { components } from './schema.js'
import { platformUsageOf, type PlatformUsage } from './usage.js'

// Every way a call can fail, as one class: GatewayError. A GW_* answer of the gateway
// keeps its code; what the gateway's contract does not cover (no answer, a timeout, a code
// this client does not know, a body that is not JSON, a 200 that is not a report, the
// platform's own 4xx passed through) has a code of its own, so a caller can tell them
// apart with one `switch (err.code)`.

type Schemas = components['schemas']

/** Every GW_* code the gateway answers with (contract, "Errors"). */
export type GatewayErrorCode = Extract<keyof Schemas, `GW_${string}`>
/** The JSON body of a GW_* answer. */
export type GatewayErrorBody = Schemas[GatewayErrorCode]
/** One problem of a refused teams reload (the admin listener's `422 GW_CONFIG_INVALID`, its `errors`): the setting, and the file and line that write it. */
export type ConfigProblem = Schemas['GW_CONFIG_INVALID']['errors'][number]
/** The platform's own 4xx body, passed through by the gateway (no GW_* code). */
export type PlatformErrorBody = Schemas['PlatformError']

/** The GW_* codes at run time, to tell a gateway's answer from the platform's. */
export const GATEWAY_ERROR_CODES = [
  'GW_BAD_QUERY',
  'GW_BAD_REQUEST',
  'GW_UNAUTHORIZED',
  'GW_FORBIDDEN',
  'GW_TEAM_SUSPENDED',
  'GW_NOT_FOUND',
  'GW_METHOD_NOT_ALLOWED',
  'GW_REQUEST_TIMEOUT',
  'GW_PAYLOAD_TOO_LARGE',
  'GW_HEADERS_TOO_LARGE',
  'GW_TOKEN_REJECTED',
  'GW_RATE_LIMITED',
  'GW_PLATFORM_TIME_SPENT',
  'GW_INTERNAL',
  'GW_PLATFORM_AUTH',
  'GW_PLATFORM_REFUSED',
  'GW_UPSTREAM',
  'GW_RELOAD_UNAVAILABLE',
  'GW_CONFIG_INVALID',
  'GW_OVERLOADED',
  'GW_ANSWER_BUDGET',
  'GW_BODY_BUDGET',
  'GW_SHUTTING_DOWN',
  'GW_ADMIN_DISABLED',
  'GW_ADMIN_HOST',
  'GW_REDIS_UNAVAILABLE',
  'GW_UPSTREAM_TIMEOUT',
  'GW_JOBS_FULL',
  'GW_JOB_RESULT_TOO_LARGE',
  'GW_JOB_NOT_DONE',
  'GW_JOB_RUNNING',
  'GW_JOB_EXPIRED',
  'GW_JOBS_UNAVAILABLE',
  'GW_WAITS_FULL',
] as const satisfies readonly GatewayErrorCode[]

// The type check keeps the list whole: `satisfies` above refuses a code the document does
// not have, and this refuses a document code missing from the list.
type Holds<T extends true> = T
type _EveryCodeListed = Holds<[Exclude<GatewayErrorCode, (typeof GATEWAY_ERROR_CODES)[number]>] extends [never] ? true : false>

/**
 * The codes of failures the gateway's contract does not name:
 * - `CLIENT_NETWORK`: no answer at all (refused, reset, DNS, TLS; in a page of another
 *   origin, the browser keeping the answer: the gateway sends no CORS headers);
 * - `CLIENT_REDIRECT`: a redirect (a 3xx other than 304: the platform's, which the gateway
 *   passes on, or a proxy's in front of the gateway), never followed, so that the key goes
 *   nowhere else: `status` and `location` say where it leads;
 * - `CLIENT_TIMEOUT`: no whole answer within `timeoutMs`;
 * - `CLIENT_UNKNOWN_CODE`: an error answer whose code this client does not know (a newer
 *   gateway's GW_* code), or a 5xx or a 401 without one, which the gateway never sends (a 401
 *   without one: baseUrl names another server, the platform itself perhaps);
 * - `CLIENT_NOT_JSON`: a body that is not JSON where JSON is due (an HTML 502 of a proxy in between);
 * - `CLIENT_NOT_A_REPORT`: a 200 to a report read whose body is not a report (`{"data": [...]}`),
 *   or a 202 to one whose caller added `prefer: respond-async` (a job asked: its message says where it is read);
 * - `CLIENT_REFUSED`: a call the client does not send: a method the gateway never forwards
 *   (TRACE, CONNECT, OPTIONS), a path outside `/api/v1/` (its dot segments resolved) or
 *   with a query of its own, a
 *   request fetch cannot make (a header value with a line break); nothing was sent;
 * - `PLATFORM_ANSWER`: the platform's own 4xx but a 401, passed through by the gateway (`body` is the platform's, e.g. `{"message": …}`).
 */
export const CLIENT_ERROR_CODES = ['CLIENT_NETWORK', 'CLIENT_REDIRECT', 'CLIENT_TIMEOUT', 'CLIENT_UNKNOWN_CODE', 'CLIENT_NOT_JSON', 'CLIENT_NOT_A_REPORT', 'CLIENT_REFUSED', 'PLATFORM_ANSWER'] as const
export type ClientErrorCode = (typeof CLIENT_ERROR_CODES)[number]

/** The code of any failed call. */
export type ErrorCode = GatewayErrorCode | ClientErrorCode

const CODES: ReadonlySet<string> = new Set(GATEWAY_ERROR_CODES)

// What an error keeps of a body that is not JSON: enough to recognise a proxy's page.
const KEPT_TEXT = 2048

export interface GatewayErrorDetails {
  /** The answer's status; null when none came (CLIENT_NETWORK, CLIENT_TIMEOUT), and for a redirect in a browser, which hides it. */
  status?: number | null
  requestId?: string | null
  retryAfterSeconds?: number | null
  /** What the failed read cost (its `platform-usage`), when the answer says it. */
  usage?: PlatformUsage | null
  /** Where a redirect leads (CLIENT_REDIRECT). */
  location?: string | null
  body?: unknown
  cause?: unknown
}

/** A failed call: a GW_* answer of the gateway, or a failure with a code of the client's (ClientErrorCode). */
export class GatewayError extends Error {
  override readonly name = 'GatewayError'
  readonly code: ErrorCode
  /** The answer's status; null when no answer came. */
  readonly status: number | null
  /** The answer's `x-request-id`: the gateway's log lines of this call carry it. */
  readonly requestId: string | null
  /** The answer's `retry-after` in seconds, when it has one. */
  readonly retryAfterSeconds: number | null
  /**
   * What the failed read cost and the team's use of the platform (`platform-usage`): on a
   * report read's GW_PLATFORM_TIME_SPENT (its `day` past its `dayLimit`), 5xx, redirect and
   * the platform's own refusal passed on (`fill`: what its own calls held), and a job's result
   * that failed so or too large to keep; null on any other answer, and when none came.
   */
  readonly usage: PlatformUsage | null
  /**
   * Where a redirect (CLIENT_REDIRECT) leads: its `location` as a whole URL, resolved
   * against the call's (a platform's redirect to its own address comes on the gateway's);
   * null on any other failure, and in a browser, which shows a script neither a
   * redirect's status nor its location.
   */
  readonly location: string | null
  /** The answer's body: a GatewayErrorBody for a GW_* code, the platform's for PLATFORM_ANSWER, the start of the text for CLIENT_NOT_JSON. */
  readonly body: unknown

  constructor(code: ErrorCode, message: string, details: GatewayErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause })
    this.code = code
    this.status = details.status ?? null
    this.requestId = details.requestId ?? null
    this.retryAfterSeconds = details.retryAfterSeconds ?? null
    this.usage = details.usage ?? null
    this.location = details.location ?? null
    this.body = details.body
  }

  /** Whether this is the gateway's answer with a GW_* code (`body` is then its GatewayErrorBody). */
  isGatewayAnswer(): this is GatewayError & { code: GatewayErrorCode; body: GatewayErrorBody; status: number } {
    return CODES.has(this.code)
  }
}

export function isGatewayErrorBody(body: unknown): body is GatewayErrorBody {
  return isObject(body) && typeof body.code === 'string' && CODES.has(body.code) && typeof body.message === 'string'
}

/**
 * The error an answer that is not a success stands for, from its parsed body (openapi-fetch's
 * `error`: the parsed JSON, or the text when it is not JSON; undefined when empty).
 */
export function answerError(body: unknown, response: Response): GatewayError {
  const status = response.status
  const details = { status, requestId: response.headers.get('x-request-id'), retryAfterSeconds: retryAfterSeconds(response.headers.get('retry-after')), usage: platformUsageOf(response.headers.get('platform-usage')), body }
  if (isGatewayErrorBody(body)) return new GatewayError(body.code, `${body.code} (${status}): ${body.message}`, details)
  if (typeof body === 'string' && body !== '') {
    return new GatewayError('CLIENT_NOT_JSON', `${status}: an answer that is not JSON (${contentType(response)}): ${oneLine(body)}`, { ...details, body: body.slice(0, KEPT_TEXT) })
  }
  const code = isObject(body) && typeof body.code === 'string' ? body.code : null
  const message = isObject(body) && typeof body.message === 'string' ? body.message : response.statusText
  // The gateway answers a key it refuses 401 GW_UNAUTHORIZED and passes no platform 401 on
  // (502 GW_PLATFORM_REFUSED or GW_PLATFORM_AUTH): a 401 without a code is another server's,
  // the platform itself answering a baseUrl set to its address.
  if (code === null && status === 401) {
    return new GatewayError('CLIENT_UNKNOWN_CODE', `401: an answer without a GW_* code, so not the gateway's (a key it refuses is 401 GW_UNAUTHORIZED): is baseUrl the gateway's proxy listener? (${message})`, details)
  }
  if (code === null && status >= 400 && status < 500) return new GatewayError('PLATFORM_ANSWER', `${status}: ${message}`, details)
  return new GatewayError('CLIENT_UNKNOWN_CODE', code === null ? `${status}: an answer without a GW_* code` : `${code} (${status}): a code this client does not know`, details)
}

/** Whether an answer is a redirect: a 3xx other than 304 (which answers a validator), or a browser's opaque one (status 0). */
export function isRedirect(response: Response): boolean {
  return response.type === 'opaqueredirect' || (response.status >= 300 && response.status < 400 && response.status !== 304)
}

/**
 * The error a redirect stands for (CLIENT_REDIRECT): the client follows none, since fetch
 * would take the key (x-api-key) wherever it leads. Its message names the location without
 * its query or fragment, which may hold a signature; `location` keeps it whole.
 */
export function redirectError(method: string, url: string, response: Response): GatewayError {
  const status = response.type === 'opaqueredirect' ? null : response.status
  const raw = response.headers.get('location')
  const location = raw === null ? null : resolved(raw, url)
  const where = location === null ? 'no location' : location instanceof URL ? `${location.origin}${location.pathname}${hidden(location)}` : 'a location that is no URL'
  const what = status === null ? 'a redirect (the browser shows neither its status nor its location)' : `a ${status} redirect to ${where}`
  return new GatewayError('CLIENT_REDIRECT', `${method} ${url}: ${what}, not followed: the key goes nowhere else`, {
    status,
    location: location instanceof URL ? location.href : location,
    requestId: response.headers.get('x-request-id'),
    retryAfterSeconds: retryAfterSeconds(response.headers.get('retry-after')),
    usage: platformUsageOf(response.headers.get('platform-usage')),
  })
}

function resolved(location: string, base: string): URL | string {
  try {
    return new URL(location, base)
  } catch {
    return location
  }
}

/** What a message leaves out of a URL: `(its query not shown)`, and so on; empty when nothing. */
function hidden(url: URL): string {
  const parts = [url.search === '' ? null : 'query', url.hash === '' ? null : 'fragment'].filter((part) => part !== null)
  return parts.length === 0 ? '' : ` (its ${parts.join(' and ')} not shown)`
}

/** An answer's text as openapi-fetch reads an error: the parsed JSON, else the text; undefined when empty. */
export function parsedBody(text: string): unknown {
  if (text === '') return undefined
  try {
    return JSON.parse(text) as unknown
  } catch {
    return text
  }
}

/**
 * `retry-after` in seconds (RFC 9110, 10.2.3): delay-seconds or an HTTP date, which is GMT
 * whatever the zone of the machine reading it; null when absent or unreadable.
 */
export function retryAfterSeconds(value: string | null, now: number = Date.now()): number | null {
  if (value === null) return null
  const text = value.trim()
  if (/^\d+$/.test(text)) return Number(text)
  // Only the date forms HTTP allows (IMF-fixdate, and the obsolete RFC 850 and asctime
  // ones) name a weekday or month; Date.parse alone would also take "1.5".
  if (!/[A-Za-z]{3}/.test(text)) return null
  // asctime's form does not say GMT, and Date.parse would read it in the local zone.
  const date = Date.parse(/\bGMT\b/.test(text) ? text : `${text} GMT`)
  return Number.isNaN(date) ? null : Math.max(0, Math.ceil((date - now) / 1000))
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null
}

/** OpenSSL's codes for a TLS handshake answered in plain HTTP (its first bytes read as a record header). */
const PLAIN_HTTP_TLS_CODES: ReadonlySet<string> = new Set(['ERR_SSL_WRONG_VERSION_NUMBER', 'ERR_SSL_PACKET_LENGTH_TOO_LONG', 'ERR_SSL_HTTP_REQUEST'])

/**
 * Why fetch got no answer, on one line: its cause's words (Node's fetch says "fetch failed"
 * and keeps them in `cause`; OpenSSL's end in a line break). A TLS handshake a plain HTTP
 * server answered (an https:// baseUrl of the gateway's own listener) says what to write.
 */
export function networkFailure(err: unknown): string {
  const cause = err instanceof Error && err.cause instanceof Error ? err.cause : err
  const code = isObject(cause) && typeof cause.code === 'string' ? cause.code : null
  if (code !== null && PLAIN_HTTP_TLS_CODES.has(code)) {
    return `TLS failed: the server answered in plain HTTP, not TLS (${code}); the gateway speaks plain HTTP: write baseUrl http://…, or https:// to a TLS ingress in front of it`
  }
  return (cause === err ? String(err) : (cause as Error).message).replace(/\s+/g, ' ').trim()
}

function contentType(response: Response): string {
  return response.headers.get('content-type') ?? 'no content-type'
}

function oneLine(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim()
  return line.length > 120 ? `${line.slice(0, 120)}…` : line
}
