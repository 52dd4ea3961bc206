import type { Logger } from 'pino'
import type { Config } from '../config.js'
import type { Metrics } from '../metrics.js'
import type { RedisBreaker, RedisBus, RedisClient } from '../redis.js'
import { CallGovernor } from './call-governor.js'

const PAUSE_CHANNEL = 'platform-pause'

export interface PlatformGovernorsDeps {
  config: Config
  log: Logger
  metrics: Metrics
  redis: RedisClient | null
  breaker: RedisBreaker | null
  bus: RedisBus | null
  /** A team's weight as the running teams say (they reload, issue #8); default 1. */
  weightOf?: (team: string) => number | undefined
  /** A team's own bulkhead as the running teams say (null: the credential's halves). */
  limitsOf?: (team: string) => { maxConcurrent: number | null; queue: number | null } | undefined
}

/**
 * One CallGovernor per credential, and the 429 pause shared by every replica: the
 * replica that got the 429 writes `pause:<credential>` with the pause as its PX and
 * tells the others on the bus; a replica that starts during a pause reads the key.
 * Without Redis a pause stays on the replica that got the 429.
 */
export class PlatformGovernors {
  readonly #d: PlatformGovernorsDeps
  readonly #governors = new Map<string, CallGovernor>()

  constructor(deps: PlatformGovernorsDeps) {
    this.#d = deps
    const { platform } = deps.config
    for (const credential of Object.keys(deps.config.credentials)) {
      const refused = deps.metrics.platformRefused
      this.#governors.set(
        credential,
        new CallGovernor({
          credential,
          maxConcurrent: platform.maxConcurrent,
          queueLimit: platform.queue,
          queueTimeoutMs: platform.queueTimeoutMs,
          weightOf: (team) => deps.weightOf?.(team) ?? 1,
          limitsOf: (team) => deps.limitsOf?.(team),
          log: deps.log,
          onRefused: (reason) => refused.inc({ credential, reason }),
          onPaused: () => deps.metrics.platformPauses.inc({ credential }),
        }),
      )
    }
  }

  all(): CallGovernor[] {
    return [...this.#governors.values()]
  }

  of(credential: string): CallGovernor {
    const governor = this.#governors.get(credential)
    if (!governor) throw new Error(`no governor for credential ${credential}`)
    return governor
  }

  /** Follows the pauses of the other replicas, and any pause under way. */
  async start(): Promise<void> {
    const { bus, redis, breaker } = this.#d
    await bus?.subscribe(PAUSE_CHANNEL, (message) => {
      try {
        const { credential, ms } = JSON.parse(message) as { credential: string; ms: number }
        this.#governors.get(credential)?.pause(ms, 'peer')
      } catch {
        // not a pause message: ignored
      }
    })
    if (!redis || !breaker) return
    for (const governor of this.#governors.values()) {
      const ms = await breaker.run(() => redis.pttl(this.#key(governor.credential)), -2)
      if (ms > 0) governor.pause(ms, 'peer')
    }
  }

  /** The platform answered a call of `credential` with `status`. */
  observe(credential: string, status: number, retryAfter: string | undefined): void {
    const governor = this.of(credential)
    if (status !== 429) {
      governor.answered()
      return
    }
    const ms = governor.throttled(retryAfter)
    if (ms <= 0) return
    void this.#share(credential, ms)
  }

  /** A read was sent again after a 502/503/504 or a reset. */
  retried(credential: string): void {
    this.#d.metrics.platformRetries.inc({ credential })
  }

  async #share(credential: string, ms: number): Promise<void> {
    const { bus, redis, breaker, log } = this.#d
    if (!redis || !breaker) return
    const key = this.#key(credential)
    // The longer of two pauses wins: a key with more time left is not shortened.
    const left = await breaker.run(() => redis.pttl(key), -2)
    if (left >= ms) return
    await breaker.run(() => redis.set(key, String(ms), 'PX', ms), null)
    await bus?.publish(PAUSE_CHANNEL, JSON.stringify({ credential, ms })).catch((err: Error) => {
      log.warn({ err: { message: err.message }, credential }, 'the platform pause could not be sent to the other replicas')
    })
  }

  #key(credential: string): string {
    return `${this.#d.config.redis.keyPrefix}pause:${credential}`
  }
}
