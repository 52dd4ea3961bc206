import { randomBytes } from 'node:crypto'
import { gunzipSync, gzipSync } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { decodeEntry, encodeEntry, ENTRY_OVERHEAD_BYTES, entrySize, etagOf, FILL_CLOCK_SKEW_MS, inflate, MAX_ENTRY_HEADER_BYTES, storedBytesLimit, withinLimits, type CacheEntry } from '../../src/cache/cache-entry.js'

function entry(overrides: Partial<CacheEntry> = {}): CacheEntry {
  const identity = Buffer.from('{"data":[{"date":"2026-01-01","reach":12}]}')
  return {
    contentType: 'application/json',
    gzip: gzipSync(identity),
    identity,
    fetchedAt: 1_767_225_600_000,
    freshUntil: 1_767_225_900_000,
    staleUntil: 1_767_225_960_000,
    errorUntil: 1_767_312_300_000,
    advertiserIds: [101],
    etag: etagOf(identity),
    ...overrides,
  }
}

function meta(): Record<string, unknown> {
  const { gzip: _gzip, identity: _identity, ...rest } = entry()
  return { v: 2, ...rest }
}

/** The Redis value layout: 4-byte big-endian header length, JSON header, gzip bytes. */
function frame(header: unknown, body: Buffer = Buffer.alloc(0)): Buffer {
  const json = Buffer.from(typeof header === 'string' ? header : JSON.stringify(header))
  const length = Buffer.alloc(4)
  length.writeUInt32BE(json.length, 0)
  return Buffer.concat([length, json, body])
}

describe('encodeEntry / decodeEntry', () => {
  it('round-trips the metadata and the gzip bytes; the identity body stays out of the encoding', () => {
    const e = entry()
    const encoded = encodeEntry(e)
    const decoded = decodeEntry(encoded)
    expect(decoded).toEqual({ ...e, identity: null })
    expect(gunzipSync((decoded as CacheEntry).gzip).equals(e.identity as Buffer)).toBe(true)
    // Nothing but a small header in front of the body: no base64, no copy of identity.
    expect(encoded.length).toBeLessThan(e.gzip.length + 300)
    expect(encoded.subarray(encoded.length - e.gzip.length).equals(e.gzip)).toBe(true)
  })

  it('keeps arbitrary binary bytes exactly (NULs, 0xff, invalid UTF-8)', () => {
    const body = Buffer.concat([Buffer.from([0x00, 0xff, 0xfe, 0xc3, 0x28, 0x00]), randomBytes(64 * 1024)])
    const gzip = gzipSync(body)
    const decoded = decodeEntry(encodeEntry(entry({ gzip, identity: body })))
    expect(decoded?.gzip.equals(gzip)).toBe(true)
    expect(gunzipSync(decoded?.gzip as Buffer).equals(body)).toBe(true)
  })

  it('decodes a hand-made frame of the documented layout', () => {
    const decoded = decodeEntry(frame(meta(), Buffer.from([1, 2, 3])))
    expect(decoded).toEqual({ ...entry(), gzip: Buffer.from([1, 2, 3]), identity: null })
  })

  it('keeps no advertiser, several advertisers, an empty body and a non-ASCII content type', () => {
    const e = entry({ advertiserIds: [], gzip: Buffer.alloc(0), identity: null, contentType: 'application/json; charset="ü"' })
    expect(decodeEntry(encodeEntry(e))).toEqual(e)
    const several = entry({ advertiserIds: [101, 103], identity: null })
    expect(decodeEntry(encodeEntry(several))).toEqual(several)
  })

  it("keeps the body's ETag; a value written before ETags gets one from its stored bytes", () => {
    const e = entry()
    expect(decodeEntry(encodeEntry(e))?.etag).toBe(etagOf(e.identity as Buffer))
    const { etag: _etag, ...older } = meta()
    const body = Buffer.from([1, 2, 3])
    expect(decodeEntry(frame(older, body))?.etag).toBe(etagOf(body))
    // Two bodies, two validators.
    expect(etagOf(Buffer.from('{"a":1}'))).not.toBe(etagOf(Buffer.from('{"a":2}')))
  })

  it("keeps the platform's content-language; a value of a build that kept none reads as a copy without it", () => {
    const e = entry({ contentLanguage: 'de-DE, en' })
    expect(decodeEntry(encodeEntry(e))).toEqual({ ...e, identity: null })
    expect(JSON.parse(encodeEntry(e).subarray(4, 4 + encodeEntry(e).readUInt32BE(0)).toString('utf8'))).toMatchObject({ v: 2, lang: 'de-DE, en' })
    // The earlier build's header: the same fields, no language.
    const decoded = decodeEntry(frame(meta(), Buffer.from('x')))
    expect(decoded).not.toBeNull()
    expect(decoded).not.toHaveProperty('contentLanguage')
    // A copy without one is written as the earlier build wrote it, so that build reads it too.
    expect(encodeEntry(entry()).includes('"lang"')).toBe(false)
  })

  it('keeps when its fill was asked, which a replica reading it from Redis weighs against a purge', () => {
    const e = entry({ calledAt: 1_767_225_599_000 })
    expect(decodeEntry(encodeEntry(e))).toEqual({ ...e, identity: null })
    expect(decodeEntry(frame(meta(), Buffer.from('x')))).not.toHaveProperty('calledAt')
  })

  it.each([
    ['a fill time that is no number', frame({ ...meta(), at: '1767225599000' }, Buffer.from('x'))],
    ['a content-language that could add a header', frame({ ...meta(), lang: 'en\r\nset-cookie: a=b' }, Buffer.from('x'))],
    ['a content-language that is no language tag', frame({ ...meta(), lang: 42 }, Buffer.from('x'))],
    ['an ETag that could break out of its quotes', frame({ ...meta(), etag: 'a" , "b' }, Buffer.from('x'))],
    ['an empty buffer', Buffer.alloc(0)],
    ['fewer than 4 bytes', Buffer.from([0, 0, 1])],
    ['a header length beyond the buffer', (() => {
      const b = frame({ v: 2 })
      b.writeUInt32BE(b.length, 0)
      return b
    })()],
    ['a header that is not JSON', frame('{not json', Buffer.from('x'))],
    ['another format version', frame({ ...meta(), v: 3 }, Buffer.from('x'))],
    ['JSON that is not an object', frame('null')],
    ['a header without the lifetimes', frame({ v: 2, contentType: 'application/json', advertiserIds: [101] }, Buffer.from('x'))],
    ['a lifetime that is not a number', frame({ ...meta(), errorUntil: '1767312300000' }, Buffer.from('x'))],
    ['a header longer than any entry has', frame({ ...meta(), advertiserIds: Array.from({ length: 20_000 }, (_, i) => i + 1) }, Buffer.from('x'))],
  ])('answers null for %s', (_name, buf) => {
    expect(decodeEntry(buf)).toBeNull()
  })
})

