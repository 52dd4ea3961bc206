import { randomBytes } from 'node:crypto'
import { gunzipSync, gzipSync } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { decodeEntry, encodeEntry, ENTRY_OVERHEAD_BYTES, entrySize, etagOf, type CacheEntry } from '../../src/cache/cache-entry.js'

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

  it.each([
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
