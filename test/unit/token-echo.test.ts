import type { IncomingHttpHeaders } from 'node:http'
import { Readable } from 'node:stream'
import { brotliCompressSync, deflateRawSync, deflateSync, gzipSync } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { forwardedEncodings, withoutToken } from '../../src/platform/client/token-echo.js'
import { waitFor } from '../helpers/wait.js'

// A platform answer that carries the gateway's token back fails the call wherever the
// token shows: a header, the body in any chunking, the body a coding decodes to; and no
// byte of the token reaches the caller first.

const TOKEN = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJnYXRld2F5In0.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg'
// platform.bufferTotalBytes's default: the most a coded body decodes to.
const MAX_DECODED = 128 * 1024 * 1024

/** A platform body of `chunks`, each its own read. */
function body(chunks: Buffer[]): Readable {
  return Readable.from(chunks, { objectMode: false })
}

/** `text` cut into chunks of `size` bytes. */
function cut(bytes: Buffer, size: number): Buffer[] {
  const chunks: Buffer[] = []
  for (let at = 0; at < bytes.length; at += size) chunks.push(bytes.subarray(at, at + size))
  return chunks
}

/** The token as a body may spell it: its bytes as text, in UTF-16 and in UTF-32, either byte order. */
const SPELLED = ((): Buffer[] => {
  const utf16le = Buffer.from(TOKEN, 'utf16le')
  const utf32le = Buffer.alloc(TOKEN.length * 4)
  const utf32be = Buffer.alloc(TOKEN.length * 4)
  for (let i = 0; i < TOKEN.length; i++) {
    utf32le.writeUInt32LE(TOKEN.charCodeAt(i), i * 4)
    utf32be.writeUInt32BE(TOKEN.charCodeAt(i), i * 4)
  }
  return [Buffer.from(TOKEN), utf16le, Buffer.from(utf16le).swap16(), utf32le, utf32be]
})()
/** Bytes either side of a spelling (and at a body's start) that go one to a chunk: the longest spelling's, more than the scan keeps between chunks. */
const AROUND = Math.max(...SPELLED.map((spelling) => spelling.length))

/**
 * `bytes` cut after every byte of its first AROUND bytes and of AROUND bytes either side of
 * each spelling of the token, and in chunks of `size` elsewhere. Around the token these are
 * the boundaries 1-byte chunks give: every offset inside the token is a chunk boundary, with
 * the scan's kept tail already built of 1-byte chunks (AROUND exceeds what it keeps) and the
 * body's first bytes (which say UTF-16 or UTF-32) arriving one at a time; away from the token
 * a boundary splits no spelling, so more of them prove nothing more. A body whose bytes as
 * sent show no spelling (a coded one, whose decoded bytes the chunks do not map to) is cut
 * after every byte.
 */
function cutAroundToken(bytes: Buffer, size: number): Buffer[] {
  const at = SPELLED.flatMap((spelling) => {
    const found: number[] = []
    for (let i = bytes.indexOf(spelling); i !== -1; i = bytes.indexOf(spelling, i + 1)) found.push(i)
    return found.map((start) => [Math.max(0, start - AROUND), start + spelling.length + AROUND] as const)
  })
  if (at.length === 0) return cut(bytes, 1)
  const near = (offset: number): boolean => offset < AROUND || at.some(([from, to]) => offset >= from && offset < to)
  const chunks: Buffer[] = []
  let start = 0
  for (let end = 1; end <= bytes.length; end++) {
    if (end === bytes.length || near(end - 1) || near(end) || end - start === size) {
      chunks.push(bytes.subarray(start, end))
      start = end
    }
  }
  return chunks
}

/** What a caller reads of the answer: its bytes until it ends or fails, and the failure. */
async function read(headers: IncomingHttpHeaders, chunks: Buffer[], maxDecoded = MAX_DECODED): Promise<{ bytes: Buffer; error: Error | null }> {
  const answer = withoutToken(headers, body(chunks), TOKEN, maxDecoded)
  const got: Buffer[] = []
  try {
    for await (const chunk of answer) got.push(chunk as Buffer)
    return { bytes: Buffer.concat(got), error: null }
  } catch (err) {
    return { bytes: Buffer.concat(got), error: err as Error }
  }
}

