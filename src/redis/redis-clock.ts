import type { Logger } from 'pino'
import type { Clock, Timer } from '../clock.js'
import type { RedisClient } from './client.js'
import { redisScript } from './script.js'

/** How often a replica reads Redis' clock again: a clock stepped (NTP, a VM resumed) is followed within this. */
export const REDIS_CLOCK_EVERY_MS = 60_000

/** A reading whose round trip took longer than this is not taken: its error is up to half of it. */
export const REDIS_CLOCK_MAX_ROUND_TRIP_MS = 1_000

/** How far this replica's clock may be from Redis' before a warn line says so (and again each time it moves this far). */
export const REDIS_CLOCK_SAY_MS = 1_000

// TIME through a script with a key: on a Cluster it runs on the master of that key's slot
// (the jobs' master), whose clock the job scripts' callers share.
const TIME = redisScript<[string, string]>('gatewayRedisTime1', "return redis.call('TIME')", 1)

/** Where Redis' clock is read (a key of the jobs' tag), what logs a clock far from it, and what hears each reading's offset (ms). */
export interface RedisClockOptions {
  redis: RedisClient
  key: string
  log: Logger
  onRead?: (offsetMs: number) => void
}

/**
 * This replica's clock moved by how far Redis' clock is from it: the times one replica
 * writes to Redis and another compares with its own are on it (a report job's lease and
 * due time, a webhook delivery's claim, a replica's announcement, a team's rate-limit
 * window, a platform token change's version, a platform pause's end), so replicas whose
 * clocks disagree by more than a lease (jobs.lease, 15 s) neither read a running job's
 * lease as run out (two runs of one job) nor rank an older token change above a newer one.
 * Redis' clock is read at the start and every REDIS_CLOCK_EVERY_MS (the offset is the
 * middle of the round trip); until a reading lands, and while Redis does not answer, the
 * last offset holds (0: this replica's own clock).
 */
export class RedisClock implements Clock {
  readonly #clock: Clock
  readonly #o: RedisClockOptions
  #offset = 0
  #said = 0
  #timer: Timer | null = null

  constructor(clock: Clock, o: RedisClockOptions) {
    this.#clock = clock
    this.#o = o
  }

  /** How far Redis' clock is ahead of this replica's (ms; negative: behind), as last read. */
  get offsetMs(): number {
    return this.#offset
  }

  now = (): number => this.#clock.now() + this.#offset
  setTimeout = (fn: () => void, ms: number): Timer => this.#clock.setTimeout(fn, ms)
  clearTimeout = (timer: Timer | null | undefined): void => this.#clock.clearTimeout(timer)
  setInterval = (fn: () => void, ms: number): Timer => this.#clock.setInterval(fn, ms)
  clearInterval = (timer: Timer | null | undefined): void => this.#clock.clearInterval(timer)

  /** Reads Redis' clock now, then every REDIS_CLOCK_EVERY_MS until stop(). */
  async start(): Promise<void> {
    await this.read()
    if (this.#timer) return
    this.#timer = this.#clock.setInterval(() => void this.read(), REDIS_CLOCK_EVERY_MS)
    this.#timer.unref()
  }

  stop(): void {
    this.#clock.clearInterval(this.#timer)
    this.#timer = null
  }

  /** One reading of Redis' clock; a failed or slow one leaves the offset as it was. */
  async read(): Promise<void> {
    const { redis, key, log } = this.#o
    const sent = this.#clock.now()
    let time: [string, string]
    try {
      time = await TIME(redis, key)
    } catch (err) {
      log.debug({ err }, "reading Redis' clock failed: the shared times stay on the offset last read")
      return
    }
    const back = this.#clock.now()
    if (back - sent > REDIS_CLOCK_MAX_ROUND_TRIP_MS) return
    const redisMs = Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000)
    this.#offset = Math.round(redisMs - (sent + back) / 2)
    this.#o.onRead?.(this.#offset)
    if (Math.abs(this.#offset - this.#said) < REDIS_CLOCK_SAY_MS) return
    this.#said = this.#offset
    const apart = Math.abs(this.#offset) >= REDIS_CLOCK_SAY_MS
    if (!apart) log.info({ offsetMs: this.#offset }, "this replica's clock agrees with Redis' again")
    else {
      log.warn(
        { offsetMs: this.#offset },
        `this replica's clock is ${(Math.abs(this.#offset) / 1000).toFixed(1)} s ${this.#offset > 0 ? 'behind' : 'ahead of'} Redis': the times replicas share (job leases, webhook claims, announcements, rate-limit windows, token changes, platform pauses) are on Redis' clock; set this machine's time (NTP)`,
      )
    }
  }
}
