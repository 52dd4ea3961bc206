import { Cluster } from 'ioredis'
import { LRUCache } from 'lru-cache'
import type { RedisBreaker } from '../redis/breaker.js'
import type { RedisClient } from '../redis/client.js'
import { decodeEntry, encodeEntry, ENTRY_OVERHEAD_BYTES, inflate, purgeReaches, storedBytesLimit, withinLimits, type CacheEntry, type EntryLimits } from './cache-entry.js'
import type { CacheStore } from './cache-store.js'
import { MARK_LUA, type PurgeMark } from './purge-ledger.js'
import type { RedisSeal } from '../redis/seal.js'
import { LRU_ENTRY_BYTES, keptBytes } from '../perf/kept-bytes.js'
import { systemClock } from '../clock.js'
import { redisKey } from '../redis/keys.js'
import { ownBytes } from '../observe/own-bytes.js'
import { redisScript } from '../redis/script.js'

const SCAN_COUNT = 500

// The entry last read for each key, kept with the exact bytes it was read from. A read
// that brings the same bytes back (compared in full, so a value written into Redis can
// only ever find its own entry) takes it as it is: the seal, which would verify the same
// bytes under the same key again, the header and the gzip body are not worked on twice,
// and the entry, being the same object, keeps its rendered heads (reports/report-reply.ts).
// With L1 off every hit is such a read: the seal's HMAC, the decoding and the
// decompression were half of one (profiled). With L1 on, a copy read is kept there, and
// this keeps none.
export const READ_ENTRIES_BYTES = 8 * 1024 * 1024

// A copy's bytes as its team's part counts them: the sealed value, its key, and what Redis
// keeps beside them (the key's own record and expiry, its advertiser's index, the team's
// record of its copies). Measured: 2,261 bytes of used_memory a copy of a 1,299-byte value
// under a 57-byte key, 905 besides both.
export const COPY_OVERHEAD_BYTES = 900

// The room report copies take in Redis, counted by copy key: each key is counted once, on
// the team whose write Redis holds (a copy written again by its team replaces its bytes; a
// shared copy written by another team moves to that team's count). Three keys under one
// hash tag, so that one script moves a copy between teams on a Cluster too: the copy keys
// by expiry (a sorted set), each key's bytes and team (a hash: "<bytes> <team>"), and each
// team's sum (a hash). FORGET takes one key out of its team's sum and out of both records.
const FORGET = `
local function forget(key)
  local held = redis.call('HGET', KEYS[2], key)
  redis.call('ZREM', KEYS[1], key)
  if not held then return 0 end
  local bytes, team = string.match(held, '^(%d+) (.*)$')
  redis.call('HINCRBY', KEYS[3], team, -tonumber(bytes))
  redis.call('HDEL', KEYS[2], key)
  return 1
end
`
// The copies past their expiry one TAKE_ROOM forgets at most: the rest go at the next ones.
const FORGET_EXPIRED = 1000