const REFLECTED = Buffer.from(`{"padding":"${'x'.repeat(40_000)}","headers":{"authorization":"Bearer ${TOKEN}"},"after":"${'y'.repeat(40_000)}"}`)
const CLEAN = Buffer.from(`{"data":[${Array.from({ length: 2000 }, (_, i) => `{"id":${i},"name":"eyJhbGciOiJIUzI1NiJ9 campaign ${i}"}`).join(',')}]}`)

describe('a body that carries the token back', () => {
  it.each([1, 7, TOKEN.length - 1, TOKEN.length, 4096, REFLECTED.length])('fails the answer in chunks of %i bytes, with no byte of the token passed on first', async (size) => {
    const { bytes, error } = await read({ 'content-type': 'application/json' }, cut(REFLECTED, size))
    expect(error).toMatchObject({ code: 'GW_UPSTREAM', message: expect.stringContaining('carried the gateway\'s token back in its body') })
    // What was passed on before the failure ends before the token begins.
    expect(bytes.length).toBeLessThanOrEqual(REFLECTED.indexOf(TOKEN))
    expect(REFLECTED.subarray(0, bytes.length).equals(bytes)).toBe(true)
  })

  it.each([
    ['gzip', gzipSync],
    ['x-gzip', gzipSync],
    ['deflate', deflateSync],
    ['br', brotliCompressSync],
  ] as const)('fails the answer in %s, whatever its chunks', async (coding, encode) => {
    for (const size of [1, 64, 100_000]) {
      const { error } = await read({ 'content-encoding': coding }, cut(encode(REFLECTED), size))
      expect(error, `${coding} in chunks of ${size}`).toMatchObject({ code: 'GW_UPSTREAM' })
    }
  })

  it('passes a body without the token on byte for byte, in any chunking and coding', async () => {
    for (const size of [1, 13, 65_536]) {
      const plain = await read({}, cut(CLEAN, size))
      expect(plain.error).toBeNull()
      expect(plain.bytes.equals(CLEAN)).toBe(true)
      const gzipped = gzipSync(CLEAN)
      const encoded = await read({ 'content-encoding': 'gzip' }, cut(gzipped, size))
      expect(encoded.error).toBeNull()
      expect(encoded.bytes.equals(gzipped)).toBe(true)
    }
  })

  it.each([
    ['gzip', gzipSync],
    ['deflate', deflateSync],
    ['deflate', deflateRawSync],
    ['br', brotliCompressSync],
  ] as const)('passes a body in %s that decodes to the bound, and fails one that decodes past it, naming the bound', async (coding, encode) => {
    const coded = encode(CLEAN)
    for (const size of [64, coded.length]) {
      const at = await read({ 'content-encoding': coding }, cut(coded, size), CLEAN.length)
      expect(at.error, `${coding} in chunks of ${size}`).toBeNull()
      expect(at.bytes.equals(coded)).toBe(true)
      const past = await read({ 'content-encoding': coding }, cut(coded, size), CLEAN.length - 1)
      expect(past.error, `${coding} in chunks of ${size}`).toMatchObject({ code: 'GW_UPSTREAM', message: expect.stringContaining(`the platform's answer in ${coding} decodes to more than platform.bufferTotalBytes (${CLEAN.length - 1} bytes): not passed on`) })
    }
  })

  it('fails a body its coding does not decode whole: a reader that decodes it in part, or not at all, may read what the scan did not', async () => {
    for (const broken of [gzipSync(CLEAN).subarray(0, 100), Buffer.concat([gzipSync(CLEAN).subarray(0, 10), Buffer.from('not gzip at all')])]) {
      for (const size of [1, 64, broken.length]) {
        const { error } = await read({ 'content-encoding': 'gzip' }, cut(broken, size))
        expect(error, `in chunks of ${size}`).toMatchObject({ code: 'GW_UPSTREAM', message: expect.stringContaining('does not decode') })
      }
    }
  })
})

