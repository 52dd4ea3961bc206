import { ReplyError } from 'ioredis'
import type { Logger } from 'pino'
import { systemClock, type Clock, type Timer } from '../clock.js'
import { answeredTryAgain, transactionFailure, whenReady, type RedisClient } from './client.js'
import { pingEveryMaster, unreachedMasters } from './cluster-masters.js'
import { redisKey } from './keys.js'

// While the circuit is open, Redis is tried this often (and at once on a new connection),
// so that its return shows within about this long rather than after a breaker cooldown.
export const RECHECK_MS = 250

/**
 * Redis's state from the first second: a ping when the gateway starts, once
 * the connection is made or has failed, then one every `intervalMs`, so that an outage
 * without traffic, and the end of one, show in the breaker (and so in /readyz, the
 * metric and the log) rather than at the next request. While the circuit is open, a ping
 * every `recheckMs` and one on each new connection are its trials, whatever the cooldown:
 * Redis answering again closes it within about that long.
 */
export class RedisWatch {
  readonly #client: RedisClient
  readonly #breaker: RedisBreaker
  readonly #intervalMs: number
  readonly #recheckMs: number
  readonly #connectTimeoutMs: number
  readonly #probeKey: string
  #timer: Timer | null = null
  #lastPing = 0
  #pinging = false
  /** Pings in a row that failed on a live connection. */
  #slow = 0
  readonly #onReconnect: () => void
  readonly #clock: Clock
  readonly #onReady = (): void => {
    if (this.#breaker.state !== 'closed') void this.#tick()
    this.#onReconnect()
  }

  /** `onReconnect`: each connection made after start (Redis may have restarted empty). */
  constructor(client: RedisClient, breaker: RedisBreaker, opts: { intervalMs: number; connectTimeoutMs: number; keyPrefix: string; recheckMs?: number; onReconnect?: () => void; clock?: Clock }) {
    this.#client = client
    this.#clock = opts.clock ?? systemClock
    this.#onReconnect = opts.onReconnect ?? (() => undefined)
    this.#breaker = breaker
    this.#intervalMs = opts.intervalMs
    this.#recheckMs = Math.min(opts.recheckMs ?? RECHECK_MS, opts.intervalMs)
    this.#connectTimeoutMs = opts.connectTimeoutMs
    this.#probeKey = redisKey.writeProbe(opts.keyPrefix)
  }