// Takes room for one copy of a team (KEYS: the copies by expiry, their bytes and teams,
// the teams' sums; ARGV: now, the copy's key, its bytes, its expiry, the team, the team's
// part, the records' lifetime in ms): forgets the copies past their expiry, then counts
// this one on the team (in place of what its key counted before, on whichever team)
// unless the team's copies would take more than its part. 1: room taken; 0: none,
// nothing written.
//
// Redis at its maxmemory (noeviction) refuses a script's first write that may take memory
// when it was past its maxmemory as the script began, and lets every write after a first
// one through, a delete's too. The first expired copy's score, written again as it is
// (ZADD XX, refused there), comes before the forgets: a script Redis refuses forgets
// nothing and takes no room. Forgets first would let the room's writes through and count
// a copy whose own SET Redis then refuses, its team's part taken until the copy's expiry
// by a copy Redis does not hold (copy-room.test.ts).
const TAKE_ROOM_LUA = `${FORGET}
local function takeRoom()
  local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[1], 'WITHSCORES', 'LIMIT', 0, ${FORGET_EXPIRED})
  if #expired > 0 then redis.call('ZADD', KEYS[1], 'XX', expired[2], expired[1]) end
  for i = 1, #expired, 2 do forget(expired[i]) end
  local before = redis.call('HGET', KEYS[2], ARGV[2])
  local had, owner = 0, nil
  if before then
    local bytes, team = string.match(before, '^(%d+) (.*)$')
    had, owner = tonumber(bytes), team
  end
  local grown = tonumber(redis.call('HGET', KEYS[3], ARGV[5]) or '0') - (owner == ARGV[5] and had or 0) + tonumber(ARGV[3])
  if grown > tonumber(ARGV[6]) then return 0 end
  if owner and owner ~= ARGV[5] then redis.call('HINCRBY', KEYS[3], owner, -had) end
  redis.call('HSET', KEYS[3], ARGV[5], grown)
  redis.call('HSET', KEYS[2], ARGV[2], ARGV[3] .. ' ' .. ARGV[5])
  redis.call('ZADD', KEYS[1], ARGV[4], ARGV[2])
  for i = 1, 3 do
    if redis.call('PTTL', KEYS[i]) < tonumber(ARGV[7]) then redis.call('PEXPIRE', KEYS[i], ARGV[7]) end
  end
  return 1
end`

// An advertiser's index (a sorted set: the keys of its live copies, each scored by its
// expiry) takes one copy: KEYS[i] the index; ARGV as TAKE_ROOM's (the time, the copy's
// key, its expiry, its lifetime). The index lists the copies that live (those past their
// expiry dropped at each write), so that a team asking report after report leaves no more
// in it than Redis holds; it outlives its longest copy.
const INDEX_LUA = `
local function index(i)
  redis.call('ZADD', KEYS[i], ARGV[4], ARGV[2])
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', '(' .. ARGV[1])
  if redis.call('PTTL', KEYS[i]) < tonumber(ARGV[7]) then redis.call('PEXPIRE', KEYS[i], ARGV[7]) end
end`

// A copy written on one Redis (no Cluster), with its room and its advertisers' indexes, in
// one script (KEYS: TAKE_ROOM's three, the copy's key, its advertisers' indexes; ARGV:
// TAKE_ROOM's, the copy's value, and '1' when it is counted on its team's part): Redis
// runs a script whole once it began it, so the room's count, the copy and its indexes are
// taken together or refused together (at maxmemory, on a failover, by a replica stopped).
// Written apart, the room's records could fit under maxmemory and the copy's SET after
// them not (a copy counted that Redis does not hold), or the copy fit and its index's
// ZADD after it not (a copy its advertiser's purge misses until its expiry). 1: written;
// 0: its team's part is taken, nothing written. Uncounted, the SET is the first write:
// Redis past its maxmemory refuses the script whole there.
const COPY_WRITE = redisScript<number>('gatewayCopyWrite', `${TAKE_ROOM_LUA}
${INDEX_LUA}
if ARGV[9] == '1' and takeRoom() == 0 then return 0 end
redis.call('SET', KEYS[4], ARGV[8], 'PX', ARGV[7])
for i = 5, #KEYS do index(i) end
return 1`, null)

// One advertiser's index, on a Cluster (KEYS[1]; ARGV: as COPY_WRITE's): there the index,
// the copy and the room's records sit in different slots, and no one script writes them.
const INDEX_WRITE = redisScript<number>('gatewayCopyIndex', `${INDEX_LUA}
index(1)
return 1`, 1)

// TAKE_ROOM_LUA's room alone, on a Cluster: the copy's key sits in another slot than the
// room's records, so its SET follows as a command of its own (RedisStore.set). There the
// room is taken until the end of the pending window (ARGV[4]), and CONFIRM_ROOM holds it
// until the copy's expiry once the copy is written.
const TAKE_ROOM = redisScript<number>('gatewayCopyRoom', `${TAKE_ROOM_LUA}
return takeRoom()`, 3)

