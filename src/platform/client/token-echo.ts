import type { IncomingHttpHeaders } from 'node:http'
import { finished, Transform, type Readable, type TransformCallback } from 'node:stream'
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib'
import { UpstreamError, type GatewayError } from '../../errors.js'
import { secretForms } from '../../observe/secret-forms.js'

// A platform answer that carries back the token the gateway sent it is no answer: a TRACE
// (RFC 9110 says a server SHOULD reflect it), a debug error page or an echo route hands
// the request back, its `authorization: Bearer <token>` in it. Such an answer fails the
// call (GW_UPSTREAM); nothing of it reaches a caller or the cache. The token is looked for
// in each of its spellings (observe/secret-forms.ts: as it is, JSON- or HTML-escaped,
// percent-encoded, in base64) in the header names and values, and in the body as it
// streams: its own bytes, or, for a body in one of the codings below, the bytes it
// decodes to. Those bytes are text in a charset where the token's characters are its own
// bytes (READ_CHARSETS); an answer a reader would decode otherwise (another charset named,
// a textual body whose first bytes say UTF-16 or UTF-32) fails the call too.

/** The content codings whose bodies the gateway reads for the token; the platform is offered no other (forwardedEncodings). */
const DECODERS: Record<string, () => Transform> = {
  gzip: createGunzip,
  'x-gzip': createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress,
}

// The charsets in which every character of a token (printable ASCII) is its own byte, and
// no other bytes decode to it: the scan, which looks for the token's bytes, sees it in a
// body in one of these. In any other (UTF-16 and UTF-32, whose characters take two or four
// bytes; UTF-7, which may write any character in base64; EBCDIC) a reader that decodes the
// body as its content-type says reads a token the scan did not see.
const READ_CHARSETS = /^(?:utf-?8|us-ascii|ascii|iso-8859-\d{1,2}|latin-?1|windows-125\d|cp125\d)$/i

/** The charset a content-type names, unquoted; null: none. */
function charsetOf(type: string | undefined): string | null {
  const match = /;\s*charset\s*=\s*("?)([^";\s]*)\1/i.exec(type ?? '')
  return match ? (match[2] as string) : null
}

// A body a reader may read in UTF-16 or UTF-32 whatever its content-type names (a
// browser by its byte-order mark, a JSON reader by where its first bytes hold zeros: RFC
// 4627, 3, as Python's requests does): text of those types or of none.
const TEXTUAL = /json|text\/|xml|javascript/i
const WIDE_START = 4

/** Whether the first bytes of a body say UTF-16 or UTF-32: a byte-order mark of either, or a zero byte, which no text in an ASCII-compatible charset holds. */
function wide(start: Buffer): boolean {
  return (start[0] === 0xfe && start[1] === 0xff) || (start[0] === 0xff && start[1] === 0xfe) || start.subarray(0, WIDE_START).includes(0)
}

function echoed(where: string): GatewayError {
  return new UpstreamError(`the platform's answer carried the gateway's token back in its ${where}: not passed on`)
}

/**
 * The caller's `accept-encoding` as the platform may see it: the codings the gateway
 * reads the bodies of, and `identity`; `*` and any other coding are left out, so
 * that a platform answers in none the gateway cannot read. Undefined: none is left.
 */
export function forwardedEncodings(acceptEncoding: string): string | undefined {
  const kept = acceptEncoding.split(',').filter((part) => {
    const coding = part.split(';', 1)[0]?.trim().toLowerCase() ?? ''
    return coding === 'identity' || coding in DECODERS
  })
  return kept.length > 0 ? kept.map((part) => part.trim()).join(', ') : undefined
}

/**
 * The body of the platform's answer to a call sent with `token` (its `headers`, its
 * `body`), as a caller may read it: it passes through a scan that fails it (GW_UPSTREAM)
 * where the token shows. Throws at once when a header carries the token, or when the
 * body is in a coding the gateway does not read (the platform was offered none:
 * forwardedEncodings) or a charset it does not read the token in; the body is then dropped.
 */
