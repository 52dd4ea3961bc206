import { randomBytes } from 'node:crypto'
import { STATUS_CODES } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Readable } from 'node:stream'
import { gzipSync } from 'node:zlib'
import Fastify from 'fastify'
import type { FastifyError, FastifyInstance, FastifyPluginCallback, FastifyReply, FastifyRequest } from 'fastify'
import { DEMO_CREDENTIALS, MAIN_PARENT_ID, SANDBOX_ACCOUNTS } from './accounts.js'
import { campaignRoutes } from './campaign-routes.js'
import { CampaignCatalog } from './catalog.js'
import { Conditions } from './conditions.js'
import { controlRoutes } from './control-routes.js'
import type { SandboxControls } from './control-routes.js'
import { oauthRoute } from './oauth-route.js'
import { registerPlatformRoutes } from './platform-routes.js'
import { MAX_REPORT_DAYS, reportRoutes } from './report-routes.js'
import { sendJson, sendNotFound, sendRedirect } from './replies.js'
import type { SandboxState } from './state.js'
import { keepBody, recordOf, startRecord } from './request-records.js'
import { expectsJson } from './laravel-request.js'
import { debugbarHeaders, withDebugFields } from './debug-answers.js'
import { DEFAULT_SANDBOX_SEED } from './seed.js'
import { IssuedTokens } from './tokens.js'
import { ThrottleCounts, type ThrottleSettings } from './throttle-counts.js'
import { hostPort } from '../host-port.js'
import type { FailureMode, GarbledBody, Sandbox, SandboxOptions } from './types.js'

// A stand-in for the advertising platform (docs: platform-api.md in the shared folder),
// close enough to its observable behaviour that the gateway cannot tell the
// difference: demo mode, the test suite and the benchmarks all run against it.

export type { FailureMode, Sandbox, Weather, SandboxAccount, SandboxCredentials, SandboxOptions, SandboxRequestRecord } from './types.js'

export const DEFAULT_SANDBOX_HOST = '127.0.0.1'
export { DEFAULT_SANDBOX_SEED }
export const DEFAULT_TOKEN_TTL_SECONDS = 31_536_000
export const DEFAULT_GRANT_TYPE = 'platform_dsp'

const CONTROL_PREFIX = '/__sandbox'
const SESSION_MAX_AGE_SECONDS = 7200

export async function startSandbox(opts: SandboxOptions = {}): Promise<Sandbox> {
  const state = createState(opts)
  const controls = createControls(state)
  // Laravel matches a route on the path with its slashes at either end trimmed
  // (Request::path(), UriValidator): `/api/v1/campaign/get/` is `campaign/get`.
  const app = Fastify({ logger: opts.logger ?? false, forceCloseConnections: true, routerOptions: { ignoreTrailingSlash: true } })
  installBodyParser(app)
  app.addHook('onRequest', (request, _reply, done) => {
    if (!request.url.startsWith(CONTROL_PREFIX)) state.requests.push(startRecord(request))
    done()
  })
  app.setErrorHandler<FastifyError>((error, _request, reply) => {
    const status = typeof error.statusCode === 'number' && error.statusCode >= 400 ? error.statusCode : 500
    sendJson(reply, status, { message: status >= 500 ? 'Server Error' : error.message })
  })
  app.setNotFoundHandler((_request, reply) => sendNotFound(reply))
  // The login fails as its own route's failure says (setRouteFailure('/oauth/token', …): a
  // platform whose login is down); the failure of the /api/v1 calls and the weather leave it be.
  oauthRoute(app, state, (request, reply) => answerFailure(state, state.conditions.takeRouteFailure('/oauth/token'), request, reply))
  await app.register(platformApi(state), { prefix: '/api/v1' })
  await app.register(controlRoutes(controls), { prefix: CONTROL_PREFIX })
  try {
    await app.listen({ host: opts.host ?? DEFAULT_SANDBOX_HOST, port: opts.port ?? 0 })
  } catch (error) {
    await app.close()
    throw error
  }

  let closing: Promise<void> | undefined
  return {
    url: urlOf(app.server.address() as AddressInfo),
    credentials: { ...state.credentials },
    maxReportDays: MAX_REPORT_DAYS,
    accounts: SANDBOX_ACCOUNTS.map((account) => ({ ...account })),
    ...controls,
    acceptToken: (token, accountId = MAIN_PARENT_ID) => state.tokens.accept(token, knownAccount(state, accountId)),
    revokeToken: (token) => state.tokens.revoke(token),
    requests: state.requests,
    trickles: state.conditions.trickles,
    close: () => {
      closing ??= (async () => {
        state.conditions.shutDown()
        await app.close()
      })()
      return closing
    },
  }
}

