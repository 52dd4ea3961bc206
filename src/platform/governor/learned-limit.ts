import type { Logger } from 'pino'
import type { RedisBreaker } from '../../redis/breaker.js'
import type { RedisBus } from '../../redis/bus.js'
import type { RedisClient } from '../../redis/client.js'
import type { RedisSeal } from '../../redis/seal.js'
import type { CallGovernor } from './call-governor.js'
import type { CallOutcome, LimitEstimator } from './limit-estimator.js'
import { routeTemplate } from '../route-template.js'
import { redisScript } from '../../redis/script.js'
import { systemClock, type Clock, type Timer } from '../../clock.js'

/** What one platform call tells the learned limit. */
export interface CallSample {
  url: string
  team: string
  /** The work the call asks of the platform (reports/work-class.ts); default its route. */
  workClass?: string
  /** From sending the call to its answer's headers (the body's size and the caller's reading do not count). */
  latencyMs: number
  /** Calls of the credential in flight once it had its seat, itself included: every replica's. */
  inFlight: number
  /** The team's calls in flight on this replica once it had its seat, itself included. */
  teamInFlight?: number
  outcome: CallOutcome
}

/**
 * Writes this replica's limit for window `epoch` when it asks to (ARGV[4]) and no record
 * of that window or a later one is stored, or one of that window with a higher limit (of
 * the replicas' changes in one window, the lowest stands: each judged the platform from
 * its own few answers, and the most cautious is kept); or whatever is stored when told to
 * (ARGV[6]: the stored one did not verify, was too old, or did not match its own epoch);
 * with no record stored (a Redis restart, a lapse), any replica's limit is written.
 * Answers 'written', or the stored sealed record and the epoch stored beside it.
 * KEYS: the limit's hash. ARGV: epoch, limit, its sealed record, 1 to write, the record's
 * lifetime (ms), 1 to force.
 */
const SYNC = redisScript<string | [string, string]>('gatewayLimitSync', `
local stored = tonumber(redis.call('HGET', KEYS[1], 'epoch') or '-1')
local epoch = tonumber(ARGV[1])
local newer = epoch > stored or (epoch == stored and tonumber(ARGV[2]) < tonumber(redis.call('HGET', KEYS[1], 'limit') or '0'))
if ARGV[6] == '1' or ((ARGV[4] == '1' or stored < 0) and newer) then
  redis.call('HSET', KEYS[1], 'epoch', ARGV[1], 'limit', ARGV[2], 'sealed', ARGV[3])
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[5]))
  return 'written'
end
return {redis.call('HGET', KEYS[1], 'sealed') or '', tostring(stored)}
`, 1)

const CHANNEL = 'platform-limit'

// The shared limit outlives a quiet night this long; a gateway started after it begins at
// platform.initialConcurrent again.
const SHARED_LIMIT_TTL_MS = 60 * 60_000
/** A replica writes its limit again at least this often (windows) while it learns, so a record older than RECORD_MAX_AGE is no one's. */
export const REWRITE_WINDOWS = 60
/** A stored record older than this many windows (or dated ahead of now) is a replay or a leftover: it is written over, not adopted. */
export const RECORD_MAX_AGE_WINDOWS = 300
/** One shared record moves this replica's limit by at most this factor. */
export const ADOPT_MAX_FACTOR = 4
/** A replica reads the shared limit at most this often when it has nothing to write; the bus tells it of changes sooner. */
export const READ_EVERY_MS = 10_000

export interface LearnedLimitOptions {
  credential: string
  governor: CallGovernor
  estimator: LimitEstimator
  windowMs: number
  /** The shared limit's hash in Redis (keys.ts), with the client, breaker and bus; null without Redis. */
  shared: { redis: RedisClient; breaker: RedisBreaker; bus?: RedisBus | null; key: string; seal: RedisSeal | null } | null
  log: Pick<Logger, 'info' | 'warn'>
  onLimit: (limit: number, floorMs: number | null) => void
  onChange: (direction: 'up' | 'down' | 'cut') => void
  /** How often a replica with nothing to write reads the shared limit (ms); default READ_EVERY_MS. */
  readEveryMs?: number
  clock?: Clock
}

interface SharedRecord {
  limit: number
  epoch: number
}

/**
 * The limit in force of one credential, learned from the platform's answers
 * (limit-estimator.ts) and, with Redis, shared by every replica: a replica whose
 * estimate changes in a window writes it for that window (SYNC) unless a lower one of
 * that window is stored, and tells the others on the bus; every replica adopts what is
 * stored, so the replicas move one limit together rather than each its own, and the
 * most cautious of a window's changes stands. A replica that heard a window's record no
 * higher than its own change takes it without asking Redis, and reads the record only every
 * READ_EVERY_MS otherwise: the commands grow with the windows, not with the replicas
 * (a write a window, a read per replica every READ_EVERY_MS). The record is sealed (GATEWAY_SECRET) with its window: one
 * that does not verify, whose window differs from the one stored beside it, that is
 * older than RECORD_MAX_AGE_WINDOWS or dated ahead, is written over rather than adopted,
 * and one record moves a replica's limit by ADOPT_MAX_FACTOR at most. Redis
 * out of reach, each replica goes on learning on its own.
 */
