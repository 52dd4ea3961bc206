import { type RedisBreaker } from '../redis/breaker.js'
import { type RedisBus } from '../redis/bus.js'
import { type RedisClient } from '../redis/client.js'
import { RedisLock } from '../redis/lock.js'
import { randomUUID } from 'node:crypto'
import { systemClock, type Clock } from '../clock.js'
import { redisKey } from '../redis/keys.js'

/** Concurrent calls with one key share one run of `fn` in this process. */
export class SingleFlight<T> {
  readonly #inFlight = new Map<string, Promise<T>>()

  /**
   * The run under way for `key`, else one of `fn`; `ended` runs once the run it started
   * has settled (not for a run joined), in the same reaction that forgets the run: no
   * second `finally` kept per run while it waits.
   */
  run(key: string, fn: () => Promise<T>, ended?: () => void): Promise<T> {
    let p = this.#inFlight.get(key)
    if (!p) {
      p = fn().finally(() => {
        this.#inFlight.delete(key)
        ended?.()
      })
      this.#inFlight.set(key, p)
    }
    return p
  }

  has(key: string): boolean {
    return this.#inFlight.has(key)
  }

  /** The run under way for `key`, to wait for without starting one. */
  running(key: string): Promise<T> | undefined {
    return this.#inFlight.get(key)
  }

  /** Resolves once no run is under way: those under way now, and any they start meanwhile, have ended. */
  async settled(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight.values()])
  }
}

const FILLED_CHANNEL = 'filled'
const FAILED_CHANNEL = 'fill-failed'
const JOINED_CHANNEL = 'fill-joined'
// A team name or a priority as a replica sends them is far shorter: a longer one is no replica's.
const MAX_ASKER_CHARS = 256
// A fill's span as its replica names it (Trace.linkId: 32 + 1 + 16 characters) is far shorter: a longer one is dropped.
const MAX_FILL_SPAN_CHARS = 64

/** How a leader's fill failed, as its waiters on other replicas learn it. */
export interface FillFailure {
  code: string
  /** A failure a later try may not meet (no answer, a 5xx: platform/client/transient.ts): a job that joined the fill tries again. */
  transient?: boolean
  /** The platform's answer when it is to be passed on (a 429 with its retry-after). */
  response?: { status: number; headers: Record<string, string>; body: string }
}

/** The lock a leader holds while it fills: renewed until released. */
export interface FillLease {
  /** `failure`: the waiters answer it (or their stale copy) instead of calling the platform. */
  release(failure?: FillFailure): Promise<void>
  /**
   * Releases the lock of a fill that stored a copy fetched at `fetchedAt` in L2: its
   * waiters take it, and so does every replica holding an older copy of the key (onStored).
   */
  stored(fetchedAt: number): Promise<void>
  /** Drops the lock unannounced (this replica is shutting down): a waiter takes the fill over. */
  abandon(): Promise<void>
}

/** What a waiter's wait ended with. */
export type FillWait<T> =
  | { kind: 'found'; value: T }
  /** The leader failed: answer its error, or a stale copy. */
  | { kind: 'failed'; failure: FillFailure }
  /** The leader died (its lock lapsed) and this waiter took the lock over: it fills for everyone. */
  | { kind: 'lead'; lease: FillLease }
  /** The leader finished without a shared entry (an answer not to cache), or Redis is out. */
  | { kind: 'none' }
  /** The deadline passed with no word from the leader. */
  | { kind: 'timeout' }

export type LockOutcome =
  | { role: 'leader'; lease: FillLease }
  /**
   * `wait`: what `check` finds once the leader's fill is announced, by `deadline` (epoch
   * ms); `asker`, the team and priority waiting, is told to the leader's replica (`OnJoined`).
   * `leaderSpan`: what the leader noted in the lock (`acquire`'s `note`: its fill's span), null: nothing.
   */
  | { role: 'waiter'; leaderSpan: string | null; wait: <T>(check: () => Promise<T | null>, deadline: number, asker?: FillAsker) => Promise<FillWait<T>> }
  | { role: 'solo' }

