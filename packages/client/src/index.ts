import createClient, { type Client } from 'openapi-fetch'
import type { components, operations, paths } from './schema.js'
import { answerError, GatewayError, isObject, isRedirect, networkFailure, parsedBody, redirectError, retryAfterSeconds } from './errors.js'
import { reportJob, type JobCalls, type JobStatus, type ReportJob } from './jobs.js'
import { platformUsageOf, type PlatformUsage } from './usage.js'
import { pause } from './pause.js'
import { countOption, MAX_TIMEOUT_MS, refusal, secondsOption, timeoutOption } from './options.js'

// A typed client for callers of the report gateway (the gateway's docs/contract.md,
// "Calling the proxy listener"). It sends the team key, waits out a 429 or 503 that says
// when to come back (within a bound, reads only, as the gateway retries only reads), keeps
// each report's ETag and body by URL and sends `if-none-match`, so that a 304 is answered
// with the kept body, bounds each call by a timeout, and throws every failure as a
// GatewayError with a code. The types come from the gateway's OpenAPI document
// (schema.d.ts, generated from docs/openapi.json). It uses fetch alone: Node 20+ and browsers.

export type { components, operations, paths }
export {
  answerError,
  CLIENT_ERROR_CODES,
  GATEWAY_ERROR_CODES,
  GatewayError,
  isGatewayErrorBody,
  retryAfterSeconds,
  type ClientErrorCode,
  type ConfigProblem,
  type ErrorCode,
  type GatewayErrorBody,
  type GatewayErrorCode,
  type GatewayErrorDetails,
  type PlatformErrorBody,
} from './errors.js'
export { MAX_WAIT_SECONDS, type JobCallOptions, type JobResultOptions, type JobState, type JobStatus, type ReportJob } from './jobs.js'
export { platformUsageOf, type PlatformUsage } from './usage.js'

type Schemas = components['schemas']

/** A report as the gateway answers it: the platform's body, byte for byte. */
export type Report = Schemas['Report']
/** One row of a report: its labels (by the split and `byDate`, `byCampaign`) and its figures. */
export type ReportRow = Schemas['ReportRow']
/** The `x-cache` header of a report answer. */
export type CacheStatus = components['headers']['x-cache']

/** The report splits the platform is known to have; it answers 404 for one it does not. */
export type ReportSplit = 'campaigns' | 'creatives' | 'adPlacementPositions' | (string & {})

/** The query of `GET /api/v1/report/{split}/get`; the flags as booleans or as `1`, `true`, `0`, `false`. */
export type ReportQuery = operations['getReport']['parameters']['query']
type Flag = NonNullable<ReportQuery['byDate']>
/** The JSON body of the older form, `POST /api/v1/report/{split}/get`. */
export type ReportBody = operations['postReport']['requestBody']['content']['application/json']
/** A report read's 202 (asked with `prefer: respond-async`, no copy answering it now): its job's status, as the document types it. */
export type ReportAccepted = operations['getReport']['responses'][202]['content']['application/json'] & operations['postReport']['responses'][202]['content']['application/json']

/** A platform call's path as it is sent, e.g. `/api/v1/campaign/get` (the query apart). */
export type PlatformPath = `/api/v1/${string}`
/** The methods of platform calls: GET and POST to a path ending in `/get` are reads, the rest writes. */
export type PlatformMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'

/**
 * The document's paths for openapi-fetch: every platform path the gateway knows is a path
 * of its own (`api.POST('/api/v1/campaign/get', …)`, `api.DELETE('/api/v1/campaign/banner/delete/{id}', …)`),
 * typed as the platform validates it. Any other platform path: `call()`.
 */
export type GatewayPaths = paths