export class LearnedLimit {
  readonly #o: LearnedLimitOptions
  readonly #clock: Clock
  #timer: Timer | null = null
  // The newest window whose shared limit this replica wrote or adopted.
  #epoch = -1
  #syncing = false
  // A change learned here that could not reach Redis yet (it was out, or slow): written at the next sync.
  #unshared = false
  // The stored record is not to be adopted: the next sync writes over it.
  #overwrite = false
  // A record without the seal is logged once, not once a window.
  #forgedSeen = false
  #lastRead = -Infinity
  #active = false
  // The shared record of the newest window this replica wrote or adopted.
  #shared: SharedRecord | null = null

  constructor(opts: LearnedLimitOptions) {
    this.#o = opts
    this.#clock = opts.clock ?? systemClock
    opts.governor.setLimit(opts.estimator.limit)
    opts.governor.setLongCallLimits(opts.estimator.longCallLimits)
    opts.onLimit(opts.estimator.limit, opts.estimator.floorMs)
  }

  /** Reads the shared limit, follows the other replicas' changes, then closes a window every windowMs (looked at four times a window, so none runs long). */
  async start(): Promise<void> {
    await this.#o.shared?.bus?.subscribe(CHANNEL, (message) => this.#heard(message))
    await this.#sync(false)
    this.#timer = this.#clock.setInterval(() => void this.#tick(), Math.max(1, Math.floor(this.#o.windowMs / 4))).unref()
  }

