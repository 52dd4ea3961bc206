import { hash } from 'node:crypto'
import { gunzipSync } from 'node:zlib'
import { contentLanguage } from './content-language.js'

/**
 * The index of an entry whose accounts are not known: a report by campaigns whose owners
 * no lookup told (an unrestricted team's POST report, which the platform answers for its
 * campaigns, never for an account field; its GET report naming campaigns, which a platform
 * reading a query-builder filter answers for them whatever account it names). Every
 * advertiser's purge reaches it: its rows may be any account's. Account ids are positive,
 * so 0 names none of them.
 */
export const ANY_ADVERTISER = 0

/** The advertiser indexes a purge of `advertiserId` reaches: its own and ANY_ADVERTISER's. */
export function purgeReaches(advertiserId: number): readonly number[] {
  return [advertiserId, ANY_ADVERTISER]
}

/** A cached platform answer (always a 200): the body stored gzip-compressed once. */
export interface CacheEntry {
  contentType: string
  /** The platform's `content-language` on the answer that filled it (contentLanguage); absent when it said none, and in values of a gateway that did not keep it. */
  contentLanguage?: string
  /** The platform's body, gzip-compressed at fill time. */
  gzip: Buffer
  /** The platform's body as it was sent, decompressed once per copy, so that a hit never (de)compresses. */
  identity: Buffer | null
  fetchedAt: number
  /**
   * When the fill that made it was asked: the platform may have read its figures from then
   * on, so a purge after it reaches the copy (PurgeLedger.refuses), which is then not kept
   * or served, by the replica that asked and by one reading it from Redis (a purge made on
   * another replica while the call was at the platform, heard after the copy was stored).
   * Absent: fetchedAt (a job's copy, and values of a gateway that did not store it).
   */
  calledAt?: number
  freshUntil: number
  staleUntil: number
  errorUntil: number
  /** The accounts a purge by advertiser reaches this entry under (ANY_ADVERTISER: every one's; purgeReaches). */
  advertiserIds: number[]
  /** The strong validator of the body (ETag, unquoted), computed once at fill time and stored with it. */
  etag: string
  /** Whose read filled it, on which replica (GET /admin/cache/entry); absent in values of a gateway that did not say. */
  filledBy?: FilledBy
  /** The platform time its fill held (the call's seat-time, ms), which a MISS answered with it says; absent in values of a gateway that did not say. */
  fillMs?: number
}

/** The team whose read made the platform call that filled an entry, and the replica that made it. */
export interface FilledBy {
  team: string
  replica: string
}

// A team name or a replica id as the gateway makes them: anything else in a header is not its.
const FILLER = /^[\w.()-]{1,128}$/

/** A strong validator of a body: its SHA-256, shortened (128 bits are plenty to tell versions of one report apart). */
export function etagOf(body: Buffer): string {
  return hash('sha256', body, 'base64url').slice(0, 22)
}

interface StoredMeta {
  v: 2
  contentType: string
  fetchedAt: number
  freshUntil: number
  staleUntil: number
  errorUntil: number
  advertiserIds: number[]
  /** Absent in values that a gateway without ETags wrote to Redis. */
  etag?: string
  /** Absent in values of a gateway that did not say who filled them. */
  by?: FilledBy
  /** The fill's platform time (ms); absent in values of a gateway that did not say. */
  ms?: number
  /** The platform's `content-language`; absent when it said none, and in values of a gateway that did not keep it. */
  lang?: string
  /** When the fill was asked (CacheEntry.calledAt); absent in values of a gateway that did not store it. */
  at?: number
}

// Redis value: 4-byte length of a JSON header, the header, then the gzip bytes. Binary
// rather than JSON+base64, so an L2 hit copies no more bytes than the body has.
export function encodeEntry(entry: CacheEntry): Buffer {
  const meta: StoredMeta = {
    v: 2,
    contentType: entry.contentType,
    fetchedAt: entry.fetchedAt,
    freshUntil: entry.freshUntil,
    staleUntil: entry.staleUntil,
    errorUntil: entry.errorUntil,
    advertiserIds: entry.advertiserIds,
    etag: entry.etag,
    ...(entry.filledBy ? { by: entry.filledBy } : {}),
    ...(entry.fillMs === undefined ? {} : { ms: entry.fillMs }),
    ...(entry.contentLanguage === undefined ? {} : { lang: entry.contentLanguage }),
    ...(entry.calledAt === undefined ? {} : { at: entry.calledAt }),
  }
  const header = Buffer.from(JSON.stringify(meta), 'utf8')
  const length = Buffer.allocUnsafe(4)
  length.writeUInt32BE(header.length, 0)
  return Buffer.concat([length, header, entry.gzip])
}

// A header holds a content type, five numbers, an ETag and the entry's accounts: a few
// hundred bytes. One longer than this is not the gateway's, and is not parsed.
export const MAX_ENTRY_HEADER_BYTES = 64 * 1024

/** null for anything that is not a well-formed entry (e.g. written by another key version). */
export function decodeEntry(buf: Buffer): CacheEntry | null {
  if (buf.length < 4) return null
  const headerLength = buf.readUInt32BE(0)
  if (headerLength > buf.length - 4 || headerLength > MAX_ENTRY_HEADER_BYTES) return null
  let meta: unknown
  try {
    meta = JSON.parse(buf.subarray(4, 4 + headerLength).toString('utf8'))
  } catch {
    return null
  }
  // Another writer's value, or a truncated one, must read as a miss rather than throw.
  if (!isStoredMeta(meta)) return null
  const gzip = buf.subarray(4 + headerLength)
  return {
    contentType: meta.contentType,
    gzip,
    identity: null,
    fetchedAt: meta.fetchedAt,
    freshUntil: meta.freshUntil,
    staleUntil: meta.staleUntil,
    errorUntil: meta.errorUntil,
    advertiserIds: meta.advertiserIds,
    // An older replica's value: a validator of its stored bytes, as strong as one of the body.
    etag: meta.etag ?? etagOf(gzip),
    ...(meta.by ? { filledBy: { team: meta.by.team, replica: meta.by.replica } } : {}),
    ...(meta.ms === undefined ? {} : { fillMs: meta.ms }),
    ...(meta.lang === undefined ? {} : { contentLanguage: meta.lang }),
    ...(meta.at === undefined ? {} : { calledAt: meta.at }),
  }
}

