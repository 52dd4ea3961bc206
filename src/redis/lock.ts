import { randomUUID } from 'node:crypto'
import type { Clock } from '../clock.js'
import type { RedisBreaker } from './breaker.js'
import type { RedisClient } from './client.js'
import { redisScript } from './script.js'

// Only the owner of a lock (its random token) renews or releases it: a holder that
// stalled past the TTL, whose lock another took over, changes nothing.
const RENEW_IF_OWNER = redisScript<number>('gatewayLockRenew', `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end`, 1)
const RELEASE_IF_OWNER = redisScript<number>('gatewayLockRelease', `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`, 1)
// SET NX PX, or the holder's value when another holds the lock: read in the same step, so
// that it is the holder's that refused this one, whatever ends meanwhile.
const TAKE_OR_HOLDER = redisScript<1 | string>('gatewayLockTake', `if redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX') then return 1 end return redis.call('get', KEYS[1])`, 1)

/** What a try for a lock found: the lock, or what its holder noted in it (`RedisLock.take`'s `note`; null: none). */
export type LockTry = { lock: RedisLock } | { heldWith: string | null }

/**
 * A lock in Redis shared by the replicas: SET NX PX with an owner token, for `ttlMs`.
 * The gateway's one lock (a report's fill, a credential's login).
 */
export class RedisLock {
  readonly #redis: RedisClient
  readonly #breaker: RedisBreaker
  readonly #key: string
  readonly #owner: string
  readonly #ttlMs: number

  private constructor(redis: RedisClient, breaker: RedisBreaker, key: string, owner: string, ttlMs: number) {
    this.#redis = redis
    this.#breaker = breaker
    this.#key = key
    this.#owner = owner
    this.#ttlMs = ttlMs
  }

  /**
   * The lock, null while another holds it, undefined when Redis cannot say (down, or
   * refusing writes): the caller goes on alone then.
   */
  static async take(redis: RedisClient, breaker: RedisBreaker, key: string, ttlMs: number): Promise<RedisLock | null | undefined> {
    const tried = await RedisLock.try(redis, breaker, key, ttlMs)
    return tried === undefined ? undefined : 'lock' in tried ? tried.lock : null
  }

  /**
   * `take`, telling who holds the lock what this one notes in it: `note` (no space before
   * its end, bounded by its maker) is kept in the lock's value after the owner token, and a
   * try refused while this one holds the lock reads it back (`heldWith`).
   */
  static async try(redis: RedisClient, breaker: RedisBreaker, key: string, ttlMs: number, note?: string): Promise<LockTry | undefined> {
    const owner = note === undefined ? randomUUID() : `${randomUUID()} ${note}`
    const got = await breaker.write(() => TAKE_OR_HOLDER(redis, key, owner, ttlMs), undefined)
    if (got === undefined) return undefined
    if (got === 1) return { lock: new RedisLock(redis, breaker, key, owner, ttlMs) }
    const space = typeof got === 'string' ? got.indexOf(' ') : -1
    return { heldWith: space < 0 ? null : got.slice(space + 1) }
  }

  /** Extends the lock by its TTL: false when it was lost (taken over), undefined when Redis did not answer. */
  async renew(): Promise<boolean | undefined> {
    const renewed = await this.#breaker.run(() => RENEW_IF_OWNER(this.#redis, this.#key, this.#owner, String(this.#ttlMs)), undefined)
    return renewed === undefined ? undefined : renewed !== 0
  }

  /**
   * Renews the lock every third of its TTL (two renewals' time left for a slow Redis) until
   * the returned stop is called, or the lock is lost (this process stalled past the TTL and
   * another took it over). A holder that dies, or whose release never reaches Redis, leaves
   * the lock for one TTL at most.
   */
  keepAlive(clock: Clock): () => void {
    const heartbeat = clock.setInterval(() => {
      void this.renew().then((renewed) => {
        if (renewed === false) clock.clearInterval(heartbeat)
      })
    }, Math.max(Math.floor(this.#ttlMs / 3), 10))
    heartbeat.unref()
    return () => clock.clearInterval(heartbeat)
  }

  /** Releases the lock if still its owner. */
  async release(): Promise<void> {
    await this.#breaker.run(() => this.releaseCommand(), undefined)
  }

  /** The release as a bare command, for a caller that sends it with others under its own breaker call. */
  releaseCommand(): Promise<unknown> {
    return RELEASE_IF_OWNER(this.#redis, this.#key, this.#owner)
  }
}
