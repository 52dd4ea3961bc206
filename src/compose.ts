import type { FastifyInstance } from 'fastify'
import { pino, type DestinationStream, type Logger } from 'pino'
import type { Dispatcher } from 'undici'
import type { Config } from './config.js'
import type { GatewayContext } from './http/context.js'
import { SecretSet, loggerOptions } from './observe/logger.js'
import { createMetrics } from './observe/metrics.js'
import { buildInfo } from './observe/build-info.js'
import { RedisBreaker, RedisWatch } from './redis/breaker.js'
import { RedisBus } from './redis/bus.js'
import { closeRedis, createRedisClient, failureCause, redisAddress, redisConnectTimeoutMs, type RedisClient } from './redis/client.js'
import { RedisSeal } from './redis/seal.js'
import { installIoredisCommandTimeoutPatch } from './redis/command-timeout.js'
import { createPlatformPool } from './platform/client/pool.js'
import { TokenRegistry } from './platform/tokens/token-registry.js'
import { TeamDirectory } from './access/team-auth.js'
import { RateLimiter } from './access/rate-limit.js'
import { MemoryStore } from './cache/memory-store.js'
import { TieredStore } from './cache/tiered-store.js'
import { RedisStore } from './cache/redis-store.js'
import { PurgeLedger } from './cache/purge-ledger.js'
import { FILL_CLOCK_SKEW_MS } from './cache/cache-entry.js'
import { longestFreshness } from './reports/ttl-policy.js'
import { ReplicaLock } from './cache/single-flight.js'
import { ReportCache } from './reports/report-cache.js'
import { FailureLog } from './observe/failure-log.js'
import { apiRoutes } from './http/api.js'
import { Admission } from './access/admission.js'
import { fastReads } from './http/reads/fast-path.js'
import { requestObserver } from './http/hooks/request-log.js'
import { ReportForms, type KnownReport } from './http/reads/report-route.js'
import { KnownUrls } from './access/known-urls.js'
import { healthRoutes } from './http/health.js'
import { adminRoutes } from './http/admin/admin.js'
import { TokenStore } from './platform/tokens/token-store.js'
import { PlatformClient } from './platform/client/platform-client.js'
import { PlatformGovernors } from './platform/governor/platform-governors.js'
import { probeStatus, probeTokens } from './platform/client/token-probe.js'
import { LoginGate } from './platform/tokens/login-gate.js'
import { TokenVerdicts } from './platform/tokens/token-verdict.js'
import { RefusalLog } from './platform/governor/refusal-log.js'
import { PlatformAnswers } from './platform/client/answer-buffer.js'
import { CampaignOwners } from './access/campaign-owners.js'
import { describeProxy, docsUi } from './http/openapi/document.js'
import { TeamUsage } from './observe/usage.js'
import { History } from './observe/history.js'
import { newReplicaId, Replicas } from './observe/replicas.js'
import { replicaState } from './http/admin/cluster-route.js'
import { TeamReloader } from './access/team-reload.js'
import { AdminAuth } from './access/admin-auth.js'
import { AuditTrail } from './access/audit-trail.js'
import { consoleRoutes } from './http/console/console-routes.js'
import { buildServer } from './http/server.js'
import { answerHooks, callerRate } from './http/hooks/answer-hooks.js'
import { metricsRoute } from './http/admin/metrics-route.js'
import type { LoadOptions } from './config.js'
import { keepTickShape } from './perf/tick-shape.js'
import { systemClock, type Clock, type Timers } from './clock.js'
import { redisKey } from './redis/keys.js'

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
  /** Where the console's compiled scripts are (tests running the sources point it at dist/http/console). */
  consoleScriptsDir?: string
}

export interface Gateway {
  proxy: FastifyInstance
  admin: FastifyInstance
  ctx: GatewayContext
  /** Reloads the teams from CONFIG_FILE (SIGHUP). */
  reloader: TeamReloader
  /** Bytes kept by the memos of URLs callers sent (bounded whatever they send). */
  memoBytes(): number
  /** Starts token sources and subscriptions; call before serving. */
  start(): Promise<void>
  /** Aborts the calls still at the platform: their callers get GW_SHUTTING_DOWN (or a stale copy). */
  abortPlatformCalls(): void
  close(): Promise<void>
}

