import type { Logger } from 'pino'
import type { Config } from '../config.js'
import type { Clock, Timers } from '../clock.js'
import type { FailureLog } from '../observe/failure-log.js'
import type { Metrics } from '../observe/metrics.js'
import type { TeamUsage } from '../observe/usage.js'
import type { PlatformClient } from '../platform/client/platform-client.js'
import type { PlatformAnswers } from '../platform/client/answer-buffer.js'
import type { TokenRegistry } from '../platform/tokens/token-registry.js'
import type { RedisBreaker } from '../redis/breaker.js'
import type { RedisBus } from '../redis/bus.js'
import type { RedisClient } from '../redis/client.js'
import type { RedisSeal } from '../redis/seal.js'
import { redisKey } from '../redis/keys.js'
import { MemoryStore } from '../cache/memory-store.js'
import { TieredStore } from '../cache/tiered-store.js'
import { copyPendingMs, RedisStore } from '../cache/redis-store.js'
import { PurgeLedger } from '../cache/purge-ledger.js'
import { FILL_CLOCK_SKEW_MS } from '../cache/cache-entry.js'
import { ReplicaLock, type FillAsker } from '../cache/single-flight.js'
import { longestFreshness } from '../reports/ttl-policy.js'
import { ReportCache } from '../reports/report-cache.js'
import type { Unverified } from './redis-parts.js'
import type { ResultRoom } from '../redis/memory-room.js'

/** The report cache: L1 in memory, L2 in Redis, the two as one store with the purges heard of, and the reads on it. */
export interface CacheParts {
  l1: MemoryStore
  store: TieredStore
  reports: ReportCache
}

export function cacheParts(
  config: Config,
  o: {
    redis: RedisClient | null
    breaker: RedisBreaker | null
    bus: RedisBus | null
    seal: RedisSeal | null
    unverified: Unverified
    log: Logger
    metrics: Metrics
    clock: Clock
    /** The refresh ahead's timers; default stepped timers on the clock. */
    timers?: Timers
    failures: FailureLog
    usage: TeamUsage
    client: PlatformClient
    answers: PlatformAnswers
    tokens: TokenRegistry
    /** This replica's id (observe/replicas.ts), which the entries it fills carry. */
    replica: string
    /** The room in Redis (redis/memory-room.ts): each team's part bounds the copies its fills keep there. */
    room: ResultRoom
    /** How many teams are configured now: each has an even part of L1 (cache.l1MaxBytes). */
    teams: () => number
    /** Whether a team is configured now: a removed team's copies, and those of none, have no part of L1. */
    configured: (team: string) => boolean
    /** Seconds until a team may make platform calls again (its day's platform-seconds spent); 0: it may. */
    spentFor: (team: string, now: number) => number
  },
): CacheParts {
  const { redis, breaker, bus, seal, unverified, log, metrics, clock } = o
  // For the parts that only read the time.
  const now = (): number => clock.now()
  const prefix = config.redis.keyPrefix
  const entryLimits = {
    maxEntryBytes: config.cache.maxEntryBytes,
    maxFreshMs: longestFreshness(config.cache.ttl),
    staleWhileRevalidateMs: config.cache.staleWhileRevalidateMs,
    staleIfErrorMs: config.cache.staleIfErrorMs,
  }
  // Sealed, but more than this gateway stores, or filled before a purge: counted with the forgeries.
  const refusedEntry = (where: string, why: string): void => {
    metrics.redisUnverified.inc({ what: 'entry' })
    log.warn({ what: 'entry', where, why }, 'ignoring a report entry read from redis')
  }
  // With L1 off, the store keeps the entry last read for each key (redis-store.ts).
  const keepReads = config.cache.l1MaxBytes === 0
  const l2 = redis && breaker
    ? new RedisStore({
        redis, breaker, prefix, seal, onUnverified: (key) => unverified('entry', key), limits: entryLimits, onRefused: refusedEntry, now, keepReads,
        copyPart: () => o.room.copyPart(),
        onOverPart: (team) => metrics.copiesOverPart.inc({ team }),
        pendingMs: copyPendingMs(config.redis.commandTimeoutMs),
      })
    : null
  const l1 = new MemoryStore({ maxBytes: config.cache.l1MaxBytes, now, teams: o.teams, configured: o.configured })
  const store = new TieredStore({
    l1,
    l2,
    bus,
    log,
    maxEntryBytes: config.cache.maxEntryBytes,
    onRefused: refusedEntry,
    purges: new PurgeLedger({
      // No entry outlives its fill by more than this, nor a job's copy of one (kept jobs.keep
      // after the job's end, which may take an entry that old): older purges reach none.
      keepMs: entryLimits.maxFreshMs + Math.max(entryLimits.staleWhileRevalidateMs, entryLimits.staleIfErrorMs) + config.jobs.keepMs + FILL_CLOCK_SKEW_MS,
      shared: redis ? { redis, seal, key: redisKey.purges(prefix) } : null,
      log,
      onUnverified: (where) => unverified('purge', where),
      now,
    }),
    now,
  })
  // A copy stored by any replica's fill replaces an older one this replica holds.
  const onStored = (key: string, fetchedAt: number): void => void store.takeNewer(key, fetchedAt)
  // A team waiting on another replica for a fill this replica leads: the fill waits for that team's seat too.
  const joined = { reports: null as ReportCache | null }
  const onJoined = (key: string, asker: FillAsker): void => joined.reports?.joinedElsewhere(key, asker.team, asker.priority, asker.fillSpan)
  const lock = redis && breaker && bus ? new ReplicaLock({ redis, breaker, bus, prefix, lockTtlMs: config.cache.lockTtlMs, clock, onStored, onJoined }) : null
  const reports = new ReportCache({ replica: o.replica, failures: o.failures, config, store, lock, metrics, log, client: o.client, answers: o.answers, usage: o.usage, tokens: o.tokens, clock, timers: o.timers, spentFor: o.spentFor, teams: o.teams, configured: o.configured })
  joined.reports = reports
  return { l1, store, reports }
}
