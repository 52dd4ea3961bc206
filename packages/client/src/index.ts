import createClient, { type Client } from 'openapi-fetch'
import type { components, operations, paths } from './schema.js'

// A typed client for callers of the report gateway (docs/contract.md, "Calling the proxy
// listener"). It sends the team key, waits out a 429 or 503 that says when to come back
// (within a bound, reads only, as the gateway retries only reads), keeps each report's
// ETag and body by URL and sends `if-none-match`, so that a 304 is answered with the kept
// body, and turns GW_* answers into GatewayError. The types come from the gateway's
// OpenAPI document (schema.d.ts, generated from docs/openapi.json).
//
// One file of plain, erasable TypeScript, so that Node runs it as it is.

export type { components, operations, paths }

type Schemas = components['schemas']

/** A report as the gateway answers it: the platform's body, byte for byte. */
export type Report = Schemas['Report']
/** One row of a report: its labels (by the split and `byDate`, `byCampaign`) and its figures. */
export type ReportRow = Schemas['ReportRow']
/** The platform's own 4xx body, passed through by the gateway (no GW_* code). */
export type PlatformErrorBody = Schemas['PlatformError']
/** Every GW_* code the gateway answers with (contract, "Errors"). */
export type GatewayErrorCode = Extract<keyof Schemas, `GW_${string}`>
/** The JSON body of a GW_* answer. */
export type GatewayErrorBody = Schemas[GatewayErrorCode]
/** The `x-cache` header of a report answer. */
export type CacheStatus = components['headers']['x-cache']

/** The report splits the platform is known to have; it answers 404 for one it does not. */
export type ReportSplit = 'campaigns' | 'creatives' | 'adPlacementPositions' | (string & {})

type GetReportQuery = operations['getReport']['parameters']['query']
type Flag = NonNullable<GetReportQuery['byDate']>
/** The query of `GET /api/v1/report/{split}/get`; the flags also as booleans. */
export type ReportQuery = Omit<GetReportQuery, 'byDate' | 'byCampaign'> & { byDate?: boolean | Flag; byCampaign?: boolean | Flag }
/** The JSON body of the older form, `POST /api/v1/report/{split}/get`. */
export type ReportBody = operations['postReport']['requestBody']['content']['application/json']

/** The GW_* codes at run time, to tell a gateway's answer from the platform's. */
export const GATEWAY_ERROR_CODES = [
  'GW_BAD_QUERY',
  'GW_BAD_REQUEST',
  'GW_UNAUTHORIZED',
  'GW_FORBIDDEN',
  'GW_NOT_FOUND',
  'GW_REQUEST_TIMEOUT',
  'GW_PAYLOAD_TOO_LARGE',
  'GW_TOKEN_REJECTED',
  'GW_RATE_LIMITED',
  'GW_INTERNAL',
  'GW_PLATFORM_AUTH',
  'GW_PLATFORM_REFUSED',
  'GW_UPSTREAM',
  'GW_RELOAD_UNAVAILABLE',
  'GW_CONFIG_INVALID',
  'GW_OVERLOADED',
  'GW_SHUTTING_DOWN',
  'GW_ADMIN_DISABLED',
  'GW_REDIS_UNAVAILABLE',
  'GW_UPSTREAM_TIMEOUT',
] as const satisfies readonly GatewayErrorCode[]

// The type check keeps the list whole: `satisfies` above refuses a code the document does
// not have, and this refuses a document code missing from the list.
type Holds<T extends true> = T
type _EveryCodeListed = Holds<[Exclude<GatewayErrorCode, (typeof GATEWAY_ERROR_CODES)[number]>] extends [never] ? true : false>

const CODES: ReadonlySet<string> = new Set(GATEWAY_ERROR_CODES)

/** A GW_* answer of the gateway: its code, status, request id and, on 429 and 503, when to come back. */
export class GatewayError extends Error {
  override readonly name = 'GatewayError'
  readonly code: GatewayErrorCode
  readonly status: number
  /** The answer's `x-request-id`: the gateway's log lines of this call carry it. */
  readonly requestId: string | null
  /** The answer's `retry-after` in seconds, when it has one. */
  readonly retryAfterSeconds: number | null
  readonly body: GatewayErrorBody

  constructor(body: GatewayErrorBody, response: Response) {
    super(`${body.code} (${response.status}): ${body.message}`)
    this.code = body.code
    this.status = response.status
    this.requestId = response.headers.get('x-request-id')
    this.retryAfterSeconds = retryAfterSeconds(response.headers.get('retry-after'))
    this.body = body
  }
}

