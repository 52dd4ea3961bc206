import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import httpProxy from '@fastify/http-proxy'
import type { GatewayContext } from '../context.js'
import { BadRequestError, ForbiddenError, NotFoundError, PlatformAuthError, RateLimitedError, UpstreamError, UpstreamTimeoutError } from '../errors.js'
import { assertMayCall, isRead } from '../teams/team-auth.js'
import { assertAccounts, campaignPathPatterns, namedInCall } from '../teams/account-scope.js'
import type { TokenProvider, TokenState } from '../platform/token-provider.js'
import { isTokenPath, tokenPaths } from './path-safety.js'
import { checkTarget, type RequestTarget } from './request-target.js'
import { assertPlainBodyType, FORM_TYPE, JSON_TYPE, parseFormBody, parseJsonBody, type CheckedBody } from './request-body.js'
import { reportRoutes } from '../reports/report-route.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The call as the gateway checked it (issue #5); set when the caller is admitted. */
    call: CheckedCall | null
  }
}

export interface CheckedCall {
  target: RequestTarget
  /** JSON and form bodies as parsed and checked; null: none, or a body streamed through as sent. */
  body: CheckedBody | null
  /** Owner of each campaign id the call names, where the gateway looked it up. */
  campaignOwners: Map<number, number>
  /** The platform token this request started with (rotation never changes a call in flight). */
  platformToken: TokenState | null
}

// What the platform may see of a caller's request headers (issue #5): an allowlist, so
// that forwarding, method-override, cookie or proxy headers never reach it. The
// authorization header is the gateway's own; content-type and -length are the gateway's
// for the bodies it re-serializes.
const FORWARDED_HEADERS = ['accept', 'accept-encoding', 'accept-language', 'user-agent', 'content-type', 'content-length']

// Hop-by-hop headers (RFC 9110, 7.6.1) describe the platform's connection to us, not
// ours to the caller. reply-from strips them only for HTTP/2 sources: forwarded, the
// platform's `connection: keep-alive` overrode a caller's `Connection: close`.
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade']

const BODYLESS = new Set(['GET', 'HEAD', 'DELETE'])

