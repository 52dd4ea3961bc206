import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import httpProxy from '@fastify/http-proxy'
import type { GatewayContext } from '../context.js'
import { BadQueryError, ForbiddenError, NotFoundError, PlatformAuthError, RateLimitedError, UpstreamError, UpstreamTimeoutError } from '../errors.js'
import { assertMayCall, isRead } from '../teams/team-auth.js'
import { accountsInJson, accountsInQuery, assertAccounts } from '../teams/account-scope.js'
import type { TokenProvider, TokenState } from '../platform/token-provider.js'
import { isSafeApiPath, isTokenPath, pathOf, tokenPaths } from './path-safety.js'
import { reportRoutes } from '../reports/report-route.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The caller's body as it arrived, for JSON and form bodies; forwarded byte for byte. */
    rawBody: Buffer | null
    /** JSON bodies parsed (undefined: no JSON body; INVALID_JSON: unparseable). */
    jsonBody: unknown
    formBody: URLSearchParams | null
    /** The platform token this request started with (rotation never changes a call in flight). */
    platformToken: TokenState | null
  }
}

export const INVALID_JSON = Symbol('invalid JSON')

// Credentials of the caller; the platform sees only the gateway's token.
const CALLER_CREDENTIAL_HEADERS = ['authorization', 'x-api-key', 'cookie', 'proxy-authorization']

// Hop-by-hop headers (RFC 9110, 7.6.1) describe the platform's connection to us, not
// ours to the caller. reply-from strips them only for HTTP/2 sources: forwarded, the
// platform's `connection: keep-alive` overrode a caller's `Connection: close`.
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade']

/** Everything under /api/v1/: team keys, access rules, rate limits, reports, the proxy. */
export async function apiRoutes(app: FastifyInstance, { ctx }: { ctx: GatewayContext }): Promise<void> {
  const { config } = ctx
  const defaultBase = config.credentials.default?.baseUrl ?? config.platform.baseUrl
  if (!defaultBase) throw new Error('apiRoutes needs a platform base URL')
  const blockedPaths = tokenPaths(
    defaultBase,
    Object.values(config.credentials).flatMap((c) => (c.login ? [c.login.tokenUrl] : [])).concat(config.platform.tokenUrl),
  )

  app.decorateRequest('rawBody', null)
  app.decorateRequest('jsonBody', undefined)
  app.decorateRequest('formBody', null)
  app.decorateRequest('platformToken', null)

  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body: Buffer, done) => {
    request.rawBody = body
    try {
      request.jsonBody = body.length === 0 ? undefined : JSON.parse(body.toString('utf8'))
    } catch {
      request.jsonBody = INVALID_JSON
    }
    done(null, body)
  })
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'buffer' }, (request, body: Buffer, done) => {
    request.rawBody = body
    request.formBody = new URLSearchParams(body.toString('utf8'))
    done(null, body)
  })
  // Anything else (e.g. multipart uploads) streams through untouched.
  app.addContentTypeParser('*', (_request, payload, done) => done(null, payload))

  app.addHook('onRequest', async (request) => {
    if (!isSafeApiPath(request.url) || isTokenPath(request.url, blockedPaths)) throw new NotFoundError()
    request.team = ctx.teams.authenticate(request)
    assertMayCall(request.team, request.method, pathOf(request.url))
  })

  app.addHook('preHandler', async (request, reply) => {
    const team = request.team
    if (!team) throw new NotFoundError()
    if (team.advertisers !== null) {
      const q = request.url.indexOf('?')
      const accounts: unknown[] = q === -1 ? [] : accountsInQuery(new URLSearchParams(request.url.slice(q + 1)))
      if (request.jsonBody === INVALID_JSON) throw new BadQueryError('body: not valid JSON')
      accountsInJson(request.jsonBody, accounts)
      if (request.formBody) accounts.push(...accountsInQuery(request.formBody))
      if (request.rawBody === null && hasBody(request)) {
        throw new ForbiddenError(`team ${team.name} is limited to some advertisers; send JSON or form bodies so the gateway can check them`)
      }
      // The platform falls back to the parent account when a call names none, and ids of
      // campaigns or creatives do not say whose they are: a scoped team must name its account.
      if (accounts.length === 0) {
        throw new ForbiddenError(`team ${team.name} is limited to some advertisers: name advertiserId or userId in the call`)
      }
      assertAccounts(team, accounts)
    }
    const decision = await ctx.rateLimiter.hit(team)
    if (!decision.allowed) {
      ctx.metrics.rateLimited.inc({ team: team.name })
      reply.header('retry-after', String(decision.retryAfterSec))
      throw new RateLimitedError(decision.retryAfterSec)
    }
    const provider = ctx.tokens.get(team.credential)
    request.platformToken = provider.usable() ? provider.current() : null
    if (!request.platformToken) throw new PlatformAuthError(`credential ${provider.name} has no usable token`)
  })

  await app.register(reportRoutes, { ctx })

  await app.register(httpProxy, {
    upstream: defaultBase,
    prefix: '/api/v1',
    rewritePrefix: '/api/v1',
    undici: ctx.dispatcher as never,
    proxyPayloads: false,
    disableRequestLogging: true,
    internalRewriteLocationHeader: false,
    http2: false,
    replyOptions: {
      timeout: config.platform.timeoutMs,
      getUpstream: (request: FastifyRequest) => upstreamFor(ctx, request) ?? defaultBase,
      rewriteRequestHeaders: (request: FastifyRequest, headers: Record<string, unknown>) => platformHeaders(request, headers),
      rewriteHeaders: callerHeaders,
      onResponse: (request: FastifyRequest, reply: FastifyReply, res: { statusCode: number; stream: NodeJS.ReadableStream }) =>
        void onPlatformResponse(ctx, request, reply, res),
      onError: (reply: FastifyReply, { error }: { error: Error & { code?: string } }) => {
        clearUpstreamHeaders(reply)
        reply.send(
          error.code === 'FST_REPLY_FROM_GATEWAY_TIMEOUT' || error.code === 'FST_REPLY_FROM_HTTP_REQUEST_TIMEOUT'
            ? new UpstreamTimeoutError({ cause: error })
            : new UpstreamError(error.code ?? 'connection error', { cause: error }),
        )
      },
    },
    // Forward the exact bytes the caller sent rather than a re-serialization.
    handler: (request: FastifyRequest, reply: FastifyReply, dest: string, options: Record<string, unknown>) =>
      reply.from(dest, request.rawBody ? { ...options, body: request.rawBody, contentType: String(request.headers['content-type']) } : options),
  } as never)
}