export function withoutToken(headers: IncomingHttpHeaders, body: Readable, token: string): Readable {
  const { forms, named, needles } = spellingsOf(token)
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue
    const values = Array.isArray(value) ? value : [value]
    if (named.some((form) => name.includes(form)) || values.some((v) => forms.some((form) => v.includes(form)))) {
      drop(body)
      throw echoed('headers')
    }
  }
  const charset = charsetOf(typeof headers['content-type'] === 'string' ? headers['content-type'] : undefined)
  if (charset !== null && !READ_CHARSETS.test(charset)) {
    drop(body)
    throw new UpstreamError(`the platform answered in a charset the gateway does not read for its token (${charset.slice(0, 40)}): not passed on`)
  }
  const type = headers['content-type']
  const textual = type === undefined || TEXTUAL.test(String(type))
  const coding = headers['content-encoding']?.trim().toLowerCase()
  let decoder: (() => Transform) | null = null
  if (coding !== undefined && coding !== '' && coding !== 'identity') {
    decoder = DECODERS[coding] ?? null
    if (decoder === null) {
      drop(body)
      throw new UpstreamError(`the platform answered in a content coding the gateway does not read for its token (${coding}): not passed on`)
    }
  }
  const scan = decoder === null ? new PlainScan(needles, textual) : new EncodedScan(needles, decoder(), textual)
  joinBody(body, scan)
  return scan
}

/** The token's spellings: as text (header values), lower-cased (header names), as bytes (bodies); the last few tokens' kept, as a token is sent with many calls. */
interface Spellings {
  forms: string[]
  named: string[]
  needles: Buffer[]
}

const SPELLINGS_KEPT = 8
const spellings = new Map<string, Spellings>()

function spellingsOf(token: string): Spellings {
  let kept = spellings.get(token)
  if (kept === undefined) {
    const forms = secretForms(token)
    kept = { forms, named: forms.map((form) => form.toLowerCase()), needles: forms.map((form) => Buffer.from(form)) }
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
  readonly #keep: number
  #tail: Buffer = Buffer.alloc(0)
  // The body's first bytes, while fewer than WIDE_START were seen, for a textual body; null: looked at.
  #start: Buffer | null

  constructor(needles: Buffer[], textual: boolean) {
    this.#needles = needles
    this.#keep = keptBytes(needles)
    this.#start = textual ? Buffer.alloc(0) : null
  }

  /**
   * What shows in the tail kept joined to `chunk` (`seen`): a needle, or (a textual body)
   * first bytes that say UTF-16 or UTF-32 (`refused`); when nothing does, the new tail is kept.
   */
  look(chunk: Buffer): { refused: GatewayError | null; seen: Buffer } {
    const seen = this.#tail.length === 0 ? chunk : Buffer.concat([this.#tail, chunk])
    if (this.#needles.some((needle) => seen.includes(needle))) return { refused: echoed('body'), seen }
    if (this.#start !== null) {
      const start = Buffer.concat([this.#start, chunk.subarray(0, WIDE_START)]).subarray(0, WIDE_START)
      if (start.length === WIDE_START && wide(start)) return { refused: new UpstreamError('the platform answered in UTF-16 or UTF-32, which the gateway does not read for its token: not passed on'), seen }
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

  constructor(needles: Buffer[], textual: boolean) {
    super()
    this.#seam = new Seam(needles, textual)
    this.#keep = keptBytes(needles)
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
 * A body in a content coding: passed on as it comes, and decoded beside for the scan; it
 * ends only once the decoder has read it whole. Every answer is held whole before it is
 * sent (within platform.bufferTotalBytes), so one that carries the token back is failed
 * before a byte of it leaves.
 * What the decoder cannot read (a truncated or broken body) no caller's decoder reads
 * either: the scan stops there and the bytes pass on as they are.
 */
class EncodedScan extends Transform {
  readonly #decoder: Transform
  readonly #ended: Promise<void>

  constructor(needles: Buffer[], decoder: Transform, textual: boolean) {
    super()
    const seam = new Seam(needles, textual)
    this.#decoder = decoder
    this.#ended = new Promise((resolve) => {
      decoder.on('data', (chunk: Buffer) => {
        const { refused } = seam.look(chunk)
        if (refused) {
          this.destroy(refused)
          decoder.destroy()
        }
      })
      decoder.once('end', resolve)
      decoder.on('error', () => resolve())
      decoder.once('close', resolve)
    })
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    if (!this.#decoder.destroyed) this.#decoder.write(chunk)
    done(null, chunk)
  }

  override _flush(done: TransformCallback): void {
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
function keptBytes(needles: Buffer[]): number {
  return Math.max(...needles.map((needle) => needle.length)) - 1
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
