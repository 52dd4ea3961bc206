import type { IncomingHttpHeaders } from 'node:http'
import { finished, Transform, type Readable, type TransformCallback } from 'node:stream'
import { brotliDecompressSync, createBrotliDecompress, createGunzip, createInflate, createInflateRaw, gunzipSync, inflateRawSync, inflateSync } from 'node:zlib'
import { UpstreamError, type GatewayError } from '../../errors.js'
import { secretForms, wideForms } from '../../observe/secret-forms.js'

// A platform answer that carries back the token the gateway sent it is no answer: a TRACE
// (RFC 9110 says a server SHOULD reflect it), a debug error page or an echo route hands
// the request back, its `authorization: Bearer <token>` in it. Such an answer fails the
// call (GW_UPSTREAM); nothing of it reaches a caller or the cache. The token is looked for
// in each of its spellings (observe/secret-forms.ts: as it is, JSON- or HTML-escaped,
// percent-encoded, in base64) in the header names and values, and in the body as it
// streams.
// Every body is searched, whatever its type or the lack of one: what a reader makes of a
// body is not the platform's label to say (a client that guesses the charset, a caller
// that saves the bytes, a browser that goes by a byte-order mark). It is searched in the
// bytes as sent, and, for a body in one of the codings below, in the bytes it decodes to
// as well (a client that does not decode reads the first; one that does, the second); a
// body its coding does not decode whole fails the call, as a reader may decode it in part
// or otherwise. In both, the token is looked for as UTF-8 writes each spelling (so too
// every charset that writes ASCII as ASCII: READ_CHARSETS) and as UTF-16 and UTF-32 do
// (wideForms). An answer a reader would decode in yet another way (another charset named;
// a textual body whose first bytes say UTF-16 or UTF-32, in which an escape of the
// token's could be written) fails the call too.

/** The content codings whose bodies the gateway reads for the token, by their names as codingOf gives them; the platform is offered no other (forwardedEncodings). */
const DECODERS: Record<string, () => Transform> = {
  gzip: createGunzip,
  deflate: () => new EitherDeflate(),
  br: createBrotliDecompress,
}

/**
 * `bytes` in `coding` (as codingOf gives it, one of DECODERS) decoded at once, as the
 * stream decoders read them; null: more than `max` bytes, or no body in that coding.
 */
export function decodedSync(coding: string, bytes: Buffer, max: number): Buffer | null {
  try {
    if (coding === 'gzip') return gunzipSync(bytes, { maxOutputLength: max })
    if (coding === 'br') return brotliDecompressSync(bytes, { maxOutputLength: max })
    if (coding === 'deflate') return (zlibStart(bytes[0] ?? 0, bytes[1] ?? 0) ? inflateSync : inflateRawSync)(bytes, { maxOutputLength: max })
  } catch {
    return null
  }
  return null
}

/** A decoder of `coding` (as codingOf gives it), one the gateway reads; null: none it reads. */
export function decoderOf(coding: string): Transform | null {
  return makerOf(coding)?.() ?? null
}

/** What makes a decoder of `coding`: the table's own codings only (`constructor` or `__proto__` is none); null for any other. */
function makerOf(coding: string): (() => Transform) | null {
  return Object.hasOwn(DECODERS, coding) ? (DECODERS[coding] as () => Transform) : null
}

/**
 * The content coding of a platform answer, as every reader of it in the gateway takes it:
 * '' for none (`identity`), `gzip` for `x-gzip` too (RFC 9110, 8.4.1.3), else the names
 * lower-cased, repeated lines one list (RFC 9110, 5.3: `gzip` twice is `gzip, gzip`, a stack).
 */
export function codingOf(headers: IncomingHttpHeaders): string {
  const coding = linesOf(headers['content-encoding']).join(', ').trim().toLowerCase()
  return coding === 'identity' ? '' : coding === 'x-gzip' ? 'gzip' : coding
}

