import { createServer, maxHeaderSize, METHODS, STATUS_CODES, type IncomingMessage, type Server, type ServerOptions, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { Readable, type Duplex } from 'node:stream'
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'
import type { Logger } from 'pino'
import type { Config } from '../config.js'
import { BadRequestError, ConfigRefusedError, HeadersTooLargeError, NotFoundError, PathMethodNotAllowedError, PayloadTooLargeError, RequestTimeoutError, type GatewayError } from '../errors.js'
import { handledFailure, type FailureLog } from '../observe/failure-log.js'
import { VALIDATOR_CODE } from '../perf/validator-code.js'
import { SCHEMA_CONTROLLER } from './schema-compilers.js'
import { closeSilentConnections } from './hooks/silent-connections.js'
import { enforcedBound, processFileLimit, type ListenerBound } from './connection-bound.js'
import { lazyRequestLogger } from './hooks/request-logger.js'
import { noteGatewayCode, requestIdFor, requestIdOf, type ObserveRefusal, type TakesRequestId } from './hooks/request-log.js'
import { holdContinues, inviteBody } from '../access/expect-continue.js'
import { connectionOptions } from '../access/connection-options.js'
import { isValidationFailure, validationMessage } from './hooks/validation-message.js'
import { bodyDeadlines } from './hooks/body-deadline.js'
import type { RequestHandler } from './reads/fast-path.js'
import { isHostValue, originForm, targetHost } from './request-target.js'
import { enterOnConnections, type ServePlain } from './socket-entrance.js'
import { atItsTurn, withholdFromRemovedKeys, type KeyTeam } from './pipelined-answers.js'
import { setAnswerFields } from './answer-fields.js'
import { NOT_KEPT } from './health.js'
import { routeAllow } from './route-allow.js'
import type { Tracing } from '../observe/tracing.js'
import { bodyTypeRefused, ENCODED_BODY, NOT_JSON } from '../access/request-body.js'
import { hasBody } from '../access/admission.js'

// Node checks requests' deadlines this often (connectionsCheckingInterval).
const CONNECTIONS_CHECK_MS = 1000
// How long a kept-alive connection may stay idle once the listener is closing.
const CLOSING_KEEP_ALIVE_MS = 500

/** The fields of Node's sockets and responses a closing listener reads (lib/_http_server.js). */
type HttpSocket = Socket & { _httpMessage?: ServerResponse | null }

/**
 * A listener that closes without refusing what it can answer. Once closing (from the
 * drain on, see drainListener): the answers under way, and every request that comes on
 * any connection, are answered as ever with `connection: close`, so the caller goes
 * elsewhere for its next one (an answer under way whose connection already carries the
 * caller's next request keeps it open for that one). Once closed (close()): it takes no
 * new connection, and a kept-alive connection idle at that moment, or that goes idle, is
 * closed once idle for CLOSING_KEEP_ALIVE_MS (not at once, as Node closes idle
 * connections, which cuts a request already on its way).
 */
function closeGently(server: Server): { begin: () => void; closing: () => boolean; take: (req: IncomingMessage, res: ServerResponse) => void } {
  const open = new Set<HttpSocket>()
  const marked = new WeakSet<ServerResponse>()
  // The answer of the last request taken on each connection: a drain that begins while a
  // connection carries pipelined requests closes it after that one, not after the answer
  // under way (every answer queued behind it was lost, its request logged 499).
  const lastTaken = new WeakMap<Socket, ServerResponse>()
  let closing = false
  server.on('connection', (socket: HttpSocket) => {
    open.add(socket)
    // `on`: a socket closes once, and `once` keeps a wrapper and its context per connection.
    socket.on('close', () => open.delete(socket))
  })
  const closeWhenIdle = (socket: HttpSocket): void => {
    const moved = socket.bytesRead
    // Looked at after the loop's next read of the connections (setImmediate runs after
    // the poll phase): a request that came while this process stalled is read, not cut.
    const look = (): void => {
      if (socket.destroyed) return
      if (socket._httpMessage || socket.bytesRead !== moved) closeWhenIdle(socket)
      else socket.destroy()
    }
    setTimeout(() => setImmediate(look), CLOSING_KEEP_ALIVE_MS).unref()
  }
  const closeAfter = (res: ServerResponse): void => {
    if (res.headersSent || !res.shouldKeepAlive) return
    res.shouldKeepAlive = false
    marked.add(res)
  }
  // Node's close() (and Fastify's, with forceCloseConnections: 'idle') closes the idle
  // connections at once: here they get their moment.
  server.closeIdleConnections = () => {
    for (const socket of open) closeWhenIdle(socket)
  }
  return {
    closing: () => closing,
    begin: () => {
      closing = true
      for (const socket of open) {
        const last = lastTaken.get(socket)
        const answer = last !== undefined && !last.writableFinished ? last : socket._httpMessage
        if (answer) closeAfter(answer)
      }
    },
    take: (req, res) => {
      const ahead = lastTaken.get(req.socket)
      lastTaken.set(req.socket, res)
      if (!closing) return
      // A request behind the last one taken on its connection (under way, or queued behind
      // the one under way): that answer leaves the connection open for it.
      if (ahead && ahead !== res && marked.has(ahead) && !ahead.headersSent) ahead.shouldKeepAlive = true
      closeAfter(res)
    },
  }
}

// A request line that Node could have read but for its method: `FOO /path HTTP/1.1`.
const REQUEST_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]{1,20}) ([^\s]+) HTTP\/1\.([01])\r\n/

