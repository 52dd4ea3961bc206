import { BadRequestError, ProxyUnservedPathError, RepeatedBaseError, UnsafePathError } from '../errors.js'
import { API_PREFIX, unsafeSpelling } from './path-safety.js'
import { UNRESERVED_ESCAPE } from '../platform/canonical-path.js'
import { escapedBytes } from '../observe/secret-search.js'

export type Pair = [string, string]

/**
 * A caller's request target as the gateway checked it: every rule (read/write, token
 * path, scope, routing) and the upstream URL read these values, never `request.url`,
 * so what is checked is what is forwarded.
 */
export interface RequestTarget {
  /** The path, percent-escapes of unreserved characters decoded. */
  path: string
  /** Query parameters as decoded, in their order. */
  params: Pair[]
  /** The query the platform receives: `params` encoded by the gateway, '' when none. */
  search: string
}

// Parameter names a PHP platform reads as they are: no NUL (PHP cuts the name there),
// no spaces (dropped or turned into `_`), nothing that could hide an account field.
const PLAIN_NAME = /^[A-Za-z0-9_.\-[\]]+$/
// Brackets a name may open: a PHP platform deletes the whole variable of a name nested past
// its max_input_nesting_level (64 by default), values given before it included, so that
// `userId=101&userId[a]…[a]=101` names no account to it and the call acts on the parent's.
// The platform's names nest 2 levels (`filter[campaignIds][]`); 16 leaves room below any
// max_input_nesting_level a platform would lower its own to.
const MAX_NAME_NESTING = 16
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/
// Printable ASCII only: anything else in a raw target is spelled differently by different parsers.
const RAW_TARGET = /^[\u0021-\u007e]+$/
// RFC 3986 pchar, after unreserved escapes are decoded: any other `%` is refused.
const PATH_CHARS = /^[A-Za-z0-9\-._~!$&'()*+,;=:@/]+$/
// A run of percent-escapes; an escape that is not one (`%2x`) stays as it is, as URLSearchParams keeps it.
const ESCAPE_RUN = /(?:%[0-9A-Fa-f]{2})+/g
// Fatal: a byte sequence that is not UTF-8 is refused, never read as U+FFFD (which the
// gateway would send on as %EF%BF%BD where PHP reads the bytes). A leading U+FEFF is kept.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })
/** Laravel's method override (`_method` in the query or a form or JSON body). */
export const METHOD_OVERRIDE_FIELD = '_method'

/**
 * Checks the raw target once: 404 for a path outside /api/v1/ (or one that could be
 * decoded into one), 400 for anything the platform could read differently than the gateway.
 * The 404 says what the proxy listener serves, as to any path outside /api/v1/: a prefix
 * spelled with escapes (`/%61pi/v1/…`) reaches this check through the router, which decodes it.
 */
export function checkTarget(rawUrl: string, maxParams: number): RequestTarget {
  if (!RAW_TARGET.test(rawUrl)) throw new BadRequestError('request target: control characters, spaces and non-ASCII bytes are not accepted')
  // The router and any proxy end the path at `#`; the gateway's own rules must not see more.
  if (rawUrl.includes('#')) throw new BadRequestError('request target: `#` is not accepted')
  const q = rawUrl.indexOf('?')
  const rawPath = q === -1 ? rawUrl : rawUrl.slice(0, q)
  if (!rawPath.startsWith(API_PREFIX)) throw new ProxyUnservedPathError()
  const unsafe = unsafeSpelling(rawPath)
  if (unsafe !== null) throw new UnsafePathError(unsafe)
  // No platform route begins /api/v1/api/: a base URL written with /api/v1 (the platform's
  // base copied) puts every call there, refused with what to write, for every team alike.
  if (/^\/api\/v1\/api\//i.test(rawPath)) throw new RepeatedBaseError()
  const path = rawPath.replace(UNRESERVED_ESCAPE, (escape) => String.fromCharCode(parseInt(escape.slice(1), 16)))
  if (!PATH_CHARS.test(path)) throw new BadRequestError('request target: the path may hold only unreserved characters')
  const params = q === -1 ? [] : checkParams(rawUrl.slice(q + 1), 'query', maxParams)
  return { path, params, search: encodeParams(params) }
}

/**
 * The names and values of a query or form (`raw`: its text, `application/x-www-form-urlencoded`),
 * read as URLSearchParams reads them, refused (400) where a PHP platform would read them differently.
 * A refusal names the parameter by its place (1 for the first), never by its text: a query
 * is checked before the key, and an echo redacted where it held a secret of the gateway's
 * (a password may be any plain word) would tell any caller whether its text holds one.
 */
export function checkParams(raw: string, where: 'query' | 'body', maxParams: number): Pair[] {
  const params: Pair[] = []
  for (const [spelledName, spelledValue] of splitPairs(raw)) {
    if (params.length === maxParams) throw new BadRequestError(`${where}: more than ${maxParams} parameters`)
    const place = params.length + 1
    const name = decodeComponent(spelledName)
    if (name === null) throw new BadRequestError(`${where}: the name of parameter ${place} ${NOT_UTF8}`)
    if (!PLAIN_NAME.test(name)) throw new BadRequestError(`${where}: the name of parameter ${place} is not plain (letters, digits, _ . - [ ])`)
    // PHP counts a level at each `[` it opens.
    if (name.split('[').length - 1 > MAX_NAME_NESTING) throw new BadRequestError(`${where}: the name of parameter ${place} is nested deeper than ${MAX_NAME_NESTING} levels, which a PHP platform may read as no parameter of that name at all`)
    if (phpVariable(name) === METHOD_OVERRIDE_FIELD) throw new BadRequestError(`${where}: parameter ${place} is ${METHOD_OVERRIDE_FIELD} (method override) to a PHP platform, and not accepted`)
    const value = decodeComponent(spelledValue)
    if (value === null) throw new BadRequestError(`${where}: the value of parameter ${place} ${NOT_UTF8}`)
    if (CONTROL.test(value)) throw new BadRequestError(`${where}: the value of parameter ${place} holds a control character`)
    params.push([name, value])
  }
  return params
}

const NOT_UTF8 = 'is not UTF-8 (its percent-encoded bytes are no UTF-8 sequence, which a PHP platform would read as other bytes than the gateway)'

/**
 * The spelled name and value of each `&`-separated pair, empty pairs skipped (the URL
 * standard's split). Each pair is cut out where it is found: a MiB of `&` makes no list of a
 * million empty parts.
 */
function* splitPairs(raw: string): Generator<Pair> {
  for (let start = 0; start < raw.length; ) {
    const amp = raw.indexOf('&', start)
    const end = amp === -1 ? raw.length : amp
    if (end > start) {
      const part = raw.slice(start, end)
      const eq = part.indexOf('=')
      yield eq === -1 ? [part, ''] : [part.slice(0, eq), part.slice(eq + 1)]
    }
    start = end + 1
  }
}

/** A spelled name or value decoded (`+` a space, escapes as UTF-8); null when its escapes are no UTF-8. */
function decodeComponent(spelled: string): string | null {
  const spaced = spelled.includes('+') ? spelled.replace(/\+/g, ' ') : spelled
  if (!spaced.includes('%')) return spaced
  try {
    return spaced.replace(ESCAPE_RUN, (run) => utf8.decode(escapedBytes(run)))
  } catch {
    return null
  }
}

/**
 * The variable PHP stores a name under: the part before a `[` that a `]` follows (`name[]`,
 * `name[x]` are lists of `name`; `.method[x]` is `_method`), its spaces and dots read as
 * `_`; without such a `[`, the whole name with its spaces, dots and `[` read as `_` (PHP 8:
 * `user[id` is `user_id`, `a.b` is `a_b`), after its leading spaces are dropped (` _method` is
 * `_method`). A name that starts with a closed `[` is none: ``.
 */
export function phpVariable(given: string): string {
  // Leading spaces first: PHP drops them before it reads the name (php_register_variable_ex).
  const name = given.replace(/^ +/, '')
  const open = name.indexOf('[')
  if (open !== -1 && name.indexOf(']', open) !== -1) return name.slice(0, open).replace(/[ .]/g, '_')
  return name.replace(/[ .[]/g, '_')
}

/**
 * A parameter's name as PHP files it: the variable's name (phpVariable) and its brackets as
 * written (`spent.Based` is `spent_Based`, ` a.b[x]` is `a_b[x]`). Two names PHP files alike
 * name one parameter to the platform, and one cache entry.
 */
export function phpName(given: string): string {
  const name = given.replace(/^ +/, '')
  const open = name.indexOf('[')
  const bracketed = open !== -1 && name.indexOf(']', open) !== -1
  return bracketed ? phpVariable(name) + name.slice(open) : phpVariable(name)
}

/** The gateway's own serialization of parameters; brackets of array names stay readable. */
export function encodeParams(params: readonly Pair[]): string {
  return params.map(([name, value]) => `${encodeURIComponent(name).replace(/%5B/g, '[').replace(/%5D/g, ']')}=${encodeURIComponent(value)}`).join('&')
}

/** `path?search`, or the path alone. */
export function targetUrl(target: RequestTarget): string {
  return target.search ? `${target.path}?${target.search}` : target.path
}
