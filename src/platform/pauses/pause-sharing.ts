import { randomUUID } from 'node:crypto'
import type { Logger } from 'pino'
import type { RedisBreaker } from '../../redis/breaker.js'
import type { RedisBus } from '../../redis/bus.js'
import { commandFailureInWords, type RedisClient } from '../../redis/client.js'
import type { RedisSeal } from '../../redis/seal.js'
import { redisKey } from '../../redis/keys.js'
import type { Clock } from '../../clock.js'
import { MAX_SCOPES, scopeKey, scopeOfKey, type Pause } from './pauses.js'

const CHANNEL = 'platform-pause'

/** What a replica tells the others: a pause (`ms` from now) or, without `ms`, its end; `from`, the replica that tells it. */
interface PauseMessage {
  from?: string
  credential: string
  scope: string
  team: string
  route: string
  ms?: number
  /** The pause is a route's own limiter's (Pause.own). */
  own?: true
}

/** A peer's word: a pause to take, or the scope whose pause ended. */
export type PeerPause = { credential: string; pause: Pause } | { credential: string; ended: string }

export interface PauseSharingOptions {
  redis: RedisClient | null
  breaker: RedisBreaker | null
  bus: RedisBus | null
  /** Seals the pauses written to Redis (GATEWAY_SECRET): a pause read there is obeyed only with its seal. */
  seal: RedisSeal | null
  keyPrefix: string
  /** platform.maxPause: without a seal, the longest a peer's pause is taken for. */
  maxPauseMs: number
  log: Pick<Logger, 'warn'>
  /** A stored pause without this gateway's seal, ignored. */
  onUnverified: () => void
  /** This replica's clock: its pauses' ends (`Pause.until`) and the peers' "ms from now". */
  clock: Clock
  /** The clock of the ends written to Redis, which another replica compares with its own: Redis' clock as this replica reads it (redis-clock.ts; default `clock`'s). */
  sharedNow?: () => number
}

/**
 * The pauses of every credential shared by the replicas: the replica whose call drew a
 * 429 writes the pause to Redis (one hash per credential, a field per scope, each value
 * sealed with its end) and tells the others on the bus; likewise for an end the platform
 * answered. A replica that starts reads the pauses under way. Without Redis a pause stays
 * on the replica that got the 429.
 *
 * A stored end is on Redis' clock (`sharedNow`), and each replica turns it into the time
 * left on its own: a replica whose clock is 30 s ahead of the writer's still takes a pause
 * with 20 s left, and one 30 s behind takes it for 20 s, not 50. The bus carries "ms from
 * now", which needs no common clock.
 */
export class PauseSharing {
  readonly #o: PauseSharingOptions
  // Redis hands a message to its sender's subscriber too: its own word is no news (an
  // echo would end its pause again from the echo's arrival, or end a pause begun since).
  readonly #self = randomUUID()
  readonly #sharedNow: () => number

  constructor(opts: PauseSharingOptions) {
    this.#o = opts
    this.#sharedNow = opts.sharedNow ?? (() => opts.clock.now())
  }

