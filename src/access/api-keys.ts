import { createHash, randomBytes } from 'node:crypto'
import { KEY_PREFIX } from '../observe/key-shape.js'

const KEY_BYTES = 32
/** The characters of a key newApiKey makes: KEY_PREFIX, then KEY_BYTES in base64url. */
export const MADE_KEY_CHARS = KEY_PREFIX.length + Math.ceil((KEY_BYTES * 4) / 3)

/** A new team key: KEY_PREFIX, then 32 random bytes in base64url (the shape observe/key-shape.ts finds in text). */
export function newApiKey(): string {
  return KEY_PREFIX + randomBytes(KEY_BYTES).toString('base64url')
}

export function hashApiKey(key: string): string {
  return `sha256:${createHash('sha256').update(key, 'utf8').digest('hex')}`
}

/** The keys a caller presents: `x-api-key`, and `authorization: Bearer`; null for one not given. */
export function presentedKeys(headers: Record<string, string | string[] | undefined>): { apiKey: string | null; bearer: string | null } {
  const apiKey = headers['x-api-key']
  // A blank x-api-key is no key: it must not hide a Bearer key sent with it.
  const trimmed = typeof apiKey === 'string' ? apiKey.trim() : ''
  const auth = headers.authorization
  const match = typeof auth === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(auth) : null
  return { apiKey: trimmed === '' ? null : trimmed, bearer: match ? (match[1] as string) : null }
}

// Schemes a caller may put its key under in `authorization`, named in the refusal as the
// caller wrote them: ApiKey is the scheme of the 401's own challenge, Basic is what
// `curl -u <key>:` sends. Any other scheme is not repeated (it may be a secret's first word).
const OTHER_SCHEMES = ['ApiKey', 'Api-Key', 'Basic', 'Digest', 'Key', 'Token']

/**
 * Why the headers of a refused request present no key in a form the gateway reads, in the
 * caller's words (`authorization: the ApiKey scheme is not read`); null when they present one
 * (an unknown, revoked or mistyped key, of which nothing more is said). Only the headers'
 * form is judged, never the key: the answer is the same whatever key they hold, and it
 * repeats no value.
 */
export function keyFormProblem(headers: Record<string, string | string[] | undefined>): string | null {
  const { apiKey, bearer } = presentedKeys(headers)
  if (apiKey !== null) return keyValueProblem(apiKey, 'x-api-key')
  const auth = typeof headers.authorization === 'string' ? headers.authorization.trim() : ''
  if (auth === '') return 'none given'
  if (bearer !== null) return keyValueProblem(bearer, 'authorization')
  return authorizationFormProblem(auth, 'the key')
}

/**
 * What is wrong with an `authorization` that is not `Bearer <one word>`, naming what
 * belongs there (`the key`, `the admin token`); null for a Bearer of one word.
 */
export function authorizationFormProblem(authorization: string, what: string): string | null {
  const auth = authorization.trim()
  if (/^Bearer\s+\S+$/i.test(auth)) return null
  if (/^Bearer$/i.test(auth)) return `authorization: Bearer without ${what}`
  if (/^Bearer\s/i.test(auth)) return `authorization: Bearer takes one word, ${what}`
  if (!/\s/.test(auth)) return `authorization: no scheme before ${what}`
  const scheme = OTHER_SCHEMES.find((s) => auth.toLowerCase().startsWith(`${s.toLowerCase()} `))
  return scheme === undefined ? 'authorization: not a Bearer credential' : `authorization: the ${scheme} scheme is not read, only Bearer`
}

/** What is wrong with the text a key header holds, as a slip writes it; null: nothing (it may be a key). */
function keyValueProblem(value: string, header: string): string | null {
  if (header === 'x-api-key' && /^Bearer\s/i.test(value)) return 'x-api-key: holds Bearer before the key; x-api-key takes the key alone'
  if (/^(["']).*\1$/s.test(value)) return `${header}: the key is in quotes; send it without them`
  // A variable with no value, as a program writes it into the header (JavaScript's `${undefined}`, Python's None).
  if (/^(undefined|null|None|nil)$/.test(value)) return `${header}: holds ${value}, a variable with no value, not a key`
  if (/^\$\{?[A-Za-z_]/.test(value)) return `${header}: holds a shell variable's name ($…), not its value; write the header in double quotes`
  // The README's placeholders: <key>, and rgw_… (its UTF-8 bytes as Node reads a header, latin1).
  if (/^<.*>$/s.test(value) || /…|\u00e2\u0080\u00a6/.test(value)) return `${header}: holds a placeholder (<key>, rgw_…), not a key`
  if (/\s/.test(value)) return `${header}: holds spaces; a key is one word`
  return null
}
