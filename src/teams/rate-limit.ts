import type { TeamConfig } from '../config.js'
import type { RedisBreaker, RedisClient } from '../redis.js'

export interface RateDecision {
  allowed: boolean
  retryAfterSec: number
}

// Fixed windows: cheap (one INCR), shared across replicas through Redis, and exact
// enough for a team budget. Without Redis, or while it is down, each replica counts
// on its own.
export class RateLimiter {
  readonly #local = new Map<string, { window: number; count: number }>()
  readonly #redis: RedisClient | null
  readonly #breaker: RedisBreaker | null
  readonly #prefix: string
  readonly #now: () => number

  constructor(opts: { redis: RedisClient | null; breaker: RedisBreaker | null; prefix: string; now?: () => number }) {
    this.#redis = opts.redis
    this.#breaker = opts.breaker
    this.#prefix = opts.prefix
    this.#now = opts.now ?? Date.now
  }

  async hit(team: TeamConfig): Promise<RateDecision> {
    const limit = team.rateLimit
    if (!limit) return { allowed: true, retryAfterSec: 0 }
    const now = this.#now()
    const window = Math.floor(now / limit.windowMs)
    const retryAfterSec = Math.max(1, Math.ceil(((window + 1) * limit.windowMs - now) / 1000))
    let count: number | null = null
    if (this.#redis && this.#breaker) {
      const key = `${this.#prefix}rl:${team.name}:${window}`
      const redis = this.#redis
      count = await this.#breaker.run(async () => {
        const [[, n]] = (await redis.multi().incr(key).pexpire(key, limit.windowMs + 1000).exec()) as [[unknown, number]]
        return n
      }, null)
    }
    count ??= this.#countLocally(team.name, window)
    return { allowed: count <= limit.max, retryAfterSec }
  }

  #countLocally(team: string, window: number): number {
    const entry = this.#local.get(team)
    if (!entry || entry.window !== window) {
      this.#local.set(team, { window, count: 1 })
      return 1
    }
    entry.count += 1
    return entry.count
  }
}