/** What llhttp says of a head it refused: its own fixed words, never the caller's bytes. */
const PARSER_REASON = /^[\w .,/'`-]{1,80}$/

/**
 * The request line of the request the parser refused for its method: the first line of
 * `raw` (the bytes of the read that failed), when it is a request line whose method the
 * parser does not know. A read may begin with requests the parser read before the refused
 * one (pipelined), or with the rest of a body: a first line with a method the parser knows
 * is such a request, not the refused one, and is named nowhere. Null otherwise.
 */
function refusedRequestLine(raw: Buffer): RegExpExecArray | null {
  const line = REQUEST_LINE.exec(raw.subarray(0, 512).toString('latin1'))
  return line && !KNOWN_METHODS.has(line[1] as string) ? line : null
}
const KNOWN_METHODS = new Set(METHODS)

/**
 * The header lines of the head `raw` begins with, as Node gives them (`rawHeaders`: name,
 * value, name, value …), up to its end or the read's (a line the read's end cuts is not
 * read), and whether the read holds the whole head. A line past the read that failed is
 * not seen: the browsers a rebinding page runs in send Host right after the request line.
 */
function headLines(raw: Buffer): { lines: string[]; whole: boolean } {
  const text = raw.subarray(0, maxHeaderSize).toString('latin1')
  const end = text.indexOf('\r\n\r\n')
  const lines: string[] = []
  for (const line of (end === -1 ? text.slice(0, text.lastIndexOf('\r\n')) : text.slice(0, end)).split('\r\n').slice(1)) {
    const colon = line.indexOf(':')
    if (colon > 0) lines.push(line.slice(0, colon), line.slice(colon + 1).trim())
  }
  return { lines, whole: end !== -1 }
}

/** The values of the `name` lines (lower case) of header lines as Node gives them (`rawHeaders`). */
function valuesOf(lines: readonly string[], name: string): string[] {
  return lines.filter((_value, i) => i % 2 === 1 && (lines[i - 1] as string).toLowerCase() === name)
}

/**
 * The gateway's error for a request Node's parser refused (`err`, its head `raw`); null
 * when no answer is due. `named` checks the names a refused method's request gives (a 421
 * on the admin listener), as the router's hook checks those of every other.
 */
function clientErrorAnswer(err: Error & { code?: string; reason?: string }, raw: Buffer | undefined, allowOf: (target: string) => string, refuseMethod: MethodRefusal, named: (given: Omit<NamesGiven, 'source' | 'reqId'>) => GatewayError | null): { error: GatewayError; headers: Record<string, string> } {
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') return { error: new RequestTimeoutError(), headers: {} }
  // RFC 6585, 5: 431. Node's parser tells no long request target from long headers (414 would name the former).
  if (err.code === 'HPE_HEADER_OVERFLOW') return { error: new HeadersTooLargeError(maxHeaderSize), headers: {} }
  if (err.code === 'HPE_PAUSED_H2_UPGRADE') return { error: new BadRequestError('malformed HTTP request: HTTP/2 is spoken here only through TLS (ALPN); send HTTP/1.1'), headers: {} }
  // A method HTTP's parser does not know, in a request line it could read otherwise: refused as any method not forwarded.
  const line = err.code === 'HPE_INVALID_METHOD' && raw !== undefined ? refusedRequestLine(raw) : null
  if (line && raw !== undefined) {
    const method = line[1] as string
    const target = line[2] as string
    // Its head is checked as every method's is, first (headFault): the Host of HTTP/1.1 is
    // asked for only where the read holds the whole head.
    const { lines, whole } = headLines(raw)
    const codings = valuesOf(lines, 'transfer-encoding')
    const fault = faultOfHead(lines, codings.length === 0 ? undefined : codings.join(', '), valuesOf(lines, 'host')[0], whole && line[3] === '1')
    if (fault !== null) return { error: new BadRequestError(fault), headers: {} }
    const path = originForm(target)
    const misnamed = named({ hosts: valuesOf(lines, 'host'), target: targetHost(target) ?? undefined, method, path: path.split('?', 1)[0] as string })
    if (misnamed !== null) return { error: misnamed, headers: {} }
    const allow = allowOf(path)
    const error = refuseMethod(method, allow, path)
    return { error, headers: error.statusCode === 405 ? { allow } : {} }
  }
  const reason = typeof err.reason === 'string' && PARSER_REASON.test(err.reason) ? `: ${err.reason}` : ''
  return { error: new BadRequestError(`malformed HTTP request${reason}`), headers: {} }
}

// The connections whose refusal (clientErrorHandler) is written or waits for the answers ahead of it.
const refusing = new WeakSet<Duplex>()

/**
 * Calls `then` once every answer due on `socket` before the request its parser refused is
 * written: the answers of the requests pipelined before it, which Node read whole, go out
 * first and in order (RFC 9112, 9.3.2), so that the refusal is never read as theirs (a
 * write told it "is never sent to the platform" while it was). An answer whose own
 * request is the one refused (a body the parser could not read) is not waited for.
 * The wait ends with the connection cut `waitMs` after it began: a caller that reads none
 * of those answers while it sends bytes moves the connection (hooks/silent-connections.ts)
 * for as long as it sends, and the one request timeout Node arms on it is spent (it is
 * the refusal, or comes after it, and only the first refusal is answered).
 */
function afterAnswersAhead(socket: HttpSocket, then: () => void, waitMs: number): void {
  const first = answerAhead(socket)
  if (first === null) return then()
  const cut = setTimeout(() => socket.destroy(), waitMs)
  cut.unref()
  socket.once('close', () => clearTimeout(cut))
  const after = (ahead: ServerResponse): void => {
    const next = (): void => {
      ahead.off('finish', next).off('close', next)
      if (socket.destroyed) return
      const following = answerAhead(socket)
      if (following !== null) return after(following)
      clearTimeout(cut)
      then()
    }
    ahead.once('finish', next).once('close', next)
  }
  after(first)
}

/** The answer on `socket` a refusal waits for: one not yet written whole, of a request Node read whole. */
function answerAhead(socket: HttpSocket): ServerResponse | null {
  const ahead = socket._httpMessage
  return ahead && !ahead.writableFinished && ahead.req.complete ? ahead : null
}

/**
 * Answers `error` in the contract's JSON shape, with the listener's refusal headers,
 * `headers` and a request id, on a connection of `server` the router never sees (a
 * malformed request, a CONNECT), and closes it: closed, not half-closed, as a caller that
 * keeps its side open would keep the socket. `req` is the request where Node read its head;
 * `reqId` its id (refusalIdOf); its access line is written once the answer is
 * (refusalsObservedOn).
 */
function endWithError(server: Server, socket: Duplex, error: GatewayError, headers: Record<string, string>, req: IncomingMessage | null, reqId: string): void {
  const status = error.statusCode ?? 500
  const reason = STATUS_CODES[status] ?? ''
  const client = (socket as Socket).remoteAddress ?? null
  const body = JSON.stringify({ statusCode: status, code: error.code, error: reason, message: error.message })
  const lines = Object.entries({ ...(listenerRefusalHeaders.get(server) ?? REFUSAL_NOT_KEPT), ...headers, 'x-request-id': reqId }).map(([name, value]) => `${name}: ${value}\r\n`).join('')
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nconnection: close\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${lines}\r\n${body}`, () => {
    refusalObservers.get(server)?.({ reqId, status, code: error.code, socket: socket as Socket, client, req, durationMs: 0 })
    socket.destroy()
  })
}

/** The id of an answer written before the router: the caller's `x-request-id` where Node read its head (`req`) and the listener takes it, else a new one. */
function refusalIdOf(server: Server, req: IncomingMessage | null): string {
  const takes = idTests.get(server) ?? NO_CALLER_IDS
  return req === null ? requestIdFor({}, takes) : requestIdOf(req, takes)
}

/**
 * CONNECT never reaches the router: Node hands it to the server's 'connect' listeners,
 * and without one destroys its socket unanswered. Here it is refused as the router refuses
 * a method a path does not take, whatever its target: 405 with the `allow` of that target
 * (`allowOf`), its connection closed; first, as every request, its head is checked
 * (headFault), then the names it gives (its Host lines, and its target, a host and port)
 * meet the listener's check (namesCheckedOn).
 */
function refuseConnect(server: Server, req: IncomingMessage, socket: Duplex, allowOf: (target: string) => string, refuseMethod: MethodRefusal): void {
  // The socket is no longer Node's HTTP server's: its error listener went with it.
  socket.on('error', () => socket.destroy())
  const target = req.url ?? ''
  const reqId = refusalIdOf(server, req)
  const fault = headFault(req)
  if (fault !== null) return endWithError(server, socket, new BadRequestError(fault), {}, req, reqId)
  const hosts = valuesOf(req.rawHeaders, 'host')
  // A target in origin form (`curl -X CONNECT http://host/path` sends the path) names a path, not a host.
  const path = target.startsWith('/') ? (target.split('?', 1)[0] as string) : target
  const misnamed = nameChecks.get(server)?.({ hosts, target: target.startsWith('/') ? undefined : target, source: (socket as Socket).remoteAddress, method: 'CONNECT', path, reqId }) ?? null
  if (misnamed !== null) return endWithError(server, socket, misnamed, {}, req, reqId)
  const allow = allowOf(path)
  endWithError(server, socket, refuseMethod('CONNECT', allow, path), { allow }, req, reqId)
}

/** The names a request gives (its Host lines, the host its target names), and who asked, for an audit line. */
export interface NamesGiven {
  hosts: readonly string[]
  target: string | undefined
  source: string | undefined
  method: string
  /** The target's path, or a CONNECT's host and port. */
  path: string
  reqId: string
}

/** A listener's check of the names a request gives: its refusal, or null where it answers them. */
export type NameCheck = (given: NamesGiven) => GatewayError | null

// Each listener's check of the names a request gives, where it has one (the admin listener's: admin/admin-host-check.ts).
const nameChecks = new WeakMap<Server, NameCheck>()

/**
 * The check of the names every request of `app` gives, asked of those answered before its
 * router (a CONNECT, a method Node's parser does not know), as the router's own hook asks it
 * of every other: a refused name is that refusal, not their 405.
 */
export function namesCheckedOn(app: FastifyInstance, check: NameCheck): void {
  nameChecks.set(app.server, check)
}

// The access line of each listener's answers written before its router, where it keeps one (the proxy's).
const refusalObservers = new WeakMap<Server, ObserveRefusal>()
// Whether each listener takes a caller's id (ListenerOptions.takesId), for the ids of the answers it writes before its router.
const idTests = new WeakMap<Server, TakesRequestId>()
// Each listener's headers of the answers it writes before its router (ListenerOptions.refusalHeaders, with REFUSAL_NOT_KEPT).
const listenerRefusalHeaders = new WeakMap<Server, Readonly<Record<string, string>>>()
/**
 * A refusal is the answer to one caller at one moment: no cache keeps it (a 404 or a 405
 * is one a cache keeps by default, RFC 9110 15.1, under its URL alone), whichever step of
 * a listener writes it (its error handler, or an answer before its router).
 */
const REFUSAL_NOT_KEPT: Readonly<Record<string, string>> = { 'cache-control': NOT_KEPT }

/** The access line of `app`'s answers written before its router (a malformed request, a CONNECT, a path that is no percent-encoding): `observe`. */
export function refusalsObservedOn(app: FastifyInstance, observe: ObserveRefusal): void {
  refusalObservers.set(app.server, observe)
}

/** The host each request's target named in absolute form, before the target was cut to its path and query. */
const targetHosts = new WeakMap<IncomingMessage, string>()

/** The host (and port) `req`'s target named in absolute form (RFC 9112, 3.2.2: read in place of Host); undefined for a target in origin form. */
export function targetHostOf(req: IncomingMessage): string | undefined {
  return targetHosts.get(req)
}

const TRANSFER_CODING_REFUSED = 'transfer-encoding: a body is read sent with a content-length or chunked alone; one under another transfer coding (gzip, deflate, compress) is not read'

/**
 * RFC 9112, 3.2: an HTTP/1.1 request without a Host, any request with more than one Host
 * line or with a Host that is no host, is a 400 (Node's own, with requireHostHeader, is no
 * answer of the contract's, and Node keeps the first of two Host lines where a proxy
 * before the gateway may have read the last). So is one with more than one Authorization
 * line (RFC 9110, 5.3: it is no list): Node keeps the first, the key or admin token read,
 * where a proxy before the gateway that adds its own may read the last. So is one with
 * more than one x-api-key line: Node joins them into one value that is no key, and a
 * caller told "unknown key" looks for a wrong key where it sent two. So is one whose
 * transfer-encoding names a coding besides chunked (RFC 9112, 6.1: `gzip, chunked`): Node
 * decodes chunked alone and hands on the bytes under the other codings as if they were the
 * content. The fault's message, or null.
 */
export function headFault(req: IncomingMessage): string | null {
  return faultOfHead(req.rawHeaders, req.headers['transfer-encoding'], req.headers.host, req.httpVersionMinor === 1)
}

/**
 * headFault of a head: its header lines as sent (`raw`, as `rawHeaders`), its
 * transfer-encoding and Host as Node reads them, and whether it must name its host (an
 * HTTP/1.1 request's). Asked of the heads Node's parser refused for their method too.
 */
function faultOfHead(raw: readonly string[], codings: string | undefined, host: string | undefined, hostRequired: boolean): string | null {
  if (codings !== undefined && codings.trim().toLowerCase() !== 'chunked') return TRANSFER_CODING_REFUSED
  if (host === undefined && hostRequired) return 'host: an HTTP/1.1 request names the host it asks in a Host header'
  let hosts = 0
  let authorizations = 0
  let apiKeys = 0
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string
    if (name.length === 4 && name.toLowerCase() === 'host') hosts++
    else if (name.length === 13 && name.toLowerCase() === 'authorization') authorizations++
    else if (name.length === 9 && name.toLowerCase() === 'x-api-key') apiKeys++
  }
  if (hosts > 1) return 'host: given more than once'
  // An HTTP/1.0 request without a Host too: a proxy before the gateway may read another line than Node's first.
  if (authorizations > 1) return 'authorization: given more than once'
  if (apiKeys > 1) return 'x-api-key: given more than once'
  return host === undefined || isHostValue(host) ? null : 'host: must be a host name or address, and a port (the value is not shown)'
}

