import { createServer, STATUS_CODES, type IncomingMessage, type ServerOptions, type ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'
import Fastify, { LogController, type FastifyInstance, type FastifyRequest } from 'fastify'
import { pino, type DestinationStream, type Logger } from 'pino'
import type { Dispatcher } from 'undici'
import type { Config } from './config.js'
import type { GatewayContext } from './context.js'
import { BadRequestError, NotFoundError, PayloadTooLargeError, RequestTimeoutError, ShuttingDownError } from './errors.js'
import { SecretSet, loggerOptions } from './logger.js'
import { createMetrics } from './metrics.js'
import { buildInfo } from './build-info.js'
import { RedisBreaker, RedisBus, RedisWatch, closeRedis, createRedisClient, failureCause, redisAddress, redisConnectTimeoutMs, type RedisClient } from './redis.js'
import { RedisSeal } from './redis-seal.js'
import { installIoredisCommandTimeoutPatch } from './redis-command-timeout.js'
import { createPlatformPool } from './platform/platform-pool.js'
import { TokenRegistry } from './platform/token-registry.js'
import { TeamDirectory } from './teams/team-auth.js'
import { RateLimiter } from './teams/rate-limit.js'
import { MemoryStore } from './cache/memory-store.js'
import { TieredStore } from './cache/tiered-store.js'
import { RedisStore } from './cache/redis-store.js'
import { PurgeLedger } from './cache/purge-ledger.js'
import { FILL_CLOCK_SKEW_MS } from './cache/cache-entry.js'
import { longestFreshness } from './reports/ttl-policy.js'
import { ReplicaLock } from './cache/single-flight.js'
import { ReportCache } from './reports/report-cache.js'
import { FailureLog, handledFailure } from './failure-log.js'
import { apiRoutes } from './routes/api.js'
import { Admission } from './routes/caller.js'
import { closeSilentConnections } from './routes/silent-connections.js'
import { fastReads, type RequestHandler } from './routes/fast-path.js'
import { lazyRequestLogger } from './request-logger.js'
import { bytesSent, requestIdOf, requestObserver, routeKind } from './routes/request-log.js'
import { isValidationFailure, validationMessage } from './routes/validation-message.js'
import { ReportForms } from './reports/report-route.js'
import { bodyDeadline } from './routes/body-deadline.js'
import { healthRoutes } from './routes/health.js'
import { adminRoutes } from './routes/admin.js'
import { TokenStore } from './platform/token-store.js'
import { PlatformClient } from './platform/platform-client.js'
import { PlatformGovernors } from './platform/platform-governors.js'
import { probeStatus, probeTokens } from './platform/token-probe.js'
import { LoginGate } from './platform/login-gate.js'
import { TokenVerdicts } from './platform/token-verdict.js'
import { RefusalLog } from './platform/refusal-log.js'
import { PlatformAnswers } from './platform/answer-buffer.js'
import { CampaignOwners } from './teams/campaign-owners.js'
import { describeProxy, docsUi } from './openapi/document.js'
import { TeamUsage, answeredByCache } from './teams/team-usage.js'
import { TeamReloader } from './teams/team-reload.js'
import { POLICY_HEADER, STATE_HEADER } from './teams/rate-limit-headers.js'
import { AdminAuth } from './routes/admin-auth.js'
import { auditWrite } from './routes/write-audit.js'
import { AuditTrail } from './audit-trail.js'
import { consoleRoutes } from './console/console-routes.js'
import type { LoadOptions } from './config.js'
import { VALIDATOR_CODE } from './validator-code.js'
import { keepTickShape } from './tick-shape.js'
import { systemClock, type Clock } from './clock.js'
import type { Timers } from './reports/stepped-timers.js'

export interface GatewayDeps {
  /** Where log lines go (tests capture them); default stdout. */
  logStream?: DestinationStream
  logger?: Logger
  /** A Redis connection to use instead of one made from config.redis. */
  redis?: RedisClient | null
  dispatcher?: Dispatcher
  /** The time and timers of every part of the gateway; default systemClock (tests pass a fake clock). */
  clock?: Clock
  /** The report cache's refresh-ahead timers; default stepped timers on the clock. */
  timers?: Timers
  /** Where the teams are reloaded from; default the process environment. null: never. */
  configSource?: LoadOptions | null
  /** Where the console's compiled scripts are (tests running the sources point it at dist/console). */
  consoleScriptsDir?: string
}

export interface Gateway {
  proxy: FastifyInstance
  admin: FastifyInstance
  ctx: GatewayContext
  /** Reloads the teams from CONFIG_FILE (SIGHUP). */
  reloader: TeamReloader
  /** Bytes kept by the memos of URLs callers sent (bounded whatever they send). */
  memoBytes(): { targets: number; forms: number }
  /** Starts token sources and subscriptions; call before serving. */
  start(): Promise<void>
  /** Aborts the calls still at the platform: their callers get GW_SHUTTING_DOWN (or a stale copy). */
  abortPlatformCalls(): void
  close(): Promise<void>
}

// Longest wait at start for the Redis connection before serving without it: a Cluster
// client, which first learns the slots, is ready later than a single connection.
const REDIS_START_WAIT_MS = 2000
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

/** Builds both listeners; never listens (main.ts does). */
export async function createGateway(config: Config, deps: GatewayDeps = {}): Promise<Gateway> {
  keepTickShape()
  const clock = deps.clock ?? systemClock
  // For the parts that only read the time.
  const now = (): number => clock.now()
  const secrets = new SecretSet()
  for (const s of config.secrets) secrets.add(s)
  const audit = new AuditTrail()
  const log = deps.logger ?? pino(loggerOptions(config.logLevel, secrets), audit.tee(deps.logStream))
  const metrics = createMetrics()
  const build = { ...buildInfo(), startedAt: now() }
  metrics.buildInfo.set({ version: build.version, commit: build.commit, node: build.node }, 1)
  const dispatcher = deps.dispatcher ?? createPlatformPool(config.platform)
  // Before any Redis client of this process sends a command: its timeouts then measure Redis, not this process's stalls.
  installIoredisCommandTimeoutPatch(log)
  const redis = deps.redis !== undefined ? deps.redis : createRedisClient(config.redis, log)
  // Redis answering again (the circuit closed, a new connection): the report copies this
  // replica kept meanwhile, or that a Redis restarted empty lost, go back to it (below).
  let redisBack = (): void => undefined
  const breaker = redis
    ? new RedisBreaker({
        cooldownMs: config.redis.breakerCooldownMs,
        log,
        onChange: (s) => {
          metrics.redisUp.set(s === 'closed' ? 1 : 0)
          if (s === 'closed') redisBack()
        },
        onWritable: (writable) => metrics.redisWritable.set(writable ? 1 : 0),
        onSkippedWrite: () => metrics.redisSkippedWrites.inc(),
        address: redisAddress(config.redis),
        cause: (err) => failureCause(redis, err),
        commandTimeoutMs: config.redis.commandTimeoutMs,
        now,
      })
    : null
  // Checked from the start, not only when a request needs Redis: an outage without traffic shows too.
  const redisWatch = redis && breaker ? new RedisWatch(redis, breaker, { intervalMs: config.redis.breakerCooldownMs, connectTimeoutMs: Math.max(redisConnectTimeoutMs(config.redis), REDIS_START_WAIT_MS), keyPrefix: config.redis.keyPrefix, onReconnect: () => redisBack(), clock }) : null
  // Redis is shared, not trusted: what replicas write there is sealed.
  const seal = config.gatewaySecret ? new RedisSeal(config.gatewaySecret) : null
  // Each series from 0, so that an alert on increase() sees the first forged value too.
  if (redis) for (const what of ['entry', 'message', 'pause', 'purge']) metrics.redisUnverified.inc({ what }, 0)
  const unverified = (what: 'entry' | 'message', where: string) => {
    metrics.redisUnverified.inc({ what })
    log.warn({ what, where }, "ignoring a value in redis that does not carry this gateway's seal (GATEWAY_SECRET)")
  }
  // Sealed, but more than this gateway stores, or filled before a purge: counted with the forgeries.
  const refusedEntry = (where: string, why: string) => {
    metrics.redisUnverified.inc({ what: 'entry' })
    log.warn({ what: 'entry', where, why }, 'ignoring a report entry read from redis')
  }
  const entryLimits = {
    maxEntryBytes: config.cache.maxEntryBytes,
    maxFreshMs: longestFreshness(config.cache.ttl),
    staleWhileRevalidateMs: config.cache.staleWhileRevalidateMs,
    staleIfErrorMs: config.cache.staleIfErrorMs,
  }
  const bus = redis ? new RedisBus(redis, `${config.redis.keyPrefix}bus:`, log, { seal, onUnverified: (channel) => unverified('message', channel) }) : null
  const logins = new LoginGate({
    redis,
    breaker,
    prefix: config.redis.keyPrefix,
    minIntervalMs: config.platform.loginMinIntervalMs,
    // A login's longest: its answer's headers, then its body, each within platform.timeout.
    lockTtlMs: 2 * config.platform.timeoutMs,
    shared: Boolean(config.gatewaySecret) && redis !== null,
    log,
    now,
  })
  const tokens = new TokenRegistry(config, {
    dispatcher,
    log,
    secrets,
    timeoutMs: config.platform.timeoutMs,
    refreshBeforeMs: config.platform.refreshBeforeMs,
    expiryWarningsMs: config.platform.expiryWarningsMs,
    filePollMs: config.platform.tokenFilePollMs,
    maintenanceMs: config.platform.maintenanceMs,
    logins,
    clock,
  })
  const l2 =
    redis && breaker
      ? new RedisStore({ redis, breaker, prefix: config.redis.keyPrefix, seal, onUnverified: (key) => unverified('entry', key), limits: entryLimits, onRefused: refusedEntry, now })
      : null
  const lock =
    redis && breaker && bus ? new ReplicaLock({
          redis,
          breaker,
          bus,
          prefix: config.redis.keyPrefix,
          lockTtlMs: config.cache.lockTtlMs,
          clock,
        }) : null
  const teams = new TeamDirectory(config.teams, now)
  metrics.watchKeyLifetimes(() => teams.keyLifetimes())
  const usage = new TeamUsage({
    redis,
    breaker,
    prefix: config.redis.keyPrefix,
    metrics,
    flushMs: config.usage.flushMs,
    retentionDays: config.usage.retentionDays,
    clock,
  })
  const governors = new PlatformGovernors({ config, log, metrics, redis, breaker, bus, seal, weightOf: (team) => teams.weightOf(team), limitsOf: (team) => teams.limitsOf(team), clock })
  const client: PlatformClient = new PlatformClient({
    dispatcher,
    timeoutMs: config.platform.timeoutMs,
    defaultBaseUrl: config.platform.baseUrl,
    governors,
    // The probe is a call of this client's own, made only once it serves.
    verdicts: new TokenVerdicts({
      probe: (provider, token) => probeStatus(client, config.platform.probe, provider, token),
      // Never while the platform throttles the probe's route or the credential: a 429 says nothing of the token.
      probePaused: (credential) => governors.paused(credential, config.platform.probe?.path),
      now,
    }),
    refusals: new RefusalLog({ log, metrics, now }),
    usage,
    clock,
  })
  // A credential pause is tested with the probe call and the token in use.
  governors.probeWith(async (credential) => {
    const provider = tokens.get(credential)
    const state = provider.current()
    if (state) await probeStatus(client, config.platform.probe, provider, state.token, true)
  })
  const answers = new PlatformAnswers({
    callBytes: config.platform.bufferBytes,
    totalBytes: config.platform.bufferTotalBytes,
    readIdleMs: config.platform.readIdleTimeoutMs,
    onSlowReader: (credential) => metrics.platformSlowReaders.inc({ credential }),
  })
  const l1 = new MemoryStore({ maxBytes: config.cache.l1MaxBytes, now })
  const store = new TieredStore({
    l1,
    l2,
    bus,
    log,
    maxEntryBytes: config.cache.maxEntryBytes,
    onRefused: refusedEntry,
    purges: new PurgeLedger({
      // No entry outlives its fill by more than this: older purges reach none.
      keepMs: entryLimits.maxFreshMs + Math.max(entryLimits.staleWhileRevalidateMs, entryLimits.staleIfErrorMs) + FILL_CLOCK_SKEW_MS,
      shared: redis ? { redis, seal, key: `${config.redis.keyPrefix}purges` } : null,
      log,
      onUnverified: (where) => {
        metrics.redisUnverified.inc({ what: 'purge' })
        log.warn({ what: 'purge', where }, "ignoring a value in redis that does not carry this gateway's seal (GATEWAY_SECRET)")
      },
      now,
    }),
    now,
  })
  redisBack = () => void store.shareKept()
  // Failures answered as documented: one warn line each, a flood summed up (no stacks).
  const failures = new FailureLog({ log, clock })
  const reports = new ReportCache({
    failures,
    config,
    store,
    lock,
    metrics,
    log,
    client,
    answers,
    usage,
    tokens,
    clock,
    ...(deps.timers ? { timers: deps.timers } : {}),
  })
  const ctx: GatewayContext = {
    config,
    log,
    secrets,
    metrics,
    dispatcher,
    tokens,
    teams,
    adminAuth: new AdminAuth(config.admin.tokens),
    usage,
    rateLimiter: new RateLimiter({ redis, breaker, prefix: config.redis.keyPrefix, syncMs: config.redis.rateLimitSyncMs, clock }),
    redis,
    breaker,
    bus,
    reports,
    lifecycle: { phase: 'starting' },
    build,
    clock,
    governors,
    answers,
    campaignOwners: new CampaignOwners({
      config,
      client,
      redis,
      breaker,
      now,
    }),
  }
  const tokenStore = new TokenStore(ctx)
  const source = deps.configSource === undefined ? { env: process.env } : deps.configSource
  const reloader = new TeamReloader({
    config,
    teams: ctx.teams,
    adminAuth: ctx.adminAuth,
    log,
    metrics,
    bus,
    source: config.demo ? null : source,
    pollMs: config.teamsReload.pollMs,
    clock,
  })

  for (const provider of tokens.all()) {
    provider.on('change', ({ state, previous, reason, actor }) => {
      // A replica adopting the token it already read itself (a file rotation seen by all) changed nothing.
      if (previous?.fingerprint === state.fingerprint) return
      metrics.tokenChanges.inc({ credential: provider.name, reason })
      log.info(
        { kind: 'audit', credential: provider.name, reason, source: state.source, oldFingerprint: previous?.fingerprint ?? null, newFingerprint: state.fingerprint, actor: actor ?? null, version: state.version },
        'platform token changed',
      )
    })
  }

  const admission = new Admission(ctx)
  const forms = new ReportForms(ctx)
  const observe = requestObserver(ctx)
  const proxy = buildServer(config, log, failures, config.cache.enabled ? fastReads(ctx, admission, forms, observe) : null)
  // No body is parsed on the proxy listener before its handler admits the caller:
  // /api/v1 handlers read it through Admission.readBody; any other path is a 404
  // without reading a byte of it.
  proxy.removeAllContentTypeParsers()
  proxy.addContentTypeParser('*', (_request, payload, done) => done(null, payload))
  await describeProxy(proxy)
  await proxy.register(healthRoutes, { ctx })
  await proxy.register(apiRoutes, { ctx, admission, client, forms })
  // Every answer of a rate-limited team carries its standing, refusals included.
  proxy.addHook('onSend', (request, reply, payload, done) => {
    const caller = request.caller
    const fields = caller ? admission.rateFields(caller) : null
    if (fields) reply.header(POLICY_HEADER, fields[0]).header(STATE_HEADER, fields[1])
    done(null, payload)
  })
  proxy.addHook('onResponse', (request, reply, done) => {
    const cache = (reply.getHeader('x-cache') as string | undefined) ?? null
    observe({
      reqId: request.id,
      team: request.caller?.team.name ?? null,
      keyId: request.caller?.keyId ?? null,
      hit: request.caller ? answeredByCache(reply.statusCode, cache, request.caller.platformCalls) : false,
      method: request.method,
      url: request.url,
      route: routeKind(request.routeOptions.url ?? 'unmatched'),
      status: reply.statusCode,
      durationMs: reply.elapsedTime,
      cache,
      client: request.ip ?? null,
      advertisers: request.caller?.advertisers ?? null,
      bytes: bytesSent(request.raw.socket),
      upstreamMs: request.caller?.upstreamMs ?? null,
      userAgent: request.headers['user-agent'] ?? null,
    })
    auditWrite(ctx, admission, request, reply.statusCode)
    done()
  })

  const admin = buildServer(config, log, failures, null)
  await admin.register(healthRoutes, { ctx })
  admin.get('/metrics', async (_request, reply) => {
    for (const p of tokens.all()) {
      const info = p.info()
      if (info.secondsLeft !== null) metrics.tokenSecondsLeft.set({ credential: p.name }, info.secondsLeft)
      metrics.tokenUsable.set({ credential: p.name }, info.usable ? 1 : 0)
    }
    for (const g of governors.all()) {
      metrics.platformQueued.set({ credential: g.credential }, g.queued)
      metrics.platformInFlight.set({ credential: g.credential }, g.inFlight)
      metrics.platformPermitsHeld.set({ credential: g.credential }, g.permitsHeld)
    }
    // A team that no longer waits shows no line rather than a stale one.
    metrics.platformWaiting.reset()
    for (const g of governors.all()) for (const [team, n] of g.waiting()) metrics.platformWaiting.set({ credential: g.credential, team }, n)
    usage.publishMetrics()
    return reply.header('content-type', metrics.registry.contentType).send(await metrics.registry.metrics())
  })
  await admin.register(adminRoutes, { ctx, client, reloader, l1, audit })
  await admin.register(consoleRoutes, deps.consoleScriptsDir ? { scriptsDir: deps.consoleScriptsDir } : {})
  await docsUi(admin, proxy)

  let closed = false
  return {
    proxy,
    admin,
    ctx,
    reloader,
    memoBytes: () => ({ targets: admission.memoBytes, forms: forms.memoBytes }),
    async start() {
      if (redisWatch && breaker) {
        await redisWatch.start()
        metrics.redisUp.set(breaker.state === 'closed' ? 1 : 0)
        metrics.redisWritable.set(breaker.writable ? 1 : 0)
      }
      await tokens.start()
      ctx.rateLimiter.start()
      usage.start()
      await reloader.start()
      await tokenStore.start()
      await reports.start()
      await governors.start()
      if (!config.gatewaySecret && redis) log.warn('GATEWAY_SECRET is not set: central token rotation through Redis is off; tokens are never written to Redis')
      await probeTokens(tokens, client, config.platform.probe, log, (credential) => governors.paused(credential, config.platform.probe?.path))
      ctx.lifecycle.phase = 'serving'
    },
    abortPlatformCalls() {
      client.abortAll()
    },
    async close() {
      if (closed) return
      closed = true
      ctx.lifecycle.phase = 'stopping'
      await Promise.all([proxy.close(), admin.close()])
      await ctx.rateLimiter.close()
      reports.close()
      failures.close()
      reloader.close()
      await usage.close()
      governors.stop()
      tokenStore.close()
      await tokens.close()
      redisWatch?.close()
      await bus?.close()
      if (redis) await closeRedis(redis)
      await dispatcher.close().catch(() => undefined)
    },
  }
}

type FastPath = ((req: IncomingMessage, res: ServerResponse, next: RequestHandler) => void) | null

function buildServer(config: Config, log: Logger, failures: FailureLog, fastPath: FastPath): FastifyInstance {
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
        // cost. Nothing reads such a request's body: hasBody (routes/caller.ts)
        // asks the same two headers.
        optimizeEmptyRequests: true,
      }
      const server = createServer(
        options,
        fastPath ? (req, res) => (closing ? handler(req, res) : fastPath(req, res, handler)) : handler,
      )
      server.keepAliveTimeout = config.server.keepAliveTimeoutMs
      closeSilentConnections(server, config.server.connectionTimeoutMs)
      return server
    },
    clientErrorHandler: answerClientError,
    // Validation errors carry their schema, whose description says what a field must be.
    ajv: { customOptions: { verbose: true, code: VALIDATOR_CODE } },
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
    reply.header('x-request-id', request.id)
    // A request on a kept-alive connection while closing: the caller retries elsewhere.
    if (closing) {
      reply.header('connection', 'close')
      done(new ShuttingDownError())
      return
    }
    done()
  })
  app.addHook('onRequest', bodyDeadline(config.limits.bodyTimeoutMs))
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