// A copy written on a Cluster after TAKE_ROOM took its room (ARGV: TAKE_ROOM's, ARGV[4] the
// copy's expiry): its room is held until that expiry while the room's record is still this
// write's ("<bytes> <team>"); taken anew when the pending window's end forgot it (a write
// slower than the window), 0 when the team's part has no room for it now.
const CONFIRM_ROOM = redisScript<number>('gatewayCopyConfirm', `${TAKE_ROOM_LUA}
if redis.call('HGET', KEYS[2], ARGV[2]) == ARGV[3] .. ' ' .. ARGV[5] then
  redis.call('ZADD', KEYS[1], 'XX', ARGV[4], ARGV[2])
  return 1
end
return takeRoom()`, 3)

/**
 * How long a copy's room taken on a Cluster is held before its copy's write is confirmed
 * (CONFIRM_ROOM) at least: a write whose copy Redis never held (its master refused it or
 * went away, this replica died between) gives its team's part back by then. Past four
 * command timeouts (the copy's SET and the confirm each end within one), 10 s at least.
 */
export function copyPendingMs(commandTimeoutMs: number): number {
  return Math.max(10_000, 4 * commandTimeoutMs)
}

// Gives back the room of copies a purge dropped on a Cluster (KEYS: as TAKE_ROOM's; ARGV:
// each copy's score in the room's records as read before its drop, then its key): each is
// counted no more, on whichever team counted it, while its score is still the one read. A
// copy written again meanwhile is scored by its own write (its pending window's end, then
// its expiry): its room stays taken, never given back for a copy Redis holds. The number given back.
const GIVE_BACK = redisScript<number>('gatewayCopyGiveBack', `${FORGET}
local given = 0
for i = 1, #ARGV, 2 do
  if redis.call('ZSCORE', KEYS[1], ARGV[i + 1]) == ARGV[i] then given = given + forget(ARGV[i + 1]) end
end
return given`, 3)
// The keys one drop is given: a large advertiser's purge holds Redis a moment each, not for all its copies at once.
const DROP_KEYS = 1000

// Takes out of an advertiser's index (KEYS[1]) the copies a purge read in it (ARGV: each
// copy's score as read, then its key), each only while its score is still the one read: a
// copy written while the purge ran (a new key, or a key the purge dropped written again,
// scored by its own expiry) is one the purge did not drop, and its next purge finds it.
// The number taken out.
const UNINDEX = redisScript<number>('gatewayCopyUnindex', `local taken = 0
for i = 1, #ARGV, 2 do
  if redis.call('ZSCORE', KEYS[1], ARGV[i + 1]) == ARGV[i] then taken = taken + redis.call('ZREM', KEYS[1], ARGV[i + 1]) end
end
return taken`, 1)

// On one Redis (no Cluster): drops the copies Redis holds of the keys given, and gives
// their room back in the same script (KEYS: TAKE_ROOM's three, the purges' record when
// ARGV[4] is '1', then the copies; ARGV: MARK_LUA's, then '1' to mark). Redis runs a
// script whole, as it runs COPY_WRITE: a copy written again before the script is dropped
// with its room, one written after it is counted by its own write; given back apart, the
// room of a copy written between the drop and the give-back went, the copy held and
// counted on no team. With a mark, the purge's field is written into its record once a
// copy was dropped: Redis at its maxmemory refuses a script's first write that may take
// memory and lets every write after a first one through, so a copy's delete comes first
// and the record is written in the room the copies give back. A delete of a key Redis does
// not hold would let it through as well, so only the copies found are deleted, and the
// records are forgotten after the mark: a purge that frees nothing marks nothing. The number dropped.
const DROP = redisScript<number>('gatewayCopyDrop', `${FORGET}
${MARK_LUA}
local first = ARGV[4] == '1' and 5 or 4
local dropped = 0
for i = first, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then dropped = dropped + redis.call('UNLINK', KEYS[i]) end
end
if dropped > 0 and first == 5 then mark(KEYS[4]) end
for i = first, #KEYS do forget(KEYS[i]) end
return dropped`, null)

