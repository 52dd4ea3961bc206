import type { Logger } from 'pino'
import { type RedisBreaker } from '../../redis/breaker.js'
import { type RedisClient } from '../../redis/client.js'
import { RedisLock } from '../../redis/lock.js'
import { systemClock, type Clock } from '../../clock.js'
import { redisKey } from '../../redis/keys.js'

/** What the gate reads of a token (a TokenState; its type lives with the provider, which imports the gate). */
export interface TokenSnapshot {
  token: string
  fingerprint: string
  obtainedAt: number
}

export interface LoginRequest<T extends TokenSnapshot> {
  credential: string
  /** The token the probe found refused, or whose 401 is unchecked (no probe); null: none (start, refresh, schedule). */
  refused: T | null
  /**
   * Bypasses `platform.loginMinInterval`: a refusal the probe confirmed, the start login (no
   * token yet) and an operator's refresh. Only an exempt login waits for the lock.
   */
  exempt: boolean
  /** The credential's token now. */
  current: () => T | null
  /** Resolves at the next change of the credential's token, or after `ms`. */
  changed: (ms: number) => Promise<void>
  /** The password login itself; its token becomes the credential's. */
  login: () => Promise<T>
  /**
   * A start's other way to a token: `taken`, the usable token of the same login another
   * replica stored meanwhile (null when there is none yet), and `stored`, the fingerprint
   * of the token Redis holds (null: none).
   */
  instead?: () => Promise<{ taken: T | null; stored: string | null }>
}

interface LastLogin {
  /** When the login began (the gateway's clock). */
  at: number
  /** The fingerprint of the token it got; null when it failed. */
  fingerprint: string | null
}

/** A held lock; releasing one that lapsed (or a solo one) does nothing. */
interface Held {
  release(): Promise<void>
}

const SOLO: Held = { release: async () => undefined }

// While another replica holds the lock, an exempt login looks again this often (and at
// every change of the token, which is how another replica's shared login arrives).
const LOCK_POLL_MS = 100
// The lock's life, renewed every third of it while the login runs (RedisLock.keepAlive): a
// lock its holder never releases (the release not sent while the circuit is open, a take
// answered after the command timeout whose SET still ran, a replica killed mid-login) holds
// the other replicas' logins this long, not a login's longest.
const LOCK_TTL_MS = 3000
// The record of the last login outlives any interval and any wait on it; it expires so
// that a credential taken out of the configuration leaves nothing behind.
const RECORD_TTL_MS = 24 * 3600_000

/**
 * Password logins of each credential: one at a time across replicas (a Redis lock, SET NX
 * PX with an owner token, renewed while the login runs and released by its owner only) and
 * at most one per `loginMinInterval` (the last login recorded in Redis) unless exempt. A login that a
 * refused token asked for, made while another replica logged in after that token was
 * obtained, waits for that replica's token through the shared store instead. Without
 * Redis, or while it is down, the same rules hold per process.
 */
export class LoginGate {
  readonly #redis: RedisClient | null
  readonly #breaker: RedisBreaker | null
  readonly #prefix: string
  readonly #minIntervalMs: number
  readonly #longestLoginMs: number
  /** Replicas share their tokens through Redis (GATEWAY_SECRET): one login serves them all. */
  readonly #shared: boolean
  readonly #log: Logger
  readonly #clock: Clock
  /** This process's own record of each credential's last login: the one used while Redis is out. */
  readonly #local = new Map<string, LastLogin>()
  /** This process's logins of each credential, one after the other. */
  readonly #queues = new Map<string, Promise<unknown>>()

  constructor(opts: {
    redis: RedisClient | null
    breaker: RedisBreaker | null
    prefix: string
    minIntervalMs: number
    /** The longest a login can take: the longest wait for another replica's. */
    longestLoginMs: number
    shared: boolean
    log: Logger
    clock?: Clock
  }) {
    this.#redis = opts.redis
    this.#breaker = opts.breaker
    this.#prefix = opts.prefix
    this.#minIntervalMs = opts.minIntervalMs
    this.#longestLoginMs = opts.longestLoginMs
    this.#shared = opts.shared
    this.#log = opts.log
    this.#clock = opts.clock ?? systemClock
  }

