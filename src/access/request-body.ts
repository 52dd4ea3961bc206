import { BadRequestError } from '../errors.js'
import { finished, type Pieces } from '../pieces.js'
import { addHeaderLine, PHP_FILL_UNIT, phpLineBytes, phpLines, phpParams, type PhpHeader } from '../php/mime.js'
import { checkParams, encodeParams, METHOD_OVERRIDE_FIELD, phpVariable, type Pair } from './request-target.js'

/**
 * A caller's body as the gateway parsed and checked it. The platform receives the
 * gateway's serialization of it (`text`, `contentType`), never the caller's bytes, so
 * a body the platform would read differently cannot slip past a check.
 */
export type CheckedBody =
  | { kind: 'json'; value: unknown; text: string; contentType: 'application/json'; values: number; containers: number }
  | { kind: 'form'; params: Pair[]; text: string; contentType: 'application/x-www-form-urlencoded' }

export interface BodyLimits {
  jsonDepth: number
  params: number
}

export const JSON_TYPE = 'application/json'
export const FORM_TYPE = 'application/x-www-form-urlencoded'
export const MULTIPART_TYPE = 'multipart/form-data'
export const PLAIN_TEXT_TYPE = 'text/plain'

/** A body the platform reads no input from: `text/plain` (what fetch labels a string body) or no type. */
export const NO_INPUT_BODY = 'body: the platform reads no input from a text/plain body or one without a content-type (fetch labels a string body text/plain): add content-type: application/json'

const utf8 = new TextDecoder('utf-8', { fatal: true })
const OPEN = new Set([0x5b, 0x7b])
const CLOSE = new Set([0x5d, 0x7d])
// An unpaired UTF-16 surrogate (`"\ud800"`): JSON.parse takes it and JSON.stringify writes
// it back escaped, but PHP's json_decode fails on it (JSON_ERROR_UTF16), so Laravel reads
// no body at all and the platform falls back to the token's (parent) account.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/
// A parsed string holds a surrogate only where the text escapes one (`\ud800`): UTF-8 the
// decoder takes encodes none. A text without such an escape has its strings searched for
// none (a body of 200,000 strings cost a search of each).
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/
const SURROGATE_REFUSED = 'body: a string holds an unpaired UTF-16 surrogate (\\ud800 to \\udfff alone), which a PHP platform cannot read'

// How a body the gateway cannot read is refused, on either listener (the admin listener's
// Fastify parsers say it so too: http/server.ts): `body: ` first, as every field does.
/** A body that does not parse as JSON (an empty one included). */
export const NOT_JSON = 'body: not valid JSON'

/**
 * Why the admin listener's JSON parser (secure-json-parse) refused `text`: JSON that holds
 * a key of a JavaScript object's prototype (`__proto__`, or `constructor` holding
 * `prototype`), which that parser refuses whatever the call, is told so, naming the key;
 * anything else is not valid JSON.
 */
export function jsonRefusal(text: string): string {
  let key: string | null = null
  try {
    JSON.parse(text, (name, value: unknown) => {
      if (key === null && (name === '__proto__' || (name === 'constructor' && isRecord(value) && Object.hasOwn(value, 'prototype')))) key = name
      return value
    })
  } catch {
    return NOT_JSON
  }
  return key === null ? NOT_JSON : `body: ${key}: a key of a JavaScript object's prototype, which no call takes; nothing was changed`
}

/** A body sent with a content-encoding: no call reads one, on either listener. */
export const ENCODED_BODY = 'body: content-encoding is not accepted; send the body uncompressed'

// `curl -d '{...}'` without `-H content-type` labels the JSON exactly so, and fetch() a
// string body `text/plain;charset=UTF-8`: a call that reads JSON only says how to send it instead.
const CURL_FORM = " (curl -d sends a form: add -H 'content-type: application/json')"
const FETCH_STRING = ' (fetch labels a string body text/plain: add content-type: application/json)'

/**
 * A body of a type the call does not read; `types`: the ones it reads; `sent`: the body's
 * content-type, which, exactly `curl -d`'s (a form) or text/plain (fetch's), adds how to send JSON.
 */
