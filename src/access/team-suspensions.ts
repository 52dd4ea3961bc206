import { randomUUID } from 'node:crypto'
import type { Logger } from 'pino'
import type { Clock } from '../clock.js'
import { TeamSuspendedError } from '../errors.js'
import type { RedisBreaker } from '../redis/breaker.js'
import type { RedisBus } from '../redis/bus.js'
import { commandFailureInWords, type RedisClient } from '../redis/client.js'
import type { RedisSeal } from '../redis/seal.js'
import { redisKey } from '../redis/keys.js'
import { dropUnchangedFields, readBoundedHash, setUnchangedField } from '../redis/bounded-hash.js'
import { keepLift, keepSuspension, parseRecord, recordEnded } from './suspension-record.js'

// A team is told whether its request holds a secret of the gateway's (its 400), and the
// search finds one in any window of the text: each refusal for a secret answers a guess at
// hundreds of candidates, and bisecting a batch that hit finds the secret in a few requests
// more (decisions/secret-guesses.md). So the refusal of a hit suspends the team: every
// request with any of its keys, on every replica, is refused 403 GW_TEAM_SUSPENDED for
// limits.secretSuspension, unless an operator lifts it. A guesser gets one hit a period,
// and the hit is an error line, a metric by team and a team the admin status lists.

const CHANNEL = 'team-suspension'
// Teams a replica takes from Redis at once: far more than a gateway runs; a hash grown past
// it by a Redis writer is not read.
const MAX_STORED = 10_000
// A field is a team's name, its value a sealed time (a tag of 43 characters, a dot, the
// milliseconds): a longer one is no suspension of the gateway's and is left alone.
const MAX_FIELD_BYTES = 1024
const MAX_VALUE_BYTES = 128
// Reads of a team's record a write makes at most while other replicas keep rewriting it.
const MAX_TRIES = 8
// A lift Redis did not take is tried again this often (and whenever Redis is back).
const LIFT_RETRY_MS = 5_000
// breaker.run's answer when Redis did not answer (a field read may be null).
const FAILED = Symbol('redis failed')

/** What a replica tells the others: a suspension of `team` (`ms` from now) or, without `ms`, its lift (made `at`, when told). */
interface SuspensionMessage {
  from: string
  team: string
  ms?: number
  at?: number
}

/** Where a lift reached: every replica (Redis took it), this one alone (no Redis), or this one until Redis answers again (then it is written, and told). */
export type LiftReach = 'all' | 'this replica only' | 'this replica until Redis answers again'

/** A suspended team and when its suspension ends (ms on this replica's clock). */
export interface Suspension {
  team: string
  until: number
}

export interface TeamSuspensionsOptions {
  redis: RedisClient | null
  breaker: RedisBreaker | null
  bus: RedisBus | null
  /** Seals the suspensions written to Redis (GATEWAY_SECRET): one read there is obeyed only with its seal. */
  seal: RedisSeal | null
  keyPrefix: string
  /** limits.secretSuspension. */
  periodMs: number
  /** Redis' clock where there is Redis (the times are compared across replicas). */
  clock: Clock
  log: Pick<Logger, 'error' | 'warn' | 'info'>
  /** A suspension of `team` began here (a request of its held a secret): counted by team. */
  onSuspended: (team: string) => void
  /** A stored suspension without this gateway's seal (at `where`), ignored: counted and logged. */
  onUnverified: (where: string) => void
}

/**
 * The suspended teams, shared by the replicas as platform pauses are: the replica that
 * refused the hit writes the team's end to Redis (a hash, a field per team, each value
 * sealed) and tells the others on the bus. A lift is written alike, as the moment it was
 * made (a negative number: a suspension that began before it ends before that moment and
 * `limits.secretSuspension`, when the lift's record goes), and told. A replica that starts, or
 * whose bus subscriber connects again, reads the hash. Whether a team is suspended is
 * asked of a map in memory: no Redis call a request. Without Redis (one replica, or Redis
 * down) a suspension holds on the replica that refused the hit, and a lift on the replica
 * that made it; each is written to Redis once it answers again. A suspension Redis lost (a
 * restart without its data, a flush) is written again by the replicas that hold it: only a
 * lift ends one early.
 */
