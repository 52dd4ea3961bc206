import type { Dispatcher } from 'undici'
import type { Logger } from 'pino'
import type { Config } from './config.js'
import type { BuildInfo } from './build-info.js'
import type { SecretSet } from './logger.js'
import type { Metrics } from './metrics.js'
import type { RedisBreaker, RedisBus, RedisClient } from './redis.js'
import type { TokenRegistry } from './platform/token-registry.js'
import type { TeamDirectory } from './teams/team-auth.js'
import type { RateLimiter } from './teams/rate-limit.js'
import type { ReportCache } from './reports/report-cache.js'
import type { CampaignOwners } from './teams/campaign-owners.js'
import type { PlatformGovernors } from './platform/platform-governors.js'
import type { PlatformAnswers } from './platform/answer-buffer.js'
import type { TeamUsage } from './teams/team-usage.js'
import type { AdminAuth } from './routes/admin-auth.js'
import type { Clock } from './clock.js'

/** What the routes of both listeners share; built once by createGateway. */
export interface GatewayContext {
  config: Config
  log: Logger
  secrets: SecretSet
  metrics: Metrics
  dispatcher: Dispatcher
  tokens: TokenRegistry
  teams: TeamDirectory
  adminAuth: AdminAuth
  usage: TeamUsage
  rateLimiter: RateLimiter
  redis: RedisClient | null
  breaker: RedisBreaker | null
  bus: RedisBus | null
  reports: ReportCache
  campaignOwners: CampaignOwners
  /** The platform calls of each credential: slots, queue, 429 pause. */
  governors: PlatformGovernors
  /** Platform answers held for their callers: what their slots do not wait for. */
  answers: PlatformAnswers
  /** Where this replica is in its life: readiness is 503 unless `serving`. */
  lifecycle: { phase: 'starting' | 'serving' | 'stopping' }
  /** What runs, and since when (epoch ms). */
  build: BuildInfo & { startedAt: number }
  /** The gateway's time and timers (tests pass a fake clock). */
  clock: Clock
}