describe('entrySize', () => {
  it('counts the gzip bytes, the identity body when held, and a fixed overhead', () => {
    const identity = Buffer.alloc(1000)
    const gzip = Buffer.alloc(100)
    expect(entrySize(entry({ gzip, identity }))).toBe(1100 + ENTRY_OVERHEAD_BYTES)
    expect(entrySize(entry({ gzip, identity: null }))).toBe(100 + ENTRY_OVERHEAD_BYTES)
  })
})

describe('bounds of an entry read from Redis', () => {
  const LIMITS = { maxEntryBytes: 64 * 1024, maxFreshMs: 300_000, staleWhileRevalidateMs: 60_000, staleIfErrorMs: 3_600_000 }
  const T = 1_767_225_600_000

  it('takes the largest value an entry of maxEntryBytes can be, and no more', () => {
    const incompressible = randomBytes(LIMITS.maxEntryBytes)
    const value = Buffer.concat([Buffer.alloc(32), encodeEntry(entry({ gzip: gzipSync(incompressible, { level: 9 }), advertiserIds: Array.from({ length: 1000 }, (_, i) => i + 1) }))])
    expect(value.length).toBeLessThanOrEqual(storedBytesLimit(LIMITS))
    expect(storedBytesLimit(LIMITS)).toBeLessThan(LIMITS.maxEntryBytes + MAX_ENTRY_HEADER_BYTES + 1024)
  })

  it('inflates within the limit, and stops a gzip bomb at it', () => {
    const body = Buffer.alloc(LIMITS.maxEntryBytes, 0x20)
    expect(inflate(gzipSync(body), LIMITS.maxEntryBytes)?.equals(body)).toBe(true)
    expect(inflate(gzipSync(Buffer.alloc(LIMITS.maxEntryBytes + 1, 0x20)), LIMITS.maxEntryBytes)).toBeNull()
    expect(inflate(Buffer.from('not gzip'), LIMITS.maxEntryBytes)).toBeNull()
  })

  it.each<[string, Partial<CacheEntry>, Partial<CacheEntry> | null]>([
    ['keeps lifetimes the policy gives', { fetchedAt: T, freshUntil: T + 300_000, staleUntil: T + 360_000, errorUntil: T + 3_900_000 }, {}],
    ['ends freshness at the longest TTL', { fetchedAt: T, freshUntil: T + 315_360_000_000, staleUntil: T + 315_360_000_000, errorUntil: T + 315_360_000_000 }, { freshUntil: T + 300_000, staleUntil: T + 360_000, errorUntil: T + 3_900_000 }],
    ['ends stale-while-revalidate after its window', { fetchedAt: T, freshUntil: T + 1000, staleUntil: T + 999_999, errorUntil: T + 999_999 }, { staleUntil: T + 61_000, errorUntil: T + 999_999 }],
    ['ends stale-if-error after its window', { fetchedAt: T, freshUntil: T + 1000, staleUntil: T + 1000, errorUntil: T + 99_999_999 }, { errorUntil: T + 3_601_000 }],
    ['takes a fill time a little ahead (clocks differ)', { fetchedAt: T + FILL_CLOCK_SKEW_MS, freshUntil: T + FILL_CLOCK_SKEW_MS + 1000, staleUntil: T + FILL_CLOCK_SKEW_MS + 1000, errorUntil: T + FILL_CLOCK_SKEW_MS + 1000 }, {}],
    ['refuses a fill time further ahead', { fetchedAt: T + FILL_CLOCK_SKEW_MS + 1, freshUntil: T + FILL_CLOCK_SKEW_MS + 1000, staleUntil: T + FILL_CLOCK_SKEW_MS + 1000, errorUntil: T + FILL_CLOCK_SKEW_MS + 1000 }, null],
  ])('%s', (_name, stored, expected) => {
    const e = entry(stored)
    const got = withinLimits(e, LIMITS, T)
    if (expected === null) expect(got).toBeNull()
    else expect(got).toEqual({ ...e, ...expected })
  })
})