/** Everything under /api/v1/: team keys, access rules, rate limits, reports, the proxy. */
export async function apiRoutes(app: FastifyInstance, { ctx }: { ctx: GatewayContext }): Promise<void> {
  const { config } = ctx
  const defaultBase = config.credentials.default?.baseUrl ?? config.platform.baseUrl
  if (!defaultBase) throw new Error('apiRoutes needs a platform base URL')
  const blockedPaths = tokenPaths(
    defaultBase,
    Object.values(config.credentials).flatMap((c) => (c.login ? [c.login.tokenUrl] : [])).concat(config.platform.tokenUrl),
  )
  const limits = { jsonDepth: config.limits.jsonDepth, params: config.limits.params }
  const campaignPaths = campaignPathPatterns(config.ownership.campaignPaths)

  app.decorateRequest('call', null)

  app.removeAllContentTypeParsers()
  app.addContentTypeParser(JSON_TYPE, { parseAs: 'buffer' }, (request, body: Buffer, done) => {
    try {
      const checked = body.length === 0 ? null : parseJsonBody(body, limits)
      if (request.call) request.call.body = checked
      done(null, checked)
    } catch (err) {
      done(err as Error, undefined)
    }
  })
  app.addContentTypeParser(FORM_TYPE, { parseAs: 'buffer' }, (request, body: Buffer, done) => {
    try {
      const checked = parseFormBody(body, limits)
      if (request.call) request.call.body = checked
      done(null, checked)
    } catch (err) {
      done(err as Error, undefined)
    }
  })
  // Reached only by teams allowed to stream (unscoped writers): uploads go through untouched.
  app.addContentTypeParser('*', (_request, payload, done) => done(null, payload))

  // Admission comes before any work on the caller's input (issue #5): the target is
  // checked once, then the key, the read/write rule and the rate limit; bodies are read after.
  app.addHook('onRequest', async (request, reply) => {
    const target = checkTarget(request.url, limits.params)
    if (isTokenPath(target.path, blockedPaths)) throw new NotFoundError()
    const team = ctx.teams.authenticate(request)
    request.team = team
    assertMayCall(team, request.method, target.path)
    const decision = ctx.rateLimiter.hit(team)
    if (!decision.allowed) {
      ctx.metrics.rateLimited.inc({ team: team.name })
      reply.header('retry-after', String(decision.retryAfterSec))
      throw new RateLimitedError(decision.retryAfterSec)
    }
    if (hasBody(request)) {
      if (team.advertisers !== null && BODYLESS.has(request.method)) {
        throw new BadRequestError(`body: a ${request.method} call of team ${team.name} carries no body (the platform reads its account from the query)`)
      }
      // Only unscoped writers may stream bodies the gateway does not parse (uploads).
      if (team.advertisers !== null || !team.write) assertPlainBodyType(request.headers)
    }
    request.call = { target, body: null, campaignOwners: new Map(), platformToken: null }
  })

  app.addHook('preHandler', async (request) => {
    const team = request.team
    const call = request.call
    if (!team || !call) throw new NotFoundError()
    const provider = ctx.tokens.get(team.credential)
    if (team.advertisers !== null) {
      const named = namedInCall(request.method, call.target, call.body, campaignPaths)
      assertAccounts(team, named.accounts)
      // The platform falls back to the parent account when a call names none where it
      // reads it (`{}` or no body on campaign/get): a scoped team must name its account.
      if (!named.placed) {
        throw new ForbiddenError(
          `team ${team.name} is limited to some advertisers: name advertiserId or userId ${BODYLESS.has(request.method) ? 'in the query' : 'in the body'}`,
        )
      }
      if (named.campaigns.length > 0) {
        const ids = [...new Set(named.campaigns)]
        call.campaignOwners = await ctx.campaignOwners.ownersAmong(provider, team.advertisers, ids)
        const foreign = ids.find((id) => !call.campaignOwners.has(id))
        if (foreign !== undefined) throw new ForbiddenError(`team ${team.name} may not use campaign ${foreign}`)
      }
    }
    call.platformToken = provider.usable() ? provider.current() : null
    if (!call.platformToken) throw new PlatformAuthError(`credential ${provider.name} has no usable token`)
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
      // The only retry is the 401 one below; reply-from would resend a GET on 503 ten times.
      retryDelay: () => null,
      queryString: (_search: string, _url: string, request: FastifyRequest) => request.call?.target.search ?? '',
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
    // The platform receives what the gateway checked: its path, query and body serialization.
    handler: (request: FastifyRequest, reply: FastifyReply, _dest: string, options: Record<string, unknown>) =>
      reply.from(request.call?.target.path, { ...options, ...checkedBody(request) }),
  } as never)
}

function upstreamFor(ctx: GatewayContext, request: FastifyRequest): string | null {
  const name = request.team?.credential
  return name ? (ctx.config.credentials[name]?.baseUrl ?? null) : null
}

export function platformHeaders(request: FastifyRequest, headers: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const name of FORWARDED_HEADERS) if (headers[name] !== undefined) out[name] = headers[name]
  out.authorization = `Bearer ${request.call?.platformToken?.token ?? ''}`
  out['x-request-id'] = request.id
  return out
}

function checkedBody(request: FastifyRequest): { body?: string; contentType?: string } {
  const body = request.call?.body
  return body ? { body: body.text, contentType: body.contentType } : {}
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
  const call = request.call
  if (res.statusCode !== 401 || !request.team || !call?.platformToken) {
    reply.send(res.stream)
    return
  }
  const provider: TokenProvider = ctx.tokens.get(request.team.credential)
  const usedToken = call.platformToken.token
  res.stream.resume()
  const renewed = await provider.recover(usedToken)
  const retriable = isRead(request.method, call.target.path) && (call.body !== null || !hasBody(request))
  if (renewed && retriable) {
    call.platformToken = renewed
    const url = call.target.path
    // The retry's own onResponse never retries again.
    const replyOpts = {
      rewriteRequestHeaders: platformHeaders,
      rewriteHeaders: callerHeaders,
      getUpstream: () => upstreamFor(ctx, request) ?? ctx.config.platform.baseUrl ?? '',
      timeout: ctx.config.platform.timeoutMs,
      retryDelay: () => null,
      queryString: () => call.target.search,
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
      ...checkedBody(request),
    }
    reply.from(url, replyOpts as never)
    return
  }
  clearUpstreamHeaders(reply)
  reply.code(502)
  reply.send(new PlatformAuthError(renewed ? 'the platform refused the token (a write is not retried)' : 'no new token could be had'))
}