export interface GatewayClientOptions {
  /** The proxy listener's origin, e.g. `http://127.0.0.1:8080` (and a path, behind an ingress that routes one); none, another scheme than http(s), a query or a fragment: createGatewayClient throws `CLIENT_REFUSED`. */
  baseUrl: string
  /** The team key, sent as `x-api-key`; without one (empty, undefined) createGatewayClient throws `CLIENT_REFUSED`. */
  apiKey: string
  /** How many times a read is sent again after a 429 or 503 with `retry-after` (or GW_SHUTTING_DOWN); default 2. */
  retries?: number
  /** The longest `retry-after` waited, in seconds (default 10): a longer one is thrown as the GatewayError it came with. */
  maxRetryAfterSeconds?: number
  /** How many URLs' ETag and body are kept for `if-none-match` (default 100, least recently used dropped first; 0 keeps none). */
  keptAnswers?: number
  /**
   * The longest a call may take, waits before a retry included, in ms (default 35,000: the
   * gateway's own platform.timeout, 30 s, and a margin, so that its 504 comes first); then CLIENT_TIMEOUT.
   */
  timeoutMs?: number
  /** The fetch to send with (default the global one). */
  fetch?: (request: Request) => Promise<Response>
}

export interface CallOptions {
  /** Extra request headers: `x-request-id`, or `cache-control: no-cache` for a fresh copy (a team given `refresh: true`). */
  headers?: Record<string, string>
  /** Ends the call, a wait before a retry included: the call rejects with the signal's reason. */
  signal?: AbortSignal
  /** This call's timeout in ms, instead of the client's. */
  timeoutMs?: number
}

/** The options of a report read without a validator of the caller's own: its answer is a report. */
export interface ReportCallOptions extends CallOptions {
  headers?: Record<string, string> & { 'if-none-match'?: never; 'If-None-Match'?: never }
}

/** The options of a report read with the caller's own `if-none-match`: its answer may be a 304 ({@link NotModifiedAnswer}). */
export interface ConditionalReportOptions extends CallOptions {
  headers: Record<string, string> & ({ 'if-none-match': string } | { 'If-None-Match': string })
}

export interface PlatformCallOptions extends CallOptions {
  /** The query, sent as `?name=value&…` (undefined values left out; arrays as repeated names). */
  query?: Record<string, string | number | boolean | readonly (string | number)[] | undefined>
  /** A JSON body (`content-type: application/json`). */
  body?: unknown
}

/** Which of a report's figures may still change: the last settled day, and the provisional days (`report-provisional-days`), null: none. */
export interface ReportFinality {
  settledThrough: string | null
  provisional: { from: string; to: string } | null
}

/** A report read: its body and rows, and what the gateway said of it. */
export interface ReportAnswer {
  /** 200 (or the platform's other 2xx, a 203…, which the gateway passes on as it came), or 304 when `revalidated`. */
  status: number
  notModified: false
  report: Report
  rows: ReportRow[]
  /** `x-cache` of the answer (of the 304 when revalidated). */
  cache: CacheStatus | null
  /** `cache-status` (RFC 9211) of the answer, e.g. `report-gateway; hit; ttl=48`. */
  cacheStatus: string | null
  etag: string | null
  requestId: string | null
  /** The gateway answered 304 and the body is the one kept from an earlier read. */
  revalidated: boolean
  /** What the answer cost (`platform-usage`); null from a gateway that does not say. */
  usage: PlatformUsage | null
  finality: ReportFinality
}

/**
 * The gateway's 304 to a report read with the caller's own `if-none-match`: the report has
 * not changed since the ETag the caller named, and the caller keeps the body it has.
 */
export interface NotModifiedAnswer {
  status: 304
  notModified: true
  report: null
  rows: null
  cache: CacheStatus | null
  cacheStatus: string | null
  /** The ETag of the report as the gateway holds it (the one the caller named). */
  etag: string | null
  requestId: string | null
  revalidated: false
  usage: PlatformUsage | null
  finality: ReportFinality
}

/** A platform call's answer: its status and parsed JSON body (null when it has none). */
export interface PlatformAnswer<T> {
  status: number
  body: T
  requestId: string | null
  headers: Headers
}

