import type { FastifyInstance } from 'fastify'
import type { DestinationStream, Logger } from 'pino'
import type { Dispatcher } from 'undici'
import type { Config, LoadOptions } from './config.js'
import type { GatewayContext } from './http/context.js'
import { replicaHistory, replicaState } from './http/admin/cluster-route.js'
import type { TeamReloader } from './access/team-reload.js'
import { CampaignOwners, creativeSetOwners } from './access/campaign-owners.js'
import { TokenStore } from './platform/tokens/token-store.js'
import { newReplicaId, Replicas } from './observe/replicas.js'
import { KeyUse } from './observe/key-use.js'
import { TeamSuspensions } from './access/team-suspensions.js'
import { LogLevel } from './observe/log-level.js'
import type { RedisClient } from './redis/client.js'
import type { RedisBreaker } from './redis/breaker.js'
import type { TokenRegistry } from './platform/tokens/token-registry.js'
import type { PlatformGovernors } from './platform/governor/platform-governors.js'
import type { PlatformAnswers } from './platform/client/answer-buffer.js'
import type { ReportCache } from './reports/report-cache.js'
import type { RateLimiter } from './access/rate-limit.js'
import { keepTickShape } from './perf/tick-shape.js'
import { systemClock, type Clock, type Timer, type Timers } from './clock.js'
import { observeParts } from './compose/observe-parts.js'
import { redisParts } from './compose/redis-parts.js'
import { ResultRoom } from './redis/memory-room.js'
import { RedisClock } from './redis/redis-clock.js'
import { redisKey } from './redis/keys.js'
import { teamParts } from './compose/team-parts.js'
import { platformParts } from './compose/platform-parts.js'
import { cacheParts } from './compose/cache-parts.js'
import { jobParts } from './compose/job-parts.js'
import { listeners } from './compose/listeners.js'
import { drainListener } from './http/server.js'
import { startTracing } from './observe/tracing.js'
import { holdsGatewaySecret } from './access/admission.js'

const KEY_USE_RESEALED = 'key use records and key removals sealed with GATEWAY_SECRET_FALLBACK are stored again sealed with GATEWAY_SECRET'

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
  /** How often the replica announces itself; default ANNOUNCE_MS (a test sets it past its timeout to see what a change announces). */
  announceMs?: number
}

export interface Gateway {
  proxy: FastifyInstance
  admin: FastifyInstance
  /** What the gateway runs with (in demo mode: the sandbox's platform and the demo team). */
  config: Config
  /** The gateway's logger: the level PUT /admin/log-level sets is its level. */
  log: Logger
  /** Each credential's platform token: the one in use, replaced or refreshed. */
  tokens: TokenRegistry
  /** Each credential's platform calls: seats, queue, 429 pauses, learned limit. */
  governors: PlatformGovernors
  /** Platform answers held for their callers, within the byte budget they share. */
  answers: PlatformAnswers
  /** The report cache: its copies in this replica's memory and in Redis. */
  reports: ReportCache
  /** Each team's rate limit, its count shared through Redis. */
  rateLimiter: RateLimiter
  /** The teams suspended for a secret of the gateway's in a request, shared by the replicas. */
  suspensions: TeamSuspensions
  /** When each API key was last used; flush() writes this replica's uses to Redis now. */
  keyUse: KeyUse
  /** The Redis connection and its circuit breaker, shared by every part; both null without Redis. */
  redis: { client: RedisClient | null; breaker: RedisBreaker | null }
  /** Reloads the teams from CONFIG_FILE (SIGHUP). */
  reloader: TeamReloader
  /** Bytes kept by the memos of URLs callers sent (bounded whatever they send). */
  memoBytes(): number
  /**
   * Connects to Redis, then `bind` (main.ts: both listeners listen), then starts token
   * sources and subscriptions, stores this replica's token in Redis for the others, starts
   * its job runner and serves (readiness 200): a start whose `bind` fails makes no
   * platform call, sets, audits and stores no token and claims no job. Call before serving.
   */
  start(bind?: () => Promise<void>): Promise<void>
  /**
   * Whether the gateway has begun serving (readiness answered 200), its start's last steps
   * (the replicas' announcement) possibly still under way: a stop from then on drains.
   */
  serving(): boolean
  /**
   * The drain before close(): readiness answers 503 ("stopping") from now on, and every
   * answer of either listener carries `connection: close`; both go on accepting
   * connections and answering as ever until close(). With the jobs in Redis, its job runner
   * starts no job from now on (the jobs it runs end as their reads end).
   */
  drain(): void
  /** Aborts the calls still at the platform: their callers get GW_SHUTTING_DOWN (or a stale copy). */
  abortPlatformCalls(): void
  close(): Promise<void>
}

