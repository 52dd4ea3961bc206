import { randomUUID } from 'node:crypto'
import type { RedisBreaker, RedisBus, RedisClient } from '../redis.js'

/** Concurrent calls with one key share one run of `fn` in this process. */
export class SingleFlight<T> {
  readonly #inFlight = new Map<string, Promise<T>>()

  run(key: string, fn: () => Promise<T>): Promise<T> {
    let p = this.#inFlight.get(key)
    if (!p) {
      p = fn().finally(() => this.#inFlight.delete(key))
      this.#inFlight.set(key, p)
    }
    return p
  }

  has(key: string): boolean {
    return this.#inFlight.has(key)
  }
}

const RELEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`
const FILLED_CHANNEL = 'filled'

export type LockOutcome =
  | { role: 'leader'; release: () => Promise<void> }
  /** `wait`: what `check` finds once the leader's fill is announced; see waitForFill. */
  | { role: 'waiter'; wait: <T>(check: () => Promise<T | null>) => Promise<T | null> }
  | { role: 'solo' }

/**
 * One fill across replicas (issue 3, "Coalescing"): the first replica takes a lock with
 * SET NX PX and fills; the others wait until it announces the fill on pub/sub (or until
 * polling finds the entry), for at most `lockTimeoutMs`. Like nginx's proxy_cache_lock,
 * a waiter that waited too long goes upstream itself, without storing.
 */
export class ReplicaLock {
  readonly #redis: RedisClient
  readonly #breaker: RedisBreaker
  readonly #bus: RedisBus
  readonly #prefix: string
  readonly #lockTimeoutMs: number
  readonly #lockTtlMs: number
  readonly #pollMs: number
  readonly #waiters = new Map<string, Set<() => void>>()
  #subscribed: Promise<void> | null = null

  constructor(opts: { redis: RedisClient; breaker: RedisBreaker; bus: RedisBus; prefix: string; lockTimeoutMs: number; lockTtlMs?: number; pollMs?: number }) {
    this.#redis = opts.redis
    this.#breaker = opts.breaker
    this.#bus = opts.bus
    this.#prefix = opts.prefix
    this.#lockTimeoutMs = opts.lockTimeoutMs
    this.#lockTtlMs = Math.max(opts.lockTtlMs ?? 0, opts.lockTimeoutMs)
    this.#pollMs = opts.pollMs ?? 250
  }

  async start(): Promise<void> {
    this.#subscribed ??= this.#bus.subscribe(FILLED_CHANNEL, (key) => this.#wake(key))
    await this.#subscribed
  }

  /** Leader: fill and call release(). Waiter: call wait(). Solo: Redis is out; fill alone. */
  async acquire(key: string): Promise<LockOutcome> {
    const token = randomUUID()
    const lockKey = `${this.#prefix}lock:${key}`
    // The lock lives as long as the leader's platform call may take (at least as long as
    // waiters wait), so it never expires under a fill that is still running; a leader
    // that died leaves waiters going upstream unstored until it expires.
    const got = await this.#breaker.run(() => this.#redis.set(lockKey, token, 'PX', this.#lockTtlMs, 'NX'), undefined)
    if (got === undefined) return { role: 'solo' }
    if (got !== 'OK') return { role: 'waiter', wait: (check) => this.waitForFill(key, check) }
    return {
      role: 'leader',
      release: async () => {
        // The entry is in L2 before release() is called: waiters may wake in any order.
        await this.#breaker.run(() => Promise.all([this.#redis.eval(RELEASE, 1, lockKey, token), this.#bus.publish(FILLED_CHANNEL, key)]), undefined)
      },
    }
  }

  /**
   * Resolves with what `check` finds once the leader announced its fill (or polling found
   * it), or null when `lockTimeoutMs` passed or the leader finished without an entry.
   */
  async waitForFill<T>(key: string, check: () => Promise<T | null>): Promise<T | null> {
    const deadline = Date.now() + this.#lockTimeoutMs
    while (Date.now() < deadline) {
      const announced = await this.#nextAnnouncement(key, Math.min(this.#pollMs, deadline - Date.now()))
      const found = await check()
      if (found !== null) return found
      // The leader announced and still nothing: it failed or did not store; stop waiting.
      // With Redis out no announcement can come, nor can the leader store: stop too.
      if (announced || this.#breaker.state === 'open') return null
    }
    return null
  }

  #nextAnnouncement(key: string, ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      let set = this.#waiters.get(key)
      if (!set) {
        set = new Set()
        this.#waiters.set(key, set)
      }
      const wake = () => {
        clearTimeout(timer)
        resolve(true)
      }
      const timer = setTimeout(() => {
        set.delete(wake)
        if (set.size === 0) this.#waiters.delete(key)
        resolve(false)
      }, Math.max(ms, 1))
      set.add(wake)
    })
  }

  #wake(key: string): void {
    const set = this.#waiters.get(key)
    if (!set) return
    this.#waiters.delete(key)
    for (const wake of set) wake()
  }
}