export interface GatewayClient {
  /**
   * `GET /api/v1/report/{split}/get`; throws GatewayError for anything but a report, or,
   * with the caller's own `if-none-match` in `headers`, the gateway's 304 (NotModifiedAnswer).
   */
  report(split: ReportSplit, query: ReportQuery, options: ConditionalReportOptions): Promise<ReportAnswer | NotModifiedAnswer>
  report(split: ReportSplit, query: ReportQuery, options?: ReportCallOptions): Promise<ReportAnswer>
  /**
   * `GET /api/v1/report/{split}/get` with `prefer: respond-async`: the report asked as a job
   * of the team (the gateway's docs/jobs.md), with `status()`, `result()` (waiting with the
   * server's `wait`) and `cancel()`; or answered at once when a copy answers it now (`id` null).
   */
  reportJob(split: ReportSplit, query: ReportQuery, options?: ReportCallOptions): Promise<ReportJob<ReportAnswer>>
  /** `POST /api/v1/report/{split}/get` with a JSON body (the older form); not kept for ETags, as it has a body. */
  reportByBody(split: ReportSplit, body: ReportBody, options?: CallOptions): Promise<ReportAnswer>
  /**
   * Any other platform call by its real path, e.g. `call('POST', '/api/v1/campaign/get', { query: { per_page: 200 }, body: { userId: 101 } })`:
   * its 2xx answer's JSON body as `T`; anything else thrown as GatewayError.
   */
  call<T = unknown>(method: PlatformMethod, path: PlatformPath, options?: PlatformCallOptions): Promise<PlatformAnswer<T>>
  /**
   * The openapi-fetch client of every documented call, with the same key, timeout, retries
   * and ETags: it returns `{ data, error, response }` (`answerError(error, response)` gives
   * the GatewayError) and throws CLIENT_NETWORK, CLIENT_REDIRECT, CLIENT_TIMEOUT and CLIENT_REFUSED (TRACE,
   * a request fetch cannot make) as GatewayError.
   */
  api: Client<GatewayPaths>
}

interface Kept {
  etag: string
  body: string
  headers: [string, string][]
}

/** Headers of an answer that describe its bytes on the wire, not the kept body. */
const WIRE_HEADERS = new Set(['content-length', 'content-encoding', 'transfer-encoding', 'connection', 'keep-alive'])

/** The gateway's platform.timeout (30 s) and a margin: its own 504 comes before the client gives up. */
const DEFAULT_TIMEOUT_MS = 35_000