function createState(opts: SandboxOptions): SandboxState {
  const seed = opts.seed ?? DEFAULT_SANDBOX_SEED
  const tokenTtlSeconds = opts.tokenTtlSeconds ?? DEFAULT_TOKEN_TTL_SECONDS
  if (!Number.isSafeInteger(seed)) throw new RangeError(`sandbox seed must be an integer, got ${seed}`)
  if (!Number.isSafeInteger(tokenTtlSeconds)) throw new RangeError(`tokenTtlSeconds must be an integer, got ${tokenTtlSeconds}`)
  return {
    seed,
    accounts: new Map(SANDBOX_ACCOUNTS.map((account) => [account.id, account])),
    credentials: { ...DEMO_CREDENTIALS, password: opts.password ?? DEMO_CREDENTIALS.password },
    grantType: opts.grantType ?? DEFAULT_GRANT_TYPE,
    tokenTtlSeconds,
    localized: opts.localized ?? false,
    reportAllCampaigns: opts.reportAllCampaigns ?? false,
    reportFilter: opts.reportFilter ?? false,
    debug: opts.debug ?? false,
    debugbar: opts.debugbar ?? false,
    tokens: new IssuedTokens(DEMO_CREDENTIALS.clientId),
    catalog: new CampaignCatalog(seed, SANDBOX_ACCOUNTS),
    conditions: new Conditions(opts.latencyMs ?? 0),
    throttle: throttleOf(opts.throttle),
    throttleNow: opts.throttleClock ?? (() => Date.now()),
    requests: [],
  }
}

/** The controls shared by the Sandbox object and the HTTP control routes. */
function createControls(state: SandboxState): SandboxControls {
  return {
    issueToken: ({ accountId = MAIN_PARENT_ID, ttlSeconds = state.tokenTtlSeconds } = {}) =>
      state.tokens.issue(knownAccount(state, accountId), ttlSeconds),
    revokeAllTokens: () => state.tokens.revokeAll(),
    setLatency: (ms, maxMs) => state.conditions.setLatency(ms, maxMs),
    setCapacity: (capacity) => state.conditions.setCapacity(capacity),
    setWeather: (weather) => state.conditions.setWeather(weather),
    setThrottle: (throttle) => state.throttle.set(throttle),
    setRouteThrottle: (path, throttle) => state.throttle.setRoute(path, throttle),
    setFailure: (mode) => state.conditions.setFailure(mode),
    setRouteFailure: (path, mode) => state.conditions.setRouteFailure(path, mode),
    clearRouteFailures: () => state.conditions.clearRouteFailures(),
    releaseHeld: () => state.conditions.releaseHeld(),
    // Emptied in place: callers may hold on to `sandbox.requests`.
    clearRequests: () => {
      state.requests.length = 0
      state.conditions.trickles.length = 0
    },
    countRequests: (filter) => (filter === undefined ? state.requests.length : state.requests.filter(filter).length),
    concurrency: () => state.conditions.concurrency(),
    resetConcurrency: () => state.conditions.resetPeak(),
  }
}

function knownAccount(state: SandboxState, accountId: number): number {
  if (!state.accounts.has(accountId)) throw new RangeError(`no sandbox account ${accountId}`)
  return accountId
}

/**
 * Everything under /api/v1: latency and injected failures first (they stand for
 * the network and the platform's front, so they hit unknown paths and bad tokens
 * too), then Laravel's headers on every answer, then routing (by the method Laravel
 * reads, overrides included) and authentication (platform-routes.ts).
 */
