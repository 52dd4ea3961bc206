import type { TeamConfig } from '../config.js'
import type { TeamDirectory } from './team-auth.js'
import type { RedisBreaker } from '../redis/breaker.js'
import type { RedisClient } from '../redis/client.js'
import { systemClock, type Clock, type Timer } from '../clock.js'
import { redisKey } from '../redis/keys.js'
import { redisScript } from '../redis/script.js'

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

// Adds a replica's hits to a team's window and reads the total back; the window's key
// lives a second past its end, set when the first hits create it.
const ADD_HITS = redisScript<number>('gatewayRateAdd', `
local total = redis.call('INCRBY', KEYS[1], ARGV[1])
if total == tonumber(ARGV[1]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return total`, 1)

interface Window {
  team: TeamConfig
  /** Fixed-window number: floor(now / windowMs). */
  window: number
  /** The count across replicas as of the last sync, this replica's synced hits included. */
  shared: number
  /** This replica's hits since the last sync. */
  pending: number
  /** When `shared` was last read from Redis (0: never). */
  syncedAt: number
}

export interface RateLimiterOptions {
  redis: RedisClient | null
  breaker: RedisBreaker | null
  prefix: string
  /** The teams configured now: a window is kept only for one of them. */
  teams: Pick<TeamDirectory, 'teamOf' | 'onReplace'>
  syncMs?: number
  clock?: Clock
  /**
   * How far Redis' clock is ahead of `clock` (ms; redis/redis-clock.ts), default 0: the
   * windows are numbered on Redis' clock, so that replicas whose clocks disagree count a
   * team's calls in one window, and tell one reset.
   */
  offsetMs?: () => number
}

/**
 * Fixed windows per team, shared across replicas without a Redis round trip per request:
 * each replica counts locally and adds its count to the team's Redis counter
 * every `syncMs`, reading back everyone's total (as Kong's `sync_rate` and APISIX's
 * delayed sync do). Only the teams with hits since the last sync are synced, one command
 * each, on the team's own key (its own hash slot on a Cluster): an idle replica, or a
 * team that stopped calling, costs Redis nothing. A team's first hit after a sync
 * interval without one syncs at once rather than at the next tick, so a replica that was
 * quiet does not go on for an interval on what it learned before. A team can exceed its
 * limit by at most what all replicas admit in one sync interval, since each replica
 * learns the others' hits only at its next sync. Without Redis, or while it is down, each
 * replica counts on its own. The windows kept are the current ones of the teams
 * configured now (each reload, and each sync, drops the rest), however many team names
 * reloads ever brought. A window's number and its reset are read on Redis' clock
 * (`offsetMs`): a replica whose clock ran 30 s ahead counted in the next window for half of
 * each minute, and so admitted the team's whole limit again.
 */
export class RateLimiter {
  readonly #windows = new Map<string, Window>()
  readonly #o: RateLimiterOptions
  readonly #clock: Clock
  readonly #offsetMs: () => number
  readonly #syncMs: number
  #timer: Timer | null = null
  #syncing: Promise<void> | null = null
  #again: Promise<void> | null = null

  constructor(opts: RateLimiterOptions) {
    this.#o = opts
    this.#clock = opts.clock ?? systemClock
    this.#offsetMs = opts.offsetMs ?? (() => 0)
    this.#syncMs = opts.syncMs ?? DEFAULT_RATE_SYNC_MS
    opts.teams.onReplace(() => this.#prune(this.#now()))
  }

  /** How many teams' windows are kept. */
  get size(): number {
    return this.#windows.size
  }

  start(): void {
    if (!this.#o.redis || this.#timer) return
    this.#timer = this.#clock.setInterval(() => void this.sync(), this.#syncMs)
    this.#timer.unref()
  }

  /** Stops syncing after one last sync, so this replica's hits are not lost to the others. */
  async close(): Promise<void> {
    if (this.#timer) this.#clock.clearInterval(this.#timer)
    this.#timer = null
    await this.sync()
  }

  /** Counts a call of the team at `now` (the hit path passes the reading of `clock` it took). */
  hit(team: TeamConfig, now: number = this.#clock.now()): RateDecision {
    return this.#decide(team, true, now + this.#offsetMs())
  }

  /** The team's standing without counting a call (for answers refused before the limit). */
  peek(team: TeamConfig): RateDecision {
    return this.#decide(team, false, this.#now())
  }

  /** Now on Redis' clock, as this replica last read it. */
  #now(): number {
    return this.#clock.now() + this.#offsetMs()
  }

  #decide(team: TeamConfig, count: boolean, now: number): RateDecision {
    const limit = team.rateLimit
    if (!limit) return UNLIMITED
    const window = Math.floor(now / limit.windowMs)
    let state = this.#windows.get(team.name)
    if (!state || state.window !== window) {
      state = { team, window, shared: 0, pending: 0, syncedAt: 0 }
      this.#windows.set(team.name, state)
    }
    // A reload may have changed the team: syncs follow its current window length.
    state.team = team
    const used = state.shared + state.pending
    const allowed = used < limit.max
    // Refused calls are not counted: a team hammering past its limit does not push its
    // next window's start further away.
    if (allowed && count) {
      // The first hit after a quiet interval: what this replica knows of the others is old.
      const stale = state.pending === 0 && now - state.syncedAt >= this.#syncMs
      state.pending += 1
      if (stale && this.#timer !== null) void this.sync()
    }
    const resetSec = Math.ceil(((window + 1) * limit.windowMs - now) / 1000)
    return { allowed, retryAfterSec: Math.max(1, resetSec), remaining: Math.max(0, limit.max - used - (allowed && count ? 1 : 0)), resetSec }
  }

  /**
   * Adds each team's hits since the last sync to Redis and reads its total back. One sync
   * at a time: asked while one runs, it runs once more after it (for the hits since).
   */
  sync(): Promise<void> {
    if (this.#syncing === null) return this.#run()
    this.#again ??= this.#syncing.then(() => {
      this.#again = null
      return this.#run()
    })
    return this.#again
  }

  #run(): Promise<void> {
    const running: Promise<void> = this.#sync().finally(() => {
      if (this.#syncing === running) this.#syncing = null
    })
    this.#syncing = running
    return running
  }

  async #sync(): Promise<void> {
    const { redis, breaker, prefix } = this.#o
    if (!redis || !breaker) return
    const now = this.#now()
    this.#prune(now)
    const active = [...this.#windows.values()].filter((w) => w.pending > 0)
    if (active.length === 0) return
    await Promise.all(
      active.map(async (w) => {
        const sent = w.pending
        const key = redisKey.rateLimit(prefix, w.team.name, w.window)
        const total = await breaker.run(() => ADD_HITS(redis, key, sent, (w.team.rateLimit?.windowMs ?? 0) + 1000), null)
        if (total === null) return
        w.pending -= sent
        // A window's count only grows: one below what was known plus what was sent is a
        // reset of it in Redis (a writer there, a Redis that lost it), and what was known is kept.
        w.shared = Math.max(total, w.shared + sent)
        w.syncedAt = now
      }),
    )
  }

  // A window is kept while it is the current one of a team configured now with a limit:
  // a removed team's, or one its limit's change made another, has nothing left to count
  // (the team's next hit starts its window afresh), and its unsynced hits count for no one.
  #prune(now: number): void {
    for (const [name, w] of this.#windows) {
      const limit = this.#o.teams.teamOf(name)?.rateLimit
      if (!limit || Math.floor(now / limit.windowMs) !== w.window) this.#windows.delete(name)
    }
  }
}