// The charsets in which every character of a token (printable ASCII) is its own byte, and
// no other bytes decode to it: the scan, which looks for the token's bytes, sees it in a
// body in one of these. In any other (UTF-16 and UTF-32, whose characters take two or four
// bytes; UTF-7, which may write any character in base64; EBCDIC) a reader that decodes the
// body as its content-type says reads a token the scan did not see.
const READ_CHARSETS = /^(?:utf-?8|us-ascii|ascii|iso-8859-\d{1,2}|latin-?1|windows-125\d|cp125\d)$/i

/** The charset a content-type names, unquoted; null: none. */
function charsetOf(type: string): string | null {
  const match = /;\s*charset\s*=\s*("?)([^";\s]*)\1/i.exec(type)
  return match ? (match[2] as string) : null
}

/** Every line of a header the platform sent, one or repeated (undici gives a repeated one as a list). */
function linesOf(value: string | string[] | undefined): string[] {
  return value === undefined ? [] : Array.isArray(value) ? value : [value]
}

/** A platform's word (a charset, a list of codings) in an error message, which a caller and a log line read: short, only the characters of a token (RFC 9110, 5.6.2) and of a list. */
export function named(word: string): string {
  return /^[!#$%&'*+.^_`|~0-9a-z-][!#$%&'*+.^_`|~0-9a-z, -]{0,39}$/i.test(word) ? word : '(not named)'
}

// A body a reader may read in UTF-16 or UTF-32 whatever its content-type names (a
// browser by its byte-order mark, a JSON reader by where its first bytes hold zeros: RFC
// 4627, 3, as Python's requests does): text of those types or of none.
const TEXTUAL = /json|text\/|xml|javascript/i
const WIDE_START = 4

/**
 * What the first bytes of a textual body say it is, in words, when it is no text the
 * gateway reads for its token: gzip's magic (1f 8b, deflate: no text begins with a control
 * character), a byte-order mark of UTF-16 or UTF-32, or a zero byte, which no text in an
 * ASCII-compatible charset holds; null: they say nothing of the kind.
 */
function unreadStart(start: Buffer): string | null {
  if (start[0] === 0x1f && start[1] === 0x8b && start[2] === 0x08) return 'with a gzip body whose content-encoding does not say so'
  if ((start[0] === 0xfe && start[1] === 0xff) || (start[0] === 0xff && start[1] === 0xfe)) return 'in UTF-16 or UTF-32'
  return start.subarray(0, WIDE_START).includes(0) ? 'in UTF-16 or UTF-32, or bytes that are no text' : null
}

function echoed(where: string): GatewayError {
  return new UpstreamError(`the platform's answer carried the gateway's token back in its ${where}: not passed on`)
}

/**
 * The caller's `accept-encoding` as the platform may see it: the codings the gateway
 * reads the bodies of (`x-gzip` among them: codingOf reads it as gzip), and `identity`;
 * `*` and any other name are left out (`__proto__` and `constructor` too, which are no
 * coding of DECODERS's own), so that a platform answers in none the gateway cannot read.
 * Undefined: none is left.
 */
export function forwardedEncodings(acceptEncoding: string): string | undefined {
  const kept = acceptEncoding.split(',').filter((part) => {
    const coding = part.split(';', 1)[0]?.trim().toLowerCase() ?? ''
    return coding === 'identity' || coding === 'x-gzip' || makerOf(coding) !== null
  })
  return kept.length > 0 ? kept.map((part) => part.trim()).join(', ') : undefined
}

/**
 * The body of the platform's answer to a call sent with `token` (its `headers`, its
 * `body`), as a caller may read it: it passes through a scan that fails it (GW_UPSTREAM)
 * where the token shows. Throws at once when a header carries the token, or when the
 * body is in a coding the gateway does not read (the platform was offered none:
 * forwardedEncodings) or a charset it does not read the token in; the body is then dropped.
 * A coded body that decodes to more than `maxDecodedBytes` fails too (EncodedScan).
 */
export function withoutToken(headers: IncomingHttpHeaders, body: Readable, token: string, maxDecodedBytes: number): Readable {
  const spelled = spellingsOf(token)
  const { forms, named: lowered } = spelled
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue
    if (lowered.some((form) => name.includes(form)) || linesOf(value).some((v) => forms.some((form) => v.includes(form)))) {
      drop(body)
      throw echoed('headers')
    }
  }
  // Each content-type line the platform wrote: a reader may go by any of them.
  const types = linesOf(headers['content-type'])
  const charset = types.map(charsetOf).find((one) => one !== null && !READ_CHARSETS.test(one))
  if (charset !== undefined && charset !== null) {
    drop(body)
    throw new UpstreamError(`the platform answered in a charset the gateway does not read for its token (${named(charset)}): not passed on`)
  }
  const textual = types.length === 0 || types.some((type) => TEXTUAL.test(type))
  const coding = codingOf(headers)
  let decoder: (() => Transform) | null = null
  if (coding !== '') {
    decoder = makerOf(coding)
    if (decoder === null) {
      drop(body)
      throw new UpstreamError(`the platform answered in a content coding the gateway does not read for its token (${named(coding)}): not passed on`)
    }
  }
  const scan = decoder === null ? new PlainScan(spelled, textual) : new EncodedScan(spelled, decoder(), coding, textual, maxDecodedBytes)
  joinBody(body, scan)
  return scan
}