/** Builds both listeners; never listens (main.ts does). */
export async function createGateway(config: Config, deps: GatewayDeps = {}): Promise<Gateway> {
  keepTickShape()
  const clock = deps.clock ?? systemClock
  const { secrets, audit, log, auditLog, metrics, build, failures, history } = observeParts(config, { clock, logger: deps.logger, logStream: deps.logStream })
  // This replica's id: in GET /admin/cluster, the key use it records, and `service.instance.id` of its spans.
  const replicaId = newReplicaId()
  const shared = redisParts(config, { redis: deps.redis, log, metrics, clock })
  const { redis, breaker, bus, seal, unverified } = shared
  // Redis' clock, for the times replicas write and compare (the jobs' leases, the replicas' announcements).
  const redisClock = redis ? new RedisClock(clock, { redis, key: redisKey.dueJobs(config.redis.keyPrefix), log, onRead: (ms) => metrics.redisClockOffset.set(ms / 1000) }) : null
  const keyUse = new KeyUse({
    replica: replicaId, redis, breaker, seal, prefix: config.redis.keyPrefix, clock,
    onUnverified: (where) => unverified('key-use', where),
    onLost: (keys) => log.warn({ keys }, 'key use missing from Redis (a restart without its data, a flush?): this replica\'s use of its keys and its key removals written again'),
    onResealed: (records) => log.info({ records }, KEY_USE_RESEALED),
  })
  const { teams, reloader, adminAuth, rateLimiter, usage } = teamParts(config, { redis, breaker, bus, log, auditLog, metrics, secrets, keyUse, clock, ...(redisClock ? { redisOffsetMs: () => redisClock.offsetMs } : {}), configSource: deps.configSource })
  // The named admin tokens (ADMIN_TOKENS_FILE's) are known by their digests alone: the log
  // finds them as admission does. ADMIN_TOKEN and ADMIN_VIEWER_TOKEN its scrub finds as they are.
  if (config.admin.tokensFile !== null) secrets.searchByDigest((text) => adminAuth.heldInLogged(text))
  const suspensions = new TeamSuspensions({
    redis,
    breaker,
    bus,
    seal,
    keyPrefix: config.redis.keyPrefix,
    periodMs: config.limits.secretSuspensionMs,
    // The ends and lifts one replica writes, another compares with its clock.
    clock: redisClock ?? clock,
    log,
    onSuspended: (team) => metrics.teamSuspensions.inc({ team }),
    onUnverified: (where) => unverified('suspension', where),
  })
  // Off without an OTLP endpoint: then nothing of OpenTelemetry is even loaded.
  const tracing = await startTracing(config.tracing, {
    version: build.version,
    instanceId: replicaId,
    now: clock.now,
    warn: (message) => failures.warn('OTEL_EXPORT', { log, msg: 'OpenTelemetry: spans could not be exported', fields: { reason: message } }),
    // Admission's search, of the admin tokens too (started once they are known), and what
    // the log scrubs that requests are not searched for: a span is read where the log is.
    holdsSecret: (text) => holdsGatewaySecret({ secrets, adminAuth }, text) || secrets.holdsScrubbed(text),
  })
  const platform = platformParts(config, { dispatcher: deps.dispatcher, log, auditLog, secrets, metrics, clock, ...(redisClock ? { sharedNow: redisClock.now } : {}), redis, breaker, bus, seal, teams, usage, history, replica: replicaId })
  const { dispatcher, tokens, governors, client, answers, failing: platformFailing } = platform
  teams.onReplace(() => governors.keepTeams((team) => teams.teamOf(team) !== undefined))
  // The room in Redis for what the teams keep there (jobs' results, report copies), each team's part of it.
  // Results live in Redis only with the shared store: in memory they take this replica's room, not Redis'.
  const room = new ResultRoom({ redis: seal ? redis : null, breaker, settings: config.jobs, teams: () => teams.teams.length, log, clock })
  teams.onReplace(() => void room.read())
  // Seconds until a team may make platform calls again (its platform-seconds of the UTC day spent); 0: it may.
  const spentFor = (team: string, now: number): number => usage.platformTime.overBound(team, teams.platformSecondsPerDayOf(team), now)
  const { l1, store, reports } = cacheParts(config, { redis, breaker, bus, seal, unverified, log, metrics, clock, timers: deps.timers, failures, usage, client, answers, tokens, replica: replicaId, room, teams: () => teams.teams.length, configured: (team) => teams.teamOf(team) !== undefined, spentFor })
  teams.onReplace(() => reports.keepTeams((team) => teams.teamOf(team) !== undefined))
  const jobsPart = jobParts(config, { teams, suspensions, redis, breaker, seal, unverified, reports, tokens, governors, clock, redisClock: redisClock ?? clock, log, failures, metrics, bus, replica: replicaId, spentFor, room })
  const { jobs, runner } = jobsPart

  const ctx: GatewayContext = {
    config, log, auditLog, secrets, metrics, dispatcher, tokens, teams, adminAuth, usage, history, keyUse, rateLimiter, suspensions, redis, breaker, bus, reports, jobs,
    logLevel: new LogLevel({ log, auditLog, bus, replica: replicaId, clock }),
    lifecycle: { phase: 'starting' },
    build, clock, governors, answers, platformFailing, tracing,
    campaignOwners: new CampaignOwners({ config, client, redis, breaker, seal, onUnverified: (key) => unverified('owner-list', key), now: () => clock.now() }),
    creativeSetOwners: creativeSetOwners({ config, client, redis, breaker, seal, onUnverified: (key) => unverified('owner-list', key), now: () => clock.now() }),
  }
  const tokenStore = new TokenStore({ ...ctx, replica: replicaId })
  // Redis answering again (the circuit closed, a new connection), or accepting writes again
  // after refusing them (at its maxmemory under noeviction, READONLY): the purges announced
  // meanwhile are read, then the report copies this replica kept meanwhile, or that a
  // Redis restarted empty lost, go back to it, and so do the platform tokens and this
  // replica's announcement with its hour (the learned limit's shared record goes back with
  // the learner's next lease renewal).
  shared.whenBack(() => {
    // The purges announced meanwhile first: no copy one reaches goes back to Redis.
    void store.catchUpPurges().then(() => store.shareKept())
    tokenStore.restore()
    void suspensions.catchUp()
    void replicas.rejoin()
  })
  // Each replica announces itself in Redis with each bucket of its hour as it closes, and writes its whole hour there when a cluster view asks: GET /admin/cluster lists them.
  const replicas: Replicas = new Replicas({
    id: replicaId,
    redis,
    breaker,
    seal,
    prefix: config.redis.keyPrefix,
    log,
    state: () => replicaState({ ...ctx, reloader }, replicas.id, (redisClock ?? clock).now()),
    history: () => replicaHistory(history, clock.now()),
    bucket: (n) => history.bucket(n),
    bus,
    onUnverified: (key) => unverified('replica', key),
    clock,
    ...(redisClock ? { sharedNow: redisClock.now } : {}),
    ...(deps.announceMs !== undefined ? { intervalMs: deps.announceMs } : {}),
  })
  // A refused reload (or the one taken after it) is in the cluster view at once, not at the next announcement.
  reloader.onRefusedChange(() => void replicas.changed())
  const { proxy, admin, memoBytes } = await listeners({ ...ctx, failures, client, reloader, l1, audit, replicas, webhooks: jobsPart.webhooks, tokenShares: tokenStore, consoleScriptsDir: deps.consoleScriptsDir })

  let closed = false
  let resealing: Timer | null = null
  return {
    proxy,
    admin,
    config,
    log,
    tokens,
    governors,
    answers,
    reports,
    rateLimiter,
    suspensions,
    keyUse,
    redis: { client: redis, breaker },
    reloader,
    memoBytes,
    async start(bind) {
      await shared.start()
      // Before any request: a team that spent its day on other replicas is refused here
      // too, and every team's answers say the day it spent there.
      await usage.readDays(teams.teams.map((t) => t.name))
      // Listens before any platform call and any token set: a start that cannot listen (a
      // port taken) exits having logged in nowhere and audited no token change. Until it
      // serves, readiness answers 503 (starting).
      await bind?.()
      // Each credential chooses between the token stored in Redis and its configuration
      // before it sets one: its audit line names the token it takes, never a configured one
      // a rotation replaced; a password login takes a usable stored token instead of logging in.
      await redisClock?.start()
      await tokens.start(await tokenStore.storedAtStart(), (credential) => tokenStore.stored(credential))
      history.watch(platform.gauges)
      rateLimiter.start()
      usage.start()
      await reloader.start()
      await suspensions.start()
      await ctx.logLevel.start()
      await tokenStore.start()
      await reports.start()
      await governors.start()
      if (!config.gatewaySecret && redis) log.warn('GATEWAY_SECRET is not set: central token rotation through Redis is off; tokens are never written to Redis')
      // Stored first: where Redis lost its data, the running replicas' rotation comes back before the probe (TokenStore.share).
      await tokenStore.share()
      await platform.probeTokens()
      // The job runner and the webhook deliverer claim work of every replica's: a start
      // that cannot listen (main.ts exits) claims none, which would wait out its lease.
      if (config.cache.enabled) await jobsPart.start()
      ctx.lifecycle.phase = 'serving'
      await replicas.start()
      keyUse.start()
      // Through a change of GATEWAY_SECRET (step 2), what the replicas of step 1 still write
      // (a suspension, their key use) is stored again sealed with the new secret each
      // platform.maintenanceInterval, as the platform token is (docs/operations/deploy.md).
      if (seal?.hasFallback) {
        resealing = clock.setInterval(() => {
          void suspensions.reseal()
          void keyUse.reseal().then((records) => { if (records > 0) log.info({ records }, KEY_USE_RESEALED) })
        }, config.platform.maintenanceMs).unref()
      }
    },
    serving() {
      return ctx.lifecycle.phase !== 'starting'
    },
    drain() {
      ctx.lifecycle.phase = 'stopping'
      drainListener(proxy)
      drainListener(admin)
      jobsPart.drain()
    },
    abortPlatformCalls() {
      client.abortAll()
    },
    async close() {
      if (closed) return
      closed = true
      ctx.lifecycle.phase = 'stopping'
      jobs.endWaits()
      // The listeners answer what comes on the connections they have until these end
      // (server.ts); the fills under way end before Redis and the platform pool close.
      await Promise.all([proxy.close(), admin.close()])
      runner.stop()
      jobsPart.room.close()
      await jobsPart.webhooks.close()
      reports.close()
      await reports.settled()
      // The spans of the last requests and fills are sent before the process goes.
      await tracing?.close()
      await rateLimiter.close()
      clock.clearInterval(resealing)
      suspensions.close()
      failures.close()
      reloader.close()
      await usage.close()
      governors.stop()
      history.stop()
      await replicas.close()
      await keyUse.close()
      tokenStore.close()
      await tokens.close()
      redisClock?.stop()
      await shared.close()
      await dispatcher.close().catch(() => undefined)
    },
  }
}