  /**
   * The credential's new token: from its own login, or another replica's; null when no
   * login was made (within the interval, the lock held elsewhere, or no token arrived in
   * time). A failed login throws.
   */
  run<T extends TokenSnapshot>(req: LoginRequest<T>): Promise<T | null> {
    const previous = this.#queues.get(req.credential) ?? Promise.resolve()
    const turn = previous.then(() => this.#run(req))
    this.#queues.set(req.credential, turn.catch(() => undefined))
    return turn
  }

  async #run<T extends TokenSnapshot>(req: LoginRequest<T>): Promise<T | null> {
    const until = this.#clock.now() + this.#longestLoginMs
    let awaitedStored = false
    for (;;) {
      const held = await this.#take(req.credential)
      if (held) {
        let outcome: T | null | 'awaitShared' | 'awaitStored'
        try {
          outcome = await this.#underLock(req, !awaitedStored)
        } finally {
          await held.release()
        }
        if (outcome !== 'awaitStored') return outcome === 'awaitShared' ? this.#awaitReplacement(req, until) : outcome
        // Stored within the wait, or this replica logs in itself after all.
        awaitedStored = true
        const stored = await this.#awaitStored(req)
        if (stored) return stored
        continue
      }
      // Another replica logs in now: an unconfirmed reason leaves it at that.
      if (!req.exempt) return null
      const replaced = replacement(req)
      if (replaced) return replaced
      if (this.#clock.now() >= until) {
        this.#log.warn({ credential: req.credential }, 'platform login skipped: another replica held the login lock for the whole wait')
        return null
      }
      await req.changed(Math.min(LOCK_POLL_MS, until - this.#clock.now()))
    }
  }

  async #underLock<T extends TokenSnapshot>(req: LoginRequest<T>, mayAwaitStored: boolean): Promise<T | null | 'awaitShared' | 'awaitStored'> {
    const replaced = replacement(req)
    if (replaced) return replaced
    const last = await this.#lastLogin(req.credential)
    if (req.instead && this.#shared) {
      const { taken, stored } = await req.instead()
      if (taken) return taken
      // A replica that started beside this one logged in moments ago and has not stored its
      // token yet: it does as its start goes on, and a second login would only replace it.
      if (mayAwaitStored && last?.fingerprint && last.fingerprint !== stored && this.#clock.now() - last.at < this.#longestLoginMs) return 'awaitStored'
    }
    const refused = req.refused
    // A replica logged in after the refused token was obtained: its token is on its way
    // through Redis (it shares it as it sets it), and a second login would only replace it.
    if (refused && this.#shared && last?.fingerprint && last.fingerprint !== refused.fingerprint && last.at >= refused.obtainedAt) return 'awaitShared'
    if (!req.exempt && last && this.#clock.now() - last.at < this.#minIntervalMs) return null
    const at = this.#clock.now()
    let fingerprint: string | null = null
    try {
      const state = await req.login()
      fingerprint = state.fingerprint
      return state
    } finally {
      await this.#record(req.credential, { at, fingerprint })
    }
  }

  async #awaitReplacement<T extends TokenSnapshot>(req: LoginRequest<T>, until: number): Promise<T | null> {
    for (;;) {
      const replaced = replacement(req)
      if (replaced || this.#clock.now() >= until) return replaced
      await req.changed(until - this.#clock.now())
    }
  }

  /** The token another replica's login stores (req.instead), looked for until a lock's life has passed; null when none came. */
  async #awaitStored<T extends TokenSnapshot>(req: LoginRequest<T>): Promise<T | null> {
    const until = this.#clock.now() + LOCK_TTL_MS
    for (;;) {
      const taken = (await req.instead?.())?.taken ?? null
      if (taken || this.#clock.now() >= until) return taken
      await req.changed(Math.min(LOCK_POLL_MS, until - this.#clock.now()))
    }
  }

  /** The lock of the credential's logins; null while another replica holds it; SOLO without Redis. */
  async #take(credential: string): Promise<Held | null> {
    const redis = this.#redis
    const breaker = this.#breaker
    if (!redis || !breaker) return SOLO
    const lock = await RedisLock.take(redis, breaker, redisKey.loginLock(this.#prefix, credential), LOCK_TTL_MS)
    if (!lock) return lock === undefined ? SOLO : null
    const stopRenewing = lock.keepAlive(this.#clock)
    return {
      release: async () => {
        stopRenewing()
        await lock.release()
      },
    }
  }

  /** The later of this process's record and the shared one. */
  async #lastLogin(credential: string): Promise<LastLogin | null> {
    const local = this.#local.get(credential) ?? null
    const redis = this.#redis
    const breaker = this.#breaker
    if (!redis || !breaker) return local
    const shared = parseRecord(await breaker.run(() => redis.get(this.#recordKey(credential)), null))
    if (!shared || (local && local.at >= shared.at)) return local
    return shared
  }

  async #record(credential: string, last: LastLogin): Promise<void> {
    this.#local.set(credential, last)
    const redis = this.#redis
    const breaker = this.#breaker
    if (!redis || !breaker) return
    const ttl = Math.max(this.#minIntervalMs, RECORD_TTL_MS)
    await breaker.run(() => redis.set(this.#recordKey(credential), JSON.stringify(last), 'PX', ttl), undefined)
  }

  #recordKey(credential: string): string {
    return redisKey.loginLast(this.#prefix, credential)
  }
}

/** The credential's token when it is no longer the refused one (another caller, replica or operator replaced it). */
function replacement<T extends TokenSnapshot>(req: LoginRequest<T>): T | null {
  const current = req.current()
  return req.refused && current && current.token !== req.refused.token ? current : null
}

function parseRecord(raw: string | null): LastLogin | null {
  if (!raw) return null
  try {
    const r = JSON.parse(raw) as Partial<LastLogin>
    if (typeof r.at !== 'number' || !(typeof r.fingerprint === 'string' || r.fingerprint === null)) return null
    return { at: r.at, fingerprint: r.fingerprint }
  } catch {
    return null
  }
}