interface ReadEntry {
  raw: Buffer
  entry: CacheEntry
}

/**
 * L2: shared by every replica. Each entry expires in Redis at its `errorUntil`; an
 * advertiser's live entries are listed in a sorted set, so a purge of one advertiser needs no scan.
 * Every command goes through the breaker: with Redis down, a get is a miss and a set is
 * skipped, after at most the command timeout; with Redis refusing writes (OOM, NOREPLICAS), gets go
 * on and sets are skipped. A read is bounded before anything is decoded: at most the
 * bytes an entry of `limits` takes is read (GETRANGE), a larger value is refused unread,
 * and the lifetimes of what is read are no later than the TTL policy could give.
 */
export class RedisStore implements CacheStore {
  readonly #redis: RedisClient
  readonly #breaker: RedisBreaker
  readonly #prefix: string
  readonly #now: () => number
  readonly #seal: RedisSeal | null
  readonly #onUnverified: (key: string) => void
  readonly #onRefused: (key: string, why: string) => void
  readonly #limits: EntryLimits
  readonly #maxStoredBytes: number
  readonly #read: LRUCache<string, ReadEntry> | null
  readonly #copyPart: () => number | null
  readonly #onOverPart: (team: string) => void
  /** The records of the room copies take (TAKE_ROOM's keys). */
  readonly #room: readonly [string, string, string]
  /** A Cluster: a copy's key and the room's records sit in different slots, so no one script writes both. */
  readonly #cluster: boolean
  /** On a Cluster, how long a copy's room is held before its write is confirmed (copyPendingMs). */
  readonly #pendingMs: number

  constructor(opts: {
    redis: RedisClient
    breaker: RedisBreaker
    prefix: string
    now?: () => number
    /** Seals each entry to its key (GATEWAY_SECRET); null: entries are read as they are, their content type the gateway's own. */
    seal?: RedisSeal | null
    /** An entry that did not verify, read as a miss. */
    onUnverified?: (key: string) => void
    /** What an entry may be at most (cache.maxEntryBytes and the TTL policy). */
    limits: EntryLimits
    /** A value refused for its size or its fill time, read as a miss. */
    onRefused?: (key: string, why: string) => void
    /** Keep the entry last read for each key, up to READ_ENTRIES_BYTES (L1 is off). */
    keepReads?: boolean
    /** A team's part of Redis for its copies (memory-room.ts copyPart), which its fills' copies take at most; null (or absent): no bound. */
    copyPart?: () => number | null
    /** A copy of `team` not written: its copies take its part. */
    onOverPart?: (team: string) => void
    /** On a Cluster, how long a copy's room is held before its write is confirmed (default: copyPendingMs of 250 ms). */
    pendingMs?: number
  }) {
    this.#redis = opts.redis
    this.#breaker = opts.breaker
    this.#prefix = opts.prefix
    this.#now = opts.now ?? systemClock.now
    this.#seal = opts.seal ?? null
    this.#onUnverified = opts.onUnverified ?? (() => undefined)
    this.#onRefused = opts.onRefused ?? (() => undefined)
    this.#limits = opts.limits
    this.#maxStoredBytes = storedBytesLimit(opts.limits)
    this.#copyPart = opts.copyPart ?? (() => null)
    this.#onOverPart = opts.onOverPart ?? (() => undefined)
    this.#room = [redisKey.copyExpiries(opts.prefix), redisKey.copyOwners(opts.prefix), redisKey.copySums(opts.prefix)]
    this.#cluster = opts.redis instanceof Cluster
    this.#pendingMs = opts.pendingMs ?? copyPendingMs(250)
    this.#read = opts.keepReads
      ? new LRUCache<string, ReadEntry>({
          maxSize: READ_ENTRIES_BYTES,
          sizeCalculation: (r, key) => LRU_ENTRY_BYTES + keptBytes(key) + ENTRY_OVERHEAD_BYTES + r.raw.length + (r.entry.identity?.length ?? 0),
        })
      : null
  }

