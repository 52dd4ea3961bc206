import { BadRequestError } from '../errors.js'
import { checkParams, encodeParams, METHOD_OVERRIDE_FIELD, phpVariable, type Pair } from './request-target.js'

/**
 * A caller's body as the gateway parsed and checked it. The platform receives the
 * gateway's serialization of it (`text`, `contentType`), never the caller's bytes, so
 * a body the platform would read differently cannot slip past a check.
 */
export type CheckedBody =
  | { kind: 'json'; value: unknown; text: string; contentType: 'application/json' }
  | { kind: 'form'; params: Pair[]; text: string; contentType: 'application/x-www-form-urlencoded' }

export interface BodyLimits {
  jsonDepth: number
  params: number
}

export const JSON_TYPE = 'application/json'
export const FORM_TYPE = 'application/x-www-form-urlencoded'
export const MULTIPART_TYPE = 'multipart/form-data'

const utf8 = new TextDecoder('utf-8', { fatal: true })
const OPEN = new Set([0x5b, 0x7b])
const CLOSE = new Set([0x5d, 0x7d])
// An unpaired UTF-16 surrogate (`"\ud800"`): JSON.parse takes it and JSON.stringify writes
// it back escaped, but PHP's json_decode fails on it (JSON_ERROR_UTF16), so Laravel reads
// no body at all and the platform falls back to the token's (parent) account.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/
const SURROGATE_REFUSED = 'body: a string holds an unpaired UTF-16 surrogate (\\ud800 to \\udfff alone), which a PHP platform cannot read'

// How a body the gateway cannot read is refused, on either listener (the admin listener's
// Fastify parsers say it so too: http/server.ts): `body: ` first, as every field does.
/** A body that does not parse as JSON (an empty one included). */
export const NOT_JSON = 'body: not valid JSON'

/** A body of a type the call does not read; `types`: the ones it reads. */
export function bodyTypeRefused(types: string): string {
  return `body: must be ${types}`
}

export function parseJsonBody(bytes: Buffer, limits: BodyLimits): CheckedBody {
  // Before JSON.parse: a 200k-deep array must be a cheap 400, not a deep parse and a
  // recursion through it; PHP's json_decode gives up past 512 levels anyway.
  if (maxDepth(bytes) > limits.jsonDepth) throw new BadRequestError(`body: JSON nested deeper than ${limits.jsonDepth} levels`)
  let value: unknown
  try {
    value = JSON.parse(decodeUtf8(bytes))
  } catch (err) {
    if (err instanceof BadRequestError) throw err
    throw new BadRequestError(NOT_JSON)
  }
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
      if (Object.keys(node).some((key) => LONE_SURROGATE.test(key))) throw new BadRequestError(SURROGATE_REFUSED)
    }
    for (const member of members) if (typeof member === 'string' || (typeof member === 'object' && member !== null)) pending.push(member)
  }
  if (isRecord(value) && Object.hasOwn(value, METHOD_OVERRIDE_FIELD)) {
    throw new BadRequestError(`body: ${METHOD_OVERRIDE_FIELD} (method override) is not accepted`)
  }
  return { kind: 'json', value, text: JSON.stringify(value), contentType: JSON_TYPE }
}

export function parseFormBody(bytes: Buffer, limits: BodyLimits): CheckedBody {
  const params = checkParams(decodeUtf8(bytes), 'body', limits.params)
  return { kind: 'form', params, text: encodeParams(params), contentType: FORM_TYPE }
}

/** Whether Laravel reads a body of `contentType` as JSON: the type holds `/json` or `+json` anywhere, parameters included (Request::isJson). */
export function readAsJson(contentType: string | undefined): boolean {
  return contentType !== undefined && (contentType.includes('/json') || contentType.includes('+json'))
}

// A part's name in a multipart body's headers: `content-disposition: form-data; name="…"` (quoted or not).
const PART_NAME = /^content-disposition:[^\r\n]*?;\s*name\s*=\s*(?:"([^"\r\n]*)"|([^;\s]*))/gim

/**
 * A multipart form passed on as it comes: PHP fills `$_POST` from its parts, so a part
 * named `_method` (as PHP files names: `.method`, `_method[x]`) would turn the call into
 * another method at the platform. 400 for such a body.
 */
export function assertNoOverridePart(bytes: Buffer): void {
  for (const [, quoted, bare] of bytes.toString('latin1').matchAll(PART_NAME)) {
    const name = quoted ?? bare ?? ''
    if (phpVariable(name) === METHOD_OVERRIDE_FIELD) throw new BadRequestError(`body: a part named ${JSON.stringify(name.slice(0, 64))} is ${METHOD_OVERRIDE_FIELD} (method override) to a PHP platform, and not accepted`)
  }
}

/**
 * Bodies a team limited to some advertisers may send: exactly JSON or a form (Laravel
 * reads any type holding `/json` as JSON, so `form; x=/json` would be read as JSON while
 * the gateway parsed a form), at most a `charset=utf-8` parameter, and not compressed.
 */
export function assertPlainBodyType(headers: Record<string, string | string[] | undefined>): void {
  if (headers['content-encoding'] !== undefined) throw new BadRequestError('body: content-encoding is not accepted; send the body uncompressed')
  const type = headers['content-type']
  if (typeof type !== 'string' || !/^(application\/json|application\/x-www-form-urlencoded)\s*(;\s*charset="?utf-8"?\s*)?$/i.test(type)) {
    throw new BadRequestError(bodyTypeRefused('application/json or application/x-www-form-urlencoded (with at most charset=utf-8)'))
  }
}

function decodeUtf8(bytes: Buffer): string {
  try {
    return utf8.decode(bytes)
  } catch {
    throw new BadRequestError('body: not valid UTF-8')
  }
}

/** Deepest bracket nesting of a JSON text, brackets inside strings not counted. */
export function maxDepth(bytes: Buffer): number {
  let depth = 0
  let deepest = 0
  let inString = false
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i] as number
    if (inString) {
      if (b === 0x5c) i++
      else if (b === 0x22) inString = false
    } else if (b === 0x22) inString = true
    else if (OPEN.has(b)) {
      depth++
      if (depth > deepest) deepest = depth
    } else if (CLOSE.has(b)) depth--
  }
  return deepest
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
