import type { Logger } from 'pino'
import type { Config, LoadOptions } from '../config.js'
import type { Clock } from '../clock.js'
import type { Metrics } from '../observe/metrics.js'
import type { SecretSet } from '../observe/logger.js'
import type { KeyUse } from '../observe/key-use.js'
import type { RedisBreaker } from '../redis/breaker.js'
import type { RedisBus } from '../redis/bus.js'
import type { RedisClient } from '../redis/client.js'
import { TeamDirectory } from '../access/team-auth.js'
import { TeamReloader } from '../access/team-reload.js'
import { AdminAuth } from '../access/admin-auth.js'
import { RateLimiter } from '../access/rate-limit.js'
import { TeamUsage } from '../observe/usage.js'

/** Who may call: the teams and their keys, reloaded without a restart, the admin tokens; and what each team may and did use. */
export interface TeamParts {
  teams: TeamDirectory
  reloader: TeamReloader
  adminAuth: AdminAuth
  rateLimiter: RateLimiter
  usage: TeamUsage
}

export function teamParts(
  config: Config,
  o: {
    redis: RedisClient | null
    breaker: RedisBreaker | null
    bus: RedisBus | null
    log: Logger
    auditLog: Logger
    metrics: Metrics
    /** The secrets scrubbed from the log: admin tokens a reload reads join them. */
    secrets?: SecretSet
    /** Where the keys a reload removes are kept, to be listed with their use for 30 days. */
    keyUse?: KeyUse
    clock: Clock
    /** How far Redis' clock is ahead of `clock` (ms), as last read: the rate-limit windows are on Redis' clock. */
    redisOffsetMs?: () => number
    /** Where the teams are reloaded from; default the process environment. null: never. */
    configSource?: LoadOptions | null
  },
): TeamParts {
  const { redis, breaker, metrics, clock } = o
  const prefix = config.redis.keyPrefix
  const teams = new TeamDirectory(config.teams, () => clock.now())
  metrics.watchKeyLifetimes(() => teams.keyLifetimes())
  const adminAuth = new AdminAuth(config.admin.tokens, [config.admin.token, config.admin.viewerToken])
  const source = o.configSource === undefined ? { env: process.env } : o.configSource
  return {
    teams,
    reloader: new TeamReloader({ config, teams, adminAuth, log: o.log, auditLog: o.auditLog, metrics, secrets: o.secrets, bus: o.bus, onKeysChanged: (change) => void o.keyUse?.keysChanged(change), source: config.demo ? null : source, pollMs: config.teamsReload.pollMs, clock }),
    adminAuth,
    rateLimiter: new RateLimiter({ redis, breaker, prefix, teams, syncMs: config.redis.rateLimitSyncMs, clock, ...(o.redisOffsetMs ? { offsetMs: o.redisOffsetMs } : {}) }),
    usage: new TeamUsage({ redis, breaker, prefix, metrics, flushMs: config.usage.flushMs, retentionDays: config.usage.retentionDays, clock }),
  }
}