type News = { failure?: FillFailure }

/** Heard of on every replica, its own included: a copy of `key` fetched at `fetchedAt` is in L2. */
export type OnStored = (key: string, fetchedAt: number) => void

/** A team waiting for a fill, at its priority (the governor's: the reader of `OnJoined` checks it). */
export interface FillAsker {
  team: string
  priority: string
  /** The span of the waiting replica's own fill (Trace.linkId), when traced: the leader's fill links to it. */
  fillSpan?: string
}

/** Heard of on every replica, its own included: `asker` waits on a replica for the fill of `key` that another leads. */
export type OnJoined = (key: string, asker: FillAsker) => void

/**
 * One fill across replicas: the first replica takes a
 * lock with SET NX PX and fills; the others wait until it announces the fill (or its
 * failure) on pub/sub, or until polling finds the entry. The lock lives `lockTtlMs` and
 * the leader renews it while it works, so a leader that dies leaves it for about one
 * TTL: a waiter that finds it gone takes it and fills for everyone. The announcement of
 * a stored copy says when it was fetched, and reaches every replica (`onStored`): one that
 * holds an older copy of the key takes the new one, whatever the fill was (a miss, a
 * caller's refresh, a stale-while-revalidate refresh, a refresh ahead), in the one
 * message that wakes the waiters.
 */
export class ReplicaLock {
  readonly #redis: RedisClient
  readonly #breaker: RedisBreaker
  readonly #bus: RedisBus
  readonly #prefix: string
  readonly #lockTtlMs: number
  readonly #pollMs: number
  readonly #clock: Clock
  readonly #waiters = new Map<string, Set<(news: News) => void>>()
  readonly #onStored: OnStored
  readonly #onJoined: OnJoined
  // Per key waited for here, the teams (at their priority) told to the leader's replica: once each while any waits.
  readonly #joined = new Map<string, Set<string>>()
  // Names this replica's word of its waiters: the bus brings it back here too, where their callers are in the fill's group already.
  readonly #id = randomUUID()
  #subscribed: Promise<void> | null = null

  constructor(opts: { redis: RedisClient; breaker: RedisBreaker; bus: RedisBus; prefix: string; lockTtlMs: number; pollMs?: number; clock?: Clock; onStored?: OnStored; onJoined?: OnJoined }) {
    this.#redis = opts.redis
    this.#breaker = opts.breaker
    this.#bus = opts.bus
    this.#prefix = opts.prefix
    this.#lockTtlMs = opts.lockTtlMs
    this.#pollMs = opts.pollMs ?? Math.min(250, Math.ceil(opts.lockTtlMs / 4))
    this.#clock = opts.clock ?? systemClock
    this.#onStored = opts.onStored ?? (() => undefined)
    this.#onJoined = opts.onJoined ?? (() => undefined)
  }

