import type { Dispatcher } from 'undici'
import type { Logger } from 'pino'
import type { Config } from './config.js'
import type { SecretSet } from './logger.js'
import type { Metrics } from './metrics.js'
import type { RedisBreaker, RedisBus, RedisClient } from './redis.js'
import type { TokenRegistry } from './platform/token-registry.js'
import type { TeamDirectory } from './teams/team-auth.js'
import type { RateLimiter } from './teams/rate-limit.js'
import type { ReportCache } from './reports/report-cache.js'
import type { CampaignOwners } from './teams/campaign-owners.js'

/** What the routes of both listeners share; built once by createGateway. */
export interface GatewayContext {
  config: Config
  log: Logger
  secrets: SecretSet
  metrics: Metrics
  dispatcher: Dispatcher
  tokens: TokenRegistry
  teams: TeamDirectory
  rateLimiter: RateLimiter
  redis: RedisClient | null
  breaker: RedisBreaker | null
  bus: RedisBus | null
  reports: ReportCache
  campaignOwners: CampaignOwners
  /** Where this replica is in its life: readiness is 503 unless `serving`. */
  lifecycle: { phase: 'starting' | 'serving' | 'stopping' }
  /** The gateway's clock (tests pass a fake one). */
  now: () => number
}