// A fill's platform time longer than a day is none of the gateway's (a call's budget is minutes).
const MAX_FILL_MS = 86_400_000

function isStoredMeta(m: unknown): m is StoredMeta {
  if (typeof m !== 'object' || m === null) return false
  const o = m as Record<string, unknown>
  return (
    o.v === 2 &&
    typeof o.contentType === 'string' &&
    [o.fetchedAt, o.freshUntil, o.staleUntil, o.errorUntil].every((t) => typeof t === 'number' && Number.isFinite(t)) &&
    Array.isArray(o.advertiserIds) &&
    o.advertiserIds.every((a) => typeof a === 'number') &&
    (o.etag === undefined || (typeof o.etag === 'string' && /^[\w-]{1,64}$/.test(o.etag))) &&
    (o.by === undefined || isFiller(o.by)) &&
    (o.ms === undefined || (typeof o.ms === 'number' && o.ms >= 0 && o.ms <= MAX_FILL_MS)) &&
    (o.lang === undefined || contentLanguage(o.lang) !== undefined) &&
    (o.at === undefined || (typeof o.at === 'number' && Number.isFinite(o.at)))
  )
}

function isFiller(by: unknown): by is FilledBy {
  const b = by as Record<string, unknown> | null
  return typeof b === 'object' && b !== null && typeof b.team === 'string' && FILLER.test(b.team) && typeof b.replica === 'string' && FILLER.test(b.replica)
}

/**
 * What an entry read from Redis may be at most: what this gateway could have stored
 * there. Redis is shared, not trusted, and a seal says who wrote a value, not that its
 * writer's settings were these: everything read is bounded before it is decoded.
 */
export interface EntryLimits {
  /** cache.maxEntryBytes: the largest report body stored, plain or compressed. */
  maxEntryBytes: number
  /** The longest freshness the TTL policy gives (the longer of cache.ttl.recent and settled). */
  maxFreshMs: number
  staleWhileRevalidateMs: number
  staleIfErrorMs: number
}

// A fill time this far ahead of the reader's clock is not a replica's (their clocks
// agree within seconds): the entry is refused rather than kept fresh into the future.
export const FILL_CLOCK_SKEW_MS = 60_000

/**
 * The largest value an entry of `limits` takes in Redis: a seal's tag, the header's
 * length and header, and the gzip bytes, which for a body of n bytes compressed by zlib
 * are at most deflateBound(n) (zlib's own bound, with gzip's 18 bytes of wrapper).
 */
export function storedBytesLimit(limits: Pick<EntryLimits, 'maxEntryBytes'>): number {
  const n = limits.maxEntryBytes
  const deflateBound = n + (n >>> 12) + (n >>> 14) + (n >>> 25) + 7 + 18
  return 32 + 4 + MAX_ENTRY_HEADER_BYTES + deflateBound
}

/** The plain body of `gzip`, or null when it is not gzip or would be longer than `maxBytes` (a gzip bomb stops there). */
export function inflate(gzip: Buffer, maxBytes: number): Buffer | null {
  try {
    return gunzipSync(gzip, { maxOutputLength: Math.max(maxBytes, 1) })
  } catch {
    return null
  }
}

/**
 * `entry` with lifetimes no later than the TTL policy could have given it from its fill
 * time (the lifetimes of ttl-policy.ts, with the longest freshness); null when its fill
 * time is ahead of `now` by more than FILL_CLOCK_SKEW_MS.
 */
export function withinLimits(entry: CacheEntry, limits: EntryLimits, now: number): CacheEntry | null {
  if (!(entry.fetchedAt <= now + FILL_CLOCK_SKEW_MS)) return null
  const freshUntil = Math.min(entry.freshUntil, entry.fetchedAt + limits.maxFreshMs)
  const staleUntil = Math.min(entry.staleUntil, freshUntil + limits.staleWhileRevalidateMs)
  const errorUntil = Math.min(entry.errorUntil, Math.max(freshUntil + limits.staleIfErrorMs, staleUntil))
  if (freshUntil === entry.freshUntil && staleUntil === entry.staleUntil && errorUntil === entry.errorUntil) return entry
  return { ...entry, freshUntil, staleUntil, errorUntil }
}

// What an L1 entry holds besides its bodies: the entry, its two buffers and their backing
// stores, its key, ETag and accounts, the cache's slots, and once it is answered its
// answer fields and the rendered heads of its hits to plain and gzip callers
// (reports/report-reply.ts): about 1,900 bytes on Node 24
// (test/integration/cache-store.test.ts measures it). Counted lower, an L1 of small
// reports would hold more than l1MaxBytes (counted as 256, more than twice as much).
export const ENTRY_OVERHEAD_BYTES = 2304

/** Bytes an entry holds in memory, for the L1 budget. */
export function entrySize(entry: CacheEntry): number {
  return entry.gzip.length + (entry.identity?.length ?? 0) + ENTRY_OVERHEAD_BYTES
}
