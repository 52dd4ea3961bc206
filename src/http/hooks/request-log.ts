import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { GatewayContext } from '../context.js'
import type { CountChild, ObserveChild } from '../../perf/metric-tally.js'
import { isOwnRequestId, newRequestId } from '../../observe/request-id.js'
import { traceOf, type SpanAttributes, type Trace } from '../../observe/tracing.js'
import { holdsKey } from '../../observe/key-shape.js'

const REQUEST_ID = /^[\w.:-]{1,128}$/

// The id each request Node read was given, kept on the request under a symbol: every
// entrance, and a line written after the answer (pipelined-answers.ts), names a request by
// one id. On the request, not in a WeakMap keyed by it: a WeakMap's entry for each request
// cost about 2 µs of it, most in the collector's work on the map (a stampede's 200 waiters
// 0.48 ms a round of a 24 ms profile; docs/benchmarks.md), a property about 0.1 µs.
const ID_GIVEN = Symbol('the request id given')

/** A request Node read (or one an entrance stands in for): its headers, and the id it was given. */
export interface NamedRequest {
  readonly headers: IncomingHttpHeaders
  [ID_GIVEN]?: string
}

/**
 * Whether a listener names a request by the caller's `x-request-id` `given` (a plain token
 * outside the gateway's own id space, not shaped like a team key): the proxy listener
 * when the request carries a team key the gateway knows and the id holds no secret of the
 * gateway's; the admin listener never (compose/listeners.ts).
 */
export type TakesRequestId = (given: string, headers: IncomingHttpHeaders) => boolean

/**
 * The caller's `x-request-id` when it is a plain token outside the gateway's own id space,
 * not shaped like a team key and one the listener takes (`takes`), else a new one: the id
 * is logged, audited, echoed and sent to the platform. A request gets one id, whoever asks
 * first: an entrance that may name a request before its key is checked (a listener's
 * router, an answer before it) passes `takes`; one that names only admitted requests may
 * leave it out, as Admission.key refuses an id holding a secret.
 */
export function requestIdOf(req: NamedRequest, takes?: TakesRequestId): string {
  const known = req[ID_GIVEN]
  if (known !== undefined) return known
  const id = requestIdFor(req.headers, takes)
  req[ID_GIVEN] = id
  return id
}

/**
 * The id of a request with `headers`, decided anew at each call (requestIdOf's rule): for
 * a request answered at the socket entrance, which asks once. Its headers may be a head the
 * entrance keeps for its connection (plain-get.ts), the same object for every request
 * that repeats it: each of those requests is named anew.
 */
export function requestIdFor(headers: IncomingHttpHeaders, takes?: TakesRequestId): string {
  const given = headers['x-request-id']
  return typeof given === 'string' && REQUEST_ID.test(given) && !isOwnRequestId(given) && !holdsKey(given) && takes?.(given, headers) !== false ? given : newRequestId()
}

export interface RequestFacts {
  reqId: string
  team: string | null
  /** The id of the key the caller presented. */
  keyId: string | null
  /** Answered by the cache: a platform call saved (observe/usage.ts). */
  hit: boolean
  /** Null for a request whose head Node could not read. */
  method: string | null
  url: string | null
  route: string
  status: number
  /** The GW_* code of the gateway's own refusal or failure; none for an answer the platform wrote, or a success. */
  code?: string | undefined
  durationMs: number
  cache: string | null
  /** The caller's address (the socket's peer: the ingress's, behind one). */
  client: string | null
  /** The accounts (advertiserId, userId) the call named, as far as the gateway read them. */
  advertisers: readonly unknown[] | null
  /** Bytes written to the caller for this response, headers included; null where unknown. */
  bytes: number | null
  /** How long the platform call it waited for took; null when none was made. */
  upstreamMs: number | null
  userAgent: string | null
  /** The clock reading (epoch ms) the answer was made at, where the caller took one. */
  at?: number | undefined
  /** The request's span, with tracing on: ended here, and its trace id logged. */
  trace?: Trace | undefined
}

