import type { RedisBreaker } from '../redis/breaker.js'
import type { RedisClient } from '../redis/client.js'
import type { RedisSeal } from '../redis/seal.js'
import { redisKey } from '../redis/keys.js'
import { readBoundedHashes, setUnchangedField, type HashBounds } from '../redis/bounded-hash.js'
import { systemClock, type Clock, type Timer } from '../clock.js'
import { KEY_ID_PATTERN, TEAM_NAME_PATTERN } from '../config/names.js'

/** How often a replica writes the use of the keys that had traffic since its last write. */
export const KEY_USE_FLUSH_MS = 30_000
/** How long a key's last use is remembered: a key unused for longer reads as never used. */
export const KEY_USE_KEEP_MS = 30 * 86_400_000
/** The most replicas whose key use is read back (the ones that wrote last). */
export const MAX_KEY_USE_REPLICAS = 256

const MINUTE_MS = 60_000
const HOUR_MINUTES = 60
// What one replica's record may hold: a field per key id (ids are at most 64 characters),
// a value of a time and at most 60 minutes of counts, sealed. Anything larger is not the
// gateway's, and is not read; nor is a replica id longer than the gateway makes them.
const RECORD_BOUNDS: HashBounds = { maxFields: 10_000, maxFieldBytes: 64, maxValueBytes: 2048 }
const MAX_REPLICA_ID_CHARS = 128
// The keys removed in the last 30 days: a field per key id, a value of a team, ids and times.
const REMOVED_BOUNDS: HashBounds = { maxFields: 10_000, maxFieldBytes: 64, maxValueBytes: 1024 }
const TEAM_NAME = new RegExp(TEAM_NAME_PATTERN)
const KEY_ID = new RegExp(KEY_ID_PATTERN)
const MAX_TEAM_NAME_CHARS = 128

/** One key's use on one replica: when it was last used (epoch ms), and its requests in each minute of the last hour that had some. */
export interface KeyUseRecord {
  at: number
  /** `[minute since the epoch, requests]`, oldest first. */
  minutes: [number, number][]
  /** The key's team when it was used (records of the previous release have none). */
  team?: string
}

/** A record as it is stored: short, so that a write of every key a replica served stays small. */
export function encodeKeyUse(record: KeyUseRecord): string {
  return JSON.stringify(record.team === undefined ? { at: record.at, m: record.minutes } : { at: record.at, m: record.minutes, t: record.team })
}

/** A stored record, or null when it is not one of the gateway's. */
export function decodeKeyUse(text: string): KeyUseRecord | null {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return null
  }
  const v = value as { at?: unknown; m?: unknown; t?: unknown } | null
  if (typeof v !== 'object' || v === null || !Number.isSafeInteger(v.at) || !Array.isArray(v.m) || v.m.length > HOUR_MINUTES) return null
  const minutes = v.m as unknown[]
  if (!minutes.every((p) => Array.isArray(p) && p.length === 2 && Number.isSafeInteger(p[0]) && Number.isSafeInteger(p[1]) && (p[1] as number) >= 0)) return null
  // A team the record cannot name (none, from the previous release) leaves the use without one.
  return isTeamName(v.t) ? { at: v.at as number, minutes: minutes as [number, number][], team: v.t } : { at: v.at as number, minutes: minutes as [number, number][] }
}

const isTeamName = (v: unknown): v is string => typeof v === 'string' && v.length <= MAX_TEAM_NAME_CHARS && TEAM_NAME.test(v)
const isKeyId = (v: unknown): v is string => typeof v === 'string' && KEY_ID.test(v)
const isInstant = (v: unknown): v is number | null => v === null || Number.isSafeInteger(v)

/** A key a reload removed: what the key was (never its hash), to list it with its use for 30 days after. */
export interface RemovedKey {
  team: string
  id: string
  lineage: string
  replaces: string | null
  successor: string | null
  graceUntil: number | null
  createdAt: number | null
  expiresAt: number | null
}

/** A removed key and when it was removed (epoch ms; the first replica's reload to remove it). */
export interface RemovedKeyRecord extends RemovedKey {
  removedAt: number
}

