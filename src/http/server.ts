import { createServer, STATUS_CODES, type IncomingMessage, type ServerOptions, type ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'
import Fastify, { LogController, type FastifyInstance, type FastifyRequest } from 'fastify'
import type { Logger } from 'pino'
import type { Config } from '../config.js'
import { BadRequestError, NotFoundError, PayloadTooLargeError, RequestTimeoutError, ShuttingDownError } from '../errors.js'
import { handledFailure, type FailureLog } from '../observe/failure-log.js'
import { VALIDATOR_CODE } from '../perf/validator-code.js'
import { closeSilentConnections } from './hooks/silent-connections.js'
import { lazyRequestLogger } from './hooks/request-logger.js'
import { requestIdOf } from './hooks/request-log.js'
import { isValidationFailure, validationMessage } from './hooks/validation-message.js'
import { bodyDeadline } from './hooks/body-deadline.js'
import type { RequestHandler } from './reads/fast-path.js'
import { setAnswerFields } from './answer-fields.js'
import type { Tracing } from '../observe/tracing.js'

// Node checks requests' deadlines this often (connectionsCheckingInterval).
const CONNECTIONS_CHECK_MS = 1000
// How long a kept-alive connection may stay idle once the listener is closing.
const CLOSING_KEEP_ALIVE_MS = 500

// Replaces Fastify's default, which logs the error with its `rawPacket`: the caller's
// bytes, API key and admin token included. Nothing of the request is logged.
function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy()
    return
  }
  const error = err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? new RequestTimeoutError() : new BadRequestError('malformed HTTP request')
  const body = JSON.stringify({ statusCode: error.statusCode, code: error.code, error: STATUS_CODES[error.statusCode ?? 400], message: error.message })
  // Then closed, not half-closed: a caller that keeps its side open would keep the socket.
  socket.end(`HTTP/1.1 ${error.statusCode} ${STATUS_CODES[error.statusCode ?? 400]}\r\nconnection: close\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`, () => socket.destroy())
}

function bodyLimitOf(request: FastifyRequest, config: Config): number {
  return request.routeOptions.bodyLimit ?? config.bodyLimit
}

/** The rate-limit fields of an answer to `request`; null when its caller has no limit (or is not known). */
export type RateOf = (request: FastifyRequest) => [policy: string, state: string] | null

/** The entrance before the router: it answers a request, or hands it to Fastify (`next`). */
export type FastPath = ((req: IncomingMessage, res: ServerResponse, next: RequestHandler) => void) | null

/**
 * One listener (the proxy's or the admin's): Fastify with the gateway's server, its
 * deadlines, its refusal while closing, its error answers in the contract's terms,
 * `fastPath` (if any) in front of the router, and with `tracing` a span begun for each
 * request before either (none of it when tracing is off).
 */
export function buildServer(config: Config, log: Logger, failures: FailureLog, fastPath: FastPath, rateOf: RateOf = () => null, tracing: Tracing | null = null): FastifyInstance {
  // Set once the server closes: every request then takes the route, whose onRequest hook
  // refuses it (GW_SHUTTING_DOWN, connection: close), hits included.
  let closing = false
  const app = Fastify({
    loggerInstance: log,
    // One line per request is logged by observeRequests instead.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'reqId' }),
    childLoggerFactory: lazyRequestLogger,
    bodyLimit: config.bodyLimit,
    // Not `requestIdHeader: 'x-request-id'`: Fastify would take any value of that header
    // as is and call genReqId only without one, so the check below would never run.
    requestIdHeader: false,
    genReqId: (req) => requestIdOf(req.headers),
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
      }
      const entrance = fastPath ? (req: IncomingMessage, res: ServerResponse) => (closing ? handler(req, res) : fastPath(req, res, handler)) : handler
      const server = createServer(
        options,
        tracing
          ? (req, res) => {
              tracing.begin(req)
              entrance(req, res)
            }
          : entrance,
      )
      server.keepAliveTimeout = config.server.keepAliveTimeoutMs
      closeSilentConnections(server, config.server.connectionTimeoutMs)
      return server
    },
    clientErrorHandler: answerClientError,
    // Validation errors carry their schema, whose description says what a field must be.
    // A property a schema does not allow fails the call: Fastify's default removes it
    // unseen, which made `?advertiserID=101` a purge of everything.
    ajv: { customOptions: { verbose: true, code: VALIDATOR_CODE, removeAdditional: false } },
  })
  app.addHook('preClose', (done) => {
    closing = true
    // A connection answering now stays open after its answer for CLOSING_KEEP_ALIVE_MS
    // (a request on it then is refused GW_SHUTTING_DOWN, below), no longer: a caller that
    // sends nothing more (a load balancer that took the replica out) kept it open until
    // keepAliveTimeout, and the close waited for it to the end of the grace.
    app.server.keepAliveTimeout = Math.min(app.server.keepAliveTimeout, CLOSING_KEEP_ALIVE_MS)
    done()
  })
  app.addHook('onRequest', (request, reply, done) => {
    // A request on a kept-alive connection while closing: the caller retries elsewhere.
    if (closing) {
      reply.header('connection', 'close')
      done(new ShuttingDownError())
      return
    }
    done()
  })
  app.addHook('onRequest', bodyDeadline(config.limits.bodyTimeoutMs))
  // Every answer the router writes, refusals included, carries its answer fields.
  app.addHook('onSend', (request, reply, payload, done) => {
    setAnswerFields(reply, { reqId: request.id, rate: rateOf(request) })
    done(null, payload)
  })
  app.setNotFoundHandler(() => {
    throw new NotFoundError()
  })
  app.setErrorHandler((error: Error & { statusCode?: number; code?: string }, request, reply) => {
    const status = error.statusCode ?? 500
    // A refusal while shutting down is the plan, not a fault: main.ts logs the shutdown once.
    // A failure answered as documented (the platform failed, the queue is full) is a warn
    // line with its code, a flood of it one line per interval; a fault of the gateway is
    // an error with its stack.
    if (error.code === 'GW_SHUTTING_DOWN') {
      // nothing: main.ts logs the shutdown once
    } else if (handledFailure(status, error.code)) {
      const code = error.code as string
      failures.note(code, () => request.log.warn({ code, statusCode: status, reason: error.message }, 'request answered with a handled failure'))
    } else if (status >= 500) request.log.error({ err: error }, 'request failed')
    const retryAfter = (error as { retryAfterSec?: number }).retryAfterSec
    if (retryAfter !== undefined) reply.header('retry-after', String(retryAfter))
    // Fastify's own 4xx (a body too large, a malformed body or header, a schema
    // violation) in the contract's terms: a GW_* code and what was wrong.
    if (status < 500 && error.code?.startsWith('FST_')) {
      if (status === 413) return reply.send(new PayloadTooLargeError(bodyLimitOf(request, config)))
      return reply.send(new BadRequestError(isValidationFailure(error) ? validationMessage(error) : error.message))
    }
    // Unknown errors are not described to callers; ours (GW_*) and Fastify's 4xx are.
    if (status >= 500 && !error.code?.startsWith('GW_')) {
      return reply.code(500).send({ statusCode: 500, code: 'GW_INTERNAL', error: 'Internal Server Error', message: 'internal error' })
    }
    return reply.send(error)
  })
  return app as unknown as FastifyInstance
}