export function bodyTypeRefused(types: string, sent?: string | string[]): string {
  const hint = sent === FORM_TYPE ? CURL_FORM : typeof sent === 'string' && mediaType(sent) === PLAIN_TEXT_TYPE ? FETCH_STRING : ''
  return `body: must be ${types}${hint}`
}

/** A content-type's media type, in lower case, without its parameters ('' for none). */
export function mediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? ''
}

// JSON.parse's reviver with the source of each primitive, and raw JSON that JSON.stringify
// writes as it is (ES2025: JSON.parse source text access; Node 21 and later).
type SourceReviver = (this: unknown, key: string, value: unknown, context: { source?: string }) => unknown
const sourced = JSON as unknown as { parse(text: string, reviver: SourceReviver): unknown; rawJSON(text: string): unknown }
const INTEGER = /^-?\d+$/
const [INT64_MIN, INT64_MAX] = [-(2n ** 63n), 2n ** 63n - 1n]
const INT64_DIGITS = 19

/**
 * The caller's JSON with every number as the caller wrote it: PHP reads `1.0` as a float
 * and `1` as an int, `12345678901234567890` as a float and `1e400` as INF, and a number
 * written again from a double says something else (`1`, `12345678901234567000`, `null`).
 * An integer past ±2^53 that PHP holds exactly (a 64-bit int) is refused: the checks read
 * the double nearest it, so the platform would read another number than the one checked.
 */
function numbersAsWritten(text: string): unknown {
  return sourced.parse(text, (_key, value, { source }) => {
    if (typeof value !== 'number' || source === undefined) return value
    // Past 19 digits no integer is a 64-bit one: its BigInt (a parse as long as its digits) is not made.
    if (INTEGER.test(source) && !Number.isSafeInteger(value) && source.length <= INT64_DIGITS + 1 && BigInt(source) >= INT64_MIN && BigInt(source) <= INT64_MAX) {
      throw new BadRequestError(`body: the integer ${source} is past ±2^53 (9007199254740991), which the gateway cannot check exactly as the platform reads it (a 64-bit integer); send it as a string`)
    }
    return sourced.rawJSON(source)
  })
}

/**
 * The most values of a body whose numbers are passed on as written: each of its values
 * then costs the parse a call with its source (about 1 µs), so that 10,000 cost about 10 ms of
 * the event loop; a body written as JSON.stringify writes its numbers costs none of it.
 */
export const SOURCE_VALUES = 10_000

/** `scanned`: told the scan of a body nested within the limits before it is parsed, it may refuse the body (throw). */
export function parseJsonBody(bytes: Buffer, limits: BodyLimits, scanned?: (scan: JsonScan) => void): CheckedBody {
  return finished(parsingJsonBody(bytes, limits, scanned))
}

/**
 * parseJsonBody in pieces (pieces.ts), yielding after its scan, after JSON.parse, and after
 * the walk of what it parsed; the text sent on is written in the last piece. A large body's
 * parse so takes four turns of its team's on the event loop (access/admission.ts), none of
 * them more than a pass over the body.
 */