/** A removal as it is stored (JSON), or null when the text is not one of the gateway's. */
export function decodeRemovedKey(text: string): RemovedKeyRecord | null {
  let v: Record<string, unknown>
  try {
    v = JSON.parse(text) as Record<string, unknown>
  } catch {
    return null
  }
  if (typeof v !== 'object' || v === null || !isTeamName(v.team) || !isKeyId(v.id) || !isKeyId(v.lineage) || !Number.isSafeInteger(v.removedAt)) return null
  if (!(v.replaces === null || isKeyId(v.replaces)) || !(v.successor === null || isKeyId(v.successor))) return null
  if (!isInstant(v.graceUntil) || !isInstant(v.createdAt) || !isInstant(v.expiresAt)) return null
  const { team, id, lineage, replaces, successor, graceUntil, createdAt, expiresAt, removedAt } = v as unknown as RemovedKeyRecord
  return { team, id, lineage, replaces, successor, graceUntil, createdAt, expiresAt, removedAt }
}

/** Requests in the hour before `now`, summed over the records (of one key, each of one replica). */
export function requestsInLastHour(records: readonly KeyUseRecord[], now: number): number {
  const first = Math.floor(now / MINUTE_MS) - HOUR_MINUTES + 1
  let sum = 0
  for (const r of records) for (const [minute, count] of r.minutes) if (minute >= first) sum += count
  return sum
}

/** One key's requests on this replica: its last use, and a ring of the last hour's minutes. */
class Tally {
  at = 0
  team: string | undefined = undefined
  readonly #counts = new Uint32Array(HOUR_MINUTES)
  readonly #minutes = new Float64Array(HOUR_MINUTES).fill(-1)

  note(at: number): void {
    const minute = Math.floor(at / MINUTE_MS)
    const slot = minute % HOUR_MINUTES
    if (this.#minutes[slot] !== minute) {
      this.#minutes[slot] = minute
      this.#counts[slot] = 0
    }
    this.#counts[slot] = (this.#counts[slot] as number) + 1
    if (at > this.at) this.at = at
  }

  record(now: number): KeyUseRecord {
    const first = Math.floor(now / MINUTE_MS) - HOUR_MINUTES + 1
    const minutes: [number, number][] = []
    for (let slot = 0; slot < HOUR_MINUTES; slot++) {
      const minute = this.#minutes[slot] as number
      const count = this.#counts[slot] as number
      if (minute >= first && count > 0) minutes.push([minute, count])
    }
    minutes.sort((a, b) => a[0] - b[0])
    return this.team === undefined ? { at: this.at, minutes } : { at: this.at, minutes, team: this.team }
  }
}

/** A key's use on one replica, as the admin call gathers it. */
export interface ReplicaKeyUse {
  replica: string
  record: KeyUseRecord
}

export interface KeyUseView {
  /** Redis as this replica found it while gathering: without it, this replica's own use only. */
  redis: 'ok' | 'down' | 'not configured'
  /** Per key id, each replica's record (this replica's taken now), newest use first. */
  byKey: Map<string, ReplicaKeyUse[]>
  /**
   * Per key id, the keys a reload removed in the last 30 days: every replica's (the first
   * removal of a key kept) with Redis; without it, those this replica removed.
   */
  removed: Map<string, RemovedKeyRecord>
}

export interface KeyUseOptions {
  /** This replica's id (observe/replicas.ts). */
  replica: string
  redis: RedisClient | null
  breaker: RedisBreaker | null
  /** Seals each record (GATEWAY_SECRET): one read back is counted only with its seal. */
  seal: RedisSeal | null
  prefix: string
  /** A record in Redis without this gateway's seal, ignored. */
  onUnverified?: (where: string) => void
  /** Redis lost this replica's record (a restart without its data, a flush): `keys` of its use written again. */
  onLost?: (keys: number) => void
  /** `records` sealed with GATEWAY_SECRET_FALLBACK alone (the replicas' use, the removals) stored again sealed with GATEWAY_SECRET. */
  onResealed?: (records: number) => void
  clock?: Clock
  flushMs?: number
}

/**
 * When each key was last used, and how often in the last hour, per replica. Each replica
 * counts the requests of each key in memory (`note`, one map lookup per request) and,
 * every KEY_USE_FLUSH_MS, writes the records of the keys that had traffic since its last
 * write, and only those, into a hash of its own in Redis (a field per key id, sealed),
 * kept KEY_USE_KEEP_MS after its last write: the traffic grows with the keys in use, not
 * with replicas times teams, and an idle replica writes nothing. The admin call reads the
 * hashes of the replicas that wrote last back, bounded before anything is decoded, as the
 * cluster view reads the announcements. A key idle for an hour keeps its last use here
 * (no counts), so that this replica names it and that a Redis that lost the records (a
 * restart without its data, a flush: the replica's own hash gone within KEY_USE_KEEP_MS of
 * its last write, one EXISTS a flush) gets every replica's use, and its removals, again.
 */
