import type { Logger } from 'pino'
import type { Config } from '../config.js'
import type { Clock } from '../clock.js'
import type { Metrics } from '../observe/metrics.js'
import { RedisBreaker, RedisWatch } from '../redis/breaker.js'
import { RedisBus } from '../redis/bus.js'
import { clientAddress, closeRedis, createRedisClient, failureCause, redisConnectTimeoutMs, type RedisClient } from '../redis/client.js'
import { unreachedMasters } from '../redis/cluster-masters.js'
import { RedisSeal } from '../redis/seal.js'
import { installIoredisCommandTimeoutPatch } from '../redis/command-timeout.js'
import { redisKey } from '../redis/keys.js'

// Longest wait at start for the Redis connection before serving without it: a Cluster
// client, which first learns the slots, is ready later than a single connection.
const REDIS_START_WAIT_MS = 2000

/** The kinds of values read from Redis that are sealed: the `what` of gateway_redis_unverified_total. */
export const UNVERIFIED_KINDS = ['entry', 'message', 'pause', 'purge', 'replica', 'key-use', 'job', 'owner-list', 'suspension', 'count', 'token'] as const

/** A value read from Redis without this gateway's seal: counted, logged, and read as absent (pauses count their own). */
export type Unverified = (what: Exclude<(typeof UNVERIFIED_KINDS)[number], 'pause'>, where: string) => void

/** What the replicas share: Redis, its breaker and watch, the seal and the bus; all null without Redis. */
export interface RedisParts {
  redis: RedisClient | null
  breaker: RedisBreaker | null
  seal: RedisSeal | null
  bus: RedisBus | null
  unverified: Unverified
  /** Names what runs each time Redis answers again (the circuit closed, a new connection) or accepts writes again after refusing them (OOM, READONLY…). */
  whenBack(fn: () => void): void
  /** Starts the watch and sets the gauges from what it found. */
  start(): Promise<void>
  /** Stops the watch, then closes the bus and the connection. */
  close(): Promise<void>
}

export function redisParts(config: Config, o: { redis?: RedisClient | null; log: Logger; metrics: Metrics; clock: Clock }): RedisParts {
  const { log, metrics, clock } = o
  // Before any Redis client of this process sends a command: its timeouts then measure Redis, not this process's stalls.
  installIoredisCommandTimeoutPatch(log)
  const redis = o.redis !== undefined ? o.redis : createRedisClient(config.redis, log)
  // What runs when Redis answers again: named by whenBack, once the parts it reaches are built.
  let back = (): void => undefined
  const breaker = redis
    ? new RedisBreaker({
        cooldownMs: config.redis.breakerCooldownMs,
        log,
        onChange: (s) => {
          metrics.redisUp.set(s === 'closed' ? 1 : 0)
          if (s === 'closed') back()
        },
        onWritable: (writable) => {
          metrics.redisWritable.set(writable ? 1 : 0)
          // What was not written meanwhile (a suspension, a kept copy, a token) is written now: the circuit stayed closed, so no close says so.
          if (writable) back()
        },
        onSkippedWrite: () => metrics.redisSkippedWrites.inc(),
        address: () => clientAddress(redis, config.redis),
        cause: (err) => failureCause(redis, err),
        whole: () => unreachedMasters(redis).length === 0,
        commandTimeoutMs: config.redis.commandTimeoutMs,
        now: () => clock.now(),
      })
    : null
  // Checked from the start, not only when a request needs Redis: an outage without traffic shows too.
  const startWaitMs = Math.max(redisConnectTimeoutMs(config.redis), REDIS_START_WAIT_MS)
  const watch = redis && breaker ? new RedisWatch(redis, breaker, { intervalMs: config.redis.breakerCooldownMs, connectTimeoutMs: startWaitMs, keyPrefix: config.redis.keyPrefix, onReconnect: () => back(), clock }) : null
  // Redis is shared, not trusted: what replicas write there is sealed.
  const seal = config.gatewaySecret ? new RedisSeal(config.gatewaySecret, config.gatewaySecretFallback) : null
  // Each series from 0, so that an alert on increase() sees the first forged value too.
  if (redis) for (const what of UNVERIFIED_KINDS) metrics.redisUnverified.inc({ what }, 0)
  const unverified: Unverified = (what, where) => {
    metrics.redisUnverified.inc({ what })
    log.warn({ what, where }, "ignoring a value in redis that does not carry this gateway's seal (GATEWAY_SECRET)")
  }
  const bus = redis ? new RedisBus(redis, redisKey.bus(config.redis.keyPrefix), log, { seal, onUnverified: (channel) => unverified('message', channel), startWaitMs }) : null
  return {
    redis,
    breaker,
    seal,
    bus,
    unverified,
    whenBack(fn) {
      back = fn
    },
    async start() {
      if (!watch || !breaker) return
      await watch.start()
      metrics.redisUp.set(breaker.state === 'closed' ? 1 : 0)
      metrics.redisWritable.set(breaker.writable ? 1 : 0)
    },
    async close() {
      watch?.close()
      await bus?.close()
      if (redis) await closeRedis(redis)
    },
  }
}
