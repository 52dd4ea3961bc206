import { hash } from 'node:crypto'

/** A cached platform answer (always a 200): the body stored gzip-compressed once. */
export interface CacheEntry {
  contentType: string
  /** The platform's body, gzip-compressed at fill time. */
  gzip: Buffer
  /** The platform's body as it was sent, decompressed once per copy, so that a hit never (de)compresses. */
  identity: Buffer | null
  fetchedAt: number
  freshUntil: number
  staleUntil: number
  errorUntil: number
  /** The accounts a purge by advertiser reaches this entry under. */
  advertiserIds: number[]
  /** The strong validator of the body (ETag, unquoted), computed once at fill time and stored with it. */
  etag: string
}

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
  /** Absent in values written before ETags (issue 17). */
  etag?: string
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
  }
  const header = Buffer.from(JSON.stringify(meta), 'utf8')
  const length = Buffer.allocUnsafe(4)
  length.writeUInt32BE(header.length, 0)
  return Buffer.concat([length, header, entry.gzip])
}

/** null for anything that is not a well-formed entry (e.g. written by another key version). */
export function decodeEntry(buf: Buffer): CacheEntry | null {
  if (buf.length < 4) return null
  const headerLength = buf.readUInt32BE(0)
  if (headerLength > buf.length - 4) return null
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
  }
}

function isStoredMeta(m: unknown): m is StoredMeta {
  if (typeof m !== 'object' || m === null) return false
  const o = m as Record<string, unknown>
  return (
    o.v === 2 &&
    typeof o.contentType === 'string' &&
    [o.fetchedAt, o.freshUntil, o.staleUntil, o.errorUntil].every((t) => typeof t === 'number' && Number.isFinite(t)) &&
    Array.isArray(o.advertiserIds) &&
    o.advertiserIds.every((a) => typeof a === 'number') &&
    (o.etag === undefined || (typeof o.etag === 'string' && /^[\w-]{1,64}$/.test(o.etag)))
  )
}

// What an L1 entry holds besides its bodies: the entry, its two buffers and their backing
// stores, its key, ETag and accounts, the cache's slots, and once it is answered its
// answer fields and the rendered heads of its hits to plain and gzip callers
// (reports/report-reply.ts): about 1,900 bytes on Node 24 (about 1,050 before the heads;
// test/integration/cache-store.test.ts measures it). Counted as 256, small reports held
// more than twice l1MaxBytes (issue 16).
export const ENTRY_OVERHEAD_BYTES = 2304

/** Bytes an entry holds in memory, for the L1 budget. */
export function entrySize(entry: CacheEntry): number {
  return entry.gzip.length + (entry.identity?.length ?? 0) + ENTRY_OVERHEAD_BYTES
}

/** `buf` itself, or a copy when it is a view of a larger buffer it would keep alive (memory-store.ts). */
export function ownBytes(buf: Buffer): Buffer {
  if (buf.byteLength === buf.buffer.byteLength) return buf
  // Not from the pool, which would make it a view of a shared slab again.
  const copy = Buffer.allocUnsafeSlow(buf.byteLength)
  buf.copy(copy)
  return copy
}