// The bytes a connection had written when its latest response was counted, kept on the
// connection under a symbol: a WeakMap's lookup and store were paid on every hit.
const COUNTED = Symbol('bytes written when last counted')
type CountedSocket = Socket & { [COUNTED]?: number }
// A response's bytes, counted when it had handed them all to its connection.
const sent = new WeakMap<ServerResponse, number>()

/** The bytes written on `socket` since its previous count, counted now. */
export function bytesSince(socket: Socket | null | undefined): number | null {
  const total = socket?.bytesWritten
  if (socket == null || typeof total !== 'number') return null
  const counting = socket as CountedSocket
  const before = counting[COUNTED] ?? 0
  counting[COUNTED] = total
  return total - before
}

/**
 * Counts `res`'s bytes when it has handed its last one to its connection ('prefinish').
 * Node writes a connection's responses in order: one ended before its turn (pipelined)
 * waits in the response, and the connection goes to the next only once this one
 * finishes. So at that point the connection's bytes since the previous count are this
 * response's, where an answer logged at 'finish' would see the next one's too.
 */
export function countBytesWhenWritten(res: ServerResponse): void {
  // `on`: a response is prefinished once, and `once` keeps a wrapper and its context per request.
  res.on('prefinish', () => {
    const bytes = bytesSince(res.socket)
    if (bytes !== null) sent.set(res, bytes)
  })
}

/** The bytes written to the caller for `res`, an ended response: counted already, or now. */
export function bytesOf(res: ServerResponse): number | null {
  const bytes = sent.get(res)
  if (bytes !== undefined) return bytes
  // Ended before its turn: all of it waits in the response; counted when written, for the next.
  if (res.socket === null && res.writableEnded) {
    res.once('prefinish', () => void bytesSince(res.socket))
    return res.writableLength
  }
  return bytesSince(res.socket)
}

// The GW_* code of each answer the router's error handler wrote (http/server.ts).
const gatewayCodes = new WeakMap<ServerResponse, string>()

/** Notes that `res` answers with the gateway's own `code` (a GW_* refusal or failure), for its access line. */
export function noteGatewayCode(res: ServerResponse, code: string): void {
  gatewayCodes.set(res, code)
}

/** The GW_* code `res` answered with, where the gateway refused or failed it; undefined for an answer the platform wrote, or a success. */
export function gatewayCodeOf(res: ServerResponse): string | undefined {
  return gatewayCodes.get(res)
}

/** What the access line says of the caller an answer went to, where its key named one. */
export interface AnsweredCaller {
  team: { name: string }
  keyId: string
  advertisers: readonly unknown[] | null
  upstreamMs: number | null
}

/** What an entrance knows of an answer it wrote; the rest of its facts the request says. */
export interface Answered {
  reqId: string
  /** The metrics' route label (routeKind). */
  route: string
  status: number
  /** The GW_* code the gateway answered with (gatewayCodeOf), where it refused or failed. */
  code?: string | undefined
  durationMs: number
  cache: string | null
  client: string | null
  /** Answered by the cache: a platform call saved (observe/usage.ts). */
  hit: boolean
  /** The clock reading the answer was made at, where the entrance took one. */
  at?: number | undefined
}

/** nginx's status for a request whose caller closed the connection before its answer was written. */
export const CALLER_LEFT = 499

/** What an access line reads of a request: Node's, or a plain GET read on its connection (http/plain-get.ts). */
export type RequestSeen = Pick<IncomingMessage, 'method' | 'url' | 'headers'>

/**
 * The facts of one answered request (its access line, metrics, usage and span), built in
 * this one place for every entrance: the connection's own (a plain GET's hit), the one
 * before the router and the router's onResponse hook. `bytes`: what was written to the
 * caller for it (bytesOf, bytesSince); `trace`: its span, where tracing is on.
 */
