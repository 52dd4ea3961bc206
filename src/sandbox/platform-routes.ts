import type { IncomingHttpHeaders, IncomingMessage } from 'node:http'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { laravelRequest, type LaravelRequest } from './laravel-request.js'
import { sendJson, sendUnauthenticated } from './replies.js'
import { keepBody, recordOf } from './request-records.js'
import type { SandboxState } from './state.js'

/** A platform call as its controller sees it: Laravel's reading of the request, the path's parameters, the token's account. */
export interface PlatformRequest extends LaravelRequest {
  params: Record<string, string>
  headers: IncomingHttpHeaders
  caller: number
  /** Notes, in the request log, an account whose data the call reads or changes. */
  touch(account: number): void
}

/** A handler that works on its answer (a list's rows: Capacity's perRowMs) answers once its promise settles. */
export type PlatformHandler = (request: PlatformRequest, reply: FastifyReply) => void | Promise<void>

/** Handlers by path (Fastify's syntax) and by the method Laravel routes by. */
export type PlatformRoutes = Record<string, Partial<Record<'GET' | 'POST' | 'DELETE', PlatformHandler>>>

// Every method reaches a path's one Fastify route, which then routes by the method
// Laravel would see: a POST overridden to DELETE deletes, as on the platform.
const ANY_METHOD = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']

export function registerPlatformRoutes(app: FastifyInstance, state: SandboxState, routes: PlatformRoutes): void {
  for (const [url, handlers] of Object.entries(routes)) {
    app.route({
      method: ANY_METHOD,
      url,
      exposeHeadRoute: false,
      handler: async (request, reply) => {
        const laravel = laravelRequest({ method: request.method, url: request.url, headers: request.headers, body: await bodyOf(request) })
        const method = laravel.method === 'HEAD' ? 'GET' : laravel.method
        const handler = handlers[method as keyof typeof handlers]
        // Laravel routes before it authenticates: a known path with another method is a 405 even without a token.
        if (handler === undefined) {
          const allowed = Object.keys(handlers).join(', ')
          reply.header('allow', allowed)
          sendJson(reply, 405, { message: `The ${laravel.method} method is not supported for route ${url.slice(1)}. Supported methods: ${allowed}.` })
          return reply
        }
        const caller = state.tokens.authenticate(request.headers.authorization)
        if (caller === undefined) {
          sendUnauthenticated(reply)
          return reply
        }
        const now = state.throttleNow()
        const count = state.throttle.hit(caller, now, request.routeOptions.url)
        reply.header('x-ratelimit-limit', String(count.limit)).header('x-ratelimit-remaining', String(count.remaining))
        if (count.retryAfterSec !== null) {
          // Laravel's ThrottleRequestsException: its headers, and `Too Many Attempts.` as JSON.
          reply.header('retry-after', String(count.retryAfterSec)).header('x-ratelimit-reset', String(Math.floor(now / 1000) + count.retryAfterSec))
          sendJson(reply, 429, { message: 'Too Many Attempts.' })
          return reply
        }
        const touched = recordOf(request)?.accounts ?? []
        await handler({ ...laravel, params: request.params as Record<string, string>, headers: request.headers, caller, touch: (account) => touched.push(account) }, reply)
        // Answered: an answer still being sent (a stream, the `cut` failure) is not sent again.
        return reply
      },
    })
  }
}

/** The body as bytes; Fastify leaves a GET's unread, and Laravel reads it all the same. */
async function bodyOf(request: FastifyRequest): Promise<Buffer | null> {
  if (Buffer.isBuffer(request.body)) return request.body
  const raw: IncomingMessage = request.raw
  if (raw.headers['content-length'] === undefined && raw.headers['transfer-encoding'] === undefined) return null
  const chunks: Buffer[] = []
  for await (const chunk of raw) chunks.push(chunk as Buffer)
  const body = Buffer.concat(chunks)
  keepBody(request, body)
  return body
}