// Longest wait at start for the Redis connection before serving without it: a Cluster
// client, which first learns the slots, is ready later than a single connection.
const REDIS_START_WAIT_MS = 2000
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
  if (redis) for (const what of ['entry', 'message', 'pause', 'purge', 'replica']) metrics.redisUnverified.inc({ what }, 0)
  const unverified = (what: 'entry' | 'message' | 'replica', where: string) => {
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
  const bus = redis ? new RedisBus(redis, redisKey.bus(config.redis.keyPrefix), log, { seal, onUnverified: (channel) => unverified('message', channel) }) : null
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
  // This replica's last hour: requests counted where they are logged, calls where they are sent.
  const history = new History({ clock })
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
    history,
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
      shared: redis ? { redis, seal, key: redisKey.purges(config.redis.keyPrefix) } : null,
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
    history,
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
  // Each replica announces itself and its last hour in Redis: GET /admin/cluster lists them.
  const replicas: Replicas = new Replicas({
    id: newReplicaId(),
    redis,
    breaker,
    seal,
    prefix: config.redis.keyPrefix,
    log,
    state: () => replicaState(ctx, replicas.id, history),
    onUnverified: (key) => unverified('replica', key),
    clock,
  })
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

  const knownUrls = new KnownUrls<KnownReport>()
  const admission = new Admission(ctx, knownUrls)
  const forms = new ReportForms(ctx, knownUrls)
  const observe = requestObserver(ctx)
  const proxy = buildServer(config, log, failures, config.cache.enabled ? fastReads(ctx, admission, forms, observe) : null, callerRate(admission))
  // No body is parsed on the proxy listener before its handler admits the caller:
  // /api/v1 handlers read it through Admission.readBody; any other path is a 404
  // without reading a byte of it.
  proxy.removeAllContentTypeParsers()
  proxy.addContentTypeParser('*', (_request, payload, done) => done(null, payload))
  await describeProxy(proxy)
  await proxy.register(healthRoutes, { ctx })
  await proxy.register(apiRoutes, { ctx, admission, client, forms })
  answerHooks(proxy, { ctx, admission, observe })

  const admin = buildServer(config, log, failures, null)
  await admin.register(healthRoutes, { ctx })
  metricsRoute(admin, { metrics, tokens, governors, usage })
  await admin.register(adminRoutes, { ctx, client, reloader, l1, audit, replicas })
  await admin.register(consoleRoutes, deps.consoleScriptsDir ? { scriptsDir: deps.consoleScriptsDir } : {})
  await docsUi(admin, proxy)

  let closed = false
  return {
    proxy,
    admin,
    ctx,
    reloader,
    memoBytes: () => knownUrls.bytes,
    async start() {
      if (redisWatch && breaker) {
        await redisWatch.start()
        metrics.redisUp.set(breaker.state === 'closed' ? 1 : 0)
        metrics.redisWritable.set(breaker.writable ? 1 : 0)
      }
      await tokens.start()
      history.watch(() => governors.all().map((g) => ({ credential: g.credential, inFlight: g.inFlight, waiting: g.queued, limit: g.limit, floorMs: governors.latencyFloorMs(g.credential) })))
      ctx.rateLimiter.start()
      usage.start()
      await reloader.start()
      await tokenStore.start()
      await reports.start()
      await governors.start()
      if (!config.gatewaySecret && redis) log.warn('GATEWAY_SECRET is not set: central token rotation through Redis is off; tokens are never written to Redis')
      await probeTokens(tokens, client, config.platform.probe, log, (credential) => governors.paused(credential, config.platform.probe?.path))
      ctx.lifecycle.phase = 'serving'
      replicas.start()
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
      history.stop()
      await replicas.close()
      tokenStore.close()
      await tokens.close()
      redisWatch?.close()
      await bus?.close()
      if (redis) await closeRedis(redis)
      await dispatcher.close().catch(() => undefined)
    },
  }
}