function upstreamFor(ctx: GatewayContext, request: FastifyRequest): string | null {
  const name = request.team?.credential
  return name ? (ctx.config.credentials[name]?.baseUrl ?? null) : null
}

export function platformHeaders(request: FastifyRequest, headers: Record<string, unknown>): Record<string, unknown> {
  for (const name of CALLER_CREDENTIAL_HEADERS) delete headers[name]
  headers.authorization = `Bearer ${request.platformToken?.token ?? ''}`
  headers['x-request-id'] = request.id
  return headers
}

/** The platform's response headers as the caller gets them: no session cookie, no hop-by-hop headers. */
export function callerHeaders(headers: Record<string, unknown>): Record<string, unknown> {
  const named = typeof headers.connection === 'string' ? headers.connection.split(',').map((h) => h.trim().toLowerCase()) : []
  for (const name of [...HOP_BY_HOP, ...named, 'set-cookie']) delete headers[name]
  return headers
}

/** Contract, "Errors": only the platform's 4xx bodies pass through; its 5xx is our 502. */
function sendUpstreamFailure(reply: FastifyReply, res: { statusCode: number; stream: NodeJS.ReadableStream }): void {
  res.stream.resume()
  clearUpstreamHeaders(reply)
  reply.send(new UpstreamError(`status ${res.statusCode}`))
}

function hasBody(request: FastifyRequest): boolean {
  const length = request.headers['content-length']
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')
}

function clearUpstreamHeaders(reply: FastifyReply): void {
  for (const name of Object.keys(reply.getHeaders())) if (name !== 'x-request-id' && name !== 'retry-after') reply.removeHeader(name)
}

/**
 * A platform 401 means the token was refused (issue 4): one re-login shared by all
 * callers, then one retry, for reads whose body we still hold. Everything else is sent
 * on as the platform answered it.
 */
async function onPlatformResponse(
  ctx: GatewayContext,
  request: FastifyRequest,
  reply: FastifyReply,
  res: { statusCode: number; stream: NodeJS.ReadableStream },
): Promise<void> {
  if (res.statusCode >= 500) {
    sendUpstreamFailure(reply, res)
    return
  }
  if (res.statusCode !== 401 || !request.team || !request.platformToken) {
    reply.send(res.stream)
    return
  }
  const provider: TokenProvider = ctx.tokens.get(request.team.credential)
  const usedToken = request.platformToken.token
  res.stream.resume()
  const renewed = await provider.recover(usedToken)
  const retriable = isRead(request.method, pathOf(request.url)) && (request.rawBody !== null || !hasBody(request))
  if (renewed && retriable) {
    request.platformToken = renewed
    const url = pathOf(request.url)
    // The retry's own onResponse never retries again.
    const replyOpts = {
      rewriteRequestHeaders: platformHeaders,
      rewriteHeaders: callerHeaders,
      getUpstream: () => upstreamFor(ctx, request) ?? ctx.config.platform.baseUrl ?? '',
      timeout: ctx.config.platform.timeoutMs,
      onResponse: (req: FastifyRequest, rep: FastifyReply, second: { statusCode: number; stream: NodeJS.ReadableStream }) => {
        if (second.statusCode === 401) {
          second.stream.resume()
          clearUpstreamHeaders(rep)
          void provider.recover(renewed.token)
          rep.send(new PlatformAuthError('the platform refused a freshly obtained token'))
          return
        }
        if (second.statusCode >= 500) {
          sendUpstreamFailure(rep, second)
          return
        }
        rep.send(second.stream)
      },
      ...(request.rawBody ? { body: request.rawBody, contentType: String(request.headers['content-type']) } : {}),
    }
    reply.from(url, replyOpts as never)
    return
  }
  clearUpstreamHeaders(reply)
  reply.code(502)
  reply.send(new PlatformAuthError(renewed ? 'the platform refused the token (a write is not retried)' : 'no new token could be had'))
}