export function* parsingJsonBody(bytes: Buffer, limits: BodyLimits, scanned?: (scan: JsonScan) => void): Pieces<CheckedBody> {
  // Before JSON.parse: a 200k-deep array must be a cheap 400, not a deep parse and a
  // recursion through it; PHP's json_decode gives up past 512 levels anyway.
  const scan = scanJson(bytes)
  if (scan.depth > limits.jsonDepth) throw new BadRequestError(`body: JSON nested deeper than ${limits.jsonDepth} levels`)
  scanned?.(scan)
  yield
  let value: unknown
  let written: unknown
  let surrogates = false
  try {
    const text = decodeUtf8(bytes)
    value = JSON.parse(text)
    surrogates = SURROGATE_ESCAPE.test(text)
    if (!scan.numbersAsWritten && scan.values > SOURCE_VALUES) {
      throw new BadRequestError(`body: a number written otherwise than JSON writes it (such as 1.0, 1e2, 0.50 or past 15 digits) is passed on as written only in a body of at most ${SOURCE_VALUES} values, and this one has ${scan.values}: write its numbers as JSON.stringify writes them, or send fewer values a call`)
    }
    written = scan.numbersAsWritten ? value : numbersAsWritten(text)
  } catch (err) {
    if (err instanceof BadRequestError) throw err
    throw new BadRequestError(NOT_JSON)
  }
  yield
  let keys = 0
  const pending: unknown[] = [value]
  while (pending.length > 0) {
    const node = pending.pop()
    if (typeof node === 'string' && LONE_SURROGATE.test(node)) throw new BadRequestError(SURROGATE_REFUSED)
    if (typeof node !== 'object' || node === null) continue
    const members = Array.isArray(node) ? (node as unknown[]) : Object.values(node)
    if (!Array.isArray(node)) {
      keys += members.length
      if (keys > limits.params) throw new BadRequestError(`body: more than ${limits.params} keys`)
      if (surrogates && Object.keys(node).some((key) => LONE_SURROGATE.test(key))) throw new BadRequestError(SURROGATE_REFUSED)
    }
    for (const member of members) if ((surrogates && typeof member === 'string') || (typeof member === 'object' && member !== null)) pending.push(member)
  }
  if (isRecord(value) && Object.hasOwn(value, METHOD_OVERRIDE_FIELD)) {
    throw new BadRequestError(`body: ${METHOD_OVERRIDE_FIELD} (method override) is not accepted`)
  }
  yield
  return { kind: 'json', value, text: JSON.stringify(written), contentType: JSON_TYPE, values: scan.values, containers: scan.containers }
}

export function parseFormBody(bytes: Buffer, limits: BodyLimits): CheckedBody {
  const params = checkParams(decodeUtf8(bytes), 'body', limits.params)
  return { kind: 'form', params, text: encodeParams(params), contentType: FORM_TYPE }
}

/** Whether Laravel reads a body of `contentType` as JSON: the type holds `/json` or `+json` anywhere, parameters included (Request::isJson). */
export function readAsJson(contentType: string | undefined): boolean {
  return contentType !== undefined && (contentType.includes('/json') || contentType.includes('+json'))
}

/**
 * A multipart form passed on as it comes: PHP fills `$_POST` from its parts, so a part
 * named `_method` (as PHP files names: `.method`, `_method[x]`) would turn the call into
 * another method at the platform. 400 for such a body.
 */
export function assertNoOverridePart(bytes: Buffer, contentType: string | undefined): void {
  for (const name of multipartNames(bytes.toString('latin1'), phpLineBytes(contentType ?? ''))) {
    if (phpVariable(name) === METHOD_OVERRIDE_FIELD) throw new BadRequestError(`body: a part named ${JSON.stringify(name.slice(0, 64))} is ${METHOD_OVERRIDE_FIELD} (method override) to a PHP platform, and not accepted`)
  }
}

const CONTENT_DISPOSITION = 'content-disposition'

/**
 * Every `name` of every `content-disposition` header in a multipart body, as PHP reads them
 * (main/rfc1867.c, php/mime.ts). Each line of the body is taken for a header line,
 * boundaries unread: a part's head, which starts after a boundary line and ends at an empty
 * line, is read whole, and so are lines of content that look like headers, and every
 * content-disposition of a head, not only its first (more names than PHP reads, never
 * fewer). A line is read as PHP's buffer reads it (`lineBytes` at most, the rest a line of
 * its own; to its first NUL, as C reads it).
 */
export function multipartNames(text: string, lineBytes = PHP_FILL_UNIT): string[] {
  const names: string[] = []
  let head: PhpHeader[] = []
  const end = (): void => {
    for (const header of head) {
      if (header.name.toLowerCase() !== CONTENT_DISPOSITION) continue
      for (const [key, value] of phpParams(header.value)) if (key.toLowerCase() === 'name') names.push(value)
    }
    head = []
  }
  for (const line of phpLines(text, lineBytes)) {
    if (line.text === '') end()
    else addHeaderLine(head, line.text)
  }
  end()
  return names
}

/**
 * Bodies a team limited to some advertisers may send: exactly JSON or a form (Laravel
 * reads any type holding `/json` as JSON, so `form; x=/json` would be read as JSON while
 * the gateway parsed a form), at most a `charset=utf-8` parameter, and not compressed.
 * `jsonOnly`: the call reads JSON only (a report POST), and its refusal names JSON only.
 */