function bodyLimitOf(request: FastifyRequest, config: Config): number {
  return request.routeOptions.bodyLimit ?? config.bodyLimit
}

/** The rate-limit fields of an answer to `request`; null when its caller has no limit (or is not known). */
export type RateOf = (request: FastifyRequest) => [policy: string, state: string] | null

/**
 * The entrances before the router: `request` answers a request Node read, or hands it to
 * Fastify (`next`); `plain`, where given, answers plain GETs on their connection before
 * Node reads them (socket-entrance.ts).
 */
export type FastPath = { request: (req: IncomingMessage, res: ServerResponse, next: RequestHandler) => void; plain: ServePlain | null } | null

/** What tells one listener from the other. */
export interface ListenerOptions {
  /** What an error's message is sent as: every secret of the gateway's and anything shaped like a team key in it `[REDACTED]` (SecretSet.scrub). */
  scrub?: (text: string) => string
  /**
   * The methods a path takes: the `allow` of the 405 to a request whose method Node's
   * parser does not know (`FOO /path HTTP/1.1`), and to a CONNECT. Default: the methods
   * the listener's routes take at that path (route-allow.ts).
   */
  allow?: (target: string) => string
  /**
   * The answer to such a request, in the listener's words: default, a 405 saying what the path
   * takes on this listener, or that none of its routes has the path (PathMethodNotAllowedError).
   */
  refuseMethod?: MethodRefusal
  /**
   * Who reads a request's body, and so invites it (`expect: 100-continue`, access/expect-continue.ts):
   * Fastify's body parsers (`parser`, the default), or the route handlers once they have
   * admitted the caller (`handler`: the proxy's, through Admission.readBody).
   */
  bodyReader?: 'parser' | 'handler'
  /**
   * The challenge of its 401 answers (`www-authenticate`, RFC 9110 §11.6.1, which a 401
   * MUST carry): how a caller authenticates to this listener.
   */
  challenge: string
  /** The most connections it holds open at once, and what counts those closed at that bound. */
  connections: ListenerBound
  /** The rate-limit fields of each answer (the proxy's callers). */
  rateOf?: RateOf
  /** Whether a request's team key runs now (the proxy's callers): a pipelined answer goes to none that stopped running before its turn (pipelined-answers.ts). */
  keyTeam?: KeyTeam | null
  tracing?: Tracing | null
  /**
   * Headers of every answer the listener writes before its router (a malformed head, a
   * path that is no percent-encoding, a CONNECT), where its routes set them on theirs (the
   * admin listener's: admin/admin.ts ADMIN_ANSWER_HEADERS), beside the `cache-control:
   * no-store` of every refusal (REFUSAL_NOT_KEPT).
   */
  refusalHeaders?: Readonly<Record<string, string>>
  /**
   * Whether the listener names a request by the caller's `x-request-id` (hooks/request-log.ts
   * requestIdOf); absent: never, each request gets an id of the listener's own. Whether it
   * takes an id must tell no caller that could not learn it otherwise whether the id holds a
   * secret of the gateway's: the echo of an id taken or replaced would answer that guess.
   */
  takesId?: TakesRequestId
  /** The 404 to a path no route of the listener serves, in its words; default, the bare `not found`. */
  notFound?: (url: string) => GatewayError
}

