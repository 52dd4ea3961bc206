import type { TeamConfig } from '../config.js'
import type { RedisBreaker } from '../redis/breaker.js'
import type { RedisClient } from '../redis/client.js'
import { systemClock, type Clock, type Timer } from '../clock.js'
import { redisKey } from '../redis/keys.js'

export interface RateDecision {
  allowed: boolean
  retryAfterSec: number
  /** Calls left in the window after this one, as far as this replica knows. */
  remaining: number
  /** Seconds until the window ends (0 without a limit). */
  resetSec: number
}

const UNLIMITED: RateDecision = { allowed: true, retryAfterSec: 0, remaining: Number.POSITIVE_INFINITY, resetSec: 0 }

/** Default sync interval of the team counters with Redis. */
export const DEFAULT_RATE_SYNC_MS = 500

interface Window {
  team: TeamConfig
  /** Fixed-window number: floor(now / windowMs). */
  window: number
  /** The count across replicas as of the last sync, this replica's synced hits included. */
  shared: number
  /** This replica's hits since the last sync. */
  pending: number
}

export interface RateLimiterOptions {
  redis: RedisClient | null
  breaker: RedisBreaker | null
  prefix: string
  syncMs?: number
  clock?: Clock
}

/**
 * Fixed windows per team, shared across replicas without a Redis round trip per request:
 * each replica counts locally and adds its count to the team's Redis counter
 * every `syncMs`, reading back everyone's total (as Kong's `sync_rate` and APISIX's
 * delayed sync do). A team can exceed its limit by at most what all replicas admit in
 * one sync interval, since each replica learns the others' hits only at its next sync.
 * Without Redis, or while it is down, each replica counts on its own.
 */
export class RateLimiter {
  readonly #windows = new Map<string, Window>()
  readonly #o: RateLimiterOptions
  readonly #clock: Clock
  #timer: Timer | null = null
  #syncing: Promise<void> | null = null

  constructor(opts: RateLimiterOptions) {
    this.#o = opts
    this.#clock = opts.clock ?? systemClock
  }

  start(): void {
    if (!this.#o.redis || this.#timer) return
    this.#timer = this.#clock.setInterval(() => void this.sync(), this.#o.syncMs ?? DEFAULT_RATE_SYNC_MS)
    this.#timer.unref()
  }

  /** Stops syncing after one last sync, so this replica's hits are not lost to the others. */
  async close(): Promise<void> {
    if (this.#timer) this.#clock.clearInterval(this.#timer)
    this.#timer = null
    await this.sync()
  }

  /** Counts a call of the team at `now` (the hit path passes the clock reading it took). */
  hit(team: TeamConfig, now: number = this.#clock.now()): RateDecision {
    return this.#decide(team, true, now)
  }

  /** The team's standing without counting a call (for answers refused before the limit). */
  peek(team: TeamConfig): RateDecision {
    return this.#decide(team, false, this.#clock.now())
  }

  #decide(team: TeamConfig, count: boolean, now: number): RateDecision {
    const limit = team.rateLimit
    if (!limit) return UNLIMITED
    const window = Math.floor(now / limit.windowMs)
    let state = this.#windows.get(team.name)
    if (!state || state.window !== window) {
      state = { team, window, shared: 0, pending: 0 }
      this.#windows.set(team.name, state)
    }
    // A reload may have changed the team: syncs follow its current window length.
    state.team = team
    const used = state.shared + state.pending
    const allowed = used < limit.max
    // Refused calls are not counted: a team hammering past its limit does not push its
    // next window's start further away.
    if (allowed && count) state.pending += 1
    const resetSec = Math.ceil(((window + 1) * limit.windowMs - now) / 1000)
    return { allowed, retryAfterSec: Math.max(1, resetSec), remaining: Math.max(0, limit.max - used - (allowed && count ? 1 : 0)), resetSec }
  }

  /** Adds every team's pending hits to Redis in one round trip and reads the totals back. */
  sync(): Promise<void> {
    this.#syncing ??= this.#sync().finally(() => {
      this.#syncing = null
    })
    return this.#syncing
  }

  async #sync(): Promise<void> {
    const { redis, breaker, prefix } = this.#o
    if (!redis || !breaker) return
    const now = this.#clock.now()
    const active = [...this.#windows.values()].filter((w) => {
      const current = w.team.rateLimit && Math.floor(now / w.team.rateLimit.windowMs) === w.window
      if (!current) this.#windows.delete(w.team.name)
      return current
    })
    if (active.length === 0) return
    const sent = active.map((w) => w.pending)
    const results = await breaker.run(async () => {
      const batch = redis.multi()
      for (const [i, w] of active.entries()) {
        const key = redisKey.rateLimit(prefix, w.team.name, w.window)
        batch.incrby(key, sent[i] as number).pexpire(key, (w.team.rateLimit?.windowMs ?? 0) + 1000)
      }
      return (await batch.exec()) ?? null
    }, null)
    if (!results) return
    for (const [i, w] of active.entries()) {
      const [err, total] = results[i * 2] as [Error | null, number]
      if (err) continue
      w.pending -= sent[i] as number
      w.shared = total
    }
  }
}