export function accessFacts(req: RequestSeen, bytes: number | null, caller: AnsweredCaller | null, answered: Answered, trace: Trace | undefined): RequestFacts {
  return {
    reqId: answered.reqId,
    team: caller === null ? null : caller.team.name,
    keyId: caller === null ? null : caller.keyId,
    hit: answered.hit,
    method: req.method as string,
    url: req.url as string,
    route: answered.route,
    status: answered.status,
    code: answered.code,
    durationMs: answered.durationMs,
    cache: answered.cache,
    client: answered.client,
    advertisers: caller === null ? null : caller.advertisers,
    bytes,
    upstreamMs: caller === null ? null : caller.upstreamMs,
    userAgent: req.headers['user-agent'] ?? null,
    at: answered.at,
    trace,
  }
}

export type ObserveRequest = (facts: RequestFacts) => void

/** An answer written before the router found a route (refused by Node's parser, by the router, or before either): what its access line knows. */
export interface Refused {
  reqId: string
  status: number
  /** Its GW_* code. */
  code: string
  /** The connection it was written on. */
  socket: Socket
  /**
   * The caller's address, read when the refusal began: a caller that ends its side with
   * the request leaves a connection that no longer knows it once the answer is written.
   */
  client: string | null
  /** The request, where Node read its head; null when the head itself was refused. */
  req: IncomingMessage | null
  /** Since the request reached the listener, where that is known; else 0. */
  durationMs: number
}

export type ObserveRefusal = (refused: Refused) => void

/**
 * The access line (and metrics) of an answer written before the router: no caller is
 * known, its key not read; the route is `unmatched`. `traced`: tracing is on, so a
 * request that reached the listener's handler has a span to end.
 */
export function refusalObserver(observe: ObserveRequest, traced: boolean): ObserveRefusal {
  return ({ reqId, status, code, socket, client, req, durationMs }) =>
    observe({
      reqId,
      team: null,
      keyId: null,
      hit: false,
      method: req?.method ?? null,
      url: req?.url ?? null,
      route: 'unmatched',
      status,
      code,
      durationMs,
      cache: null,
      client,
      advertisers: null,
      bytes: bytesSince(socket),
      upstreamMs: null,
      userAgent: req?.headers['user-agent'] ?? null,
      trace: traced && req !== null ? traceOf(req) : undefined,
    })
}

/**
 * One log line and the request metrics per request (contract, "Logs"), for both
 * entrances of the proxy listener. Metric children are looked up once per route and
 * status, without building a key on every request.
 */
export function requestObserver({ metrics, usage, keyUse, clock, history, log }: Pick<GatewayContext, 'metrics' | 'usage' | 'keyUse' | 'clock' | 'history' | 'log'>): ObserveRequest {
  const counters = new Map<string, Map<number, CountChild>>()
  const timers = new Map<string, ObserveChild>()
  return (facts) => {
    const { route, status } = facts
    let byStatus = counters.get(route)
    if (!byStatus) {
      byStatus = new Map()
      counters.set(route, byStatus)
    }
    let counter = byStatus.get(status)
    if (!counter) {
      counter = metrics.requests.child({ route, status: String(status) })
      byStatus.set(status, counter)
    }
    counter.inc()
    let timer = timers.get(route)
    if (!timer) {
      timer = metrics.requestDuration.labels({ route })
      timers.set(route, timer)
    }
    timer.observe(facts.durationMs / 1000)
    if (facts.team !== null) usage.request(facts.team, status, facts.hit, facts.bytes ?? 0, facts.at)
    if (facts.keyId !== null) keyUse.note(facts.keyId, facts.at ?? clock.now(), facts.team ?? undefined)
    history.request(status, facts.team, route === 'report' && facts.cache !== null, facts.hit, facts.at)
    const trace = facts.trace
    if (trace !== undefined && trace.recording) endRequestSpan(trace, facts)
    // Read per request: an operator may change the level at run time.
    if (!log.isLevelEnabled('info')) return
    const url = facts.url ?? ''
    const q = url.indexOf('?')
    const line: Record<string, unknown> = {
      reqId: facts.reqId,
      client: facts.client,
      team: facts.team,
      keyId: facts.keyId,
      method: facts.method,
      path: facts.url === null ? null : q === -1 ? url : url.slice(0, q),
      advertiser: advertiserField(facts.advertisers),
      route,
      status,
      // Left out (undefined) where the gateway wrote no GW_* code of its own.
      code: facts.code,
      durationMs: tenths(facts.durationMs),
      upstreamMs: facts.upstreamMs === null ? null : tenths(facts.upstreamMs),
      cache: facts.cache,
      bytes: facts.bytes,
      userAgent: facts.userAgent,
    }
    // With tracing on, the line names the request's trace (the span's own id is in the trace).
    if (trace !== undefined) line.traceId = trace.traceId
    log.info(line, 'request')
  }
}