  async start(): Promise<void> {
    await whenReady(this.#client, this.#connectTimeoutMs)
    await this.#tick()
    this.#client.on('ready', this.#onReady)
    this.#timer = this.#clock.setInterval(() => void this.#tick(), this.#recheckMs)
    this.#timer.unref()
  }

  close(): void {
    if (this.#timer) this.#clock.clearInterval(this.#timer)
    this.#timer = null
    this.#client.off('ready', this.#onReady)
  }

  /** A trial while the circuit is open; otherwise a ping once `intervalMs` has passed since the last. */
  async #tick(): Promise<void> {
    if (this.#pinging) return
    const open = this.#breaker.state !== 'closed'
    if (!open && this.#clock.now() - this.#lastPing < this.#intervalMs) return
    this.#pinging = true
    this.#lastPing = this.#clock.now()
    try {
      await (open ? this.#breaker.trial(() => pingEveryMaster(this.#client)) : this.#ping())
    } finally {
      this.#pinging = false
    }
  }

  async #ping(): Promise<void> {
    // A Redis that refuses writes is tried with one, so that its end shows without traffic.
    if (!this.#breaker.writable) await this.#breaker.write(() => this.#client.set(this.#probeKey, '1', 'PX', this.#intervalMs), null)
    try {
      await pingEveryMaster(this.#client)
      this.#slow = 0
    } catch (err) {
      this.#slow += 1
      if (pingSaysDown(err, this.#client.status === 'ready' && unreachedMasters(this.#client).length === 0, this.#slow)) this.#breaker.fail(err)
    }
  }
}

/**
 * Whether a failed ping of the watch opens the circuit. One slow answer on a busy machine
 * is not an outage (requests' own commands still open the breaker): a timeout on connections
 * that are all up opens it the second time in a row. Anything else is one at once: a lost
 * connection, a Cluster master unreached (the Cluster client stays ready while the others
 * answer) or saying cluster_state:fail, a refusal. So an outage without traffic shows at
 * the first ping after it, within `redis.breakerCooldown`, not the second.
 */
export function pingSaysDown(err: unknown, connected: boolean, failuresInARow: number): boolean {
  const timeout = timedOut(err) || timedOut((err as { cause?: unknown } | null)?.cause)
  return !connected || !timeout || failuresInARow >= 2
}

// A command's timeout is a timer of this process: when the event loop is busy (a fresh
// replica compiling its first request's code, a long GC, a starved CPU) it fires late,
// and before the reply waiting unread on the socket is read. One that fired this far past
// its due time says the loop was late, not Redis: that call gets its fallback and the
// circuit stays as it was. Otherwise a fresh replica on a busy machine opens it on its first
// request and sends every report to the platform for a whole cooldown.
const LATE_TIMEOUT_FACTOR = 1.5

function timedOut(err: unknown): boolean {
  return err instanceof Error && err.message === 'Command timed out'
}

export type BreakerState = 'closed' | 'open' | 'half-open'

/** Redis as this replica finds it, as /readyz and /admin/status give it. */
export type RedisState = 'ok' | 'readonly' | 'down' | 'not configured'

/** `readonly`: Redis answers reads and refuses writes (refusesWrites); `down`: the circuit is not closed. */
export function redisState(redis: RedisClient | null, breaker: RedisBreaker | null): RedisState {
  if (redis === null) return 'not configured'
  if (breaker?.state !== 'closed') return 'down'
  return breaker.writable ? 'ok' : 'readonly'
}

/**
 * A write refused by a Redis that still answers: out of memory under
 * noeviction (OOM), a read-only replica (READONLY), a failed snapshot (MISCONF), a master
 * with fewer good replicas than its min-replicas-to-write (NOREPLICAS); or a transaction's
 * EXECABORT whose queued commands were each refused so (a replica's announcement is one).
 * Reads go on; it is no outage.
 */
export function refusesWrites(err: unknown): boolean {
  return refusedWrite(err) || abortedForEach(err, refusedWrite)
}

function refusedWrite(err: unknown): boolean {
  return err instanceof ReplyError && /^(OOM|READONLY|MISCONF|NOREPLICAS)\b/.test((err as Error).message)
}

/**
 * A command on a Cluster slot split mid-migration (answeredTryAgain): its TRYAGAIN, or
 * a transaction's EXECABORT whose queued commands were each answered so. Redis answers:
 * no outage, only that command goes without it until the slot's last key has moved.
 */
export function slotMoving(err: unknown): boolean {
  return answeredTryAgain(err) || abortedForEach(err, answeredTryAgain)
}

/** A transaction Redis discarded (EXECABORT; ioredis lists the queued commands' errors) whose every queued error is `why`. */
function abortedForEach(err: unknown, why: (queued: unknown) => boolean): boolean {
  const previous = (err as { previousErrors?: unknown } | null)?.previousErrors
  return Array.isArray(previous) && previous.length > 0 && previous.every(why)
}

/**
 * Redis is an accelerator, not a dependency (contract, readiness): after a failure the
 * gateway stops asking Redis for `cooldownMs`, then tries one command again.
 */
export class RedisBreaker {
  #state: BreakerState = 'closed'
  #openedAt = 0
  /**
   * How often the circuit closed: a failure of a command sent before the last close is older
   * news than the success that closed it. Counted, not timed: the wall clock may be set back,
   * and one millisecond may hold a command and the close after it.
   */
  #closes = 0
  readonly #cooldownMs: number
  readonly #log: Logger
  readonly #now: () => number
  readonly #onChange: ((state: BreakerState) => void) | undefined
  readonly #address: () => string
  readonly #cause: (err: unknown) => string
  readonly #onWritable: ((writable: boolean) => void) | undefined
  readonly #onSkippedWrite: (() => void) | undefined
  /** When Redis last refused a write; 0 while it accepts them. */
  #refusedAt = 0
  readonly #lateAfterMs: number
  readonly #whole: () => boolean

  constructor(opts: {
    cooldownMs: number
    log: Logger
    now?: () => number
    onChange?: (state: BreakerState) => void
    /** Where Redis is (clientAddress), named in every transition's log line. */
    address?: () => string
    /** Why a command failed (failureCause). */
    cause?: (err: unknown) => string
    /** Redis began (false) or ceased (true) refusing writes. */
    onWritable?: (writable: boolean) => void
    /** A write not sent: Redis refuses writes. */
    onSkippedWrite?: () => void
    /** The client's command timeout (redis.commandTimeout): a timeout that fired well after it says nothing of Redis. */
    commandTimeoutMs?: number
    /**
     * Whether every part of Redis is reached (a Cluster's every master, unreachedMasters):
     * a command that succeeds on one part closes the circuit only then; the watch's
     * trial, which pings every part, closes it otherwise.
     */
    whole?: () => boolean
  }) {
    this.#whole = opts.whole ?? (() => true)
    this.#lateAfterMs = (opts.commandTimeoutMs ?? Number.POSITIVE_INFINITY) * LATE_TIMEOUT_FACTOR
    this.#onWritable = opts.onWritable
    this.#onSkippedWrite = opts.onSkippedWrite
    this.#cooldownMs = opts.cooldownMs
    this.#log = opts.log
    this.#now = opts.now ?? systemClock.now
    this.#onChange = opts.onChange
    this.#address = opts.address ?? (() => 'redis')
    this.#cause = opts.cause ?? ((err) => (err as Error).message)
  }

  get state(): BreakerState {
    return this.#state
  }

  /** False while Redis refuses writes (refusesWrites) and answers reads. */
  get writable(): boolean {
    return this.#refusedAt === 0
  }

  /** Runs `fn` unless the circuit is open; its failure opens it (not a failure of a command sent before the circuit last closed). Returns `fallback` then. */
  async run<T, F>(fn: () => Promise<T>, fallback: F): Promise<T | F> {
    if (this.#state === 'open') {
      if (this.#now() - this.#openedAt < this.#cooldownMs) return fallback
      this.#transition('half-open')
    }
    const started = this.#now()
    const closes = this.#closes
    try {
      const result = await fn()
      if (this.#state !== 'closed') {
        if (this.#whole()) this.#transition('closed')
        else {
          this.#openedAt = this.#now()
          this.#transition('open')
        }
      }
      return result
    } catch (err) {
      if (refusesWrites(err)) this.#refused(err)
      else if (slotMoving(err)) this.#log.debug({ redis: this.#address(), cause: (err as Error).message }, 'redis command on a cluster slot mid-migration: served without it, circuit kept')
      else if (closes === this.#closes && !(timedOut(err) && this.#now() - started >= this.#lateAfterMs)) this.fail(err)
      return fallback
    }
  }

  /**
   * A command that writes: like run, but not sent while Redis refuses writes, for a
   * cooldown after each refusal; then one is tried again, and its success ends the state.
   */
  async write<T, F>(fn: () => Promise<T>, fallback: F): Promise<T | F> {
    if (this.#refusedAt > 0 && this.#now() - this.#refusedAt < this.#cooldownMs) {
      this.#onSkippedWrite?.()
      return fallback
    }
    let done = false
    const result = await this.run(async () => {
      const r = await fn()
      done = true
      return r
    }, fallback)
    if (done && this.#refusedAt > 0) {
      this.#refusedAt = 0
      this.#log.info({ redis: this.#address() }, 'redis accepts writes again')
      this.#onWritable?.(true)
    }
    return result
  }

  #refused(err: unknown): void {
    const first = this.#refusedAt === 0
    this.#refusedAt = this.#now()
    if (!first) return
    this.#log.warn({ redis: this.#address(), cause: (transactionFailure(err) as Error).message }, 'redis refuses writes: reading from it, writing nothing to it')
    this.#onWritable?.(false)
  }

  /**
   * Runs `fn` now, within the cooldown too: the watch's trial of a Redis that may be back.
   * Its success closes the circuit; its failure keeps it open for another cooldown.
   */
  async trial(fn: () => Promise<unknown>): Promise<boolean> {
    try {
      await fn()
      if (this.#state !== 'closed') this.#transition('closed')
      return true
    } catch (err) {
      if (refusesWrites(err)) this.#refused(err)
      else this.fail(err)
      return false
    }
  }

  fail(err: unknown): void {
    this.#openedAt = this.#now()
    if (this.#state === 'open') return
    // A failed probe after a cooldown is the same outage: its line was logged when it began.
    if (this.#state === 'closed') this.#log.warn({ redis: this.#address(), cause: this.#cause(err) }, 'redis unavailable: serving without it (circuit open)')
    this.#transition('open')
  }

  #transition(state: BreakerState): void {
    if (state === 'closed') {
      this.#closes++
      this.#log.info({ redis: this.#address() }, 'redis available again (circuit closed)')
    }
    this.#state = state
    this.#onChange?.(state)
  }
}