export class TeamSuspensions {
  readonly #o: TeamSuspensionsOptions
  readonly #until = new Map<string, number>()
  // Suspensions begun here that Redis has not taken yet (down when they began).
  readonly #unshared = new Set<string>()
  // Lifts made here that Redis has not taken yet, and when each was made.
  readonly #lifts = new Map<string, number>()
  // Lifts the other replicas told, the latest of each team's, until every suspension they
  // end has: a read of Redis answered before a lift reached it, and taken after the lift was
  // told, holds the suspension the lift ended.
  readonly #heard = new Map<string, number>()
  // Redis hands a message to its sender's subscriber too: its own word is no news.
  readonly #self = randomUUID()
  #retry: ReturnType<Clock['setTimeout']> | null = null
  // The catch-up under way, and the one asked meanwhile (shared by every ask): Redis' return
  // is told twice at once (the circuit closing, the bus subscribing again), and two reads
  // before either write would each find a lost suspension missing, say so and write it.
  // The one asked meanwhile runs after it, reading what changed since it read.
  #catchingUp: Promise<void> | null = null
  #catchUpNext: Promise<void> | null = null

  constructor(opts: TeamSuspensionsOptions) {
    this.#o = opts
  }

  /** 403 GW_TEAM_SUSPENDED with `retry-after` while `team` is suspended. */
  refuse(team: string): void {
    const left = this.secondsLeft(team)
    if (left !== null) throw Object.assign(new TeamSuspendedError(team, left), { retryAfterSec: left })
  }

  /** Seconds left of the suspension of `team` (at least 1); null: not suspended. */
  secondsLeft(team: string): number | null {
    return this.#until.size === 0 ? null : this.#left(team)
  }