/** The methods a platform call may have: the gateway forwards these, and answers or refuses any other itself. */
const FORWARDED = new Set<string>(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'])

export function createGatewayClient(options: GatewayClientOptions): GatewayClient {
  // Refused here, not at the first call: without a key the gateway answers every call 401.
  if (typeof options.apiKey !== 'string' || options.apiKey === '') {
    throw refusal("no apiKey: createGatewayClient needs the team's key (sent as x-api-key), without which the gateway answers every call 401")
  }
  // A key copied with its header's scheme, or two pasted together: every call would be a 401 about a header the app does not write.
  // fetch drops the whitespace around a header's value (a file's last line break), so only what is inside counts.
  const key = options.apiKey.trim()
  if (/^bearer\s/i.test(key)) throw refusal('apiKey: starts with "Bearer ", as an authorization header does; give the key alone (the client sends it as x-api-key; the key is not shown)')
  if (/\s/.test(key)) throw refusal('apiKey: holds a space or a line break, which no key has; give the key alone (the key is not shown)')
  const baseUrl = gatewayBase(options.baseUrl)
  // Where a platform path must stay once fetch has resolved its dot segments.
  const platformRoot = `${new URL(baseUrl).pathname.replace(/\/+$/, '')}/api/v1/`
  const retries = countOption('retries', options.retries ?? 2)
  const maxWait = secondsOption('maxRetryAfterSeconds', options.maxRetryAfterSeconds ?? 10)
  const keptMax = countOption('keptAnswers', options.keptAnswers ?? 100)
  const clientTimeout = timeoutOption(options.timeoutMs ?? DEFAULT_TIMEOUT_MS)
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

  async function settle(request: Request, response: Response, sentKept: string | undefined): Promise<Response> {
    if (request.method !== 'GET') return response
    const entry = kept.get(request.url)
    // A 304 to the kept ETag this client sent; a caller's own `if-none-match` gets its 304 as it is.
    if (response.status === 304 && entry !== undefined && sentKept === entry.etag) {
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

  /**
   * Every call goes through here: the kept ETag, one deadline for the whole call, the
   * retries of reads (`readRetries`, the client's `retries` unless told), and no answer but
   * a whole one (read within the deadline), so that a network failure or the timeout is a
   * GatewayError whenever it happens.
   */
  async function fetchWithPolicy(request: Request, timeoutMs = clientTimeout, readRetries = retries): Promise<Response> {
    // A caller's forced refresh goes without the kept ETag: beside it, the gateway reads its
    // no-cache as a revalidation and answers from its copy, never from the platform.
    const refresh = forcesRefresh(request)
    const etag = request.method === 'GET' && !request.headers.has('if-none-match') && !refresh ? kept.get(request.url)?.etag : undefined
    timeoutOption(timeoutMs)
    const deadline = Date.now() + timeoutMs
    const timer = new AbortController()
    const timeout = setTimeout(() => timer.abort(new GatewayError('CLIENT_TIMEOUT', `${request.method} ${request.url}: no answer within ${timeoutMs} ms`)), timeoutMs)
    const signal = AbortSignal.any([request.signal, timer.signal])
    // fetch's `no-cache` mode: no HTTP cache of a browser answers for the gateway (its
    // answers say `private, max-age`, and a stored copy would be reused under another key,
    // or a revoked one); the request goes out, conditional on what that cache holds, with
    // `cache-control: max-age=0`, which the gateway answers from its own cache (as it
    // answers the default mode's `no-cache` beside a validator). A redirect is taken as it
    // is (`manual`), whatever the call asked (openapi-fetch passes fetch's own options on),
    // and thrown (whole): fetch following one would take the key in x-api-key wherever it leads.
    // A forced refresh goes in `reload` mode: no validator of a browser's cache either.
    const first = new Request(etag === undefined ? request : revalidation(request, etag), { signal, cache: refresh ? 'reload' : 'no-cache', redirect: 'manual' })
    const read = isRead(first)
    try {
      for (let attempt = 0; ; attempt++) {
        const response = await whole(send(first.clone()), first, request.signal, timer.signal)
        const wait = read && attempt < readRetries ? await retryWait(response) : null
        // A wait that would end past the deadline is not waited: the answer is the error.
        if (wait === null || Date.now() + wait * 1000 >= deadline) return await settle(first, response, etag)
        await pause(wait * 1000, signal)
      }
    } catch (err) {
      throw request.signal.aborted ? request.signal.reason : timer.signal.aborted ? timer.signal.reason : err
    } finally {
      clearTimeout(timeout)
    }
  }

  const api = refusing(
    createClient<GatewayPaths>({
      baseUrl,
      headers: { 'x-api-key': options.apiKey },
      fetch: (request: Request) => fetchWithPolicy(request),
    }),
  )

  async function reportOf(request: Request, timeoutMs: number | undefined, once = false): Promise<ReportAnswer | NotModifiedAnswer> {
    return answerOf(request, await fetchWithPolicy(request, timeoutMs, once ? 0 : retries))
  }

  /** A report read's answer: the report, or the gateway's 304 to the caller's own validator; anything else thrown. */
  async function answerOf(request: Request, response: Response): Promise<ReportAnswer | NotModifiedAnswer> {
    // The gateway's 304 to the caller's own validator (the client's own became a 200 with the kept body).
    if (response.status === 304 && request.headers.has('if-none-match')) {
      return {
        status: 304,
        notModified: true,
        report: null,
        rows: null,
        cache: (response.headers.get('x-cache') as CacheStatus | null) ?? null,
        cacheStatus: response.headers.get('cache-status'),
        etag: response.headers.get('etag'),
        requestId: response.headers.get('x-request-id'),
        revalidated: false,
        ...factsOf(response.headers),
      }
    }
    const body = await jsonOf(response)
    if (!response.ok) throw answerError(body, response)
    const report = body as Report
    if (!isObject(report) || !Array.isArray(report.data)) {
      // A 202 is a job the caller's own `prefer: respond-async` asked: where to read it, not a report.
      const job = response.status === 202 ? response.headers.get('location') : null
      const what = job === null ? `a ${response.status} whose body is not a report ({"data": [...]})` : `a 202: a report job was asked (prefer: respond-async), read at ${job}; reportJob() asks one and reads it`
      throw new GatewayError('CLIENT_NOT_A_REPORT', `${request.method} ${new URL(request.url).pathname}: ${what}`, {
        status: response.status,
        requestId: response.headers.get('x-request-id'),
        body,
      })
    }
    return {
      status: revalidated.has(response) ? 304 : response.status,
      notModified: false,
      report,
      rows: report.data,
      cache: (response.headers.get('x-cache') as CacheStatus | null) ?? null,
      cacheStatus: response.headers.get('cache-status'),
      etag: response.headers.get('etag'),
      requestId: response.headers.get('x-request-id'),
      revalidated: revalidated.has(response),
      ...factsOf(response.headers),
    }
  }

  function requestOf(method: string, path: string, query: PlatformCallOptions['query'], call: CallOptions, body?: unknown): Request {
    const url = new URL(`${baseUrl}${path}`)
    for (const [name, value] of Object.entries(query ?? {})) {
      if (value === undefined) continue
      for (const one of Array.isArray(value) ? value : [value]) url.searchParams.append(name, String(one))
    }
    const headers = new Headers(call.headers)
    headers.set('x-api-key', options.apiKey)
    if (body !== undefined) headers.set('content-type', 'application/json')
    return new Request(url, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      ...(call.signal ? { signal: call.signal } : {}),
    })
  }

  /** The request, or the GatewayError CLIENT_REFUSED for one fetch cannot make (a header value with a line break, say). */
  function madeOrRefused(make: () => Request): Request {
    try {
      return make()
    } catch (err) {
      throw refusal(err instanceof Error ? err.message : String(err), err)
    }
  }

  function reportRequest(split: ReportSplit, query: ReportQuery, call: CallOptions): Request {
    const { byDate, byCampaign, ...rest } = query
    const flags = { ...flag('byDate', byDate), ...flag('byCampaign', byCampaign) }
    return madeOrRefused(() => requestOf('GET', `/api/v1/report/${encodeURIComponent(split)}/get`, { ...rest, ...flags }, call))
  }

  function report(split: ReportSplit, query: ReportQuery, call: CallOptions = {}): Promise<ReportAnswer | NotModifiedAnswer> {
    return reportOf(reportRequest(split, query, call), call.timeoutMs)
  }

  // A held status call (`?wait=N`) may take N seconds more than the client's timeout.
  const jobCalls: JobCalls<ReportAnswer> = {
    get: (path, call) => fetchWithPolicy(madeOrRefused(() => requestOf('GET', path, undefined, call)), Math.min(MAX_TIMEOUT_MS, clientTimeout + (call.extraMs ?? 0))),
    delete: (path, call) => fetchWithPolicy(madeOrRefused(() => requestOf('DELETE', path, undefined, call))),
    async json(response) {
      const body = await jsonOf(response)
      if (!response.ok) throw answerError(body, response)
      return body
    },
    report: async (path, call, once) => (await reportOf(madeOrRefused(() => requestOf('GET', path, undefined, call)), undefined, once)) as ReportAnswer,
  }

  return {
    api,
    report: report as GatewayClient['report'],
    async reportJob(split, query, call = {}) {
      const headers: Record<string, string> = { ...(call.headers as Record<string, string> | undefined), prefer: 'respond-async' }
      const request = reportRequest(split, query, { ...call, headers })
      const response = await fetchWithPolicy(request, call.timeoutMs)
      if (response.status === 202) return reportJob(jobCalls, (await jobCalls.json(response)) as ReportAccepted satisfies JobStatus, null, platformUsageOf(response.headers.get('platform-usage')))
      const answer = (await answerOf(request, response)) as ReportAnswer
      return reportJob(jobCalls, null, answer, answer.usage)
    },
    async reportByBody(split, body, call = {}) {
      // A POST is never conditional: its answer is a report.
      return (await reportOf(madeOrRefused(() => requestOf('POST', `/api/v1/report/${encodeURIComponent(split)}/get`, undefined, call, body)), call.timeoutMs)) as ReportAnswer
    },
    async call<T>(method: PlatformMethod, path: PlatformPath, call: PlatformCallOptions = {}): Promise<PlatformAnswer<T>> {
      if (!FORWARDED.has(method)) throw refusal(`${String(method)} is never sent: the gateway forwards only ${[...FORWARDED].join(', ')}`)
      if (typeof path !== 'string' || !path.startsWith('/api/v1/') || /[?#]/.test(path)) throw refusal(`a platform path starts with /api/v1/ and has no query (pass it as \`query\`): ${String(path)}`)
      const request = madeOrRefused(() => requestOf(method, path, call.query, call, call.body))
      if (!new URL(request.url).pathname.startsWith(platformRoot)) throw refusal(`a platform path stays under /api/v1/: ${path} leaves it once its dot segments are resolved`)
      const response = await fetchWithPolicy(request, call.timeoutMs)
      const body = await jsonOf(response)
      if (!response.ok && response.status !== 304) throw answerError(body, response)
      return { status: response.status, body: (body ?? null) as T, requestId: response.headers.get('x-request-id'), headers: response.headers }
    },
  }
}

/**
 * The JSON body of an answer (undefined when it has none). A body that is not JSON is
 * CLIENT_NOT_JSON for a success; for a failure answerError says what it stands for.
 */
async function jsonOf(response: Response): Promise<unknown> {
  const text = await response.text()
  const body = parsedBody(text)
  if (typeof body === 'string' && response.ok) throw answerError(body, response)
  return body
}

/** A call the client does not send, as the GatewayError every failure is. */
/**
 * The gateway's URL every call's path follows, without its trailing slashes; a `baseUrl`
 * that no call could reach refused as CLIENT_REFUSED at the client's making: none (an unset
 * `process.env` variable), one written without its scheme (`localhost:8080` reads as the
 * scheme `localhost:`), another scheme than http(s), a query or fragment, which every
 * call's path would follow, or a path ending in `/api/v1`, which every call's path begins
 * with. Its text is never repeated: it may carry credentials.
 */
function gatewayBase(baseUrl: unknown): string {
  const write = "write it with its scheme: http://host:port"
  if (typeof baseUrl !== 'string' || baseUrl === '') throw refusal("no baseUrl: createGatewayClient needs the gateway's URL (http://host:port), where every call goes")
  let url: URL
  try {
    url = new URL(baseUrl)
  } catch {
    throw refusal(`baseUrl: not a URL; ${write}`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw refusal(`baseUrl: its scheme is ${url.protocol}, not http: or https:; ${write}`)
  if (url.search !== '' || url.hash !== '' || /[?#]/.test(baseUrl)) throw refusal("baseUrl: has a query or fragment, which every call's path would follow; give the gateway's origin (and path) alone")
  // The platform's base copied (…/api/v1): every call's path would be /api/v1/api/v1/…, which
  // the gateway refuses as a route it does not know, or sends to the platform as its 404.
  if (/\/api\/v1\/*$/i.test(url.pathname)) throw refusal("baseUrl: its path ends in /api/v1, which every call's own path begins with (/api/v1/report/campaigns/get): give the gateway's origin (and any path before /api/v1) alone")
  return baseUrl.replace(/\/+$/, '')
}


/**
 * The openapi-fetch client, refusing what it must not send as GatewayError CLIENT_REFUSED:
 * TRACE (the gateway answers it 405, and fetch refuses to make it), and any request
 * openapi-fetch or fetch fails to build (their TypeError). What the call itself throws (a
 * GatewayError, the caller's abort reason) passes as it is.
 */
function refusing<C extends Client<GatewayPaths>>(client: C): C {
  const wrap = (method: string, send: (...args: never[]) => Promise<unknown>) =>
    async (...args: never[]): Promise<unknown> => {
      if (!FORWARDED.has(method)) throw refusal(`${method} is never sent: the gateway forwards only ${[...FORWARDED].join(', ')}`)
      const init = args[1] as { signal?: AbortSignal } | undefined
      try {
        return await send(...args)
      } catch (err) {
        if (err instanceof GatewayError || (init?.signal?.aborted && err === init.signal.reason)) throw err
        throw refusal(err instanceof Error ? err.message : String(err), err)
      }
    }
  const methods = ['GET', 'PUT', 'POST', 'DELETE', 'OPTIONS', 'HEAD', 'PATCH', 'TRACE'] as const
  const wrapped: Record<string, unknown> = { ...(client as object) }
  for (const method of methods) wrapped[method] = wrap(method, (client[method] as (...args: never[]) => Promise<unknown>).bind(client))
  return wrapped as unknown as C
}

/**
 * The answer with its whole body read, within the call's signals: a failure on the way, and
 * a redirect (CLIENT_REDIRECT, its content left unread), is a GatewayError. The call ends
 * when either signal aborts whether or not fetch follows it: a request's signal reaches
 * fetch through signals that follow others, and Node's fetch loses one the garbage
 * collector took (a server that never answered held the call for good while collections ran).
 */
async function whole(sent: Promise<Response>, request: Request, caller: AbortSignal, timer: AbortSignal): Promise<Response> {
  const ended = endOf([caller, timer])
  try {
    const response = await Promise.race([sent, ended.promise])
    if (isRedirect(response)) {
      void response.body?.cancel().catch(() => undefined)
      throw redirectError(request.method, request.url, response)
    }
    const body = nullBody(response.status) ? null : await Promise.race([response.arrayBuffer(), ended.promise])
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers })
  } catch (err) {
    if (caller.aborted || timer.aborted || err instanceof GatewayError) throw err
    throw new GatewayError('CLIENT_NETWORK', `${request.method} ${request.url}: no answer (${networkFailure(err)})${crossOrigin(request.url)}`, { cause: err })
  } finally {
    ended.release()
  }
}

/**
 * In a page whose origin is not the gateway's, what a failed fetch may be besides a
 * gateway out of reach: the gateway sends no CORS headers, and a browser reports the
 * answers it keeps from such a page as a network failure (its preflight was answered).
 * Empty outside a page (Node), and in a page of the gateway's own origin.
 */
function crossOrigin(url: string): string {
  const page = (globalThis as { location?: { origin?: unknown } }).location?.origin
  const gateway = new URL(url).origin
  if (typeof page !== 'string' || page === 'null' || page === gateway) return ''
  return `; this page's origin, ${page}, is not the gateway's (${gateway}): the gateway sends no CORS headers, so the browser lets no page of another origin read its answers`
}

/** A promise that rejects with the reason of the first of `signals` to abort; `release` stops listening. */
function endOf(signals: AbortSignal[]): { promise: Promise<never>; release: () => void } {
  let release = () => undefined as void
  const promise = new Promise<never>((_resolve, reject) => {
    const aborted = signals.find((signal) => signal.aborted)
    if (aborted) return reject(aborted.reason as Error)
    const abort = (event: Event) => reject((event.target as AbortSignal).reason as Error)
    for (const signal of signals) signal.addEventListener('abort', abort, { once: true })
    release = () => {
      for (const signal of signals) signal.removeEventListener('abort', abort)
    }
  })
  // A call that ended otherwise leaves this one unheard: no unhandled rejection.
  promise.catch(() => undefined)
  return { promise, release }
}

function nullBody(status: number): boolean {
  return status === 101 || status === 204 || status === 205 || status === 304
}

/** A read as the gateway counts one: GET, HEAD, and POST to a path ending in `/get`. */
function isRead(request: Request): boolean {
  if (request.method === 'GET' || request.method === 'HEAD') return true
  return request.method === 'POST' && /\/get\/?$/.test(new URL(request.url).pathname)
}

function flag(name: 'byDate' | 'byCampaign', value: Flag | undefined): Partial<Record<typeof name, Flag>> {
  if (value === undefined) return {}
  return { [name]: typeof value === 'boolean' ? (value ? '1' : '0') : value }
}

// `no-cache` as a directive of its own in a list, any case, as the gateway reads it (reports/forced-refresh.ts).
const NO_CACHE = /(^|,)\s*no-cache\s*(,|$)/i

/** Whether the request asks a fresh copy from the platform: `cache-control: no-cache` or `pragma: no-cache`, as the gateway reads them. */
function forcesRefresh(request: Request): boolean {
  return NO_CACHE.test(request.headers.get('cache-control') ?? '') || request.headers.get('pragma') === 'no-cache'
}

/** The request with `if-none-match`: the kept ETag. */
function revalidation(request: Request, etag: string): Request {
  const headers = new Headers(request.headers)
  headers.set('if-none-match', etag)
  return new Request(request, { headers })
}

/** A report answer's cost and finality, from its `platform-usage`, `report-settled-through` and `report-provisional-days` headers. */
export function factsOf(headers: Headers): { usage: PlatformUsage | null; finality: ReportFinality } {
  const days = /^(\d{4}-\d{2}-\d{2})\/(\d{4}-\d{2}-\d{2})$/.exec(headers.get('report-provisional-days') ?? '')
  return {
    usage: platformUsageOf(headers.get('platform-usage')),
    finality: { settledThrough: headers.get('report-settled-through'), provisional: days ? { from: days[1] as string, to: days[2] as string } : null },
  }
}
