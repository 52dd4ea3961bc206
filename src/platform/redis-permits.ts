import type { Logger } from 'pino'
import { Semaphore, type LostLockError } from 'redis-semaphore'
import type { RedisBreaker, RedisBus, RedisClient } from '../redis.js'
import { MemoryPermits, type Permits, type Taken } from './permits.js'

const CHANNEL = 'platform-permits'
// A replica refused a permit within this long: its peers tell it when they free one.
const CONTENTION_MS = 2000
// At most one "waiting" notice per credential and replica this often.
const WAITING_NOTICE_MS = 1000
// A call refused a permit asks again this often when no notice comes (a lost message, a
// peer's lease that lapsed): a bounded poll, one command per waiting replica.
export const PERMIT_RETRY_MS = 200

interface Notice {
  credential: string
  kind: 'waiting' | 'freed'
}

export interface RedisPermitsOptions {
  redis: RedisClient
  breaker: RedisBreaker
  bus: RedisBus | null
  /** Key of the credential's permits (redis-semaphore puts `semaphore:` before it). */
  key: string
  credential: string
  /** Permits across every replica (platform.maxConcurrent). */
  limit: number
  /** This replica's own cap while Redis cannot be reached (platform.maxConcurrentPerReplica). */
  perReplica: number
  /** A permit's lease (platform.permitLease): renewed every third of it while its call runs. */
  leaseMs: number
  log: Pick<Logger, 'warn'>
  /** A lease could not be renewed: the call goes on, its permit is gone from Redis. */
  onLost: () => void
  /** Another replica freed a permit while calls waited. */
  onFreed: () => void
  now?: () => number
}

const DOWN = Symbol('redis down')

/**
 * Permits leased in Redis with redis-semaphore (issue 15): a sorted set per credential
 * of at most `limit` leases, and one per credential and team of at most the team's cap,
 * so one team's burst spread over replicas holds only its share. A lease lapses
 * `leaseMs` after its replica stops renewing it (a SIGKILL, a partition): no permit is
 * lost for good. While Redis cannot be reached (the breaker is open) this replica caps
 * itself at `perReplica`, counting the calls it already has in flight.
 */
export class RedisPermits implements Permits {
  readonly retryMs = PERMIT_RETRY_MS
  readonly #o: RedisPermitsOptions
  readonly #now: () => number
  // Every permit of this replica, leased or granted while Redis was down.
  readonly #local: MemoryPermits
  #contendedUntil = 0
  #lastWaitingNotice = 0

  constructor(opts: RedisPermitsOptions) {
    this.#o = opts
    this.#now = opts.now ?? Date.now
    this.#local = new MemoryPermits(opts.perReplica)
  }

  get held(): number {
    return this.#local.held
  }

  /** Follows the other replicas' notices. */
  async start(): Promise<void> {
    await this.#o.bus?.subscribe(CHANNEL, (message) => {
      let notice: Notice
      try {
        notice = JSON.parse(message) as Notice
      } catch {
        return // not a notice
      }
      if (notice.credential !== this.#o.credential) return
      if (notice.kind === 'waiting') this.#contendedUntil = this.#now() + CONTENTION_MS
      else this.#o.onFreed()
    })
  }

  async take(team: string, teamCap: number): Promise<Taken> {
    const { breaker, credential, key, limit } = this.#o
    // A team allowed the whole credential needs no lease of its own.
    const teamLease = teamCap < limit ? this.#lease(`${key}:team:${team}`, teamCap) : null
    if (teamLease) {
      const got = await breaker.run(() => teamLease.take(), DOWN)
      if (got === DOWN) return this.#takeLocally(team, teamCap)
      if (!got) return this.#refused('team')
    }
    const lease = this.#lease(key, limit)
    const got = await breaker.run(() => lease.take(), DOWN)
    if (got !== true) {
      if (teamLease) void teamLease.give()
      return got === DOWN ? this.#takeLocally(team, teamCap) : this.#refused('credential')
    }
    // Counted here too, so that a fallback to the per-replica cap sees these calls.
    const local = this.#local.take(team, Infinity, Infinity) as { release: () => void }
    let released = false
    return {
      release: () => {
        if (released) return
        released = true
        local.release()
        void lease.give()
        if (teamLease) void teamLease.give()
        if (this.#now() < this.#contendedUntil) this.#notify({ credential, kind: 'freed' })
      },
    }
  }

  #takeLocally(team: string, teamCap: number): Taken {
    return this.#local.take(team, teamCap)
  }

  #refused(full: 'credential' | 'team'): Taken {
    const now = this.#now()
    this.#contendedUntil = now + CONTENTION_MS
    if (now - this.#lastWaitingNotice >= WAITING_NOTICE_MS) {
      this.#lastWaitingNotice = now
      this.#notify({ credential: this.#o.credential, kind: 'waiting' })
    }
    return { full }
  }

  #notify(notice: Notice): void {
    // A lost notice costs a waiting call one retry interval at most.
    this.#o.bus?.publish(CHANNEL, JSON.stringify(notice)).catch(() => undefined)
  }

  #lease(key: string, limit: number): Lease {
    const { redis, breaker, leaseMs, log, credential, onLost } = this.#o
    return new Lease(redis, key, limit, leaseMs, breaker, () => {
      log.warn({ credential, key }, 'a platform permit lease could not be renewed: the call goes on, its permit is free for the other replicas')
      onLost()
    })
  }
}

/** One redis-semaphore lease, whose renewals never throw out of their timer. */
class Lease {
  readonly #semaphore: Semaphore
  readonly #breaker: RedisBreaker
  // Only take()'s own command may fail out loud; any other is a renewal, from a timer.
  #taking = false

  constructor(redis: RedisClient, key: string, limit: number, leaseMs: number, breaker: RedisBreaker, onLost: () => void) {
    this.#breaker = breaker
    // redis-semaphore renews a lease from a timer and lets a failed command's error
    // escape it (an unhandled rejection): a failed renewal reads as a lost lease instead.
    const guard = <T>(run: () => Promise<T>): Promise<T | number> =>
      run().catch((err: unknown) => {
        if (this.#taking || String(err).includes('NOSCRIPT')) throw err
        return 0
      })
    const client = {
      eval: (...args: Parameters<RedisClient['eval']>) => guard(() => redis.eval(...args)),
      evalsha: (...args: Parameters<RedisClient['evalsha']>) => guard(() => redis.evalsha(...args)),
      zrem: (...args: Parameters<RedisClient['zrem']>) => redis.zrem(...args),
    }
    this.#semaphore = new Semaphore(client as unknown as ConstructorParameters<typeof Semaphore>[0], key, limit, {
      lockTimeout: leaseMs,
      refreshInterval: Math.max(1, Math.floor(leaseMs / 3)),
      // One attempt, refused at once: the governor's queue does the waiting.
      acquireTimeout: leaseMs,
      acquireAttemptsLimit: 1,
      retryInterval: 0,
      // Its default throws from a timer, which would end the process.
      onLockLost: (_err: LostLockError) => onLost(),
    })
  }

  async take(): Promise<boolean> {
    this.#taking = true
    try {
      return await this.#semaphore.tryAcquire()
    } finally {
      this.#taking = false
    }
  }

  /** Gives the lease back; a failure leaves it to lapse. */
  async give(): Promise<void> {
    await this.#breaker.run(() => this.#semaphore.release(), null)
  }
}
