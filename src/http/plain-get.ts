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
  /** Where its head ends in the bytes read: the first byte of whatever follows. */
  end: number
}

/**
 * The longest head read here: half the 16 KiB Node reads by default (`maxHeaderSize`),
 * so that a head Node would refuse as too large is never taken.
 */
export const PLAIN_HEAD_MAX = 8192

const HEAD_END = Buffer.from('\r\n\r\n')
const REQUEST_LINE_START = 'GET '
const REQUEST_LINE_END = ' HTTP/1.1'
// RFC 3986's path and query characters (pchar, `/`, `?`) and percent-encoding: a target
// Node reads byte for byte into req.url.
const TARGET = /^\/[\w\-.~!$&'()*+,;=:@/?%]*$/
// RFC 9110, 5.6.2: a token.
const NAME = /^[\w!#$%&'*+.^`|~-]+$/
// Visible ASCII, inner spaces and tabs, no whitespace at either end; or nothing.
const VALUE = /^(?:[\x21-\x7e](?:[\x20-\x7e\t]*[\x21-\x7e])?)?$/
// Headers a plain GET does not carry: each frames a body, changes the connection, or asks for more than an answer.
// (`__proto__` is a token, and no field name a plain object takes as one.)
const NOT_PLAIN = new Set(['__proto__', 'content-length', 'transfer-encoding', 'expect', 'upgrade', 'te', 'trailer', 'keep-alive', 'proxy-connection', 'http2-settings'])

/**
 * The plain GET whose head begins at `from` in `bytes` and ends within them, within
 * `maxBytes` (PLAIN_HEAD_MAX at most); null for anything else (a head not whole in these
 * bytes, another method, any doubt), which Node's parser is to read.
 */
export function readPlainGet(bytes: Buffer, from: number, maxBytes: number = PLAIN_HEAD_MAX): PlainGet | null {
  const limit = Math.min(maxBytes, PLAIN_HEAD_MAX)
  const at = bytes.indexOf(HEAD_END, from)
  if (at === -1 || at - from > limit) return null
  const head = bytes.toString('latin1', from, at)
  const lines = head.split('\r\n')
  const requestLine = lines[0] as string
  if (!requestLine.startsWith(REQUEST_LINE_START) || !requestLine.endsWith(REQUEST_LINE_END)) return null
  const url = requestLine.slice(REQUEST_LINE_START.length, requestLine.length - REQUEST_LINE_END.length)
  if (!TARGET.test(url)) return null
  const headers: Record<string, string> = {}
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i] as string
    const colon = line.indexOf(':')
    if (colon < 1) return null
    const name = line.slice(0, colon).toLowerCase()
    let value = line.slice(colon + 1)
    if (value.startsWith(' ')) value = value.slice(1)
    if (!NAME.test(name) || !VALUE.test(value) || NOT_PLAIN.has(name) || Object.hasOwn(headers, name)) return null
    if (name === 'connection' && value.toLowerCase() !== 'keep-alive') return null
    headers[name] = value
  }
  return { url, headers, end: at + HEAD_END.length }
}