/** Any other answer that is not a success: the platform's own 4xx passed through (`PlatformErrorBody`), or a body without a GW_* code. */
export class PlatformAnswerError extends Error {
  override readonly name = 'PlatformAnswerError'
  readonly status: number
  readonly requestId: string | null
  /** The parsed JSON body, else its text. */
  readonly body: unknown

  constructor(body: unknown, response: Response) {
    const message = isObject(body) && typeof body.message === 'string' ? body.message : response.statusText
    super(`${response.status}: ${message}`)
    this.status = response.status
    this.requestId = response.headers.get('x-request-id')
    this.body = body
  }
}

/** The error a failed answer stands for: GatewayError for a GW_* body, else PlatformAnswerError. */
export function answerError(body: unknown, response: Response): GatewayError | PlatformAnswerError {
  return isGatewayErrorBody(body) ? new GatewayError(body, response) : new PlatformAnswerError(body, response)
}

export function isGatewayErrorBody(body: unknown): body is GatewayErrorBody {
  return isObject(body) && typeof body.code === 'string' && CODES.has(body.code) && typeof body.message === 'string'
}

/** `retry-after` in seconds: delta-seconds or an HTTP date; null when absent or unreadable. */
export function retryAfterSeconds(value: string | null, now: number = Date.now()): number | null {
  if (value === null) return null
  const text = value.trim()
  if (/^\d+$/.test(text)) return Number(text)
  const date = Date.parse(text)
  return Number.isNaN(date) ? null : Math.max(0, Math.ceil((date - now) / 1000))
}

export interface GatewayClientOptions {
  /** The proxy listener's origin, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string
  /** The team key, sent as `x-api-key`. */
  apiKey: string
  /** How many times a read is sent again after a 429 or 503 with `retry-after` (or GW_SHUTTING_DOWN); default 2. */
  retries?: number
  /** The longest `retry-after` waited, in seconds (default 10): a longer one is thrown as the GatewayError it came with. */
  maxRetryAfterSeconds?: number
  /** How many URLs' ETag and body are kept for `if-none-match` (default 100, least recently used dropped first; 0 keeps none). */
  keptAnswers?: number
  /** The fetch to send with (default the global one). */
  fetch?: (request: Request) => Promise<Response>
}

export interface CallOptions {
  /** Extra request headers: `x-request-id`, or `cache-control: no-cache` for a fresh copy. */
  headers?: Record<string, string>
  /** Ends the call, a wait before a retry included. */
  signal?: AbortSignal
}

/** A report read: its body and rows, and what the gateway said of it. */
export interface ReportAnswer {
  report: Report
  rows: ReportRow[]
  /** `x-cache` of the answer (of the 304 when revalidated). */
  cache: CacheStatus | null
  etag: string | null
  requestId: string | null
  /** The gateway answered 304 and the body is the one kept from an earlier read. */
  revalidated: boolean
}

export interface GatewayClient {
  /** `GET /api/v1/report/{split}/get`; throws GatewayError or PlatformAnswerError for anything but a report. */
  report(split: ReportSplit, query: ReportQuery, options?: CallOptions): Promise<ReportAnswer>
  /** `POST /api/v1/report/{split}/get` with a JSON body (the older form); not kept for ETags, as it has a body. */
  reportByBody(split: ReportSplit, body: ReportBody, options?: CallOptions): Promise<ReportAnswer>
  /** The openapi-fetch client of every documented call, with the same key, retries and ETags; it returns `{ data, error, response }` (see `answerError`). */
  api: Client<paths>
}

interface Kept {
  etag: string
  body: string
  headers: [string, string][]
}

/** Headers of an answer that describe its bytes on the wire, not the kept body. */
const WIRE_HEADERS = new Set(['content-length', 'content-encoding', 'transfer-encoding', 'connection', 'keep-alive'])