describe('the bytes as sent and as decoded, of any type', () => {
  const wide = (text: string, order: 'utf16le' | 'utf16be' | 'utf32le' | 'utf32be'): Buffer => {
    const units = [...text].map((c) => c.codePointAt(0) as number)
    if (order.startsWith('utf16')) {
      const le = Buffer.from(text, 'utf16le')
      return order === 'utf16le' ? le : Buffer.from(le).swap16()
    }
    const out = Buffer.alloc(units.length * 4)
    units.forEach((unit, i) => (order === 'utf32le' ? out.writeUInt32LE(unit, i * 4) : out.writeUInt32BE(unit, i * 4)))
    return out
  }
  // A text that starts with characters whose UTF-16 has no zero byte: no byte-order mark, no zero in its first bytes.
  const cjk = (order: 'utf16le' | 'utf16be' | 'utf32le' | 'utf32be'): Buffer => wide(`中文报告 ${REFLECTED.toString()}`, order)

  it.each([
    ['raw deflate (no zlib header), which browsers, curl and urllib3 decode as deflate', { 'content-encoding': 'deflate' }, deflateRawSync(REFLECTED)],
    ['a body labelled gzip that is none: a client that does not decode reads it as it is', { 'content-encoding': 'gzip' }, REFLECTED],
    ['a gzip member with the token after it, which a gzip decoder leaves unread', { 'content-encoding': 'gzip' }, Buffer.concat([gzipSync(CLEAN), REFLECTED])],
    ['application/octet-stream in UTF-16LE', { 'content-type': 'application/octet-stream' }, wide(REFLECTED.toString(), 'utf16le')],
    ['application/x-ndjson in UTF-16BE starting with CJK text', { 'content-type': 'application/x-ndjson' }, cjk('utf16be')],
    ['application/vnd.api+json in UTF-16LE starting with CJK text', { 'content-type': 'application/vnd.api+json' }, cjk('utf16le')],
    ['text/csv without a charset, in UTF-32LE', { 'content-type': 'text/csv' }, cjk('utf32le')],
    ['no content-type, in UTF-32BE starting with CJK text', {}, cjk('utf32be')],
    ['UTF-16LE, gzipped, of no textual type', { 'content-type': 'application/octet-stream', 'content-encoding': 'gzip' }, gzipSync(wide(REFLECTED.toString(), 'utf16le'))],
  ] as [string, IncomingHttpHeaders, Buffer][])('fails %s', async (_name, headers, bytes) => {
    // Chunks of 1 byte where the token and the first bytes are (cutAroundToken), of 5 (across the 2- and 4-byte units everywhere), and of 4096.
    for (const [size, chunks] of [['1 around the token', cutAroundToken(bytes, 4096)], [5, cut(bytes, 5)], [4096, cut(bytes, 4096)]] as const) {
      const { error } = await read(headers, chunks)
      expect(error, `in chunks of ${size}`).toMatchObject({ code: 'GW_UPSTREAM' })
    }
  })

  it('passes a binary body with zero bytes and no token on byte for byte, in any chunking', async () => {
    const binary = Buffer.concat([wide('中文报告 no token here', 'utf16le'), Buffer.alloc(300), gzipSync(CLEAN), Buffer.from(TOKEN.slice(0, 20), 'utf16le')])
    for (const size of [1, 7, binary.length]) {
      const { bytes, error } = await read({ 'content-type': 'application/octet-stream' }, cut(binary, size))
      expect(error).toBeNull()
      expect(bytes.equals(binary)).toBe(true)
    }
  })

  it.each([
    ['two content-encoding lines (a stack, as `gzip, gzip`)', { 'content-encoding': ['gzip', 'gzip'] }, gzipSync(gzipSync(REFLECTED)), /content coding the gateway does not read/],
    ['two content-type lines, one naming UTF-16', { 'content-type': ['application/json', 'text/html; charset=utf-16'] }, cjk('utf16le'), /charset the gateway does not read/],
  ] as unknown as [string, IncomingHttpHeaders, Buffer, RegExp][])('throws for an answer with %s', (_name, headers, bytes, reason) => {
    expect(() => withoutToken(headers, body([bytes]), TOKEN, MAX_DECODED)).toThrow(reason)
  })

  it('names no platform word in its refusal but a short one of a token\'s characters: its message reaches the caller and the log', () => {
    expect(() => withoutToken({ 'content-encoding': ['gzip', 'gzip'] } as unknown as IncomingHttpHeaders, body([CLEAN]), TOKEN, MAX_DECODED)).toThrow('(gzip, gzip)')
    expect(() => withoutToken({ 'content-encoding': `x-${'a'.repeat(60)}` }, body([CLEAN]), TOKEN, MAX_DECODED)).toThrow('(not named)')
    expect(() => withoutToken({ 'content-type': 'text/html; charset=<script>' }, body([CLEAN]), TOKEN, MAX_DECODED)).toThrow('(not named)')
  })

  it('passes an answer of no bytes in a coding on: a HEAD\'s answer, a 204 that names its coding', async () => {
    for (const coding of ['gzip', 'deflate', 'br']) {
      const { bytes, error } = await read({ 'content-encoding': coding }, [])
      expect(error, coding).toBeNull()
      expect(bytes.length).toBe(0)
    }
  })
})

