import { MAX_INPUT_VARS, phpArray, register, type PhpArray } from './php-input.js'

// How PHP fills `$_POST` from a `multipart/form-data` body (main/rfc1867.c), so that the
// sandbox reads a multipart form as the platform does: each part that names a field and
// no file is a variable, its name read as any other (php_input.ts `register`: leading
// spaces dropped, spaces and dots as `_`, `a[]` nested). Its lines are read whole (PHP reads
// a head in lines of 5120 bytes at most: the gateway's own check models that, request-body.ts).

/** The boundary of a multipart type: after `boundary=` (any case), quoted or up to `,` or `;`; null: none. */
function boundaryOf(contentType: string): string | null {
  const at = contentType.toLowerCase().indexOf('boundary')
  if (at === -1) return null
  const eq = contentType.indexOf('=', at)
  if (eq === -1) return null
  let value = contentType.slice(eq + 1)
  if (value.startsWith('"')) {
    const close = value.indexOf('"', 1)
    value = close === -1 ? value.slice(1) : value.slice(1, close)
  } else {
    const end = value.search(/[,;]/)
    if (end !== -1) value = value.slice(0, end)
  }
  return value === '' ? null : value
}

/** php_ap_getword: `text` up to `stop` outside quotes (either kind, `\` escaping the quote), and the rest after it. */
function getword(text: string, stop: string): [string, string] {
  let i = 0
  while (i < text.length && text[i] !== stop) {
    const quote = text[i]
    if (quote === '"' || quote === "'") {
      i++
      while (i < text.length && text[i] !== quote) i += text[i] === '\\' && text[i + 1] === quote ? 2 : 1
      if (i < text.length) i++
    } else i++
  }
  return [text.slice(0, i), text.slice(i + 1)]
}

/** php_ap_getword_conf: after leading spaces, a quoted word (its escaped quotes unescaped) or a word up to the next space. */
function getwordConf(text: string): string {
  const rest = text.replace(/^\s+/, '')
  const quote = rest[0]
  if (quote === '"' || quote === "'") {
    let word = ''
    for (let i = 1; i < rest.length && rest[i] !== quote; i++) {
      if (rest[i] === '\\' && rest[i + 1] === quote) i++
      word += rest[i]
    }
    return word
  }
  return rest.split(/\s/)[0] ?? ''
}

/** A part's headers, by lower-cased name: a line that starts with a space, or holds no `:`, goes on with the header before it. */
function headersOf(lines: string[]): Map<string, string> {
  const headers = new Map<string, string>()
  let key: string | null = null
  for (const line of lines) {
    const colon = /^\s/.test(line) ? -1 : line.indexOf(':')
    if (colon !== -1) {
      key = line.slice(0, colon).toLowerCase()
      headers.set(key, line.slice(colon + 1).replace(/^\s+/, ''))
    } else if (key !== null) headers.set(key, `${headers.get(key) ?? ''}${line}`)
  }
  return headers
}

/** The field a part's content-disposition names (the last `name=`, any case), or null where it names a file or no field. */
function fieldOf(disposition: string): string | null {
  let name: string | null = null
  let file = false
  let rest = disposition.replace(/^\s+/, '')
  while (rest !== '') {
    const [pair, after] = getword(rest, ';')
    rest = after.replace(/^\s+/, '')
    if (!pair.includes('=')) continue
    const [key, value] = getword(pair, '=')
    if (key.toLowerCase() === 'name') name = getwordConf(value)
    else if (key.toLowerCase() === 'filename') file = true
  }
  return file ? null : name
}

/** `$_POST` of a multipart form body read as latin1 bytes (as PHP reads bytes), its type's boundary; empty without one. */
export function parsePhpMultipart(body: string, contentType: string, maxVars: number = MAX_INPUT_VARS): PhpArray {
  const result = phpArray()
  const boundary = boundaryOf(contentType)
  if (boundary === null) return result
  const delimiter = `--${boundary}`
  const first = body.startsWith(delimiter) ? 0 : body.indexOf(`\r\n${delimiter}`)
  if (first === -1) return result
  let count = 0
  // Each part: its delimiter's line, its head up to a blank line, its value up to CRLF and the next delimiter.
  for (let at = first === 0 ? 0 : first + 2; !body.startsWith(`${delimiter}--`, at); ) {
    const lineEnd = body.indexOf('\n', at)
    const headEnd = lineEnd === -1 ? -1 : body.indexOf('\r\n\r\n', lineEnd - 1)
    if (headEnd === -1) break
    const next = body.indexOf(`\r\n${delimiter}`, headEnd + 4)
    const field = fieldOf(headersOf(body.slice(lineEnd + 1, headEnd).split(/\r?\n/)).get('content-disposition') ?? '')
    if (field !== null) {
      if (++count > maxVars) break
      register(result, field, Buffer.from(body.slice(headEnd + 4, next === -1 ? body.length : next), 'latin1').toString('utf8'))
    }
    if (next === -1) break
    at = next + 2
  }
  return result
}
