// How PHP reads a multipart/form-data body (main/rfc1867.c): the boundary of its type, its
// lines, a part's head and the parameters of its content-disposition. The sandbox fills
// `$_POST` by them (sandbox/php-multipart.ts); the gateway reads by them the names of the parts PHP
// would read (access/request-body.ts), so that both read a part as the platform does.

/** White space as C's isspace reads it (the C locale), at the start of a text. */
export const PHP_SPACE = /^[ \t\n\v\f\r]*/
// rfc1867.c FILLUNIT: the least of PHP's buffer for a multipart form's lines.
export const PHP_FILL_UNIT = 5 * 1024

/**
 * The boundary as rfc1867_post_handler finds it in the type: after the first `boundary`
 * (else the first in another case) and the `=` after it, to its closing quote, or to a `,`
 * or `;`; `closed: false` where its quote is not closed.
 */
function boundaryIn(contentType: string): { text: string; closed: boolean } | null {
  const exact = contentType.indexOf('boundary')
  const at = exact === -1 ? contentType.toLowerCase().indexOf('boundary') : exact
  const eq = at === -1 ? -1 : contentType.indexOf('=', at)
  if (eq === -1) return null
  const rest = contentType.slice(eq + 1)
  if (!rest.startsWith('"')) return { text: /^[^,;]*/.exec(rest)?.[0] ?? '', closed: true }
  const close = rest.indexOf('"', 1)
  return { text: close === -1 ? rest.slice(1) : rest.slice(1, close), closed: close !== -1 }
}

/** The boundary PHP reads a multipart form by (empty is one); null where it reads none: no `boundary=` ("Missing boundary"), or a quote not closed ("Invalid boundary"). */
export function phpBoundary(contentType: string): string | null {
  const boundary = boundaryIn(contentType)
  return boundary?.closed === true ? boundary.text : null
}

/** The bytes of a multipart line PHP reads at most (rfc1867.c multipart_buffer_new): its buffer, FILLUNIT, or the boundary's length and 6 when that is more. */
export function phpLineBytes(contentType: string): number {
  return Math.max(PHP_FILL_UNIT, (boundaryIn(contentType)?.text.length ?? 0) + 6)
}

/** A line of a body as PHP reads it: its text, where its bytes end, and `unread` for the last bytes of the body, ended by no LF and short of a buffer, which get_line never answers. */
export interface PhpLine {
  text: string
  end: number
  unread: boolean
}

/**
 * The lines of `text` from `at` as PHP's next_line cuts them: to an LF, one CR before it
 * dropped, or `lineBytes` bytes with no LF among them (the buffer full), the rest a line of
 * its own; each read to its first NUL (a C string).
 */
export function* phpLines(text: string, lineBytes: number, at = 0): Generator<PhpLine> {
  while (at < text.length) {
    const lf = text.indexOf('\n', at)
    const full = text.length - at >= lineBytes && (lf === -1 || lf - at >= lineBytes)
    const end = full ? at + lineBytes : lf === -1 ? text.length : lf + 1
    const line = text.slice(at, full || lf === -1 ? end : lf)
    yield { text: (full || !line.endsWith('\r') ? line : line.slice(0, -1)).split('\0', 1)[0] ?? '', end, unread: !full && lf === -1 }
    at = end
  }
}

/** A header of a part's head: its name as written (a caller compares it without case), its value. */
export interface PhpHeader {
  name: string
  value: string
}

/**
 * Adds a (non-empty) line of a part's head to `head` as multipart_buffer_headers reads it: a
 * line that starts with white space, or holds no `:`, continues the header before it (none:
 * passed over); else it starts a header, its name before the `:`, unstripped, its value
 * after it, from its first non-space.
 */
export function addHeaderLine(head: PhpHeader[], line: string): void {
  const colon = /^[ \t\n\v\f\r]/.test(line) ? -1 : line.indexOf(':')
  const last = head.at(-1)
  if (colon !== -1) head.push({ name: line.slice(0, colon), value: line.slice(colon + 1).replace(PHP_SPACE, '') })
  else if (last !== undefined) last.value += line
}

/**
 * The `key=value` parameters of a content-disposition as rfc1867_post_handler reads them:
 * split at `;` outside quotes (`"` or `'`, a quote escaped by `\`), white space dropped
 * before each, a piece without `=` passed over; the key before the run of `=` (a caller
 * compares it without case), the value read quoted, to its closing quote or the end, or bare,
 * to white space.
 */
export function phpParams(disposition: string): [key: string, value: string][] {
  const params: [string, string][] = []
  let rest = disposition.replace(PHP_SPACE, '')
  while (rest !== '') {
    const [pair, after] = phpWord(rest, ';')
    rest = after.replace(PHP_SPACE, '')
    if (!pair.includes('=')) continue
    const [key, value] = phpWord(pair, '=')
    params.push([key, phpParamValue(value)])
  }
  return params
}

/** PHP's php_ap_getword: the text before the first `stop` outside quotes, and what follows the run of `stop`s after it. */
function phpWord(text: string, stop: string): [string, string] {
  let pos = 0
  while (pos < text.length && text[pos] !== stop) {
    const quote = text[pos]
    pos++
    if (quote !== '"' && quote !== "'") continue
    while (pos < text.length && text[pos] !== quote) pos += text[pos] === '\\' && text[pos + 1] === quote ? 2 : 1
    if (pos < text.length) pos++
  }
  const word = text.slice(0, pos)
  while (text[pos] === stop) pos++
  return [word, text.slice(pos)]
}

/** PHP's php_ap_getword_conf: a parameter's value, quoted (to its quote, or the end) or bare (to white space), `\\` and an escaped quote unescaped. */
function phpParamValue(text: string): string {
  const start = text.replace(PHP_SPACE, '')
  const quote = start[0] === '"' || start[0] === "'" ? start[0] : null
  const body = quote === null ? (/^[^ \t\n\v\f\r]*/.exec(start)?.[0] ?? '') : start.slice(1)
  let value = ''
  for (let i = 0; i < body.length && body[i] !== quote; i++) {
    if (body[i] === '\\' && (body[i + 1] === '\\' || (quote !== null && body[i + 1] === quote))) i++
    value += body[i]
  }
  return value
}
