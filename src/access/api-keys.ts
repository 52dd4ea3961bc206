import { createHash, randomBytes } from 'node:crypto'
import { KEY_PREFIX } from '../observe/key-shape.js'

const KEY_BYTES = 32

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
