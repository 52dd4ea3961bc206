import type { Logger } from 'pino'
import type { RedisBreaker } from '../../redis/breaker.js'
import type { RedisClient } from '../../redis/client.js'
import type { RedisSeal } from '../../redis/seal.js'
import type { CallGovernor } from './call-governor.js'
import { latencyClass, type LimitEstimator } from './limit-estimator.js'
import { routeTemplate } from './throttle-pauses.js'
import { systemClock, type Clock, type Timer } from '../../clock.js'

/** What one platform call tells the learned limit. */
export interface CallSample {
  url: string
  team: string
  /** From sending the call to its answer's headers (the body's size and the caller's reading do not count). */
  latencyMs: number
  /** Calls of the credential in flight once it had its permit, itself included: every replica's (permits.ts). */
  inFlight: number
  outcome: 'ok' | 'throttled' | 'failed'
}

/**
 * Writes this replica's new limit for window `epoch` unless a replica already wrote one
 * for it or a later window, and answers what is stored then. With no record stored (a
 * Redis restart, a lapse), any replica's limit is written. KEYS: the limit's hash.
 * ARGV: epoch, limit, its sealed record, 1 to write, the record's lifetime (ms).
 */
const SYNC = `
local stored = tonumber(redis.call('HGET', KEYS[1], 'epoch') or '-1')
if (ARGV[4] == '1' or stored < 0) and tonumber(ARGV[1]) > stored then
  redis.call('HSET', KEYS[1], 'epoch', ARGV[1], 'limit', ARGV[2], 'sealed', ARGV[3])
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[5]))
  return 'written'
end
return redis.call('HGET', KEYS[1], 'sealed') or ''
`

// The shared limit outlives a quiet night this long; a gateway started after it begins at
// platform.initialConcurrent again.
const SHARED_LIMIT_TTL_MS = 60 * 60_000

export interface LearnedLimitOptions {
  credential: string
  governor: CallGovernor
  estimator: LimitEstimator
  windowMs: number
  /** The shared limit's hash in Redis (keys.ts), with the client and breaker; null without Redis. */
  shared: { redis: RedisClient; breaker: RedisBreaker; key: string; seal: RedisSeal | null } | null
  log: Pick<Logger, 'info' | 'warn'>
  onLimit: (limit: number, floorMs: number | null) => void
  onChange: (direction: 'up' | 'down' | 'cut') => void
  clock?: Clock
}

/**
 * The limit in force of one credential, learned from the platform's answers
 * (limit-estimator.ts) and, with Redis, shared by every replica: at the end of each
 * window, the first replica whose estimate changes writes it for that window (SYNC), and
 * every replica adopts what is stored, so the replicas move one limit together rather than
 * each its own. The record is sealed (GATEWAY_SECRET): one that is not is ignored. Redis
 * out of reach, each replica goes on learning on its own.
 */
export class LearnedLimit {
  readonly #o: LearnedLimitOptions
  readonly #clock: Clock
  #timer: Timer | null = null
  // The newest window whose shared limit this replica wrote or adopted.
  #epoch = -1
  #syncing = false
  // A change learned here that could not reach Redis yet (it was out, or slow): written at the next sync.
  #unshared = false
  // A record without the seal is logged once, not once a window.
  #forgedSeen = false

  constructor(opts: LearnedLimitOptions) {
    this.#o = opts
    this.#clock = opts.clock ?? systemClock
    opts.governor.setLimit(opts.estimator.limit)
    opts.onLimit(opts.estimator.limit, opts.estimator.floorMs)
  }

  /** Reads the shared limit, then closes a window every windowMs (looked at four times a window, so none runs long). */
  async start(): Promise<void> {
    await this.#sync(false)
    this.#timer = this.#clock.setInterval(() => void this.#tick(), Math.max(1, Math.floor(this.#o.windowMs / 4))).unref()
  }