  async start(): Promise<void> {
    this.#subscribed ??= Promise.all([
      this.#bus.subscribe(FILLED_CHANNEL, (message) => {
        const { key, fetchedAt } = parseFilled(message)
        this.#wake(key, {})
        if (fetchedAt !== null) this.#onStored(key, fetchedAt)
      }),
      this.#bus.subscribe(FAILED_CHANNEL, (message) => {
        const parsed = parseFailure(message)
        if (parsed) this.#wake(parsed.key, { failure: parsed.failure })
      }),
      this.#bus.subscribe(JOINED_CHANNEL, (message) => {
        const parsed = parseJoined(message)
        if (parsed && parsed.from !== this.#id) this.#onJoined(parsed.key, parsed.asker)
      }),
    ]).then(() => undefined)
    await this.#subscribed
  }

  /**
   * Leader: fill and release the lease. Waiter: call wait(). Solo: Redis is out; fill alone.
   * `note` (the fill's span, Trace.linkId) is kept in the lock while this replica holds it,
   * for its waiters on other replicas to read (`leaderSpan`).
   */
  async acquire(key: string, note?: string): Promise<LockOutcome> {
    const tried = await this.#try(key, note)
    if (tried === undefined) return { role: 'solo' }
    if ('lease' in tried) return { role: 'leader', lease: tried.lease }
    const heldWith = tried.heldWith !== null && tried.heldWith.length <= MAX_FILL_SPAN_CHARS ? tried.heldWith : null
    return { role: 'waiter', leaderSpan: heldWith, wait: (check, deadline, asker) => this.#waitForFill(key, check, deadline, asker, note) }
  }

  /** A lease on the lock, null when another holds it, undefined when Redis is out. */
  async #take(key: string, note?: string): Promise<FillLease | null | undefined> {
    const tried = await this.#try(key, note)
    return tried === undefined ? undefined : 'lease' in tried ? tried.lease : null
  }

  /** A lease on the lock, or what its holder noted in it; undefined when Redis is out. */
  async #try(key: string, note?: string): Promise<{ lease: FillLease } | { heldWith: string | null } | undefined> {
    // With Redis refusing writes no lock can be taken, nor an entry stored: fill alone.
    const tried = await RedisLock.try(this.#redis, this.#breaker, redisKey.fillLock(this.#prefix, key), this.#lockTtlMs, note)
    if (tried === undefined || !('lock' in tried)) return tried
    const lock = tried.lock
    const stopRenewing = lock.keepAlive(this.#clock)
    // The entry is in L2 before the announcement. It goes out on the same connection
    // before the lock is deleted, so a waiter hears of a failure before it could find the
    // lock gone and take it over.
    const announce = async (channel: string, message: string): Promise<void> => {
      stopRenewing()
      await this.#breaker.run(() => Promise.all([this.#bus.publish(channel, message), lock.releaseCommand()]), undefined)
    }
    const lease: FillLease = {
      abandon: async () => {
        stopRenewing()
        await lock.release()
      },
      release: (failure) => (failure ? announce(FAILED_CHANNEL, JSON.stringify({ key, ...failure })) : announce(FILLED_CHANNEL, key)),
      stored: (fetchedAt) => announce(FILLED_CHANNEL, JSON.stringify({ key, fetchedAt })),
    }
    return { lease }
  }

  async #waitForFill<T>(key: string, check: () => Promise<T | null>, deadline: number, asker?: FillAsker, note?: string): Promise<FillWait<T>> {
    // The leader's word is heard for the whole wait, not only between polls: it comes on
    // the subscriber's connection, and may arrive while this waiter reads L2 or tries the
    // lock on the other one. Missed, the waiter would take the lock the leader let go of
    // and call the platform again after the leader's failure.
    const heard: News[] = []
    let wakeUp: (() => void) | null = null
    const listener = (news: News) => {
      heard.push(news)
      wakeUp?.()
    }
    this.#listen(key, listener)
    if (asker) this.#join(key, asker)
    const failureHeard = () => (this.#bus.authenticated ? heard.find((n) => n.failure)?.failure : undefined)
    try {
      while (this.#clock.now() < deadline) {
        if (heard.length === 0) {
          await new Promise<void>((resolve) => {
            const timer = this.#clock.setTimeout(resolve, Math.max(Math.min(this.#pollMs, deadline - this.#clock.now()), 1))
            wakeUp = () => {
              this.#clock.clearTimeout(timer)
              resolve()
            }
          })
          wakeUp = null
        }
        // An unsealed bus carries what anyone who may write to Redis publishes: its word
        // of a failure (and the answer in it) is taken only as a cue to read again.
        const failure = failureHeard()
        if (failure) return { kind: 'failed', failure }
        const announced = heard.length > 0
        const found = await check()
        if (found !== null) return { kind: 'found', value: found }
        // The leader announced and still nothing: it did not store; stop waiting.
        // With Redis out no announcement can come, nor can the leader store: stop too.
        if (announced || this.#breaker.state === 'open') return { kind: 'none' }
        // No word: if the lock lapsed, its holder died. Take over (one waiter wins).
        const lease = await this.#take(key, note)
        if (lease === undefined) return { kind: 'none' }
        if (lease) {
          // The leader may have stored and released between the check and the take.
          const late = await check()
          if (late !== null) {
            await lease.release()
            return { kind: 'found', value: late }
          }
          // Or failed: its word, sent before its lock was deleted, may be read only now.
          const lateFailure = failureHeard()
          if (lateFailure) {
            await lease.abandon()
            return { kind: 'failed', failure: lateFailure }
          }
          return { kind: 'lead', lease }
        }
      }
      return { kind: 'timeout' }
    } finally {
      this.#unlisten(key, listener)
    }
  }

  #listen(key: string, listener: (news: News) => void): void {
    let set = this.#waiters.get(key)
    if (!set) {
      set = new Set()
      this.#waiters.set(key, set)
    }
    set.add(listener)
  }

  #unlisten(key: string, listener: (news: News) => void): void {
    const set = this.#waiters.get(key)
    if (!set) return
    set.delete(listener)
    if (set.size === 0) {
      this.#waiters.delete(key)
      this.#joined.delete(key)
    }
  }

  /**
   * Tells every replica that `asker` waits here for the fill of `key`: the leader's replica
   * has the fill wait for a seat of `asker`'s team too, so that a team whose own seats are
   * busy holds back no other team's read on another replica (docs/decisions/shared-fill-queues.md).
   * Once per team and priority while this replica waits for the key: a stampede's waiters
   * add no message.
   */
  #join(key: string, asker: FillAsker): void {
    const told = this.#joined.get(key) ?? this.#joined.set(key, new Set()).get(key)!
    const name = `${asker.priority} ${asker.team}`
    if (told.has(name)) return
    told.add(name)
    void this.#breaker.run(() => this.#bus.publish(JOINED_CHANNEL, JSON.stringify({ key, team: asker.team, priority: asker.priority, fillSpan: asker.fillSpan, from: this.#id })), undefined)
  }

  #wake(key: string, news: News): void {
    const set = this.#waiters.get(key)
    if (!set) return
    for (const listener of [...set]) listener(news)
  }
}

