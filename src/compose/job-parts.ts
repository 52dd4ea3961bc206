import { finalityFields } from '../reports/finality.js'
import type { Logger } from 'pino'
import type { Config } from '../config.js'
import type { Clock } from '../clock.js'
import type { RedisClient } from '../redis/client.js'
import type { RedisBreaker } from '../redis/breaker.js'
import type { ResultRoom } from '../redis/memory-room.js'
import type { RedisSeal } from '../redis/seal.js'
import type { RedisBus } from '../redis/bus.js'
import type { ReportCache } from '../reports/report-cache.js'
import type { TokenRegistry } from '../platform/tokens/token-registry.js'
import type { PlatformGovernors } from '../platform/governor/platform-governors.js'
import { workClass } from '../reports/work-class.js'
import { MemoryJobStore, type JobStore } from '../jobs/job-store.js'
import { RedisJobStore } from '../jobs/redis-job-store.js'
import { JobRunner } from '../jobs/job-runner.js'
import { Jobs } from '../jobs/jobs.js'
import { JobWaits } from '../jobs/job-waits.js'
import { accountRefusal, figuresAt, jobStatus, resultPurged, type JobFinality, type PurgeCheck } from '../jobs/job.js'
import { WebhookDeliveries } from '../jobs/webhook-deliveries.js'
import { MemoryDeliveryStore, type DeliveryStore, type OutboxBounds } from '../jobs/delivery-store.js'
import { RedisDeliveryStore } from '../jobs/redis-delivery-store.js'
import type { CanonicalReport } from '../reports/report-query.js'
import type { TeamDirectory } from '../access/team-auth.js'
import type { TeamSuspensions } from '../access/team-suspensions.js'
import { scopeRefusal } from '../access/scope.js'
import type { Unverified } from './redis-parts.js'
import type { FailureLog } from '../observe/failure-log.js'
import type { Metrics } from '../observe/metrics.js'

/** Report jobs: where they live, the runner of this replica, and the jobs as callers see them. */
export interface JobParts {
  jobs: Jobs
  runner: JobRunner
  /** The pushes of ended jobs to their teams' webhooks: the outbox, and this replica's deliverer. */
  webhooks: WebhookDeliveries
  /** The room for the teams' job results in Redis: each team's bound of kept results. */
  room: ResultRoom
  /** Reads the room, listens for jobs asked on other replicas, then starts this replica's runner and deliverer. */
  start(): Promise<void>
  /**
   * The replica's stop begins: with the jobs in Redis its runner starts no job from now on,
   * since a call started then would be aborted at the grace's end, the platform's work lost
   * (the replicas not stopping run them; those it runs end here). In memory, the jobs are
   * this replica's alone: it goes on running them until it closes.
   */
  drain(): void
}

/** The bus channel on which a replica says that a job is due (asked, or handed back): every runner looks at once. */
const JOBS_ASKED = 'jobs-asked'