/**
 * The token's spellings: as text (header values), lower-cased (header names), as bytes
 * (bodies): `needles`, looked for in every chunk, and `wide`, the UTF-16 and UTF-32 ones
 * that hold a zero byte, looked for only in bytes that hold one (a text in UTF-8 or an
 * ASCII charset never does). The last few tokens' are kept, as a token is sent with many calls.
 */
interface Spellings {
  forms: string[]
  named: string[]
  needles: Buffer[]
  wide: Buffer[]
  /** The bytes a scan keeps between chunks: one fewer than the longest spelling's. */
  keep: number
}

const SPELLINGS_KEPT = 8
const spellings = new Map<string, Spellings>()

function spellingsOf(token: string): Spellings {
  let kept = spellings.get(token)
  if (kept === undefined) {
    const forms = secretForms(token)
    const wide = wideForms(forms)
    const needles = [...forms.map((form) => Buffer.from(form)), ...wide.filter((form) => !form.includes(0))]
    const zeros = wide.filter((form) => form.includes(0))
    kept = { forms, named: forms.map((form) => form.toLowerCase()), needles, wide: zeros, keep: keptBytes(needles, zeros) }
    if (spellings.size >= SPELLINGS_KEPT) spellings.delete(spellings.keys().next().value as string)
    spellings.set(token, kept)
  }
  return kept
}

/**
 * Looks for any of `needles` in a stream of chunks: the last bytes of what was seen, one
 * fewer than the longest needle's, are kept and looked at again with the next chunk, so
 * that a token split between two chunks is found too.
 */
class Seam {
  readonly #needles: Buffer[]
  readonly #wide: Buffer[]
  readonly #keep: number
  #tail: Buffer = Buffer.alloc(0)
  // The body's first bytes, while fewer than WIDE_START were seen, for a textual body; null: looked at.
  #start: Buffer | null

  /** `textual` false: the first bytes are not looked at (the bytes as sent of a body in a coding, a type that may hold zero bytes). */
  constructor({ needles, wide, keep }: Spellings, textual: boolean) {
    this.#needles = needles
    this.#wide = wide
    this.#keep = keep
    this.#start = textual ? Buffer.alloc(0) : null
  }