/** A listener that names every request by an id of its own. */
const NO_CALLER_IDS: TakesRequestId = () => false

/** The 405 to `method`, which the path does not take; `allow` lists those it takes (empty: no route has the path). */
/** The answer to `method`, which no route at `path` takes (`allow` lists those that do): a 405, or the listener's 404 where it has no such path. */
export type MethodRefusal = (method: string, allow: string, path: string) => GatewayError

const pathMethodRefusal: MethodRefusal = (method, allow) => new PathMethodNotAllowedError(method, allow === '' ? 'no call has this path' : `it takes ${allow}`)

/** The proxy listener's challenge: the team key (`x-api-key`, or `authorization: Bearer`). */
export const PROXY_CHALLENGE = 'ApiKey realm="report-gateway"'
/** The admin listener's challenge: `authorization: Bearer <admin token>`. */
export const ADMIN_CHALLENGE = 'Bearer realm="report-gateway admin"'

// The gentle close of each listener buildServer made, for drainListener.
const closers = new WeakMap<FastifyInstance, () => void>()

/**
 * The drain before a listener closes: from now on every answer it writes, on the
 * connections it has and on those it still takes, carries `connection: close`. It goes on
 * accepting connections until it is closed (app.close()).
 */
export function drainListener(app: FastifyInstance): void {
  closers.get(app)?.()
}