export class KeyUse {
  readonly #o: KeyUseOptions
  readonly #clock: Clock
  readonly #tallies = new Map<string, Tally>()
  /** The keys idle for an hour: their last use on this replica, until KEY_USE_KEEP_MS after it. */
  readonly #past = new Map<string, { at: number; team: string | undefined }>()
  readonly #dirty = new Set<string>()
  /** When Redis last took this replica's record; null: never. */
  #lastWrite: number | null = null
  readonly #hash: string
  readonly #index: string
  readonly #removedHash: string
  /** The keys this replica's reloads removed, its own account of them (read without Redis). */
  readonly #removed = new Map<string, RemovedKeyRecord>()
  /** Removals and returns not yet written to Redis (it was down): written with the next flush. */
  readonly #unwritten = { removed: new Map<string, RemovedKeyRecord>(), added: new Set<string>() }
  #timer: Timer | null = null

  constructor(opts: KeyUseOptions) {
    this.#o = opts
    this.#clock = opts.clock ?? systemClock
    this.#hash = redisKey.keyUse(opts.prefix, opts.replica)
    this.#index = redisKey.keyUseIndex(opts.prefix)
    this.#removedHash = redisKey.keyUseRemoved(opts.prefix)
  }

  /** A request of key `id` (of `team`) at `at`. */
  note(id: string, at: number, team?: string): void {
    let tally = this.#tallies.get(id)
    if (tally === undefined) {
      tally = new Tally()
      this.#tallies.set(id, tally)
      this.#past.delete(id)
    }
    tally.note(at)
    // A team name longer than a record holds is left out: the key's use is still counted.
    if (team !== undefined && team.length <= MAX_TEAM_NAME_CHARS) tally.team = team
    this.#dirty.add(id)
  }

  /**
   * A reload applied: the keys it `removed` are listed (with their use) for
   * KEY_USE_KEEP_MS after, on every replica through Redis, where the first replica to
   * remove a key gives its removal time; a key `added` again (by id) is no longer removed.
   * False when Redis did not take the change (it is written with the next flush).
   */
  async keysChanged(change: { removed: readonly RemovedKey[]; added: readonly string[] }): Promise<boolean> {
    const now = this.#clock.now()
    for (const id of change.added) {
      this.#removed.delete(id)
      this.#unwritten.removed.delete(id)
      this.#unwritten.added.add(id)
    }
    for (const key of change.removed) {
      const record = this.#removed.get(key.id) ?? { ...key, removedAt: now }
      this.#removed.set(key.id, record)
      this.#unwritten.added.delete(key.id)
      this.#unwritten.removed.set(key.id, record)
    }
    return this.#writeRemovals(now)
  }