  stop(): void {
    if (this.#timer) this.#clock.clearInterval(this.#timer)
    this.#timer = null
  }

  /** The latency floor the estimator compares answers with (ms), or null before any answer. */
  get floorMs(): number | null {
    return this.#o.estimator.floorMs
  }

  /** How long a call of `call`'s kind takes unloaded (ms): its latency class's floor; null while it has none. */
  expectedMs(call: Pick<CallSample, 'url' | 'team' | 'workClass'>): number | null {
    return this.#o.estimator.floorOf(latencyClass(call, routeTemplate(call.url)))
  }

  record(sample: CallSample): void {
    const { governor, estimator } = this.#o
    const at = this.#clock.now()
    const route = routeTemplate(sample.url)
    this.#active = true
    estimator.record({
      at,
      latencyMs: sample.latencyMs,
      klass: latencyClass(sample, route),
      route,
      team: sample.team,
      inFlight: sample.inFlight,
      ...(sample.teamInFlight === undefined ? {} : { teamInFlight: sample.teamInFlight }),
      outcome: sample.outcome,
    })
    // Whether calls wait for a seat now: at a fresh start, a round trip's last answer judges the window.
    estimator.note({ at, inFlight: governor.inFlight, starved: governor.takeStarved() })
    // A window judged as its last answer comes moves the limits before that call's seat is free.
    if (estimator.ready(at)) void this.#tick()
  }

  /** Redis answers again (it may have restarted empty): the record is read now, and written back if it is gone, not at the next read. */
  redisBack(): void {
    void this.#sync(false)
  }

  /** The platform paused the whole credential: a hard cut. */
  overload(): void {
    const before = this.#o.estimator.limit
    this.#o.estimator.overload(this.#clock.now())
    this.#apply(before, 'cut')
    // Written with the next window's sync, so the other replicas cut too.
    if (this.#o.estimator.limit !== before) this.#unshared = true
  }

  async #tick(): Promise<void> {
    const { estimator, governor } = this.#o
    const before = estimator.limit
    estimator.note({ at: this.#clock.now(), inFlight: governor.inFlight, starved: governor.takeStarved() })
    const step = estimator.tick(this.#clock.now())
    // Brakes move on the teams' window, which closes whether or not the limit's does.
    governor.setBrakes(estimator.brakes)
    if (step === null) return
    this.#apply(before, step.reason === 'overload' ? 'cut' : 'learned')
    const epoch = this.#epochNow()
    const due = this.#epoch >= 0 && epoch - this.#epoch >= REWRITE_WINDOWS && this.#active
    const read = this.#clock.now() - this.#lastRead >= (this.#o.readEveryMs ?? READ_EVERY_MS)
    if (step.reason !== 'few-samples') this.#active = false
    // Another replica wrote this window's limit already (the bus brought it), no higher
    // than this one's: Redis would keep that one and answer it, so it is taken without
    // asking.
    const shared = this.#shared
    if (step.changed && !this.#unshared && !this.#overwrite && shared !== null && shared.epoch === epoch && estimator.limit >= shared.limit) {
      this.#adopt(shared.limit)
      return
    }
    if (step.changed || this.#unshared || this.#overwrite || due || read) await this.#sync(step.changed || this.#unshared || due)
  }

  /** The estimator's limit is now in force; `how` says whether this replica learned it (counted) or adopted it. */
  #apply(before: number, how: 'cut' | 'learned' | 'adopted'): void {
    const { estimator, governor, onLimit, onChange } = this.#o
    const limit = estimator.limit
    governor.setLimit(limit)
    governor.setLongCallLimits(estimator.longCallLimits)
    onLimit(limit, estimator.floorMs)
    if (limit !== before && how !== 'adopted') onChange(how === 'cut' ? 'cut' : limit > before ? 'up' : 'down')
  }

  #epochNow(): number {
    return Math.floor(this.#clock.now() / this.#o.windowMs)
  }

  async #sync(changed: boolean): Promise<void> {
    const shared = this.#o.shared
    if (!shared || this.#syncing) return
    this.#syncing = true
    try {
      const { redis, breaker, key, seal, bus } = shared
      const epoch = this.#epochNow()
      const limit = this.#o.estimator.limit
      const record = JSON.stringify({ limit, epoch })
      const sealed = seal ? seal.sealText(key, record) : record
      const force = this.#overwrite
      const answer = await breaker.run(() => SYNC(redis, key, epoch, limit, sealed, changed || force ? 1 : 0, SHARED_LIMIT_TTL_MS, force ? 1 : 0), null)
      if (answer === null) {
        this.#unshared ||= changed
        return
      }
      this.#lastRead = this.#clock.now()
      this.#unshared = false
      if (answer === 'written') {
        this.#overwrite = false
        this.#epoch = epoch
        this.#shared = { limit, epoch }
        // The bus carries the record itself: the other replicas adopt it without a read.
        bus?.publish(CHANNEL, sealed).catch(() => undefined)
        return
      }
      const [stored, storedEpoch] = answer as [string, string]
      if (!stored) return
      this.#consider(stored, Number(storedEpoch))
    } finally {
      this.#syncing = false
    }
  }

  /** A record another replica published: adopted as a stored one would be. */
  #heard(message: string): void {
    const opened = this.#open(message)
    if (opened !== null) this.#consider(message, opened.epoch)
  }

  /** A sealed record and the epoch stored beside it: adopted, or marked to be written over. */
  #consider(sealed: string, storedEpoch: number): void {
    const record = this.#open(sealed)
    const { credential, key } = { credential: this.#o.credential, key: this.#o.shared?.key }
    if (record === null) {
      if (!this.#forgedSeen) this.#o.log.warn({ credential, key }, "ignoring a shared platform limit in redis that does not carry this gateway's seal (GATEWAY_SECRET): this replica learns its own")
      this.#forgedSeen = true
      this.#overwrite = true
      return
    }
    this.#forgedSeen = false
    const now = this.#epochNow()
    // Its window sealed with it, and the one Redis orders by, must agree; and it must be recent.
    if (record.epoch !== storedEpoch || record.epoch > now + 1 || now - record.epoch > RECORD_MAX_AGE_WINDOWS) {
      this.#o.log.warn({ credential, key, epoch: record.epoch, storedEpoch, now }, 'ignoring a shared platform limit that is replayed, stale or dated ahead: this replica writes its own')
      this.#overwrite = true
      return
    }
    // A record as new as this replica's last, or newer, is the shared limit; an older one
    // was replaced here since (and this replica's own change is written when it comes).
    if (record.epoch < this.#epoch) return
    this.#epoch = record.epoch
    this.#shared = record
    this.#adopt(record.limit)
  }

  /** The shared limit, in force here: one record moves this replica at most ADOPT_MAX_FACTOR (a replayed one cannot swing it, a genuine one is reached within windows). */
  #adopt(limit: number): void {
    const own = this.#o.estimator.limit
    if (limit === own) return
    this.#o.estimator.adopt(Math.min(own * ADOPT_MAX_FACTOR, Math.max(own / ADOPT_MAX_FACTOR, limit)))
    this.#apply(own, 'adopted')
  }

  #open(sealed: string): SharedRecord | null {
    const shared = this.#o.shared
    if (!shared) return null
    return parseRecord(shared.seal ? shared.seal.openText(shared.key, sealed) : sealed)
  }
}

/** A call's latency class: its team, then the work it asks (its route by default). Each team is judged against floors of its own answers: no team sets another's. */
function latencyClass(call: Pick<CallSample, 'team' | 'workClass'>, route: string): string {
  return `${call.team}\n${call.workClass ?? route}`
}

function parseRecord(text: string | null): SharedRecord | null {
  if (text === null) return null
  try {
    const { limit, epoch } = JSON.parse(text) as { limit?: unknown; epoch?: unknown }
    return Number.isInteger(limit) && (limit as number) > 0 && Number.isInteger(epoch) ? { limit: limit as number, epoch: epoch as number } : null
  } catch {
    return null
  }
}
