import type { Logger } from 'pino'
import { commandFailureInWords, type RedisClient } from '../redis/client.js'
import { redisScript } from '../redis/script.js'
import type { RedisSeal } from '../redis/seal.js'
import { ANY_ADVERTISER, FILL_CLOCK_SKEW_MS, type CacheEntry } from './cache-entry.js'
import { dropUnchangedFields, readBoundedHash } from '../redis/bounded-hash.js'
import { systemClock } from '../clock.js'

/** A purge of the report cache: of one advertiser's entries, of one report's (`report`: its cache key), or (neither) of every entry; `at` is when it began (epoch ms). */
export interface Purge {
  at: number
  advertiserId?: number
  report?: string
}

/** What names a report in a purge record: its cache key's digest, the same under every cache version, and short. */
export function reportDigest(key: string): string {
  return key.slice(key.lastIndexOf(':') + 1)
}

// A report digest as the cache key makes it (base64url of a SHA-256): anything else in a
// record is not the gateway's.
const DIGEST = /^[\w-]{43}$/

// Advertisers (and, apart, reports) whose last purge a replica remembers; past this many,
// the oldest is folded into a purge of everything at its time: more entries refused
// (misses), never fewer.
export const MAX_PURGE_RECORDS = 10_000
// A field of the shared record is `adv:<id>` or `all`, its value a sealed time: anything
// longer is not the gateway's and is not read.
const MAX_FIELD_BYTES = 64
const MAX_VALUE_BYTES = 128

/**
 * A purge's field in the shared record, sealed as it is written: `replaces` (a purge of
 * everything) the record is emptied before it is written.
 */
export interface PurgeMark {
  key: string
  field: string
  value: string
  replaces: boolean
}

// Writes a purge's field into the shared record (`record`, one of the script's KEYS; ARGV:
// the field, its sealed value, '1' for a purge of everything, which empties the record
// first), unless it holds
// that value already, and takes the record's expiry off. What the field replaces (the
// field's last purge, or for everything the record) is deleted first: Redis at its
// maxmemory refuses a script's first write that may take memory and lets every write
// after a first one through, so a purge recorded before is recorded again on a full
// Redis, in the room its field gives back; a record that had no such field takes memory
// and is refused there. Deleted only when found: a delete of nothing would let it through.
export const MARK_LUA = `
local function mark(record)
  if redis.call('HGET', record, ARGV[1]) == ARGV[2] then return end
  if ARGV[3] == '1' then
    if redis.call('EXISTS', record) == 1 then redis.call('DEL', record) end
  elseif redis.call('HEXISTS', record, ARGV[1]) == 1 then
    redis.call('HDEL', record, ARGV[1])
  end
  redis.call('HSET', record, ARGV[1], ARGV[2])
  redis.call('PERSIST', record)
end`

const MARK = redisScript<number>('gatewayPurgeMark', `${MARK_LUA}
mark(KEYS[1])
return 1`, 1)

/** Where the purges are shared: a hash in Redis, each field sealed. */
export interface SharedPurges {
  redis: RedisClient
  /** Seals each field's value (GATEWAY_SECRET); null: read as they are. */
  seal: RedisSeal | null
  key: string
}

/**
 * A purge is final: an entry filled before the last purge that reaches it (its
 * advertiser's, or one of everything) is refused wherever it comes from, even when
 * someone who may write to Redis puts its sealed bytes back. Each replica keeps the
 * purges it heard of (its own, and its peers' on the bus) for as long as an entry can
 * live (`keepMs`), bounded; the purges are also written to Redis, sealed, where a
 * replica that starts later reads them. An entry's fill time is in its sealed header.
 */
export class PurgeLedger {
  #all = Number.NEGATIVE_INFINITY
  /** The last purge of any advertiser: what reaches an entry indexed under ANY_ADVERTISER. */
  #anyAdvertiser = Number.NEGATIVE_INFINITY
  /** advertiser → its last purge; in the order noted (nearly the order of time). */
  readonly #byAdvertiser = new Map<number, number>()
  /** report digest → its last purge; in the order noted. */
  readonly #byReport = new Map<string, number>()
  readonly #keepMs: number
  readonly #now: () => number
  readonly #shared: SharedPurges | null
  readonly #log: Logger | null
  readonly #onUnverified: (where: string) => void