// What Fastify's body parsers (the admin listener's) refuse, in the words the proxy
// listener's own body checks use (access/request-body.ts): naming the body.
const PARSER_REFUSALS: Record<string, (request: FastifyRequest) => string> = {
  FST_ERR_CTP_INVALID_JSON_BODY: () => NOT_JSON,
  FST_ERR_CTP_EMPTY_JSON_BODY: () => NOT_JSON,
  FST_ERR_CTP_INVALID_MEDIA_TYPE: (request) => bodyTypeRefused('application/json', request.headers['content-type']),
}

/**
 * One listener (the proxy's or the admin's): Fastify with the gateway's server, its
 * deadlines, its gentle close, its error answers in the contract's terms (a 401 with the
 * listener's challenge), `fastPath` (if any) in front of the router, and with `tracing` a
 * span begun for each request before either (none of it when tracing is off).
 */
export function buildServer(config: Config, log: Logger, failures: FailureLog, fastPath: FastPath, { scrub = (text) => text, challenge, connections, rateOf = () => null, keyTeam = null, tracing = null, allow: givenAllow, refuseMethod = pathMethodRefusal, bodyReader = 'parser', refusalHeaders: routeHeaders = {}, takesId = NO_CALLER_IDS, notFound = () => new NotFoundError() }: ListenerOptions): FastifyInstance {
  const refusalHeaders = { ...REFUSAL_NOT_KEPT, ...routeHeaders }
  let gentle: ReturnType<typeof closeGently> | null = null
  let http: Server | null = null
  const app = Fastify({
    loggerInstance: log,
    // One line per request is logged by observeRequests instead.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'reqId' }),
    childLoggerFactory: lazyRequestLogger,
    bodyLimit: config.bodyLimit,
    // Not `requestIdHeader: 'x-request-id'`: Fastify would take any value of that header
    // as is and call genReqId only without one, so the check below would never run.
    requestIdHeader: false,
    genReqId: (req) => requestIdOf(req, takesId),
    // A path parameter of any length the head holds finds its route (a job's id past the
    // router's default of 100 characters found none, and was told its path serves no job
    // call); each route checks its own parameters (job ids: job-routes.ts JOB_ID).
    routerOptions: { maxParamLength: maxHeaderSize },
    // Replaced by the hook below: Fastify's own 503 has no GW_* code.
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    // A caller that trickles its request in is cut off. Node checks these
    // deadlines only every connectionsCheckingInterval, hence the server of our own; and
    // Fastify applies its timeouts only to a server it makes, so they are set here.
    serverFactory: (handler) => {
      const options: ServerOptions & { optimizeEmptyRequests?: boolean } = {
        requestTimeout: config.server.requestTimeoutMs,
        headersTimeout: config.server.headersTimeoutMs,
        connectionsCheckingInterval: CONNECTIONS_CHECK_MS,
        // A request without content-length or transfer-encoding has no body (RFC 9112):
        // Node 24.12+ then skips its body stream's life cycle, about a tenth of a hit's
        // cost. Nothing reads such a request's body: hasBody (access/admission.ts)
        // asks the same two headers.
        optimizeEmptyRequests: true,
        // A request without a Host is refused by the router instead (headFault).
        requireHostHeader: false,
      }
      const take = (req: IncomingMessage, res: ServerResponse): void => {
        const target = req.url
        if (target !== undefined && !target.startsWith('/')) {
          const host = targetHost(target)
          if (host !== null) targetHosts.set(req, host)
          req.url = originForm(target)
        }
        tracing?.begin(req)
        // Asked to switch protocols (Connection: upgrade, with Upgrade), which no route does:
        // Node's parser reads nothing more of its connection, so its answer closes it, and a
        // request pipelined behind it is told so, never left waiting on an open connection.
        if (req.headers.upgrade !== undefined && connectionOptions(req.headers).includes('upgrade')) res.shouldKeepAlive = false
        // Closing: answered as ever, and the connection closed after it (closeGently).
        current.take(req, res)
        // Handled at its turn where its connection has answers enough made ahead (pipelining).
        atItsTurn(req, res, () => {
          if (keyTeam !== null) withholdFromRemovedKeys(req, res, keyTeam, log)
          // One without a Host, or with a faulty head, goes to the router, which refuses it (headFault).
          if (fastPath && headFault(req) === null) fastPath.request(req, res, handler)
          else handler(req, res)
        }, hasBody(req.headers))
      }
      const server = createServer(options, take)
      http = server
      idTests.set(server, takesId)
      listenerRefusalHeaders.set(server, refusalHeaders)
      holdContinues(server, take)
      const current = closeGently(server)
      gentle = current
      server.keepAliveTimeout = config.server.keepAliveTimeoutMs
      // Every header line is read (Node drops those past 2000 from req.headers, not from
      // the parser's framing: a transfer-encoding there framed a body the gateway took
      // for none); the head's size (maxHeaderSize) bounds them.
      server.maxHeadersCount = 0
      closeSilentConnections(server, config.server.connectionTimeoutMs, enforcedBound(connections, processFileLimit(), log))
      if (fastPath?.plain) enterOnConnections(server, fastPath.plain, current.closing, log)
      server.on('connect', (req: IncomingMessage, socket: Duplex) => refuseConnect(server, req, socket, allow, refuseMethod))
      return server
    },
    clientErrorHandler: (clientError, socket) => {
      const err = clientError as Error & { code?: string; reason?: string; rawPacket?: unknown }
      // A parser that failed fails again at each read after it: the first refusal is the one answered.
      if (refusing.has(socket)) return
      // Replaces Fastify's default, which logs the error with its `rawPacket`: the caller's
      // bytes, API key and admin token included. Nothing of the request is logged; its
      // head is read only for a method to name.
      const server = http
      if (err.code === 'ECONNRESET' || !socket.writable || server === null) {
        socket.destroy()
        return
      }
      refusing.add(socket)
      const reqId = refusalIdOf(server, null)
      const named = (given: Omit<NamesGiven, 'source' | 'reqId'>) => nameChecks.get(server)?.({ ...given, source: socket.remoteAddress, reqId }) ?? null
      const { error, headers } = clientErrorAnswer(err, Buffer.isBuffer(err.rawPacket) ? err.rawPacket : undefined, allow, refuseMethod, named)
      afterAnswersAhead(socket as HttpSocket, () => {
        // An answer already begun on this connection (the refused request's own) cannot be
        // followed by another: the connection is cut (as Node's own handler does).
        const current = (socket as HttpSocket)._httpMessage
        if (!socket.writable || (current && current.headersSent && !current.writableFinished)) socket.destroy()
        else endWithError(server, socket, error, headers, null, reqId)
      }, config.server.connectionTimeoutMs)
    },
    // What the router refuses before a route is found (a path that is no percent-encoding,
    // `%zz`) in the contract's terms too, a GW_* 400 with its request id: no hook of the
    // listener runs for it.
    frameworkErrors: (error, request, reply) => {
      const answer = reply as FastifyReply
      answer.headers(refusalHeaders)
      setAnswerFields(answer, { reqId: request.id, rate: null })
      // No onResponse hook runs either: its access line is written here.
      const observe = http === null ? undefined : refusalObservers.get(http)
      const refusal = new BadRequestError(error.code === 'FST_ERR_BAD_URL' ? 'request target: the path is not valid percent-encoding' : 'malformed request')
      const client = request.raw.socket.remoteAddress ?? null
      if (observe !== undefined) answer.raw.once('close', () => observe({ reqId: request.id, status: answer.statusCode, code: refusal.code, socket: request.raw.socket, client, req: request.raw, durationMs: answer.elapsedTime }))
      answer.send(refusal)
    },
    // Validation errors carry their schema, whose description says what a field must be.
    // A property a schema does not allow fails the call: Fastify's default removes it
    // unseen, which made `?advertiserID=101` a purge of everything. A query flag is typed
    // `[boolean, string]` (admin-schemas.ts QUERY_FLAG): its text matches `string`, so
    // nothing is coerced, and the union is allowed rather than warned of at each start.
    // The route schemas are the gateway's own, fixed when it is built: they are checked
    // against JSON Schema's meta-schema by a test (test/unit/route-schemas.test.ts), not at
    // each process's first start, where compiling the meta-schema's validator was more than
    // half of the route schemas' compile.
    ajv: { customOptions: { verbose: true, code: VALIDATOR_CODE, removeAdditional: false, allowUnionTypes: true, validateSchema: false } },
    schemaController: SCHEMA_CONTROLLER,
  })
  // Read by the refusals above, once the routes are added (routeAllow records them from the first on).
  const allow = givenAllow ?? routeAllow(app as unknown as FastifyInstance)
  app.addHook('preClose', (done) => {
    gentle?.begin()
    done()
  })
  closers.set(app as unknown as FastifyInstance, () => gentle?.begin())
  bodyDeadlines(app as unknown as FastifyInstance, config.limits.bodyTimeoutMs)
  app.addHook('onRequest', (request, _reply, done) => {
    const fault = headFault(request.raw)
    done(fault === null ? undefined : new BadRequestError(fault))
  })
  // Every answer the router writes, refusals included, carries its answer fields. A 401
  // names no team, as one before any key was known does (a key removed while its call was
  // under way is told no rate of the team it no longer belongs to).
  app.addHook('onSend', (request, reply, payload, done) => {
    setAnswerFields(reply, { reqId: request.id, rate: reply.statusCode === 401 ? null : rateOf(request) })
    done(null, payload)
  })
  // Fastify's parsers read the body: invited unless its declared length is past the limit (then 413 at once).
  if (bodyReader === 'parser') {
    app.addHook('preParsing', (request, _reply, payload, done) => {
      // Fastify's parsers read the bytes as sent, whatever their coding: a body labelled
      // gzip and sent plain was taken, a gzipped one was "not valid JSON". It is refused
      // before it is read, in the proxy listener's words.
      if (request.headers['content-encoding'] !== undefined && hasBody(request.headers)) return done(new BadRequestError(ENCODED_BODY))
      // A request without content-length or transfer-encoding has no body (RFC 9112, 6.3),
      // and its stream never ends (optimizeEmptyRequests above): a parser given it, as
      // Fastify gives one to a request that names a content-type, would wait forever. Its
      // parser reads an empty body instead.
      if (!hasBody(request.headers)) return done(null, Readable.from([]))
      if (!(Number(request.headers['content-length']) > bodyLimitOf(request, config))) inviteBody(request.raw)
      done(null, payload)
    })
  }
  // A method no route of the listener takes (WebDAV's on the admin listener) finds none of
  // the routes' hooks: its 404 carries the listener's headers all the same.
  app.setNotFoundHandler((request, reply) => {
    reply.headers(routeHeaders)
    throw notFound(request.url)
  })
  app.setErrorHandler((thrown: Error & { statusCode?: number; code?: string }, request, reply) => {
    // @fastify/static's refusal of a path that leaves its root (a dot segment, plain or
    // encoded, an encoded \ or NUL: its 403 'Forbidden') finds no file: the listener's 404,
    // as a file it does not have.
    const error: Error & { statusCode?: number; code?: string } = thrown.code === 'FST_STATIC_FORBIDDEN_PATH' ? notFound(request.url) : thrown
    const status = error.statusCode ?? 500
    // A message that quotes what the caller sent (a parameter's value) quotes no secret of the
    // gateway's nor a team key, whatever the check that wrote it.
    const clean = scrub(error.message)
    if (clean !== error.message) error.message = clean
    // A call aborted at the end of the shutdown's grace is the plan, not a fault: main.ts
    // logs the shutdown once. A failure answered as documented (the platform failed, the queue is full) is a warn
    // line with its code, a flood of it one line per interval; a fault of the gateway is
    // an error with its stack.
    if (error.code === 'GW_SHUTTING_DOWN') {
      // nothing: main.ts logs the shutdown once
    } else if (handledFailure(status, error.code)) {
      const code = error.code as string
      failures.warn(code, { log: request.log, msg: 'request answered with a handled failure', err: error, fields: { statusCode: status } })
    } else if (status >= 500) request.log.error({ err: error }, 'request failed')
    // No cache keeps a refusal (REFUSAL_NOT_KEPT), unless its route said its own (a report
    // read's refusal: `private, no-store` with its vary).
    if (!reply.hasHeader('cache-control')) reply.header('cache-control', NOT_KEPT)
    const retryAfter = (error as { retryAfterSec?: number }).retryAfterSec
    if (retryAfter !== undefined) reply.header('retry-after', String(retryAfter))
    if (status === 401) reply.header('www-authenticate', challenge)
    // Fastify's own 4xx (a body too large, a malformed body or header, a schema
    // violation) in the contract's terms: a GW_* code and what was wrong. Its message is
    // made anew from the violation (a parameter's name the call does not take, as sent), so
    // it is scrubbed too.
    if (status < 500 && error.code?.startsWith('FST_')) {
      const refusal = status === 413 ? new PayloadTooLargeError(bodyLimitOf(request, config)) : new BadRequestError(scrub(isValidationFailure(error) ? validationMessage(error, scrub) : (PARSER_REFUSALS[error.code]?.(request) ?? error.message)))
      noteGatewayCode(reply.raw, refusal.code)
      return reply.send(refusal)
    }
    // Unknown errors are not described to callers; ours (GW_*) and Fastify's 4xx are.
    if (status >= 500 && !error.code?.startsWith('GW_')) {
      noteGatewayCode(reply.raw, 'GW_INTERNAL')
      return reply.code(500).send({ statusCode: 500, code: 'GW_INTERNAL', error: 'Internal Server Error', message: 'internal error' })
    }
    if (error.code?.startsWith('GW_')) noteGatewayCode(reply.raw, error.code)
    // A refused reload's problems, each apart with its setting, file and line (team-reload.ts), beside its message.
    if (error instanceof ConfigRefusedError) {
      const errors = ((error as { errors?: { message: string }[] }).errors ?? []).map((place) => ({ ...place, message: scrub(place.message) }))
      return reply.code(status).send({ statusCode: status, code: error.code, error: STATUS_CODES[status], message: error.message, errors })
    }
    return reply.send(error)
  })
  return app as unknown as FastifyInstance
}