  stop(): void {
    if (this.#timer) this.#clock.clearInterval(this.#timer)
    this.#timer = null
  }

  /** The latency floor the estimator compares answers with (ms), or null before any answer. */
  get floorMs(): number | null {
    return this.#o.estimator.floorMs
  }

  record(sample: CallSample): void {
    const { governor, estimator } = this.#o
    estimator.record({ at: this.#clock.now(), latencyMs: sample.latencyMs, klass: latencyClass(sample.url), route: routeTemplate(sample.url), team: sample.team, inFlight: sample.inFlight, outcome: sample.outcome })
    estimator.note({ at: this.#clock.now(), inFlight: governor.inFlight, queued: governor.queued })
  }

  /** The platform paused the whole credential (429s from several routes or teams): a hard cut. */
  overload(): void {
    const before = this.#o.estimator.limit
    this.#o.estimator.overload(this.#clock.now())
    this.#apply(before, 'cut')
    // Written with the next window's sync, so the other replicas cut too.
    if (this.#o.estimator.limit !== before) this.#unshared = true
  }

  async #tick(): Promise<void> {
    const { estimator, governor } = this.#o
    const before = estimator.limit
    estimator.note({ at: this.#clock.now(), inFlight: governor.inFlight, queued: governor.queued })
    const step = estimator.tick(this.#clock.now())
    if (step === null) return
    this.#apply(before, step.reason === 'overload' ? 'cut' : 'learned')
    await this.#sync(step.changed || this.#unshared)
  }

  /** The estimator's limit is now in force; `how` says whether this replica learned it (counted) or adopted it. */
  #apply(before: number, how: 'cut' | 'learned' | 'adopted'): void {
    const { estimator, governor, onLimit, onChange } = this.#o
    const limit = estimator.limit
    governor.setLimit(limit)
    onLimit(limit, estimator.floorMs)
    if (limit !== before && how !== 'adopted') onChange(how === 'cut' ? 'cut' : limit > before ? 'up' : 'down')
  }

  async #sync(changed: boolean): Promise<void> {
    const shared = this.#o.shared
    if (!shared || this.#syncing) return
    this.#syncing = true
    try {
      const { redis, breaker, key, seal } = shared
      const epoch = Math.floor(this.#clock.now() / this.#o.windowMs)
      const limit = this.#o.estimator.limit
      const record = JSON.stringify({ limit, epoch })
      const sealed = seal ? seal.sealText(key, record) : record
      const answer = await breaker.run(() => redis.eval(SYNC, 1, key, epoch, limit, sealed, changed ? 1 : 0, SHARED_LIMIT_TTL_MS) as Promise<string>, null)
      if (answer === null) {
        this.#unshared ||= changed
        return
      }
      this.#unshared = false
      if (answer === 'written') {
        this.#epoch = epoch
        return
      }
      if (!answer) return
      const stored = parseRecord(seal ? seal.openText(key, answer) : answer)
      if (stored === null) {
        if (!this.#forgedSeen) this.#o.log.warn({ credential: this.#o.credential, key }, "ignoring a shared platform limit in redis that does not carry this gateway's seal (GATEWAY_SECRET): this replica learns its own")
        this.#forgedSeen = true
        return
      }
      this.#forgedSeen = false
      // A record as new as this replica's last, or newer, is the shared limit; an older one
      // was replaced here since (and this replica's own change is written when it comes).
      if (stored.epoch < this.#epoch || stored.limit === this.#o.estimator.limit) return
      this.#epoch = stored.epoch
      const before = this.#o.estimator.limit
      this.#o.estimator.adopt(stored.limit)
      this.#apply(before, 'adopted')
    } finally {
      this.#syncing = false
    }
  }
}

function parseRecord(text: string | null): { limit: number; epoch: number } | null {
  if (text === null) return null
  try {
    const { limit, epoch } = JSON.parse(text) as { limit?: unknown; epoch?: unknown }
    return Number.isInteger(limit) && (limit as number) > 0 && Number.isInteger(epoch) ? { limit: limit as number, epoch: epoch as number } : null
  } catch {
    return null
  }
}