  constructor(opts: { keepMs: number; now?: () => number; shared?: SharedPurges | null; log?: Logger; onUnverified?: (where: string) => void }) {
    this.#keepMs = opts.keepMs
    this.#now = opts.now ?? systemClock.now
    this.#shared = opts.shared ?? null
    this.#log = opts.log ?? null
    this.#onUnverified = opts.onUnverified ?? (() => undefined)
  }

  /**
   * Whether `entry` (stored under `key`, when known) was filled before the last purge that
   * reaches it: fetched before it, or asked before it (`calledAt`, a fill of any replica
   * whose call was at the platform while the purge was made).
   */
  refuses(entry: Pick<CacheEntry, 'fetchedAt' | 'calledAt' | 'advertiserIds'>, key?: string): boolean {
    const filled = Math.min(entry.fetchedAt, entry.calledAt ?? entry.fetchedAt)
    if (filled < this.#all) return true
    if (key !== undefined && this.#byReport.size > 0) {
      const at = this.#byReport.get(reportDigest(key))
      if (at !== undefined && filled < at) return true
    }
    for (const id of entry.advertiserIds) {
      const at = id === ANY_ADVERTISER ? this.#anyAdvertiser : this.#byAdvertiser.get(id)
      if (at !== undefined && filled < at) return true
    }
    return false
  }

  /** Notes a purge heard of: this replica's, a peer's, or one read from Redis. */
  note(purge: Purge): void {
    const now = this.#now()
    this.#forgetPast(now)
    // A purge dated further ahead than clocks differ would refuse every fill until then.
    const at = Math.min(purge.at, now + FILL_CLOCK_SKEW_MS)
    if (purge.advertiserId !== undefined) {
      this.#noteIn(this.#byAdvertiser, purge.advertiserId, at)
      this.#anyAdvertiser = Math.max(this.#anyAdvertiser, at)
    }
    else if (purge.report !== undefined) this.#noteIn(this.#byReport, reportDigest(purge.report), at)
    else this.#all = Math.max(this.#all, at)
  }

  #noteIn<K>(byName: Map<K, number>, name: K, at: number): void {
    const known = byName.get(name)
    if ((known !== undefined && known >= at) || at <= this.#all) return
    byName.delete(name)
    if (byName.size >= MAX_PURGE_RECORDS) {
      const [oldest, oldestAt] = byName.entries().next().value as [K, number]
      byName.delete(oldest)
      this.#all = Math.max(this.#all, oldestAt)
    }
    byName.set(name, at)
  }

  /** Advertisers and reports whose purge is remembered (for tests and bounds). */
  get size(): number {
    return this.#byAdvertiser.size + this.#byReport.size
  }

  /**
   * Writes `purge` into the shared record for replicas that start later; throws when Redis
   * cannot take it (the purge is then incomplete; a full Redis takes it when the record
   * holds the field already: MARK_LUA). A purge of everything replaces the record. The record carries no expiry, so that a Redis evicting keys with one at maxmemory
   * (volatile-lru, for the report copies) keeps it: each purge written drops the purges
   * past an entry's longest life, each only if no replica rewrote it meanwhile.
   */
  async share(purge: Purge): Promise<void> {
    const shared = this.#shared
    const mark = this.mark(purge)
    if (!shared || !mark) return
    await MARK(shared.redis, mark.key, mark.field, mark.value, mark.replaces ? '1' : '0')
    await this.#written(shared.redis, mark.key)
  }

  /** `purge`'s field in the shared record, as share writes it; null when the purges are not shared. */
  mark(purge: Purge): PurgeMark | null {
    const shared = this.#shared
    if (!shared) return null
    const field = purge.advertiserId !== undefined ? `adv:${purge.advertiserId}` : purge.report !== undefined ? `report:${reportDigest(purge.report)}` : 'all'
    return { key: shared.key, field, value: this.#sealed(field, String(purge.at)), replaces: field === 'all' }
  }

  /**
   * Whether the shared record holds `purge` (its field at its time, or later): written by
   * share, or by the script that dropped its copies (RedisStore, a purge on a full Redis).
   * Throws when Redis cannot be read.
   */
  async recorded(purge: Purge): Promise<boolean> {
    const shared = this.#shared
    const mark = this.mark(purge)
    if (!shared || !mark) return true
    const value = await shared.redis.hget(mark.key, mark.field)
    const at = value === null ? null : this.#opened(mark.field, value, false)
    if (at === null || !/^\d{1,16}$/.test(at) || Number(at) < purge.at) return false
    await this.#written(shared.redis, mark.key)
    return true
  }

  // The purge is complete once written: the old ones left now are dropped by the next.
  async #written(redis: RedisClient, key: string): Promise<void> {
    await this.#dropPast(redis, key).catch((err: unknown) => this.#log?.debug({ err, key }, 'dropping past purges from the shared record failed'))
  }

  async #dropPast(redis: RedisClient, key: string): Promise<void> {
    const horizon = this.#now() - this.#keepMs
    const fields = await readBoundedHash(redis, key, { maxFields: MAX_PURGE_RECORDS + 1, maxFieldBytes: MAX_FIELD_BYTES, maxValueBytes: MAX_VALUE_BYTES })
    const past = (fields ?? []).filter(([field, value]) => {
      const at = this.#opened(field, value, false)
      return at !== null && /^\d{1,16}$/.test(at) && Number(at) < horizon
    })
    await dropUnchangedFields(redis, key, past)
  }

