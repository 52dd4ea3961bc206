import type { IncomingHttpHeaders } from 'node:http'
import { pipeline, Transform, type Readable, type TransformCallback } from 'node:stream'
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib'
import { UpstreamError, type GatewayError } from '../../errors.js'

// A platform answer that carries back the token the gateway sent it is no answer: a TRACE
// (RFC 9110 says a server SHOULD reflect it), a debug error page or an echo route hands
// the request back, its `authorization: Bearer <token>` in it. Such an answer fails the
// call (GW_UPSTREAM); nothing of it reaches a caller or the cache. The token is looked for
// in the header names and values, and in the body as it streams: its own bytes, or, for
// a body in one of the codings below, the bytes it decodes to.

/** The content codings whose bodies the gateway reads for the token; the platform is offered no other (forwardedEncodings). */
const DECODERS: Record<string, () => Transform> = {
  gzip: createGunzip,
  'x-gzip': createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress,
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
 * forwardedEncodings); the body is then dropped.
 */
export function withoutToken(headers: IncomingHttpHeaders, body: Readable, token: string): Readable {
  const needle = Buffer.from(token)
  // Header names come lower-cased, whatever the platform wrote.
  const named = token.toLowerCase()
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue
    const values = Array.isArray(value) ? value : [value]
    if (name.includes(named) || values.some((v) => v.includes(token))) {
      drop(body)
      throw echoed('headers')
    }
  }
  const coding = headers['content-encoding']?.trim().toLowerCase()
  let decoder: (() => Transform) | null = null
  if (coding !== undefined && coding !== '' && coding !== 'identity') {
    decoder = DECODERS[coding] ?? null
    if (decoder === null) {
      drop(body)
      throw new UpstreamError(`the platform answered in a content coding the gateway does not read for its token (${coding}): not passed on`)
    }
  }
  const scan = decoder === null ? new PlainScan(needle) : new EncodedScan(needle, decoder())
  // The scan's end or failure ends the platform's body (its connection goes back to the pool), and the platform's failure is the scan's.
  pipeline(body, scan, () => undefined)
  return scan
}

/**
 * Looks for `needle` in a stream of chunks: the last `needle.length - 1` bytes of what
 * was seen are kept and looked at again with the next chunk, so that a token split
 * between two chunks is found too.
 */
class Seam {
  readonly #needle: Buffer
  #tail: Buffer = Buffer.alloc(0)

  constructor(needle: Buffer) {
    this.#needle = needle
  }

  /** Whether the needle shows in the tail kept joined to `chunk` (`seen`); when it does not, the new tail is kept. */
  look(chunk: Buffer): { found: boolean; seen: Buffer } {
    const seen = this.#tail.length === 0 ? chunk : Buffer.concat([this.#tail, chunk])
    if (seen.includes(this.#needle)) return { found: true, seen }
    this.#tail = seen.subarray(Math.max(0, seen.length - (this.#needle.length - 1)))
    return { found: false, seen }
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

  constructor(needle: Buffer) {
    super()
    this.#seam = new Seam(needle)
    this.#keep = needle.length - 1
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    const { found, seen } = this.#seam.look(chunk)
    if (found) return done(echoed('body'))
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

  constructor(needle: Buffer, decoder: Transform) {
    super()
    const seam = new Seam(needle)
    this.#decoder = decoder
    this.#ended = new Promise((resolve) => {
      decoder.on('data', (chunk: Buffer) => {
        if (seam.look(chunk).found) {
          this.destroy(echoed('body'))
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

/** The platform's body, dropped unread: its end as aborted is expected, not an error. */
function drop(body: Readable): void {
  body.on('error', () => undefined)
  body.destroy()
}