  /** The suspended teams now, the soonest to end first. */
  list(): Suspension[] {
    for (const team of this.#until.keys()) this.#left(team)
    return [...this.#until].map(([team, until]) => ({ team, until })).sort((a, b) => a.until - b.until)
  }

  /**
   * A request of `team` (by its key `keyId`) held a secret of the gateway's in `where`:
   * the team is suspended here at once, then on the other replicas. The log line names the
   * team, the key and where the secret was, never the secret.
   */
  suspend(team: string, keyId: string, where: string): void {
    const until = this.#o.clock.now() + this.#o.periodMs
    this.#until.set(team, Math.max(until, this.#until.get(team) ?? 0))
    // Unshared until Redis took it: a catch-up meanwhile keeps it rather than read it as lifted.
    this.#unshared.add(team)
    this.#o.onSuspended(team)
    this.#o.log.error(
      { team, key: keyId, where, suspendedUntil: new Date(until).toISOString() },
      `team suspended: a request of its held a secret of the gateway's in ${where}; every request with its keys is refused until then (limits.secretSuspension), unless an operator lifts it (DELETE /admin/suspensions/${team})`,
    )
    void this.#share(team, this.#o.periodMs)
  }

  /** Lifts the suspension of `team` here and on every replica: whether it was suspended here, and where the lift reached now. */
  async lift(team: string): Promise<{ lifted: boolean; replicas: LiftReach }> {
    const lifted = this.#left(team) !== null
    this.#until.delete(team)
    this.#unshared.delete(team)
    if (!this.#o.redis || !this.#o.breaker) return { lifted, replicas: 'this replica only' }
    this.#lifts.set(team, this.#o.clock.now())
    return { lifted, replicas: (await this.#writeLift(team)) ? 'all' : 'this replica until Redis answers again' }
  }

  /** Stops trying again the lifts Redis did not take. */
  /** Reads the stored suspensions again, storing those only GATEWAY_SECRET_FALLBACK opens sealed with GATEWAY_SECRET (#read): what a replica of the step before wrote meanwhile. */
  async reseal(): Promise<void> {
    await this.#read(false)
  }

  close(): void {
    this.#o.clock.clearTimeout(this.#retry)
    this.#retry = null
  }

  /**
   * A lift made here, written (unless Redis holds a suspension that began after it: that one
   * stands) and told; false while Redis does not take it (it is tried again).
   */
  async #writeLift(team: string): Promise<boolean> {
    const { bus, periodMs } = this.#o
    const at = this.#lifts.get(team)
    if (at === undefined) return false
    const done = await this.#store(team, (stored) => {
      const outcome = keepLift(stored, at, periodMs)
      return { outcome, value: outcome === 'write' ? String(-at) : null }
    })
    if (done === null) {
      this.#retryLifts()
      return false
    }
    if (this.#lifts.get(team) === at) this.#lifts.delete(team)
    if (done.outcome === 'suspended' && done.stored !== null) this.#until.set(team, Math.max(done.stored, this.#until.get(team) ?? 0))
    else {
      await bus?.publish(CHANNEL, JSON.stringify({ from: this.#self, team, at } satisfies SuspensionMessage)).catch((err: Error) => {
        this.#o.log.warn({ err: { message: commandFailureInWords(err) }, team }, 'the lift of a team suspension could not be sent to the other replicas: each takes it from Redis when it reads the suspensions again')
      })
    }
    return true
  }

  /** The lifts Redis has not taken, tried again in a while: a failure that opens no circuit brings no catch-up. */
  #retryLifts(): void {
    if (this.#retry !== null) return
    this.#retry = this.#o.clock.setTimeout(() => {
      this.#retry = null
      for (const team of [...this.#lifts.keys()]) void this.#writeLift(team)
    }, LIFT_RETRY_MS)
    this.#retry.unref()
  }

  /**
   * Reads the record of `team` and writes what `decide` makes of it, unless a replica wrote
   * the record since it was read (then it is read again); null when Redis did not answer, or
   * kept being rewritten.
   */
  async #store<T>(team: string, decide: (stored: number | null) => { outcome: T; value: string | null }): Promise<{ outcome: T; stored: number | null } | null> {
    const { redis, breaker } = this.#o
    if (!redis || !breaker) return null
    const key = this.#key()
    for (let tries = 0; tries < MAX_TRIES; tries++) {
      const raw = await breaker.run(() => redis.hget(key, team), FAILED)
      if (raw === FAILED) return null
      const stored = parseRecord(this.#opened(team, raw))
      const { outcome, value } = decide(stored)
      if (value === null) return { outcome, stored }
      const set = await breaker.run(() => setUnchangedField(redis, key, team, raw, this.#sealed(team, value)), FAILED)
      if (set === FAILED) return null
      if (set) return { outcome, stored }
    }
    return null
  }

  /** Follows the other replicas' suspensions and lifts, after reading those under way. */
  async start(): Promise<void> {
    const { bus, clock } = this.#o
    await bus?.subscribe(CHANNEL, (text) => {
      const message = parseMessage(text)
      if (message === null || message.from === this.#self) return
      const { team, ms, at } = message
      const held = this.#until.get(team)
      if (ms === undefined) {
        // A lift ends the suspension it reached, not one begun here after it (told late).
        if (at !== undefined) this.#heard.set(team, Math.max(at, this.#heard.get(team) ?? at))
        if (held !== undefined && (at === undefined || keepSuspension(-at, held, this.#o.periodMs) === 'lifted')) this.#until.delete(team)
        return
      }
      const until = clock.now() + ms
      // A suspension a lift made here ends (it began before the lift) stays ended.
      if (this.#lifted(team, until)) return
      this.#until.set(team, Math.max(until, held ?? 0))
    })
    // What was told while the subscriber was away is in Redis: read again on each return.
    bus?.onSubscribed(() => void this.catchUp())
    await this.#read(false)
  }

  /**
   * Redis is back (the bus subscribed again, the circuit closed): a suspension held here
   * that Redis says was lifted after it began is lifted here; one Redis does not hold (it
   * began here while Redis was away, or Redis lost it) is written now; a lift made here while
   * Redis was away is written now.
   */
  catchUp(): Promise<void> {
    if (this.#catchingUp !== null) {
      this.#catchUpNext ??= this.#catchingUp.catch(() => undefined).then(() => {
        this.#catchUpNext = null
        return this.catchUp()
      })
      return this.#catchUpNext
    }
    const run = this.#read(true).finally(() => {
      this.#catchingUp = null
    })
    this.#catchingUp = run
    return run
  }

  /** The stored suspensions taken; with `again`, those held here reconciled as catchUp says. */
  async #read(again: boolean): Promise<void> {
    const { redis, breaker, clock } = this.#o
    if (!redis || !breaker) return
    const key = this.#key()
    const size = await breaker.run(() => redis.hlen(key), null)
    if (size === null) return
    if (size > MAX_STORED) {
      this.#o.log.warn({ key, fields: size }, 'ignoring a hash of team suspensions in redis larger than any replica writes')
      return
    }
    const stored = size === 0 ? {} : await breaker.run(() => redis.hgetall(key), null)
    if (stored === null) return
    const now = clock.now()
    for (const [team, at] of this.#heard) if (recordEnded(-at, now, this.#o.periodMs)) this.#heard.delete(team)
    const held = new Set<string>()
    // The teams whose record is a lift.
    const lifts = new Set<string>()
    // A record opened through GATEWAY_SECRET_FALLBACK alone (sealed with the secret before a
    // change of it) is stored again, unchanged but for its seal, over that very record: once
    // the fallback goes, a suspension (or a lift) sealed with the old secret would read as
    // absent, and the team be served again with no lift (docs/operations/deploy.md).
    const resealed: Promise<unknown>[] = []
    for (const [team, value] of Object.entries(stored)) {
      const opened = this.#opened(team, value)
      if (opened !== null && this.#o.seal && this.#sealed(team, opened) !== value) {
        resealed.push(breaker.run(() => setUnchangedField(redis, key, team, value, this.#sealed(team, opened)), null).then((set) => {
          if (set) this.#o.log.info({ team }, 'a team suspension record, sealed with GATEWAY_SECRET_FALLBACK, is stored again sealed with GATEWAY_SECRET')
        }))
      }
      const record = parseRecord(opened)
      if (record !== null && record < 0) lifts.add(team)
      // A suspension a lift made here ends is not taken (the lift is written below), nor one a lift told meanwhile ends.
      if (record === null || record <= now || this.#lifted(team, record)) continue
      held.add(team)
      this.#until.set(team, Math.max(record, this.#until.get(team) ?? 0))
    }
    await Promise.all(resealed)
    if (!again) return
    const writes: Promise<unknown>[] = [...this.#lifts.keys()].map((team) => this.#writeLift(team))
    const lost: string[] = []
    for (const [team, until] of this.#until) {
      if (held.has(team) || until <= now) continue
      if (!lifts.has(team) && !this.#unshared.has(team)) lost.push(team)
      // Written unless a lift stored ended it (then it ends here too).
      writes.push(this.#share(team, until - now))
    }
    if (lost.length > 0) this.#o.log.warn({ teams: lost }, 'team suspensions missing from Redis (a restart without its data, a flush?) written again: only a lift ends one early')
    await Promise.all(writes)
  }

  /** Whether a lift made here that Redis has not taken yet, or one another replica told, ends a suspension of `team` ending at `until`. */
  #lifted(team: string, until: number): boolean {
    return [this.#lifts.get(team), this.#heard.get(team)].some((at) => at !== undefined && keepSuspension(-at, until, this.#o.periodMs) === 'lifted')
  }


  /** A suspension held here: written (the later end wins; not over a lift made after it began, which ends it here) and told. */
  async #share(team: string, ms: number): Promise<void> {
    const { redis, breaker, bus, clock, periodMs } = this.#o
    if (ms <= 0) return
    const until = clock.now() + ms
    const done = await this.#store(team, (record) => {
      const outcome = keepSuspension(record, until, periodMs)
      return { outcome, value: outcome === 'write' ? String(until) : null }
    })
    if (done?.outcome === 'lifted' && done.stored !== null) {
      const held = this.#until.get(team)
      if (held !== undefined && keepSuspension(done.stored, held, periodMs) === 'lifted') {
        this.#until.delete(team)
        this.#unshared.delete(team)
      }
      return
    }
    if (done !== null) {
      this.#unshared.delete(team)
      if (done.outcome === 'write' && redis && breaker) await this.#dropEnded(redis, breaker, this.#key())
    }
    await bus?.publish(CHANNEL, JSON.stringify({ from: this.#self, team, ms } satisfies SuspensionMessage)).catch((err: Error) => {
      this.#o.log.warn({ err: { message: commandFailureInWords(err) }, team }, 'a team suspension could not be sent to the other replicas')
    })
  }

  /**
   * The hash carries no expiry: a Redis that evicts keys with one at its maxmemory
   * (volatile-lru, the replicas guide's policy for the report copies) would evict it, a
   * cold key read only at a start and a reconnect, and a replica started after would serve
   * the team. So each suspension written drops the ended ones, each only if no replica
   * rewrote it meanwhile.
   */
  async #dropEnded(redis: RedisClient, breaker: RedisBreaker, key: string): Promise<void> {
    const stored = await breaker.run(() => readBoundedHash(redis, key, { maxFields: MAX_STORED, maxFieldBytes: MAX_FIELD_BYTES, maxValueBytes: MAX_VALUE_BYTES }), null)
    if (stored === null) return
    const now = this.#o.clock.now()
    // A lift's record goes once every suspension that began before it has ended.
    const ended = stored.filter(([team, value]) => {
      const record = parseRecord(this.#opened(team, value, false))
      return record !== null && recordEnded(record, now, this.#o.periodMs)
    })
    await breaker.run(() => dropUnchangedFields(redis, key, ended), null)
  }

  /** Seconds left of the suspension of `team` (at least 1), dropping it once ended; null: not suspended. */
  #left(team: string): number | null {
    const until = this.#until.get(team)
    if (until === undefined) return null
    const ms = until - this.#o.clock.now()
    if (ms > 0) return Math.ceil(ms / 1000)
    this.#until.delete(team)
    this.#unshared.delete(team)
    return null
  }

  /** A stored value, or null when it is not sealed by a replica of this gateway (counted unless `count` is false). */
  #opened(team: string, value: string | null, count = true): string | null {
    const seal = this.#o.seal
    if (value === null || !seal) return value
    const binding = `${this.#key()}#${team}`
    const opened = seal.openText(binding, value)
    if (opened === null && count) this.#o.onUnverified(binding)
    return opened
  }

  #sealed(team: string, value: string): string {
    return this.#o.seal ? this.#o.seal.sealText(`${this.#key()}#${team}`, value) : value
  }

  #key(): string {
    return redisKey.suspensions(this.#o.keyPrefix)
  }
}

function parseMessage(text: string): SuspensionMessage | null {
  try {
    const m = JSON.parse(text) as Partial<Record<keyof SuspensionMessage, unknown>>
    if (typeof m.from !== 'string' || typeof m.team !== 'string') return null
    if (m.ms === undefined) return typeof m.at === 'number' && Number.isFinite(m.at) ? { from: m.from, team: m.team, at: m.at } : { from: m.from, team: m.team }
    return typeof m.ms === 'number' && Number.isFinite(m.ms) && m.ms > 0 ? { from: m.from, team: m.team, ms: m.ms } : null
  } catch {
    return null // not a suspension message
  }
}
