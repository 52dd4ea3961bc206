import type { Logger } from 'pino'
import type { Dispatcher } from 'undici'
import type { Config } from '../config.js'
import type { Clock } from '../clock.js'
import type { SecretSet } from '../observe/logger.js'
import type { Metrics } from '../observe/metrics.js'
import type { GaugeReading, History } from '../observe/history.js'
import type { TeamUsage } from '../observe/usage.js'
import type { TeamDirectory } from '../access/team-auth.js'
import type { RedisBreaker } from '../redis/breaker.js'
import type { RedisBus } from '../redis/bus.js'
import type { RedisClient } from '../redis/client.js'
import type { RedisSeal } from '../redis/seal.js'
import { createPlatformPool } from '../platform/client/pool.js'
import { PlatformClient } from '../platform/client/platform-client.js'
import { PlatformAnswers } from '../platform/client/answer-buffer.js'
import { probeStatus, probeTokens } from '../platform/client/token-probe.js'
import { PlatformGovernors } from '../platform/governor/platform-governors.js'
import { PlatformFailing } from '../platform/client/platform-failing.js'
import { RefusalLog } from '../platform/client/refusal-log.js'
import { TokenRegistry } from '../platform/tokens/token-registry.js'
import { LoginGate } from '../platform/tokens/login-gate.js'
import { TokenVerdicts } from '../platform/tokens/token-verdict.js'

/** What talks to the platform: the pool, the tokens, the governors of the calls, the one client, the answers held. */
export interface PlatformParts {
  dispatcher: Dispatcher
  tokens: TokenRegistry
  governors: PlatformGovernors
  client: PlatformClient
  answers: PlatformAnswers
  /** The credentials whose latest platform calls failed on this replica (readiness's `platform:<credential>`). */
  failing: PlatformFailing
  /** Each credential's calls in flight and waiting, its limit and latency floor: the gauges of the last hour. */
  gauges(): GaugeReading[]
  /** Probes each credential's token, once the gateway serves; never while the probe is paused. */
  probeTokens(): Promise<void>
}

export function platformParts(
  config: Config,
  o: {
    /** The platform's connection pool; default one made from config.platform. */
    dispatcher?: Dispatcher
    log: Logger
    auditLog: Logger
    secrets: SecretSet
    metrics: Metrics
    clock: Clock
    /** The time replicas compare through Redis (the platform tokens' versions, the platform pauses' ends): Redis' clock as this replica reads it (default `clock`'s). */
    sharedNow?: () => number
    redis: RedisClient | null
    breaker: RedisBreaker | null
    bus: RedisBus | null
    seal: RedisSeal | null
    teams: TeamDirectory
    usage: TeamUsage
    history: History
    /** This replica's id: the origin its token changes name. */
    replica?: string
  },
): PlatformParts {
  const { log, auditLog, metrics, clock, redis, breaker, teams } = o
  // For the parts that only read the time.
  const now = (): number => clock.now()
  const dispatcher = o.dispatcher ?? createPlatformPool(config.platform)
  const logins = new LoginGate({
    redis,
    breaker,
    prefix: config.redis.keyPrefix,
    minIntervalMs: config.platform.loginMinIntervalMs,
    // A login's longest: its answer's headers, then its body, each within platform.timeout.
    longestLoginMs: 2 * config.platform.timeoutMs,
    shared: Boolean(config.gatewaySecret) && redis !== null,
    log,
    clock,
  })
  const tokens = new TokenRegistry(config, {
    dispatcher,
    log,
    secrets: o.secrets,
    timeoutMs: config.platform.timeoutMs,
    maxPauseMs: config.platform.maxPauseMs,
    refreshBeforeMs: config.platform.refreshBeforeMs,
    expiryWarningsMs: config.platform.expiryWarningsMs,
    filePollMs: config.platform.tokenFilePollMs,
    onFileRead: (credential) => metrics.tokenFileReads.inc({ credential }),
    maintenanceMs: config.platform.maintenanceMs,
    onCheck: (credential) => metrics.tokenChecks.inc({ credential }),
    logins,
    clock,
    // A change's rank is its time (token-order.ts): on Redis' clock, the newest change wins
    // whichever replica's clock is off.
    ...(o.sharedNow ? { versionNow: o.sharedNow } : {}),
    gatewaySecret: config.gatewaySecret,
    ...(o.replica === undefined ? {} : { replica: o.replica }),
  })
  for (const provider of tokens.all()) {
    provider.on('change', ({ state, previous, reason, actor }) => {
      // A replica adopting the token it already read itself (a file rotation seen by all) changed nothing.
      if (previous?.fingerprint === state.fingerprint) return
      metrics.tokenChanges.inc({ credential: provider.name, reason })
      // On every replica the line names who made the change: the operator (`actor`, null
      // when none did), the reason where it was made (`origin`) and that replica.
      auditLog.info(
        {
          credential: provider.name,
          reason,
          source: state.source,
          oldFingerprint: previous?.fingerprint ?? null,
          newFingerprint: state.fingerprint,
          actor: actor ?? state.origin.actor,
          origin: state.origin.reason,
          originReplica: state.origin.replica,
          version: state.version,
        },
        'platform token changed',
      )
    })
  }
  // A pause's end stored in Redis is on Redis' clock: a replica that starts with its clock off takes it for the time it has left.
  const governors = new PlatformGovernors({ config, log, metrics, redis, breaker, bus: o.bus, seal: o.seal, weightOf: (team) => teams.weightOf(team), limitsOf: (team) => teams.limitsOf(team), clock, ...(o.sharedNow ? { sharedNow: o.sharedNow } : {}) })
  // Never while the platform throttles the probe's route or the credential: a 429 says nothing of the token.
  const probePaused = (credential: string): boolean => governors.paused(credential, config.platform.probe?.path)
  const failing = new PlatformFailing()
  const client: PlatformClient = new PlatformClient({
    dispatcher,
    timeoutMs: config.platform.timeoutMs,
    defaultBaseUrl: config.platform.baseUrl,
    governors,
    // The probe is a call of this client's own, made only once it serves.
    verdicts: new TokenVerdicts({ probe: (provider, token) => probeStatus(client, config.platform.probe, provider, token), probePaused, now }),
    refusals: new RefusalLog({ log, metrics, now }),
    usage: o.usage,
    history: o.history,
    onRetried: (credential) => metrics.platformRetries.inc({ credential }),
    clock,
    maxPauseMs: config.platform.maxPauseMs,
    failing,
    maxDecodedBytes: config.platform.bufferTotalBytes,
    holdsScrubbed: (text) => o.secrets.holdsScrubbed(text),
  })
  // A credential pause is tested with the probe call and the token in use.
  governors.probeWith(async (credential) => {
    const provider = tokens.get(credential)
    const state = provider.current()
    if (state) await probeStatus(client, config.platform.probe, provider, state.token, true)
  })
  const answers = new PlatformAnswers({
    totalBytes: config.platform.bufferTotalBytes,
    readIdleMs: config.platform.readIdleTimeoutMs,
    onSlowReader: (credential) => metrics.platformSlowReaders.inc({ credential }),
    onRefused: (credential) => metrics.answerRefusals.inc({ credential }),
  })
  return {
    dispatcher,
    tokens,
    governors,
    client,
    answers,
    failing,
    gauges: () => governors.views().map((g) => ({ credential: g.credential, inFlight: g.inFlight, waiting: g.queued, limit: g.limit, floorMs: g.floorMs })),
    probeTokens: () => probeTokens(tokens, client, config.platform.probe, log, probePaused),
  }
}