function platformApi(state: SandboxState): FastifyPluginCallback {
  return (api, _options, done) => {
    // Counted from arrival to the end of the answer (or of the connection): what a governor in front must bound.
    api.addHook('onRequest', (_request, reply, done) => {
      const leave = state.conditions.enter()
      reply.raw.once('close', leave)
      done()
    })
    api.addHook('preHandler', (request, reply) => simulateConditions(state, request, reply))
    api.addHook('onSend', (request, reply, payload, next) => {
      // Laravel's own, unless a failure mode told the route to answer with another (`headers`).
      if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-cache, private')
      reply.header('set-cookie', sessionCookie())
      if (state.debugbar && expectsJson(request.headers)) reply.headers(debugbarHeaders(request.id, request.method, request.url.split('?')[0] ?? ''))
      const written = state.debug && Buffer.isBuffer(payload) && reply.getHeader('content-type') === 'application/json' ? withDebugFields(reply.statusCode, payload) : payload
      next(null, cutAnswers.has(request) ? cutHalfway(request, reply, written) : written)
    })
    // Laravel routes before it authenticates: an unknown path is a 404 even without a token.
    api.setNotFoundHandler((_request, reply) => sendNotFound(reply))
    registerPlatformRoutes(api, state, { ...reportRoutes(state), ...campaignRoutes(state) })
    done()
  }
}

/** The days a report call's range covers (query or body, as Laravel's input() reads them); null for any other call. */
function reportDays(request: FastifyRequest): number | null {
  if (!request.url.startsWith('/api/v1/report/')) return null
  const body = typeof request.body === 'object' && request.body !== null ? (request.body as Record<string, unknown>) : {}
  const query = request.query as Record<string, unknown>
  const day = (name: string): number | null => {
    const value = body[name] ?? query[name]
    const at = typeof value === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(value) ? Date.parse(`${value}T00:00:00Z`) : NaN
    return Number.isNaN(at) ? null : at / 86_400_000
  }
  const from = day('dateFrom')
  const to = day('dateTo')
  return from === null || to === null || to < from ? null : to - from + 1
}

// Requests whose answer is sent cut halfway (the `cut` failure).
const cutAnswers = new WeakSet<FastifyRequest>()

/**
 * The answer's first half, announced as the whole: its content-length is the whole's,
 * and the connection is closed once the half is sent, so the body arrives short.
 */
function cutHalfway(request: FastifyRequest, reply: FastifyReply, payload: unknown): unknown {
  if (!Buffer.isBuffer(payload) && typeof payload !== 'string') return payload
  const whole = Buffer.from(payload)
  reply.header('content-length', String(whole.length))
  reply.raw.once('finish', () => request.raw.socket.destroy())
  return Readable.from([whole.subarray(0, Math.floor(whole.length / 2))])
}

async function simulateConditions(state: SandboxState, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
  const { conditions } = state
  const socket = request.raw.socket
  // A worker of the platform's (setCapacity) until the answer is out, or the caller gone.
  const release = await conditions.worker()
  if (reply.raw.closed || reply.raw.destroyed) release()
  else reply.raw.once('close', release)
  const waited = await conditions.delay(conditions.workMs(reportDays(request)))
  if (waited === null) {
    reply.hijack()
    socket.destroy()
    return reply
  }
  const record = recordOf(request)
  if (record !== undefined) record.waitedMs = waited
  return answerFailure(state, conditions.takeFailure(request.url.split('?', 1)[0]), request, reply)
}

/** The request answered as `failure` says; undefined: by its route (`none`, and `cut`, `held` once they let it go on). */
async function answerFailure(state: SandboxState, failure: FailureMode, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
  const { conditions } = state
  const socket = request.raw.socket
  switch (failure.kind) {
    case 'none':
      return undefined
    case 'cut':
      cutAnswers.add(request)
      return undefined
    case 'held':
      await conditions.held()
      return undefined
    case 'status':
      sendFailure(reply, failure.status, failure.body, failure.headers)
      return reply
    case 'redirect':
      sendRedirect(reply.headers(failure.headers ?? {}), failure.status ?? 302, failure.location)
      return reply
    case 'hang':
      reply.hijack()
      conditions.hold(socket)
      return reply
    case 'reset':
      reply.hijack()
      socket.destroy()
      return reply
    case 'trickle':
      reply.hijack()
      void conditions.trickle(socket, failure.intervalMs, failure.chunks ?? 10)
      return reply
    case 'large':
      sendLarge(reply, failure.bytes)
      return reply
    case 'garbled':
      sendGarbled(reply, failure.body, failure.gzip === true)
      return reply
    case 'raw':
      reply.hijack()
      socket.end(Buffer.from(failure.answer, 'latin1'))
      return reply
  }
}