describe('headers, and codings the gateway does not read', () => {
  it.each([
    [{ authorization: `Bearer ${TOKEN}` }],
    [{ 'x-debug': ['a', `Bearer ${TOKEN}`] }],
    [{ [`x-${TOKEN.toLowerCase()}`]: '1' }],
  ] as IncomingHttpHeaders[][])('throws at once for a header that carries the token, and drops the body: %o', (headers) => {
    const platform = body([CLEAN])
    expect(() => withoutToken(headers, platform, TOKEN, MAX_DECODED)).toThrow(/carried the gateway's token back in its headers/)
    expect(platform.destroyed).toBe(true)
  })

  // The names of an object's members are no codings either: none is taken for a decoder.
  it.each(['zstd', 'compress', 'gzip, br', 'constructor', '__proto__', 'toString', 'valueOf'])('throws for a body in %s, which it cannot read for the token', (coding) => {
    const platform = body([CLEAN])
    expect(() => withoutToken({ 'content-encoding': coding }, platform, TOKEN, MAX_DECODED)).toThrow(/content coding the gateway does not read/)
    expect(platform.destroyed).toBe(true)
  })

  it.each(['application/json; charset=utf-16', 'text/json; charset=UTF-7', 'application/json; charset="utf-32le"', 'text/html; charset=cp037', 'text/plain;charset=ucs-2'])(
    'throws for a body in %s, whose token its scan would not see in the bytes a reader decodes it from',
    (type) => {
      const platform = body([CLEAN])
      expect(() => withoutToken({ 'content-type': type }, platform, TOKEN, MAX_DECODED)).toThrow(/charset the gateway does not read/)
      expect(platform.destroyed).toBe(true)
    },
  )

  it.each(['application/json; charset=utf-8', 'text/html; charset=UTF-8', 'application/json;charset="us-ascii"', 'text/plain; charset=ISO-8859-1', 'text/csv; charset=windows-1252', 'application/json'])('passes a body in %s on', async (type) => {
    const { bytes, error } = await read({ 'content-type': type }, [CLEAN])
    expect(error).toBeNull()
    expect(bytes.equals(CLEAN)).toBe(true)
  })

  const utf16 = (text: string, order: 'le' | 'be'): Buffer => {
    const le = Buffer.from(text, 'utf16le')
    return order === 'le' ? le : Buffer.from(le).swap16()
  }
  it.each([
    ['UTF-16LE after its byte-order mark', Buffer.concat([Buffer.from([0xff, 0xfe]), utf16(REFLECTED.toString(), 'le')]), 'text/html'],
    ['UTF-16BE after its byte-order mark', Buffer.concat([Buffer.from([0xfe, 0xff]), utf16(REFLECTED.toString(), 'be')]), 'application/json'],
    ['UTF-16LE JSON without a mark (RFC 4627, 3: its first bytes say so)', utf16(REFLECTED.toString(), 'le'), 'application/json'],
    ['UTF-16BE JSON of no declared type', utf16(REFLECTED.toString(), 'be'), undefined],
  ])('fails a textual body in %s: a reader that goes by its first bytes decodes the token from it', async (_name, bytes, type) => {
    for (const coded of [false, true]) {
      const headers: IncomingHttpHeaders = type === undefined ? {} : { 'content-type': type }
      const { error } = await read(coded ? { ...headers, 'content-encoding': 'gzip' } : headers, cut(coded ? gzipSync(bytes) : bytes, 3))
      expect(error, `gzip ${coded}`).toMatchObject({ code: 'GW_UPSTREAM', message: expect.stringContaining('UTF-16 or UTF-32') })
    }
  })

  it.each([
    ['gzip', gzipSync(CLEAN), 'a gzip body whose content-encoding does not say so'],
    // As `gzip report.json` writes it: the file's name flagged (FNAME), no zero byte in its first four.
    ['gzip naming its file', Buffer.concat([Buffer.from([0x1f, 0x8b, 0x08, 0x08]), gzipSync(CLEAN).subarray(4, 10), Buffer.from('report.json\0'), gzipSync(CLEAN).subarray(10)]), 'a gzip body whose content-encoding does not say so'],
    ['bytes with zeros', Buffer.concat([Buffer.from([0x7b, 0x22, 0x00, 0x61]), CLEAN]), 'UTF-16 or UTF-32, or bytes that are no text'],
  ])('fails a textual body in %s with no content-encoding, and names it', async (_name, bytes, named) => {
    const { error } = await read({ 'content-type': 'application/json' }, cut(bytes, 3))
    expect(error).toMatchObject({ code: 'GW_UPSTREAM', message: expect.stringContaining(named) })
    expect(error?.message).not.toMatch(/UTF-16 or UTF-32\b(?!, or bytes)/)
  })

  it.each([
    ['gzip, deflate, br, zstd', 'gzip, deflate, br'],
    ['br;q=1.0, gzip;q=0.8, *;q=0.1', 'br;q=1.0, gzip;q=0.8'],
    ['GZIP', 'GZIP'],
    ['identity', 'identity'],
    ['zstd', undefined],
    ['*', undefined],
    ['x-gzip', 'x-gzip'],
    // Names of an object's own members in JavaScript are no codings: none reaches the platform.
    ['gzip, constructor, __proto__, toString;q=0.5, hasOwnProperty', 'gzip'],
    ['__proto__', undefined],
  ])('offers the platform the codings it reads: %s is %s', (accepted, offered) => {
    expect(forwardedEncodings(accepted)).toBe(offered)
  })
})

describe('the platform\'s body and the scan, joined', () => {
  it('fails the scan with the platform\'s failure, and on a body closed before its end', async () => {
    const failing = new Readable({ read() {} })
    const failed = withoutToken({}, failing, TOKEN, MAX_DECODED)
    failing.push(CLEAN.subarray(0, 100))
    failing.destroy(new Error('connection reset'))
    await expect((async () => { for await (const _ of failed) void _ })()).rejects.toThrow('connection reset')

    const cutShort = new Readable({ read() {} })
    const short = withoutToken({}, cutShort, TOKEN, MAX_DECODED)
    cutShort.push(CLEAN.subarray(0, 100))
    cutShort.destroy()
    await expect((async () => { for await (const _ of short) void _ })()).rejects.toMatchObject({ code: 'ERR_STREAM_PREMATURE_CLOSE' })
  })

  it('ends the platform\'s body when the scan fails or its reader leaves before the end', async () => {
    // No reader listens when the token is found: the failure takes no process down.
    const echoing = new Readable({ read() {} })
    const scan = withoutToken({}, echoing, TOKEN, MAX_DECODED)
    echoing.push(REFLECTED)
    await waitFor('the scan failed and the body ended', () => scan.destroyed && echoing.destroyed)
    expect(scan.errored).toMatchObject({ code: 'GW_UPSTREAM' })

    const long = new Readable({ read() {} })
    const left = withoutToken({}, long, TOKEN, MAX_DECODED)
    long.push(CLEAN.subarray(0, 100))
    left.destroy()
    await waitFor('the body ended', () => long.destroyed)
  })
})
