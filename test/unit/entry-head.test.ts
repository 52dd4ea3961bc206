import { gzipSync } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { etagOf, type CacheEntry } from '../../src/cache/cache-entry.js'
import { entryHead } from '../../src/http/reads/report-reply.js'

// The head of an entry's 200 answers, rendered once per entry and written without
// writeHead's checks: only values writeHead would take may be in it.

function entry(over: Partial<CacheEntry> = {}): CacheEntry {
  const identity = Buffer.from('{"data":[]}')
  const gzip = gzipSync(identity)
  return { contentType: 'application/json', gzip, identity, fetchedAt: 0, freshUntil: 60_000, staleUntil: 120_000, errorUntil: 120_000, advertiserIds: [101], etag: etagOf(identity), ...over }
}

describe("an entry's rendered head", () => {
  it('has the status line and every shared header, content-length of the body it goes with', () => {
    const e = entry()
    expect(entryHead(e, 'HIT', false)).toBe(
      `HTTP/1.1 200 OK\r\nx-cache: HIT\r\netag: "${e.etag}"\r\nvary: accept-encoding, authorization, prefer, x-api-key\r\ncache-control: private, max-age=60\r\ncontent-type: application/json\r\ncontent-length: ${e.identity?.length}\r\n`,
    )
    expect(entryHead(e, 'MISS', true)).toBe(
      `HTTP/1.1 200 OK\r\nx-cache: MISS\r\netag: "${e.etag}-gzip"\r\nvary: accept-encoding, authorization, prefer, x-api-key\r\ncache-control: private, max-age=60\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\ncontent-length: ${e.gzip.length}\r\n`,
    )
  })

  it("says the platform's content-language after the content type when the entry keeps one", () => {
    const e = entry({ contentLanguage: 'de-DE, en' })
    expect(entryHead(e, 'STALE', false)).toBe(
      `HTTP/1.1 200 OK\r\nx-cache: STALE\r\netag: "${e.etag}"\r\nvary: accept-encoding, authorization, prefer, x-api-key\r\ncache-control: private, max-age=60\r\ncontent-type: application/json\r\ncontent-language: de-DE, en\r\ncontent-length: ${e.identity?.length}\r\n`,
    )
  })

  it('is rendered once per entry and variant', () => {
    const e = entry()
    expect(entryHead(e, 'HIT', true)).toBe(entryHead(e, 'HIT', true))
    expect(entryHead(e, 'HIT', true)).not.toBe(entryHead(e, 'HIT', false))
  })

  it('is not made for a content type writeHead would refuse, so that no header can be smuggled in', () => {
    for (const contentType of ['application/json\r\nset-cookie: session=attacker', 'application/json\nx: 1', 'application/json\u0000']) {
      expect(entryHead(entry({ contentType }), 'HIT', false)).toBeNull()
      expect(entryHead(entry({ contentType }), 'HIT', true)).toBeNull()
    }
  })

  it('is not made for an entry that keeps no plain body (it is decompressed per answer)', () => {
    const e = entry({ identity: null })
    expect(entryHead(e, 'HIT', false)).toBeNull()
    expect(entryHead(e, 'HIT', true)).not.toBeNull()
  })
})