// The filler of a `large` answer, sent piece by piece.
const LARGE_PIECE = Buffer.alloc(64 * 1024, 'x')

/**
 * `{"data":"xx…"}` of `bytes` bytes (11 at the least), made as the connection takes it: a
 * piece at a time, never whole. Built whole (30 MB: 0.7 to 1.1 s of CPU at load 17) it
 * held the thread the sandbox shares with a test's gateway and callers that long: a slow
 * reader there read nothing meanwhile, and was cut off as idle (slow-readers.test.ts).
 */
function sendLarge(reply: FastifyReply, bytes: number): void {
  const filler = Math.max(0, bytes - 11)
  function* body(): Generator<Buffer> {
    yield Buffer.from('{"data":"')
    for (let left = filler; left > 0; left -= LARGE_PIECE.length) yield left >= LARGE_PIECE.length ? LARGE_PIECE : LARGE_PIECE.subarray(0, left)
    yield Buffer.from('"}')
  }
  reply.code(200).header('content-type', 'application/json').header('content-length', String(filler + 11)).send(Readable.from(body(), { objectMode: false }))
}

// What a platform behind a load balancer or a proxy sends now and then with a 200.
const MAINTENANCE_PAGE = '<!DOCTYPE html>\n<html><head><title>Be right back.</title></head><body><h1>Be right back.</h1></body></html>\n'
const GARBLED: Record<GarbledBody, { type: string; body: string }> = {
  html: { type: 'text/html; charset=UTF-8', body: MAINTENANCE_PAGE },
  'html-as-json': { type: 'application/json', body: MAINTENANCE_PAGE },
  'truncated-json': { type: 'application/json', body: '{"data":[{"date":"2026-02-01","impressions":1200,"cli' },
  empty: { type: 'application/json', body: '' },
}

function sendGarbled(reply: FastifyReply, kind: GarbledBody, gzip: boolean): void {
  const { type, body } = GARBLED[kind]
  reply.code(200).header('content-type', type)
  if (gzip) reply.header('content-encoding', 'gzip')
  reply.send(gzip ? gzipSync(body) : Buffer.from(body))
}

/** A string body goes out verbatim (an HTML error page of a proxy, say); anything else as JSON. */
function sendFailure(reply: FastifyReply, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (typeof body === 'string') {
    reply.code(status).type('text/html; charset=UTF-8').headers(headers).send(body)
    return
  }
  reply.headers(headers)
  sendJson(reply, status, body ?? { message: defaultFailureMessage(status) })
}

function defaultFailureMessage(status: number): string {
  if (status === 429) return 'Too Many Attempts.'
  if (status === 500) return 'Server Error'
  return STATUS_CODES[status] ?? 'Error'
}

function sessionCookie(): string {
  const expires = new Date(Date.now() + SESSION_MAX_AGE_SECONDS * 1000).toUTCString()
  return `laravel_session=${randomBytes(30).toString('base64url')}; expires=${expires}; Max-Age=${SESSION_MAX_AGE_SECONDS}; path=/; httponly; samesite=lax`
}

/**
 * Every body is read as bytes, whatever its type: the request log holds exactly what
 * was sent, and the routes read it as PHP and Laravel would (laravel-request.ts).
 */
function installBodyParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (request, body, done) => {
    keepBody(request, body as Buffer)
    done(null, body)
  })
}

function urlOf(address: AddressInfo): string {
  return `http://${hostPort(address.address, address.port)}`
}

/** The throttle counts of a sandbox started with `settings` (none: the defaults). */
function throttleOf(settings: Partial<ThrottleSettings> | undefined): ThrottleCounts {
  const counts = new ThrottleCounts()
  if (settings !== undefined) counts.set(settings)
  return counts
}