/**
 * Ends a request's SERVER span with its answer (HTTP semantic conventions: a 5xx is an
 * error, a 4xx is not, but a step the refusal skipped ends failed with its status).
 */
function endRequestSpan(trace: Trace, facts: RequestFacts): void {
  const status = facts.status
  trace.set(answerAttributes(status, facts.team, facts.cache))
  trace.set({ 'gateway.request_id': facts.reqId })
  trace.end(status >= 500 ? String(status) : undefined, status >= 400 ? String(status) : undefined)
}

// A request span's answer attributes but its id, by team, cache result and status: frozen,
// so that a span takes them as they are and their encoding is made once
// (observe/recorded-span.ts), not a KeyValue of each written for every request. Teams come
// from the configuration, results and statuses are few: past ANSWERS_KEPT (a configuration
// of thousands of teams), the rest are made for each request.
const ANSWERS_KEPT = 4096
const answers = new Map<string | null, Map<string | null, Map<number, SpanAttributes>>>()
let answersKept = 0

function answerAttributes(status: number, team: string | null, cache: string | null): SpanAttributes {
  const kept = answers.get(team)?.get(cache)?.get(status)
  if (kept !== undefined) return kept
  const made: SpanAttributes = { 'http.response.status_code': status }
  if (team !== null) made['gateway.team'] = team
  if (cache !== null) made['gateway.cache.status'] = cache
  if (answersKept >= ANSWERS_KEPT) return made
  answersKept += 1
  let byCache = answers.get(team)
  if (byCache === undefined) answers.set(team, (byCache = new Map()))
  let byStatus = byCache.get(cache)
  if (byStatus === undefined) byCache.set(cache, (byStatus = new Map()))
  byStatus.set(status, Object.freeze(made))
  return made
}

function tenths(ms: number): number {
  return Math.round(ms * 10) / 10
}

/** One account as a number, several as a list, none as null; as the caller wrote them otherwise. */
export function advertiserField(accounts: readonly unknown[] | null): unknown {
  if (!accounts || accounts.length === 0) return null
  const ids = [...new Set(accounts.map((a) => (typeof a === 'string' && /^\d{1,15}$/.test(a) ? Number(a) : a)))]
  return ids.length === 1 ? ids[0] : ids
}

/**
 * The metrics' route label of a matched route: `report`, `jobs` (the gateway's own job
 * calls, whose status with `?wait` is held until its job changes, so never part of the
 * platform calls' latency), `proxy` for the rest of `/api/v1`, else the route itself.
 */
export function routeKind(route: string): string {
  if (route.startsWith('/api/v1/report')) return 'report'
  if (route === '/api/v1/jobs' || route.startsWith('/api/v1/jobs/')) return 'jobs'
  return route.startsWith('/api/v1') ? 'proxy' : route
}