  /**
   * Reads the purges shared in Redis at a replica's start. A record that cannot be read
   * (Redis out, or more fields than a replica keeps) reads as a purge of everything now:
   * what L2 holds from before this start is refused and filled again, never served past
   * a purge this replica did not hear of.
   */
  async load(): Promise<void> {
    const missed = await this.#noteShared()
    if (missed !== null) this.#missedAll(missed.why)
  }

  /**
   * Reads the purges shared in Redis again, for those announced while this replica's
   * subscriber was away (its reconnect, Redis answering again). A record of more fields
   * than a replica keeps reads as a purge of everything now, as at the start; a read that
   * fails notes nothing: the copies this replica holds are what it serves through an
   * outage, and the next return of Redis reads the record again.
   */
  async catchUp(): Promise<void> {
    const missed = await this.#noteShared()
    if (missed?.failed === false) this.#missedAll(missed.why)
    else if (missed) this.#log?.debug({ why: missed.why }, 'the shared purge record could not be read again: read at the next return of redis')
  }

  #missedAll(why: string): void {
    this.note({ at: this.#now() })
    this.#log?.warn({ key: this.#shared?.key, why }, 'the shared purge record could not be read: report entries stored before now are filled again')
  }

  /** Notes the purges of the shared record; what kept it from being read whole (`failed`: the read failed), or null. */
  async #noteShared(): Promise<{ why: string; failed: boolean } | null> {
    const shared = this.#shared
    if (!shared) return null
    const { redis, key } = shared
    // Not through the breaker: a value of another type under the key (WRONGTYPE) says
    // nothing of Redis's health.
    let fields: [string, string][] | null
    try {
      fields = await readBoundedHash(redis, key, { maxFields: MAX_PURGE_RECORDS + 1, maxFieldBytes: MAX_FIELD_BYTES, maxValueBytes: MAX_VALUE_BYTES })
    } catch (err) {
      return { why: commandFailureInWords(err), failed: true }
    }
    if (fields === null) return { why: 'too many fields', failed: false }
    for (const [field, value] of fields) {
      const text = this.#opened(field, value)
      const at = text === null || !/^\d{1,16}$/.test(text) ? null : Number(text)
      const advertiser = /^adv:(\d{1,16})$/.exec(field)
      const report = field.startsWith('report:') && DIGEST.test(field.slice(7)) ? field.slice(7) : null
      if (at === null || (field !== 'all' && !advertiser && report === null)) continue
      this.note(advertiser ? { at, advertiserId: Number(advertiser[1]) } : report !== null ? { at, report } : { at })
    }
    return null
  }

  #sealed(field: string, value: string): string {
    const shared = this.#shared as SharedPurges
    return shared.seal ? shared.seal.sealText(`${shared.key}#${field}`, value) : value
  }

  /** A field's value opened; null (and said, with `say`) when it does not carry the seal. */
  #opened(field: string, value: string, say = true): string | null {
    const shared = this.#shared as SharedPurges
    if (!shared.seal) return value
    const opened = shared.seal.openText(`${shared.key}#${field}`, value)
    if (opened === null && say) this.#onUnverified(`${shared.key}#${field}`)
    return opened
  }

  // A purge older than the longest life of an entry reaches no entry any more.
  #forgetPast(now: number): void {
    const horizon = now - this.#keepMs
    for (const byName of [this.#byAdvertiser, this.#byReport] as Map<unknown, number>[]) {
      for (const [name, at] of byName) {
        if (at >= horizon) break
        byName.delete(name)
      }
    }
  }
}