export function jobParts(
  config: Config,
  o: { teams: TeamDirectory; suspensions: Pick<TeamSuspensions, 'secondsLeft'>; redis: RedisClient | null; breaker: RedisBreaker | null; seal: RedisSeal | null; unverified: Unverified; reports: ReportCache; tokens: TokenRegistry; governors: PlatformGovernors; clock: Clock; redisClock: Clock; log: Logger; failures: FailureLog; metrics: Metrics; bus: RedisBus | null; replica: string; spentFor: (team: string, now: number) => number; room: ResultRoom },
): JobParts {
  const { redis, seal, log, governors } = o
  if (redis && !seal) log.warn('GATEWAY_SECRET is not set: report jobs are kept in this replica\'s memory, not shared through Redis')
  // The shared store (stores() below): else jobs in memory are this replica's alone.
  const shared = redis !== null && seal !== null
  const bus = shared ? o.bus : null
  // The shared store's times (leases, due times) are on Redis' clock: each replica writes them and the others compare them.
  const clock = shared ? o.redisClock : o.clock
  const announce = bus ? () => void bus.publish(JOBS_ASKED, '1').catch((err: unknown) => log.debug({ err }, 'announcing a report job failed: the other runners find it at their next look')) : undefined
  const finality = (report: CanonicalReport, at: number): JobFinality => finalityFields(report.dateFrom, report.dateTo, at, config.cache)
  const purged: PurgeCheck = (copy, key) => o.reports.purged(copy, key)
  // A delivery lives through its retries and its last attempt's claim, then jobs.keep.
  const { webhooks: w } = config
  const bounds: OutboxBounds = { keepMs: config.jobs.keepMs, lifeMs: w.retryForMs + w.timeoutMs + config.jobs.leaseMs + config.jobs.keepMs, perTeam: w.perTeam }
  const { store, outbox } = stores(config, o, bounds)
  const { room } = o
  const webhooks = new WebhookDeliveries({ store: outbox, settings: w, platformUrls: w.platformUrls, target: (team) => o.teams.webhookOf(team), suspendedFor: (team) => o.suspensions.secondsLeft(team), clock, log, replica: o.replica, leaseMs: config.jobs.leaseMs, failures: o.failures })
  const runner = new JobRunner({
    store,
    reads: o.reports,
    provider: (credential) => o.tokens.get(credential),
    settings: config.jobs,
    clock,
    log,
    runner: o.replica,
    maxEntryBytes: config.cache.maxEntryBytes,
    failures: o.failures,
    onRun: (outcome) => o.metrics.reportJobs.inc({ outcome }),
    // Added to the outbox by the end's own step in the store (once per job however often
    // told); the body is the status GET /api/v1/jobs/{id} answers for the ended job, expired
    // when a purge made while its call was at the platform reached its result.
    pushOf: (job, now) => webhooks.deliveryOf(job.team, jobStatus(job, null, now, finality(job.report, figuresAt(job, now)), resultPurged(job, purged)), now),
    onEnded: () => webhooks.poke(),
    ...(announce ? { announce } : {}),
    spentFor: o.spentFor,
    suspendedFor: (team) => o.suspensions.secondsLeft(team),
    refusal: (job) => scopeRefusal(o.teams.teamOf(job.team), job.team, job.credential, job.report.advertiserIds) ?? accountRefusal(job, (key, credential, report) => o.reports.isKeyOf(key, credential, report)),
    foreign: (job, account) => accountRefusal(job, (key, credential, report) => o.reports.isKeyOf(key, credential, report, account)),
    teams: o.teams,
    bound: () => room.bound(),
  })
  const jobs = new Jobs({
    store,
    finality,
    runner,
    waits: new JobWaits(config.jobs, (team, waiting) => o.metrics.jobWaits.set({ team }, waiting)),
    ...(announce ? { announce } : {}),
    settings: config.jobs,
    clock,
    purged,
    expectedSeconds: (credential, team, report) => {
      const ms = governors.ownExpectedMs(credential, team, workClass(report))
      return ms === null ? null : Math.round(ms) / 1000
    },
  })
  return {
    jobs,
    runner,
    webhooks,
    room,
    async start() {
      await room.start()
      await bus?.subscribe(JOBS_ASKED, () => runner.poke())
      runner.start()
      webhooks.start()
    },
    drain() {
      if (shared) runner.stop()
    },
  }
}

/**
 * The jobs and their webhook outbox: in Redis when it is there with GATEWAY_SECRET (shared
 * only sealed), else in this replica's memory; the outbox beside its jobs either way, so
 * that a job's end adds its delivery in the same step.
 */
function stores(config: Config, o: { redis: RedisClient | null; seal: RedisSeal | null; unverified: Unverified }, bounds: OutboxBounds): { store: JobStore; outbox: DeliveryStore } {
  const { redis, seal } = o
  if (!redis || !seal) {
    const outbox = new MemoryDeliveryStore(bounds)
    return { store: new MemoryJobStore(outbox), outbox }
  }
  const onUnverified = (key: string): void => o.unverified('job', key)
  const outbox = new RedisDeliveryStore({ redis, seal, prefix: config.redis.keyPrefix, bounds, onUnverified })
  return { store: new RedisJobStore({ redis, seal, prefix: config.redis.keyPrefix, maxEntryBytes: config.cache.maxEntryBytes, onUnverified, outbox }), outbox }
}