export function createGatewayClient(options: GatewayClientOptions): GatewayClient {
  const retries = Math.max(0, options.retries ?? 2)
  const maxWait = options.maxRetryAfterSeconds ?? 10
  const keptMax = Math.max(0, options.keptAnswers ?? 100)
  const send = options.fetch ?? ((request: Request) => globalThis.fetch(request))
  const kept = new Map<string, Kept>()
  const revalidated = new WeakSet<Response>()

  /** Seconds to wait before sending a read again, or null to answer with this response. */
  async function retryWait(response: Response): Promise<number | null> {
    if (response.status !== 429 && response.status !== 503) return null
    const seconds = retryAfterSeconds(response.headers.get('retry-after'))
    if (seconds !== null) return seconds <= maxWait ? seconds : null
    // A replica shutting down says no time: another replica answers a retry now.
    const body: unknown = await response.clone().json().catch(() => null)
    return isObject(body) && body.code === 'GW_SHUTTING_DOWN' ? 0 : null
  }

  async function settle(request: Request, response: Response): Promise<Response> {
    if (request.method !== 'GET') return response
    const entry = kept.get(request.url)
    // A 304 to the kept ETag; a caller's own `if-none-match` gets its 304 as it is.
    if (response.status === 304 && entry !== undefined && request.headers.get('if-none-match') === entry.etag) {
      kept.delete(request.url)
      kept.set(request.url, entry)
      const headers = new Headers(entry.headers)
      for (const [name, value] of response.headers) if (!WIRE_HEADERS.has(name)) headers.set(name, value)
      const answer = new Response(entry.body, { status: 200, statusText: 'OK', headers })
      revalidated.add(answer)
      return answer
    }
    if (response.status !== 200) return response
    const etag = response.headers.get('etag')
    kept.delete(request.url)
    if (etag === null || keptMax === 0) return response
    const headers = [...response.headers].filter(([name]) => !WIRE_HEADERS.has(name))
    kept.set(request.url, { etag, body: await response.clone().text(), headers })
    for (const url of kept.keys()) {
      if (kept.size <= keptMax) break
      kept.delete(url)
    }
    return response
  }

  async function fetchWithPolicy(request: Request): Promise<Response> {
    const etag = request.method === 'GET' && !request.headers.has('if-none-match') ? kept.get(request.url)?.etag : undefined
    const first = etag === undefined ? request : revalidation(request, etag)
    const read = isRead(first)
    for (let attempt = 0; ; attempt++) {
      const response = await send(first.clone())
      const wait = read && attempt < retries ? await retryWait(response) : null
      if (wait === null) return settle(first, response)
      await response.body?.cancel()
      await pause(wait * 1000, first.signal)
    }
  }

  const api = createClient<paths>({ baseUrl: options.baseUrl, headers: { 'x-api-key': options.apiKey }, fetch: fetchWithPolicy, redirect: 'error' })

  function answerOf(data: Report | undefined, error: unknown, response: Response): ReportAnswer {
    if (data === undefined) throw answerError(error, response)
    return {
      report: data,
      rows: data.data,
      cache: (response.headers.get('x-cache') as CacheStatus | null) ?? null,
      etag: response.headers.get('etag'),
      requestId: response.headers.get('x-request-id'),
      revalidated: revalidated.has(response),
    }
  }

  return {
    api,
    async report(split, query, call = {}) {
      const { byDate, byCampaign, ...rest } = query
      const flags = { ...flag('byDate', byDate), ...flag('byCampaign', byCampaign) }
      const { data, error, response } = await api.GET('/api/v1/report/{split}/get', {
        params: { path: { split }, query: { ...rest, ...flags } },
        headers: call.headers,
        signal: call.signal,
      })
      return answerOf(data, error, response)
    },
    async reportByBody(split, body, call = {}) {
      const { data, error, response } = await api.POST('/api/v1/report/{split}/get', {
        params: { path: { split } },
        body,
        headers: call.headers,
        signal: call.signal,
      })
      return answerOf(data, error, response)
    },
  }
}

/** A read as the gateway counts one: GET, HEAD, and POST to a path ending in `/get`. */
function isRead(request: Request): boolean {
  if (request.method === 'GET' || request.method === 'HEAD') return true
  return request.method === 'POST' && /\/get\/?$/.test(new URL(request.url).pathname)
}

function flag(name: 'byDate' | 'byCampaign', value: boolean | Flag | undefined): Partial<Record<typeof name, Flag>> {
  if (value === undefined) return {}
  return { [name]: typeof value === 'boolean' ? (value ? '1' : '0') : value }
}

/**
 * The request with `if-none-match`. In the default cache mode, fetch adds `cache-control:
 * no-cache` and `pragma: no-cache` to a conditional request, which ask the gateway for a
 * fresh copy from the platform (REFRESH); in `no-cache` mode it sends `max-age=0`, and the
 * gateway answers from its cache.
 */
function revalidation(request: Request, etag: string): Request {
  const headers = new Headers(request.headers)
  headers.set('if-none-match', etag)
  // Node's RequestInit type leaves `cache` out; its fetch honours it.
  const init = { headers, cache: 'no-cache' as const }
  return new Request(request, init)
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error)
    const done = () => {
      signal.removeEventListener('abort', abort)
      resolve()
    }
    const abort = () => {
      clearTimeout(timer)
      reject(signal.reason as Error)
    }
    const timer = setTimeout(done, ms)
    signal.addEventListener('abort', abort, { once: true })
  })
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null
}