  // Writes the removals and returns not yet in Redis: first drops the removals older than
  // KEY_USE_KEEP_MS (a hash field has no expiry of its own), then adds each new one unless
  // another replica's removal of the key is there already.
  async #writeRemovals(now: number): Promise<boolean> {
    const { redis, breaker, seal } = this.#o
    if (!redis || !breaker) {
      this.#unwritten.removed.clear()
      this.#unwritten.added.clear()
      return true
    }
    if (this.#unwritten.removed.size === 0 && this.#unwritten.added.size === 0) return true
    const removed = [...this.#unwritten.removed.values()]
    const added = [...this.#unwritten.added]
    this.#unwritten.removed.clear()
    this.#unwritten.added.clear()
    const written = await breaker.write(async () => {
      const stale = (await this.#readRemovals()).filter(([, record]) => record === null || record.removedAt <= now - KEY_USE_KEEP_MS).map(([id]) => id)
      const batch = redis.multi()
      const dropped = [...new Set([...stale, ...added])]
      if (dropped.length > 0) batch.hdel(this.#removedHash, ...dropped)
      for (const record of removed) {
        const text = JSON.stringify(record)
        batch.hsetnx(this.#removedHash, record.id, seal ? seal.sealText(`${this.#removedHash}#${record.id}`, text) : text)
      }
      batch.pexpire(this.#removedHash, KEY_USE_KEEP_MS)
      const replies = await batch.exec()
      return replies !== null && replies.every(([err]) => !err)
    }, false)
    if (!written) {
      for (const record of removed) if (!this.#unwritten.added.has(record.id)) this.#unwritten.removed.set(record.id, record)
      for (const id of added) if (!this.#unwritten.removed.has(id)) this.#unwritten.added.add(id)
    }
    return written
  }

  /** The removals in Redis, each opened (null: without the seal, or not one of the gateway's). Throws when Redis fails. */
  async #readRemovals(): Promise<[string, RemovedKeyRecord | null][]> {
    const { redis, seal } = this.#o
    if (!redis) return []
    const fields = (await readBoundedHashes(redis, [this.#removedHash], REMOVED_BOUNDS))[0] ?? []
    return fields.map(([id, value]) => {
      const text = seal ? seal.openText(`${this.#removedHash}#${id}`, value) : value
      if (text === null) this.#o.onUnverified?.(`${this.#removedHash}#${id}`)
      const record = text === null ? null : decodeRemovedKey(text)
      return [id, record !== null && record.id === id ? record : null]
    })
  }

  /** Writes every KEY_USE_FLUSH_MS, until close(); first stores again what only GATEWAY_SECRET_FALLBACK opens. */
  start(): void {
    if (this.#timer || !this.#o.redis) return
    void this.reseal().then((records) => {
      if (records > 0) this.#o.onResealed?.(records)
    })
    this.#timer = this.#clock.setInterval(() => void this.flush(), this.#o.flushMs ?? KEY_USE_FLUSH_MS).unref()
  }

  /**
   * Writes the records of the keys used since the last write; false when Redis did not
   * take them (they are written next time). Two writes at once take different keys.
   */
  async flush(): Promise<boolean> {
    const { redis, breaker, seal } = this.#o
    if (!redis || !breaker) return true
    const now = this.#clock.now()
    await this.#healIfLost(now)
    const removals = await this.#writeRemovals(now)
    if (this.#dirty.size === 0) return removals
    const ids = [...this.#dirty]
    this.#dirty.clear()
    const fields: string[] = []
    for (const id of ids) {
      const text = encodeKeyUse(this.#record(id, now))
      fields.push(id, seal ? seal.sealText(`${this.#hash}#${id}`, text) : text)
    }
    const written = await breaker.write(async () => {
      const replies = await redis
        .multi()
        .hset(this.#hash, ...fields)
        .pexpire(this.#hash, KEY_USE_KEEP_MS)
        .zadd(this.#index, now, this.#o.replica)
        .zremrangebyscore(this.#index, '-inf', now - KEY_USE_KEEP_MS)
        // The index keeps the replicas that wrote last; an older one's hash expires on its own.
        .zremrangebyrank(this.#index, 0, -(MAX_KEY_USE_REPLICAS + 1))
        .pexpire(this.#index, KEY_USE_KEEP_MS)
        .exec()
      return replies !== null && replies.every(([err]) => !err)
    }, false)
    if (!written) for (const id of ids) this.#dirty.add(id)
    else this.#lastWrite = now
    this.#forgetIdle(now)
    return written
  }

  /** Key `id`'s use on this replica: its tally's, or the last use of a key idle for an hour. */
  #record(id: string, now: number): KeyUseRecord {
    const tally = this.#tallies.get(id)
    if (tally !== undefined) return tally.record(now)
    const past = this.#past.get(id) as { at: number; team: string | undefined }
    return past.team === undefined ? { at: past.at, minutes: [] } : { at: past.at, minutes: [], team: past.team }
  }

  // This replica's record gone from Redis within KEY_USE_KEEP_MS of its last write: Redis
  // lost it (and every replica's, and the removals). Its use and its removals are written again.
  async #healIfLost(now: number): Promise<void> {
    const { redis, breaker } = this.#o
    if (!redis || !breaker || this.#lastWrite === null || now - this.#lastWrite >= KEY_USE_KEEP_MS) return
    const hash = this.#hash
    if (!(await breaker.run(async () => (await redis.exists(hash)) === 0, false))) return
    for (const id of [...this.#tallies.keys(), ...this.#past.keys()]) this.#dirty.add(id)
    for (const [id, record] of this.#removed) if (!this.#unwritten.added.has(id)) this.#unwritten.removed.set(id, record)
    this.#lastWrite = null
    this.#o.onLost?.(this.#dirty.size)
  }

  // A key unused for an hour has no count left to keep here: its last use is kept, for KEY_USE_KEEP_MS.
  #forgetIdle(now: number): void {
    if (!this.#o.redis) return
    for (const [id, tally] of this.#tallies) {
      if (this.#dirty.has(id) || tally.at >= now - HOUR_MINUTES * MINUTE_MS) continue
      this.#tallies.delete(id)
      this.#past.set(id, { at: tally.at, team: tally.team })
    }
    for (const [id, past] of this.#past) if (past.at <= now - KEY_USE_KEEP_MS) this.#past.delete(id)
  }

  /** Every replica's use of every key it recorded, this replica's taken now; and the keys removed in the last 30 days. */
  async gather(): Promise<KeyUseView> {
    const now = this.#clock.now()
    const byKey = new Map<string, ReplicaKeyUse[]>()
    const add = (id: string, use: ReplicaKeyUse) => byKey.set(id, [...(byKey.get(id) ?? []), use])
    for (const id of [...this.#tallies.keys(), ...this.#past.keys()]) {
      const record = this.#record(id, now)
      if (record.at > now - KEY_USE_KEEP_MS) add(id, { replica: this.#o.replica, record })
    }
    for (const [id, record] of this.#removed) if (record.removedAt <= now - KEY_USE_KEEP_MS) this.#removed.delete(id)
    const { redis, breaker } = this.#o
    const view = (state: KeyUseView['redis'], removed: Iterable<RemovedKeyRecord>): KeyUseView => {
      for (const uses of byKey.values()) uses.sort((a, b) => b.record.at - a.record.at)
      const kept = new Map<string, RemovedKeyRecord>()
      for (const record of removed) {
        const known = kept.get(record.id)
        if (record.removedAt > now - KEY_USE_KEEP_MS && (known === undefined || record.removedAt < known.removedAt)) kept.set(record.id, record)
      }
      return { redis: state, byKey, removed: kept }
    }
    if (!redis || !breaker) return view('not configured', this.#removed.values())
    const found = await breaker.run(async () => {
      const replicas = (await redis.zrevrange(this.#index, 0, MAX_KEY_USE_REPLICAS - 1)).filter((r) => r !== this.#o.replica && r.length <= MAX_REPLICA_ID_CHARS)
      const hashes = replicas.map((r) => redisKey.keyUse(this.#o.prefix, r))
      const read = await readBoundedHashes(redis, hashes, RECORD_BOUNDS)
      const removed = (await this.#readRemovals()).flatMap(([, record]) => (record === null ? [] : [record]))
      return { removed, replicas: replicas.map((replica, i) => ({ replica, hash: hashes[i] as string, fields: read[i] ?? [] })) }
    }, null)
    // Without Redis, this replica's own account; with it, Redis's, and what this replica could not write there yet.
    if (found === null) return view('down', this.#removed.values())
    for (const { replica, hash, fields } of found.replicas) {
      for (const [id, value] of fields) {
        const text = this.#o.seal ? this.#o.seal.openText(`${hash}#${id}`, value) : value
        if (text === null) {
          this.#o.onUnverified?.(`${hash}#${id}`)
          continue
        }
        const record = decodeKeyUse(text)
        if (record && record.at > now - KEY_USE_KEEP_MS) add(id, { replica, record })
      }
    }
    return view('ok', [...found.removed, ...this.#unwritten.removed.values()])
  }

  /**
   * Through a change of GATEWAY_SECRET (step 2: the new secret, the old as fallback), the
   * records of every replica's key use and the key removals sealed with the old secret are
   * stored again, unchanged but for their seal, each over that very value (a value rewritten
   * meanwhile is left as it is): once the fallback goes they would read as absent, and a key
   * last used before the change, by a replica since replaced, would read as never used.
   * Records of 30 days, where a report copy lives a day. The number of records stored again.
   */
  async reseal(): Promise<number> {
    const { redis, breaker, seal } = this.#o
    if (!redis || !breaker || !seal) return 0
    const stored = await breaker.run(async () => {
      const replicas = (await redis.zrevrange(this.#index, 0, MAX_KEY_USE_REPLICAS - 1)).filter((r) => r.length <= MAX_REPLICA_ID_CHARS)
      const hashes = replicas.map((r) => redisKey.keyUse(this.#o.prefix, r))
      const read = await readBoundedHashes(redis, hashes, RECORD_BOUNDS)
      const removed = (await readBoundedHashes(redis, [this.#removedHash], REMOVED_BOUNDS))[0] ?? []
      const stale: [string, string, string, string][] = []
      const look = (hash: string, fields: [string, string][]) => {
        for (const [id, value] of fields) {
          const binding = `${hash}#${id}`
          const text = seal.openText(binding, value)
          if (text === null) continue
          const sealed = seal.sealText(binding, text)
          if (sealed !== value) stale.push([hash, id, value, sealed])
        }
      }
      hashes.forEach((hash, i) => look(hash, read[i] ?? []))
      look(this.#removedHash, removed)
      let count = 0
      for (const [hash, id, value, sealed] of stale) if (await setUnchangedField(redis, hash, id, value, sealed)) count++
      return count
    }, 0)
    return stored
  }

  /** Writes what is left, then stops. */
  async close(): Promise<void> {
    this.#clock.clearInterval(this.#timer)
    this.#timer = null
    await this.flush()
  }
}
