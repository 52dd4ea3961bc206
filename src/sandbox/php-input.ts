// How PHP turns a query string or a form body into variables (main/php_variables.c),
// so that the sandbox reads a request exactly as the platform would: an attack that
// works because PHP reads a name differently than the gateway must work here too.

/**
 * A PHP array: string keys in insertion order (`a[]` appends "0", "1", …). Made without a
 * prototype (phpArray): to PHP, `__proto__` and `constructor` are names like any other, and
 * `__proto__[userId]=1` files `userId` under the array `__proto__`, never on every object
 * of the process.
 */
export interface PhpArray {
  [key: string]: PhpValue
}
export type PhpValue = string | PhpArray

/** PHP's default `max_input_vars`: variables past it are dropped with a warning. */
export const MAX_INPUT_VARS = 1000
/** PHP's default `max_input_nesting_level`: a deeper `a[b][c]…` is dropped. */
const MAX_NESTING = 64

/**
 * `parse_str` / `$_GET` / `$_POST` of `application/x-www-form-urlencoded` text: split
 * at `&`, `+` and `%XX` decoded, the name cut at NUL, leading spaces dropped, spaces
 * and dots (and an unclosed `[`) in the base name turned into `_`, `a[]` and `a[x]`
 * nested, the last of repeated names kept, and only the first `maxVars` read.
 */
export function parsePhpParams(text: string, maxVars: number = MAX_INPUT_VARS): PhpArray {
  const result = phpArray()
  let count = 0
  for (const pair of text.split('&')) {
    if (pair === '') continue
    if (++count > maxVars) break
    const eq = pair.indexOf('=')
    const name = urldecode(eq === -1 ? pair : pair.slice(0, eq))
    const value = eq === -1 ? '' : urldecode(pair.slice(eq + 1))
    register(result, name, value)
  }
  return result
}

/**
 * PHP's `urldecode` of text read byte for byte (latin1, as Node reads a request line):
 * `+` is a space, a malformed `%` escape stays as it is, the bytes are read as UTF-8.
 */
export function urldecode(text: string): string {
  const bytes: number[] = []
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x2b) bytes.push(0x20)
    else if (c === 0x25 && /^[0-9a-fA-F]{2}$/.test(text.slice(i + 1, i + 3))) {
      bytes.push(parseInt(text.slice(i + 1, i + 3), 16))
      i += 2
    } else bytes.push(c & 0xff)
  }
  return Buffer.from(bytes).toString('utf8')
}

/**
 * The name as PHP stores it and the array indexes after it (`a[x][]` → a, [x, '']); null:
 * dropped. `tooDeep`: the name opens more than `max_input_nesting_level` brackets, and PHP
 * then deletes its whole variable (php_register_variable_ex: `zend_symtable_str_del` of the
 * base name), values given by earlier parameters included.
 */
export function phpName(raw: string): { base: string; indexes: string[]; tooDeep?: true } | null {
  // A C string: the name ends at the first NUL.
  const nul = raw.indexOf('\0')
  const name = (nul === -1 ? raw : raw.slice(0, nul)).replace(/^ +/, '')
  if (name === '') return null
  const open = name.indexOf('[')
  const indexes: string[] = []
  // A name that starts with `[` is empty: dropped.
  if (open === 0) return null
  if (open === -1 || name.indexOf(']', open) === -1) {
    // No array: spaces and dots become `_`; so do an unclosed `[` and, since PHP 8,
    // spaces, dots and brackets after it.
    return { base: name.replace(/[ .]/g, '_').replace(/\[.*$/, (rest) => rest.replace(/[ .[]/g, '_')), indexes }
  }
  const base = name.slice(0, open).replace(/[ .]/g, '_')
  let rest = name.slice(open)
  while (rest.startsWith('[')) {
    // PHP counts a level at each `[` it reads, before looking for its `]`.
    if (indexes.length === MAX_NESTING) return { base, indexes, tooDeep: true }
    const close = rest.indexOf(']')
    if (close === -1) break
    indexes.push(rest.slice(1, close))
    // Whatever follows the last `]` but is not a `[` is ignored.
    rest = rest.slice(close + 1)
  }
  return { base, indexes }
}

/** Files `value` under `rawName` in `into` as php_register_variable_ex does: the name read by phpName, nested, the last of repeated names kept. */
export function register(into: PhpArray, rawName: string, value: string): void {
  const name = phpName(rawName)
  if (name === null) return
  if (name.tooDeep) {
    delete into[name.base]
    return
  }
  let node = into
  let key = name.base
  for (const index of name.indexes) {
    let child = node[key]
    if (typeof child !== 'object') {
      child = phpArray()
      node[key] = child
    }
    node = child
    key = index === '' ? String(nextIndex(node)) : index
  }
  node[key] = value
}

export function phpArray(): PhpArray {
  return Object.create(null) as PhpArray
}

function nextIndex(array: PhpArray): number {
  let next = 0
  for (const key of Object.keys(array)) if (/^\d+$/.test(key) && Number(key) >= next) next = Number(key) + 1
  return next
}

/** A PHP array as JavaScript reads a JSON list: keys 0…n-1 in order become an array, recursively. */
export function phpToJs(value: PhpValue): unknown {
  if (typeof value === 'string') return value
  const keys = Object.keys(value)
  const entries = keys.map((k) => [k, phpToJs(value[k] as PhpValue)] as const)
  if (keys.length > 0 && keys.every((k, i) => k === String(i))) return entries.map(([, v]) => v)
  return Object.fromEntries(entries)
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true })
// `"\ud800"` alone: PHP's json_decode fails (JSON_ERROR_UTF16), where JSON.parse takes it.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/**
 * `json_decode($text, true, $depth)`: undefined where PHP returns null for an error
 * (invalid UTF-8, nesting deeper than `depth`, a syntax error, an unpaired UTF-16
 * surrogate escaped), as Laravel then reads an empty input.
 */
export function phpJsonDecode(bytes: Buffer, depth = 512): unknown {
  let text: string
  try {
    text = strictUtf8.decode(bytes)
  } catch {
    return undefined
  }
  if (nesting(text) > depth) return undefined
  let unpaired = false
  let value: unknown
  try {
    value = JSON.parse(text, (key: string, member: unknown) => {
      if (LONE_SURROGATE.test(key) || (typeof member === 'string' && LONE_SURROGATE.test(member))) unpaired = true
      return member
    }) as unknown
  } catch {
    return undefined
  }
  return unpaired ? undefined : value
}

/** Deepest nesting of arrays and objects, brackets inside strings not counted. */
function nesting(text: string): number {
  let depth = 0
  let deepest = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (inString) {
      if (c === '\\') i++
      else if (c === '"') inString = false
    } else if (c === '"') inString = true
    else if (c === '[' || c === '{') deepest = Math.max(deepest, ++depth)
    else if (c === ']' || c === '}') depth--
  }
  return deepest
}