  /** Follows the other replicas' pauses, after reading those under way for `credentials`. */
  async start(credentials: readonly string[], onPeer: (word: PeerPause) => void): Promise<void> {
    const { bus, redis, breaker, clock } = this.#o
    await bus?.subscribe(CHANNEL, (text) => {
      const message = parseMessage(text)
      if (message === null || message.from === this.#self) return
      const scope = scopeOfKey(message.scope)
      if (scope === null) return
      if (message.ms === undefined) onPeer({ credential: message.credential, ended: message.scope })
      else onPeer({ credential: message.credential, pause: { scope, team: message.team, route: message.route, until: clock.now() + this.#peerLength(message.ms), ...ownOf(message) } })
    })
    if (!redis || !breaker) return
    for (const credential of credentials) {
      const key = this.#key(credential)
      // Bounded before it is read: a hash grown by a Redis writer is ignored, not decoded.
      const size = await breaker.run(() => redis.hlen(key), 0)
      if (size > MAX_SCOPES) {
        this.#o.log.warn({ key, fields: size }, 'ignoring a hash of platform pauses in redis larger than any replica writes')
        continue
      }
      const stored = size === 0 ? {} : await breaker.run(() => redis.hgetall(key), {} as Record<string, string>)
      for (const [field, value] of Object.entries(stored)) {
        const scope = scopeOfKey(field)
        const record = scope === null ? null : parseStored(this.#opened(`${key}#${field}`, value))
        if (scope === null || record === null) continue
        const ms = this.#peerLength(record.until - this.#sharedNow())
        if (ms > 0) onPeer({ credential, pause: { scope, team: record.team, route: record.route, until: clock.now() + ms, ...ownOf(record) } })
      }
    }
  }

  /** A pause this replica's call drew: written (the longer of two pauses wins) and told. */
  async share(credential: string, pause: Pause): Promise<void> {
    const { redis, breaker, clock } = this.#o
    const ms = pause.until - clock.now()
    if (ms <= 0) return
    const field = scopeKey(pause.scope)
    if (redis && breaker) {
      const key = this.#key(credential)
      const binding = `${key}#${field}`
      const until = this.#sharedNow() + ms
      const current = parseStored(this.#opened(binding, await breaker.run(() => redis.hget(key, field), null)))
      if (current === null || current.until < until) {
        await breaker.run(() => redis.hset(key, field, this.#sealed(binding, JSON.stringify({ until, team: pause.team, route: pause.route, ...ownOf(pause) }))), null)
        // The hash outlives its longest pause only; a past pause in it is skipped at start.
        const left = await breaker.run(() => redis.pttl(key), -2)
        if (left < ms) await breaker.run(() => redis.pexpire(key, ms), null)
      }
    }
    this.#publish({ credential, scope: field, team: pause.team, route: pause.route, ms, ...ownOf(pause) })
  }

  /** A pause the platform's answer ended here: dropped from Redis and told. */
  async shareEnd(credential: string, pause: Pause): Promise<void> {
    const { redis, breaker } = this.#o
    const field = scopeKey(pause.scope)
    if (redis && breaker) await breaker.run(() => redis.hdel(this.#key(credential), field), null)
    this.#publish({ credential, scope: field, team: pause.team, route: pause.route })
  }

  #publish(message: PauseMessage): void {
    this.#o.bus?.publish(CHANNEL, JSON.stringify({ from: this.#self, ...message })).catch((err: Error) => {
      this.#o.log.warn({ err: { message: commandFailureInWords(err) }, credential: message.credential }, 'the platform pause could not be sent to the other replicas')
    })
  }

  /** A stored pause's value, or null when it is not sealed by a replica of this gateway. */
  #opened(binding: string, value: string | null): string | null {
    const seal = this.#o.seal
    if (value === null || !seal) return value
    const opened = seal.openText(binding, value)
    if (opened === null) {
      this.#o.onUnverified()
      this.#o.log.warn({ key: binding }, "ignoring a platform pause in redis that does not carry this gateway's seal (GATEWAY_SECRET)")
    }
    return opened
  }

  // Without a seal, anyone who may write to Redis may pause every replica: no longer
  // than a 429 of the platform could (platform.maxPause).
  #peerLength(ms: number): number {
    return this.#o.seal ? ms : Math.min(ms, this.#o.maxPauseMs)
  }

  #sealed(binding: string, value: string): string {
    return this.#o.seal ? this.#o.seal.sealText(binding, value) : value
  }

  #key(credential: string): string {
    return redisKey.pauses(this.#o.keyPrefix, credential)
  }
}

function parseMessage(text: string): PauseMessage | null {
  try {
    const m = JSON.parse(text) as Partial<Record<keyof PauseMessage, unknown>>
    if (typeof m.credential !== 'string' || typeof m.scope !== 'string' || typeof m.team !== 'string' || typeof m.route !== 'string') return null
    if (m.ms !== undefined && !(typeof m.ms === 'number' && Number.isFinite(m.ms))) return null
    return { ...(typeof m.from === 'string' ? { from: m.from } : {}), credential: m.credential, scope: m.scope, team: m.team, route: m.route, ...(m.ms === undefined ? {} : { ms: m.ms }), ...ownOf(m) }
  } catch {
    return null // not a pause message
  }
}

function parseStored(value: string | null): { until: number; team: string; route: string; own?: true } | null {
  if (value === null) return null
  try {
    const { until, team, route, own } = JSON.parse(value) as { until?: unknown; team?: unknown; route?: unknown; own?: unknown }
    return typeof until === 'number' && typeof team === 'string' && typeof route === 'string' ? { until, team, route, ...ownOf({ own }) } : null
  } catch {
    return null
  }
}

/** A pause's, a message's or a record's mark of a route's own limiter, kept only where it is `true`. */
function ownOf(of: { own?: unknown }): { own?: true } {
  return of.own === true ? { own: true } : {}
}