  async get(key: string): Promise<CacheEntry | null> {
    // One byte more than the largest entry: a value that fills it is too large, and no
    // more of it crossed the wire.
    const buf = await this.#breaker.run(() => this.#redis.getrangeBuffer(key, 0, this.#maxStoredBytes), null)
    if (!buf || buf.length === 0) return null
    if (buf.length > this.#maxStoredBytes) {
      this.#onRefused(key, `larger than an entry of cache.maxEntryBytes (${this.#limits.maxEntryBytes} bytes) can be`)
      return null
    }
    const known = this.#read?.get(key)
    const decoded = known?.raw.equals(buf) ? known.entry : this.#decoded(key, buf)
    if (!decoded) return null
    const now = this.#now()
    const entry = withinLimits(decoded, this.#limits, now)
    if (!entry) {
      this.#onRefused(key, 'filled at a time ahead of this replica\'s clock')
      return null
    }
    // PX runs on Redis's clock; on ours the entry may already be past its end.
    return entry.errorUntil > now ? entry : null
  }

  /**
   * The entry of bytes read from Redis, its plain body decompressed (never past
   * cache.maxEntryBytes: a gzip bomb stops at the limit and is a miss), kept as the last
   * read of its key; null when it is not one of this gateway's.
   */
  #decoded(key: string, read: Buffer): CacheEntry | null {
    // Own bytes: a reply of Redis is often a view of a larger buffer it would keep alive.
    const raw = ownBytes(read)
    const entry = this.#seal ? this.#opened(key, raw) : withOwnContentType(decodeEntry(raw))
    if (!entry) return null
    const identity = inflate(entry.gzip, this.#limits.maxEntryBytes)
    if (identity === null) {
      this.#onRefused(key, `its body is no gzip, or longer than cache.maxEntryBytes (${this.#limits.maxEntryBytes} bytes)`)
      return null
    }
    // Own bytes: zlib's output may be a view of a larger buffer.
    entry.identity = ownBytes(identity)
    this.#read?.set(key, { raw, entry })
    return entry
  }

  #opened(key: string, buf: Buffer): CacheEntry | null {
    const data = (this.#seal as RedisSeal).open(key, buf)
    if (data === null) {
      this.#onUnverified(key)
      return null
    }
    return decodeEntry(data)
  }

  async set(key: string, entry: CacheEntry): Promise<void> {
    const ttl = entry.errorUntil - this.#now()
    if (ttl <= 0) return
    const team = entry.filledBy?.team
    const part = team === undefined ? null : this.#copyPart()
    await this.#breaker.write(async () => {
      const encoded = encodeEntry(entry)
      const value = this.#seal ? this.#seal.seal(key, encoded) : encoded
      const counted = team !== undefined && part !== null
      const bytes = value.length + Buffer.byteLength(key) + COPY_OVERHEAD_BYTES
      const args = [this.#now(), key, bytes, entry.errorUntil, team ?? '', part ?? 0, ttl] as const
      const indexes = entry.advertiserIds.map((id) => this.#advertiserIndex(id))
      if (!this.#cluster) {
        // One script, one round trip: the copy, its room and its indexes together (COPY_WRITE).
        const written = await COPY_WRITE(this.#redis, 4 + indexes.length, ...this.#room, key, ...indexes, ...args, value, counted ? '1' : '0')
        if (written === 0 && team !== undefined) this.#onOverPart(team)
        return
      }
      // On a Cluster the indexes first (one script each, sent together), then the room,
      // then the copy: a copy is written only once every purge that reaches it finds it.
      // An index entry for a copy never written is harmless: a purge unlinks a key Redis
      // does not hold, counted 0, and the entry is dropped at its expiry.
      await Promise.all(indexes.map((index) => INDEX_WRITE(this.#redis, index, ...args)))
      if (!counted) {
        await this.#redis.set(key, value, 'PX', ttl)
        return
      }
      // The room until the pending window's end: a copy never written gives it back by then,
      // whatever stops this write between the two slots (copyPendingMs).
      const [now, , , expiry] = args
      if ((await TAKE_ROOM(this.#redis, ...this.#room, now, key, bytes, Math.min(expiry, now + this.#pendingMs), ...args.slice(4))) === 0) {
        this.#onOverPart(team)
        return
      }
      await this.#redis.set(key, value, 'PX', ttl).catch((err: unknown) => this.#refusedAfterRoom(key, args, err))
      if ((await CONFIRM_ROOM(this.#redis, ...this.#room, ...args)) === 0) {
        // Its room went at the pending window's end and the part has none now: the copy goes too.
        await this.#redis.unlink(key)
        this.#onOverPart(team)
      }
    }, undefined)
  }

  /**
   * A copy's write refused (`err`, thrown on) after its room was taken, on a Cluster: its
   * master refuses it (maxmemory) while the room's took its count. The room is given back
   * at once, or, when Redis holds a copy at its key still (one written before), held until
   * that copy's end (counted once, its bytes as this copy's); when even that cannot be
   * learned, the pending window's end gives it back.
   */
  async #refusedAfterRoom(key: string, args: readonly [number, string, number, number, string, number, number], err: unknown): Promise<never> {
    const left = await this.#redis.pttl(key)
    // Its room as its TAKE_ROOM scored it: not one another replica's write of the key took since.
    const [now, , , expiry] = args
    if (left < 0) await GIVE_BACK(this.#redis, ...this.#room, String(Math.min(expiry, now + this.#pendingMs)), key)
    else await CONFIRM_ROOM(this.#redis, ...this.#room, args[0], key, args[2], args[0] + left, ...args.slice(4))
    throw err
  }

  async delete(key: string): Promise<void> {
    await this.#breaker.run(() => this.#drop(this.#redis, [key], undefined), undefined)
  }

  async purgeAll(mark?: PurgeMark): Promise<number> {
    // The indexes before the copies: a copy written meanwhile is dropped by the copies' scan,
    // or written after its index went and indexed anew; never held and out of its index.
    await this.#scan(redisKey.advertiserIndexPattern(this.#prefix), async (node, keys) => {
      for (const key of keys) await node.unlink(key)
      return keys.length
    })
    // Each copy's room goes with it (#drop): one written after the scan passed its key is held and counted.
    return this.#scan(redisKey.reportPattern(this.#prefix), (node, keys) => this.#drop(node, keys, mark))
  }

  async purgeAdvertiser(advertiserId: number, mark?: PurgeMark): Promise<number> {
    const indexes = await this.#indexesOf(advertiserId)
    const purged = keysOf(indexes)
    let dropped = 0
    for (let at = 0; at < purged.length; at += DROP_KEYS) dropped += await this.#drop(this.#redis, purged.slice(at, at + DROP_KEYS), mark)
    // Each index loses what the purge read in it, no copy written since (UNINDEX).
    for (const { index, scored } of indexes) {
      for (let at = 0; at < scored.length; at += DROP_KEYS * 2) await UNINDEX(this.#redis, index, ...scored.slice(at, at + DROP_KEYS * 2))
    }
    return dropped
  }

  purgeKey(key: string, mark?: PurgeMark): Promise<number> {
    return this.#drop(this.#redis, [key], mark)
  }

  /**
   * Drops the copies `keys` on `node` and gives their room back to their teams' parts (a
   * copy purged would otherwise take its team's part, refusing the team's next copies,
   * until its stale-if-error end), never the room of a copy written again meanwhile and
   * held. On one Redis one script (DROP), with `mark` written by it. On a Cluster, where a
   * copy and the room's records sit in different slots (keys of one advertiser too): each
   * copy's score in the records read, one UNLINK each, then the room of those whose score
   * is still the one read given back (GIVE_BACK), and no mark. The number dropped.
   */
  async #drop(node: RedisClient, keys: readonly string[], mark: PurgeMark | undefined): Promise<number> {
    if (!this.#cluster) {
      const marking = mark ? [mark.key] : []
      return DROP(node, 3 + marking.length + keys.length, ...this.#room, ...marking, ...keys, mark?.field ?? '', mark?.value ?? '', mark?.replaces ? '1' : '0', mark ? '1' : '0')
    }
    const scores = await Promise.all(keys.map((key) => this.#redis.zscore(this.#room[0], key)))
    let dropped = 0
    for (const key of keys) dropped += await node.unlink(key)
    const read = keys.flatMap((key, i) => (scores[i] === null || scores[i] === undefined ? [] : [scores[i] as string, key]))
    if (read.length > 0) await GIVE_BACK(this.#redis, ...this.#room, ...read)
    return dropped
  }

  countKey(key: string): Promise<number> {
    return this.#redis.exists(key)
  }

  countAll(): Promise<number> {
    return this.#scan(redisKey.reportPattern(this.#prefix), async (_node, keys) => keys.length)
  }

  async countAdvertiser(advertiserId: number): Promise<number> {
    let sum = 0
    for (const key of keysOf(await this.#indexesOf(advertiserId))) sum += await this.#redis.exists(key)
    return sum
  }

  /** The sum of `visit` over the keys matching `pattern`, each page of a SCAN in turn, on every master of a Cluster. */
  async #scan(pattern: string, visit: (node: RedisClient, keys: string[]) => Promise<number>): Promise<number> {
    const nodes = this.#redis instanceof Cluster ? this.#redis.nodes('master') : [this.#redis]
    let sum = 0
    for (const node of nodes) {
      let cursor = '0'
      do {
        const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT)
        cursor = next
        if (keys.length > 0) sum += await visit(node, keys)
      } while (cursor !== '0')
    }
    return sum
  }

  /** Each index a purge of `advertiserId` reaches (purgeReaches), with what it lists: `scored` its copies' scores and keys, in turn. */
  async #indexesOf(advertiserId: number): Promise<Indexed[]> {
    const indexes: Indexed[] = []
    for (const id of purgeReaches(advertiserId)) {
      const index = this.#advertiserIndex(id)
      const listed = await this.#redis.zrange(index, 0, -1, 'WITHSCORES')
      const scored: string[] = []
      for (let i = 0; i < listed.length; i += 2) scored.push(listed[i + 1] as string, listed[i] as string)
      indexes.push({ index, scored })
    }
    return indexes
  }

  async missing(keys: string[]): Promise<Set<string> | null> {
    // One EXISTS a key (keys of one batch may sit in different cluster slots), sent together.
    const found = await this.#breaker.run(() => Promise.all(keys.map((key) => this.#redis.exists(key))), null)
    return found === null ? null : new Set(keys.filter((_key, i) => found[i] === 0))
  }

  #advertiserIndex(advertiserId: number): string {
    return redisKey.advertiserIndex(this.#prefix, advertiserId)
  }
}

/** An advertiser's index as a purge read it: its copies' scores and keys, in turn. */
interface Indexed {
  index: string
  scored: string[]
}

/** The copies `indexes` list, each once. */
function keysOf(indexes: readonly Indexed[]): string[] {
  const keys = new Set<string>()
  for (const { scored } of indexes) for (let i = 1; i < scored.length; i += 2) keys.add(scored[i] as string)
  return [...keys]
}

// Report answers are JSON (only such are stored: reports/report-body.ts). Without a seal, anyone
// who may write to Redis could choose an entry's content type: an unsealed entry is
// served with this one, whatever it says.
const OWN_CONTENT_TYPE = 'application/json'
const JSON_CONTENT_TYPE = /^application\/json(\s*;\s*charset="?utf-8"?)?$/i

function withOwnContentType(entry: CacheEntry | null): CacheEntry | null {
  if (entry && !JSON_CONTENT_TYPE.test(entry.contentType)) entry.contentType = OWN_CONTENT_TYPE
  return entry
}
