// The request heads the gateway reads on a connection itself (http/socket-entrance.ts),
// before Node's parser makes objects of them: only the plainest GET, a strict subset of
// what Node's parser (llhttp) reads, and reads the same way. A head is taken here only
// when every byte of it is unambiguous: a request line `GET <target> HTTP/1.1`, header
// lines `name: value` each given once, no header that frames a body, changes the
// connection or asks for something else than an answer (content-length,
// transfer-encoding, connection other than keep-alive, expect, upgrade, te, trailer), no
// obsolete line fold, no bare CR or LF, no control byte or byte past ASCII, no
// whitespace around a value but the one space after its colon. Such a request has no
// body (RFC 9112, 6.3): its end is the empty line, and the next byte is the next
// request's, as Node reads it. Anything else is null, and goes to Node's parser whole,
// which reads it (or refuses it) as ever: nothing is ever read twice two ways.

/** A plain GET read whole from a connection's bytes. */
export interface PlainGet {
  /** The request target, as Node's `req.url` holds it. */
  url: string
  /** Its header fields by lower-cased name, as Node's `req.headers` holds them (each given once). */
  headers: Record<string, string>
  /** Its head's length in bytes: the next request begins that far after it. */
  length: number
}

/**
 * The longest head read here: half the 16 KiB Node reads by default (`maxHeaderSize`),
 * so that a head Node would refuse as too large is never taken.
 */
export const PLAIN_HEAD_MAX = 8192

// Byte classes, for one pass over the head's bytes. RFC 3986's path and query characters
// (pchar, `/`, `?`) and percent-encoding: a target Node reads byte for byte into req.url.
const TARGET = byteClass("-._~!$&'()*+,;=:@/?%")
// RFC 9110, 5.6.2: a token.
const NAME = byteClass("!#$%&'*+-.^_`|~")
// Visible ASCII, spaces and tabs (a value's ends are checked apart).
const VALUE = new Uint8Array(256)
for (let b = 0x20; b <= 0x7e; b++) VALUE[b] = 1
VALUE[0x09] = 1
// The request line's fixed ends.
const METHOD = Buffer.from('GET /')
const VERSION = Buffer.from(' HTTP/1.1\r\n')
const CR = 0x0d
const LF = 0x0a
const SP = 0x20
const HTAB = 0x09
const COLON = 0x3a
// Headers a plain GET does not carry: each frames a body, changes the connection, or asks
// for more than an answer. (`__proto__` is a token, and no field name a plain object takes as one.)
const NOT_PLAIN = new Set(['__proto__', 'content-length', 'transfer-encoding', 'expect', 'upgrade', 'te', 'trailer', 'keep-alive', 'proxy-connection', 'http2-settings'])

/** Letters, digits and `extra`: a table of the bytes it holds. */
function byteClass(extra: string): Uint8Array {
  const table = new Uint8Array(256)
  for (let b = 0; b < 256; b++) if ((b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a)) table[b] = 1
  for (const c of extra) table[c.charCodeAt(0)] = 1
  return table
}

/** Whether `bytes` holds `fixed` at `at`. */
function holds(bytes: Buffer, at: number, fixed: Buffer): boolean {
  if (at + fixed.length > bytes.length) return false
  for (let i = 0; i < fixed.length; i++) if (bytes[at + i] !== fixed[i]) return false
  return true
}

/**
 * The plain GET whose head begins at `from` in `bytes` and ends within them, within
 * `maxBytes` (PLAIN_HEAD_MAX at most); null for anything else (a head not whole in these
 * bytes, another method, any doubt), which Node's parser is to read. One pass over the
 * bytes: the head is no string before its parts are known good.
 */
export function readPlainGet(bytes: Buffer, from: number, maxBytes: number = PLAIN_HEAD_MAX): PlainGet | null {
  // Past `stop`, the head is longer than its limit (or not all read).
  const stop = Math.min(bytes.length, from + Math.min(maxBytes, PLAIN_HEAD_MAX))
  if (!holds(bytes, from, METHOD)) return null
  let at = from + METHOD.length
  while (at < stop && TARGET[bytes[at] as number] === 1) at++
  if (at + VERSION.length > stop || !holds(bytes, at, VERSION)) return null
  const url = bytes.toString('latin1', from + METHOD.length - 1, at)
  at += VERSION.length
  const headers: Record<string, string> = {}
  for (;;) {
    if (at + 2 > stop) return null
    if (bytes[at] === CR) return bytes[at + 1] === LF ? { url, headers, length: at + 2 - from } : null
    const nameStart = at
    while (at < stop && NAME[bytes[at] as number] === 1) at++
    if (at === nameStart || at >= stop || bytes[at] !== COLON) return null
    const name = bytes.toString('latin1', nameStart, at).toLowerCase()
    at++
    if (bytes[at] === SP) at++
    const valueStart = at
    while (at < stop && VALUE[bytes[at] as number] === 1) at++
    if (at + 2 > stop || bytes[at] !== CR || bytes[at + 1] !== LF) return null
    // No whitespace at either end of a value: Node trims it where a plain reading would keep it.
    const first = bytes[valueStart]
    const last = bytes[at - 1]
    if (at > valueStart && (first === SP || first === HTAB || last === SP || last === HTAB)) return null
    if (NOT_PLAIN.has(name) || Object.hasOwn(headers, name)) return null
    const value = bytes.toString('latin1', valueStart, at)
    if (name === 'connection' && value.toLowerCase() !== 'keep-alive') return null
    headers[name] = value
    at += 2
  }
}

/**
 * The longest head a connection's reader keeps the bytes of, to know it again: a
 * kilobyte a connection at most, however many connections are open.
 */
export const KEPT_HEAD_MAX = 1024

/**
 * One connection's reader of plain GETs. A caller on a kept-alive connection (a
 * dashboard that polls, a probe) sends the same head again and again: the last head read
 * is kept with its bytes (up to KEPT_HEAD_MAX), and the same bytes again are the same
 * head, compared byte for byte and not read again. Its headers are frozen: one head
 * serves every request that repeats it, and nothing may change it.
 */
export class PlainGets {
  #bytes: Buffer | null = null
  #head: PlainGet | null = null

  /** The plain GET at `from` in `bytes`, as readPlainGet reads it. */
  read(bytes: Buffer, from: number, maxBytes: number = PLAIN_HEAD_MAX): PlainGet | null {
    const kept = this.#bytes
    if (kept !== null && from + kept.length <= bytes.length && bytes.compare(kept, 0, kept.length, from, from + kept.length) === 0 && kept.length <= maxBytes) return this.#head
    const head = readPlainGet(bytes, from, maxBytes)
    if (head !== null && head.length <= KEPT_HEAD_MAX) {
      Object.freeze(head.headers)
      this.#bytes = Buffer.from(bytes.subarray(from, from + head.length))
      this.#head = head
    }
    return head
  }
}
