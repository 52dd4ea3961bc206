import type { Dispatcher } from 'undici'
import type { Logger } from 'pino'
import type { Config } from '../config.js'
import type { BuildInfo } from '../observe/build-info.js'
import type { SecretSet } from '../observe/logger.js'
import type { Metrics } from '../observe/metrics.js'
import type { RedisBreaker } from '../redis/breaker.js'
import type { TeamSuspensions } from '../access/team-suspensions.js'
import type { RedisBus } from '../redis/bus.js'
import type { RedisClient } from '../redis/client.js'
import type { TokenRegistry } from '../platform/tokens/token-registry.js'
import type { TeamDirectory } from '../access/team-auth.js'
import type { RateLimiter } from '../access/rate-limit.js'
import type { ReportCache } from '../reports/report-cache.js'
import type { CampaignOwners } from '../access/campaign-owners.js'
import type { PlatformGovernors } from '../platform/governor/platform-governors.js'
import type { PlatformAnswers } from '../platform/client/answer-buffer.js'
import type { PlatformFailing } from '../platform/client/platform-failing.js'
import type { TeamUsage } from '../observe/usage.js'
import type { History } from '../observe/history.js'
import type { KeyUse } from '../observe/key-use.js'
import type { LogLevel } from '../observe/log-level.js'
import type { AdminAuth } from '../access/admin-auth.js'
import type { Clock } from '../clock.js'
import type { Tracing } from '../observe/tracing.js'
import type { Jobs } from '../jobs/jobs.js'

/** What the routes of both listeners share; built once by createGateway. */
export interface GatewayContext {
  config: Config
  log: Logger
  /** The audit lines' log (`"kind":"audit"`): written whatever the log level. */
  auditLog: Logger
  secrets: SecretSet
  metrics: Metrics
  dispatcher: Dispatcher
  tokens: TokenRegistry
  teams: TeamDirectory
  adminAuth: AdminAuth
  usage: TeamUsage
  /** This replica's last hour in 10-second buckets (the console's charts). */
  history: History
  /** When each API key was last used, and how often in the last hour (GET /admin/keys). */
  keyUse: KeyUse
  /** The log level, changed at run time on one replica or all (PUT /admin/log-level). */
  logLevel: LogLevel
  rateLimiter: RateLimiter
  /** The teams suspended for a secret of the gateway's in a request, shared by the replicas. */
  suspensions: TeamSuspensions
  redis: RedisClient | null
  breaker: RedisBreaker | null
  bus: RedisBus | null
  reports: ReportCache
  /** Report jobs (reads asked with `Prefer: respond-async`): in Redis, or this replica's memory without it. */
  jobs: Jobs
  campaignOwners: CampaignOwners
  /** The owners of creative sets; null unless `ownership.creativeSets.check` is `lookup`. */
  creativeSetOwners: CampaignOwners | null
  /** The platform calls of each credential: seats, queue, 429 pauses. */
  governors: PlatformGovernors
  /** Platform answers held for their callers: what their seats do not wait for. */
  answers: PlatformAnswers
  /** The credentials whose latest platform calls failed on this replica: `platform:<credential>` under readiness's `degraded`. */
  platformFailing: PlatformFailing
  /** Where this replica is in its life: readiness is 503 unless `serving`. */
  lifecycle: { phase: 'starting' | 'serving' | 'stopping' }
  /** What runs, and since when (epoch ms). */
  build: BuildInfo & { startedAt: number }
  /** The gateway's time and timers (tests pass a fake clock). */
  clock: Clock
  /** OpenTelemetry traces of the proxy listener's requests; null when off (no OTLP endpoint). */
  tracing: Tracing | null
}