export function assertPlainBodyType(headers: Record<string, string | string[] | undefined>, jsonOnly = false): void {
  if (headers['content-encoding'] !== undefined) throw new BadRequestError(ENCODED_BODY)
  const type = headers['content-type']
  const plain = typeof type === 'string' ? /^(application\/json|application\/x-www-form-urlencoded)\s*(;\s*charset="?utf-8"?\s*)?$/i.exec(type) : null
  if (plain === null || (jsonOnly && plain[1]?.toLowerCase() !== JSON_TYPE)) {
    throw new BadRequestError(bodyTypeRefused(`${jsonOnly ? JSON_TYPE : `${JSON_TYPE} or ${FORM_TYPE}`} (with at most charset=utf-8)`))
  }
}

function decodeUtf8(bytes: Buffer): string {
  try {
    return utf8.decode(bytes)
  } catch {
    throw new BadRequestError('body: not valid UTF-8')
  }
}

/** What a scan of a JSON text finds before it is parsed. */
export interface JsonScan {
  /** The deepest bracket nesting, brackets inside strings not counted. */
  depth: number
  /** Its values (strings, keys included, numbers, literals, objects and arrays). */
  values: number
  /** Its objects and arrays, among its values. */
  containers: number
  /** Whether every number is written as JSON.stringify writes its double (`1`, `0.5`; not `1.0`, `1e2`, `12345678901234567890`). */
  numbersAsWritten: boolean
}

const writtenAsJs = (number: string): boolean => String(Number(number)) === number
// Each byte's part in the scan, read from one table (a Set's lookup a byte costs several
// times as much over a MiB): a string's quote, a bracket, a literal's first letter, a number's.
const [QUOTE, OPENS, CLOSES, LITERAL, NUMBER] = [1, 2, 3, 4, 5]
const BYTE_PART = new Uint8Array(256)
BYTE_PART[0x22] = QUOTE
for (const b of OPEN) BYTE_PART[b] = OPENS
for (const b of CLOSE) BYTE_PART[b] = CLOSES
for (const c of 'tfn') BYTE_PART[c.charCodeAt(0)] = LITERAL
for (const c of '0123456789+-.eE') BYTE_PART[c.charCodeAt(0)] = NUMBER

/**
 * One pass over a JSON text's bytes (a valid one: what is not parses to a 400 after):
 * its nesting, its values, and whether a number is written otherwise than JSON.stringify
 * writes it, and its objects and arrays. An integer of 15 digits at most is written so by
 * its grammar; one of more is taken as not (it may be past ±2^53); any other number is read.
 */
export function scanJson(bytes: Buffer): JsonScan {
  let [depth, deepest, values, containers, asWritten] = [0, 0, 0, 0, true]
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i] as number
    const part = BYTE_PART[b]
    if (part === 0) continue
    values++
    if (part === QUOTE) {
      for (i++; i < bytes.length && bytes[i] !== 0x22; i++) if (bytes[i] === 0x5c) i++
    } else if (part === OPENS) {
      containers++
      depth++
      if (depth > deepest) deepest = depth
    } else if (part === CLOSES) {
      values--
      depth--
    } else if (part === LITERAL) i += b === 0x66 ? 4 : 3
    else {
      const start = i
      let plain = true
      while (i + 1 < bytes.length && BYTE_PART[bytes[i + 1] as number] === NUMBER) {
        const c = bytes[++i] as number
        if (c === 0x2e || c === 0x65 || c === 0x45) plain = false
      }
      const digits = i + 1 - start - (b === 0x2d ? 1 : 0)
      // Past 15 digits an integer may be past ±2^53: its source decides (numbersAsWritten).
      if (asWritten && ((plain && digits > 15) || (!plain && !writtenAsJs(bytes.toString('latin1', start, i + 1))) || (b === 0x2d && bytes[start + 1] === 0x30 && digits === 1))) asWritten = false
    }
  }
  return { depth: deepest, values, containers, numbersAsWritten: asWritten }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