/**
 * A `filled` message: the key alone (the fill stored nothing, or a replica of an earlier
 * version announced it), or `{key, fetchedAt}` of the copy stored.
 */
function parseFilled(message: string): { key: string; fetchedAt: number | null } {
  if (message.startsWith('{')) {
    try {
      const { key, fetchedAt } = JSON.parse(message) as { key?: unknown; fetchedAt?: unknown }
      if (typeof key === 'string' && typeof fetchedAt === 'number' && Number.isFinite(fetchedAt)) return { key, fetchedAt }
    } catch {
      // not JSON: a key that starts with a brace
    }
  }
  return { key: message, fetchedAt: null }
}

/** `from`: the replica whose waiters the message tells of (none: a message that names none). */
function parseJoined(message: string): { key: string; asker: FillAsker; from: unknown } | null {
  try {
    const { key, team, priority, fillSpan, from } = JSON.parse(message) as { key?: unknown; team?: unknown; priority?: unknown; fillSpan?: unknown; from?: unknown }
    if (typeof key !== 'string' || typeof team !== 'string' || typeof priority !== 'string') return null
    if (team === '' || team.length > MAX_ASKER_CHARS || priority.length > MAX_ASKER_CHARS) return null
    const span = typeof fillSpan === 'string' && fillSpan.length <= MAX_FILL_SPAN_CHARS ? { fillSpan } : {}
    return { key, asker: { team, priority, ...span }, from }
  } catch {
    return null
  }
}

function parseFailure(message: string): { key: string; failure: FillFailure } | null {
  try {
    const { key, code, response, transient } = JSON.parse(message) as { key?: unknown; code?: unknown; response?: FillFailure['response']; transient?: unknown }
    if (typeof key !== 'string' || typeof code !== 'string') return null
    return { key, failure: { code, ...(response ? { response } : {}), ...(transient === true ? { transient } : {}) } }
  } catch {
    return null
  }
}