  /**
   * What shows in the tail kept joined to `chunk` (`seen`): a needle, or (a textual body)
   * first bytes that say it is no text the gateway reads (gzip, UTF-16 or UTF-32:
   * `refused`); when nothing does, the new tail is kept.
   */
  look(chunk: Buffer): { refused: GatewayError | null; seen: Buffer } {
    const seen = this.#tail.length === 0 ? chunk : Buffer.concat([this.#tail, chunk])
    if (this.#needles.some((needle) => seen.includes(needle)) || (seen.includes(0) && this.#wide.some((needle) => seen.includes(needle)))) return { refused: echoed('body'), seen }
    if (this.#start !== null) {
      const start = Buffer.concat([this.#start, chunk.subarray(0, WIDE_START)]).subarray(0, WIDE_START)
      const read = start.length === WIDE_START ? unreadStart(start) : null
      if (read !== null) return { refused: new UpstreamError(`the platform answered ${read}, which the gateway does not read for its token: not passed on`), seen }
      this.#start = start.length < WIDE_START ? start : null
    }
    this.#tail = seen.subarray(Math.max(0, seen.length - this.#keep))
    return { refused: null, seen }
  }

  /** The tail kept, given up: the stream ended. */
  rest(): Buffer {
    const tail = this.#tail
    this.#tail = Buffer.alloc(0)
    return tail
  }
}

/**
 * An unencoded body: each chunk is passed on less the bytes that could begin a token the
 * next chunk ends, so no part of a token ever reaches the caller, even of an answer that
 * streams to it.
 */
class PlainScan extends Transform {
  readonly #seam: Seam
  readonly #keep: number

  constructor(spelled: Spellings, textual: boolean) {
    super()
    this.#seam = new Seam(spelled, textual)
    this.#keep = spelled.keep
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    const { refused, seen } = this.#seam.look(chunk)
    if (refused) return done(refused)
    const cut = seen.length - this.#keep
    if (cut > 0) this.push(seen.subarray(0, cut))
    done()
  }

  override _flush(done: TransformCallback): void {
    const rest = this.#seam.rest()
    if (rest.length > 0) this.push(rest)
    done()
  }
}

/**
 * A body in a content coding: passed on as it comes, searched as it comes (a client that
 * does not decode reads those bytes: a body labelled gzip that is none, bytes after the
 * end of a gzip member) and decoded beside for the scan; it ends only once the decoder
 * has read it whole. Every answer is held whole before it is sent (within
 * platform.bufferTotalBytes), so one that carries the token back is failed before a byte
 * of it leaves.
 * A body the decoder cannot read whole (truncated, broken, in another coding than named)
 * fails too: a lenient reader decodes what the scan did not see (a browser or curl the
 * part before the break), and no reader makes an answer of it.
 * A body that decodes to more than `maxDecodedBytes` (platform.bufferTotalBytes, the most a
 * plain answer may be) fails once it has: a compression bomb (a few KiB of gzip, deflate or
 * brotli that decode to gigabytes) costs the replica's CPU no more than the largest plain
 * answer it takes.
 */
class EncodedScan extends Transform {
  readonly #decoder: Transform
  readonly #sent: Seam
  readonly #ended: Promise<void>
  #started = false

  constructor(spelled: Spellings, decoder: Transform, coding: string, textual: boolean, maxDecodedBytes: number) {
    super()
    const seam = new Seam(spelled, textual)
    this.#sent = new Seam(spelled, false)
    this.#decoder = decoder
    let decoded = 0
    this.#ended = new Promise((resolve) => {
      decoder.on('data', (chunk: Buffer) => {
        decoded += chunk.length
        if (decoded > maxDecodedBytes) {
          this.destroy(new UpstreamError(`the platform's answer in ${coding} decodes to more than platform.bufferTotalBytes (${maxDecodedBytes} bytes): not passed on`))
          decoder.destroy()
          return
        }
        const { refused } = seam.look(chunk)
        if (refused) {
          this.destroy(refused)
          decoder.destroy()
        }
      })
      decoder.once('end', resolve)
      decoder.on('error', () => {
        this.destroy(new UpstreamError(`the platform's answer in ${coding} does not decode: not passed on`))
        resolve()
      })
      decoder.once('close', resolve)
    })
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    if (chunk.length > 0) this.#started = true
    const { refused } = this.#sent.look(chunk)
    if (refused) return done(refused)
    if (!this.#decoder.destroyed) this.#decoder.write(chunk)
    done(null, chunk)
  }

  override _flush(done: TransformCallback): void {
    // No byte at all (a HEAD's answer, a 204 or 304 that names its coding) is no coded body: nothing to decode.
    if (!this.#started) {
      this.#decoder.destroy()
      return done()
    }
    if (!this.#decoder.destroyed) this.#decoder.end()
    // Destroyed meanwhile (the token found, the call ended): nothing is left to end.
    void this.#ended.then(() => {
      if (!this.destroyed) done()
    })
  }

  override _destroy(err: Error | null, done: (err?: Error | null) => void): void {
    this.#decoder.destroy()
    done(err)
  }
}

/** The bytes a seam keeps between chunks: one fewer than the longest needle's. */
function keptBytes(needles: Buffer[], wide: Buffer[]): number {
  return Math.max(...needles.map((needle) => needle.length), ...wide.map((needle) => needle.length)) - 1
}

/**
 * `deflate` as readers decode it: the zlib format RFC 9110 names, or, as browsers, curl
 * and urllib3 also read it, a raw deflate stream, told apart by the first two bytes (a
 * zlib header: method 8, a check that makes them a multiple of 31).
 */
class EitherDeflate extends Transform {
  #inner: Transform | null = null
  #start: Buffer = Buffer.alloc(0)

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    if (this.#inner !== null) return this.#write(chunk, done)
    this.#start = Buffer.concat([this.#start, chunk])
    if (this.#start.length < 2) return done()
    const [first, second] = [this.#start[0] as number, this.#start[1] as number]
    const inner = zlibStart(first, second) ? createInflate() : createInflateRaw()
    inner.on('data', (out: Buffer) => this.push(out))
    inner.on('error', (err) => this.destroy(err))
    this.#inner = inner
    this.#write(this.#start, done)
  }

  override _flush(done: TransformCallback): void {
    const inner = this.#inner ?? createInflateRaw()
    if (this.#inner === null) {
      inner.on('data', (out: Buffer) => this.push(out))
      inner.on('error', (err) => this.destroy(err))
      inner.end(this.#start)
    } else inner.end()
    inner.once('end', () => done())
  }

  override _destroy(err: Error | null, done: (err?: Error | null) => void): void {
    this.#inner?.destroy()
    done(err)
  }

  #write(chunk: Buffer, done: TransformCallback): void {
    if (this.#inner?.write(chunk) === false) this.#inner.once('drain', () => done())
    else done()
  }
}

/** Whether a deflate body's first two bytes are a zlib header: method 8, a check that makes them a multiple of 31. */
function zlibStart(first: number, second: number): boolean {
  return (first & 0x0f) === 8 && ((first << 8) | second) % 31 === 0
}

/**
 * `body` piped into `scan`: the platform's failure (an error, a close before its end) is
 * the scan's, and the scan's failure or close before the body's end ends the platform's
 * body (its connection goes back to the pool). Both streams keep an error listener, so a
 * scan failed before its reader listens takes no process down. `stream.pipeline` does the
 * same but builds an AbortController per call and aborts it at the end, a DOMException
 * with its stack each time: about a tenth of the scan's cost on a miss.
 */
function joinBody(body: Readable, scan: Transform): void {
  finished(body, (err) => {
    if (err) scan.destroy(err)
  })
  finished(scan, () => {
    if (!body.readableEnded && !body.destroyed) body.destroy()
  })
  body.pipe(scan)
}

/** The platform's body, dropped unread: its end as aborted is expected, not an error. */
function drop(body: Readable): void {
  body.on('error', () => undefined)
  body.destroy()
}
