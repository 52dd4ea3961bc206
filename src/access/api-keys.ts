import { createHash, randomBytes } from 'node:crypto'

// A recognizable prefix lets secret scanners (GitHub, gitleaks) find a leaked key.
export const KEY_PREFIX = 'rgw_'
const KEY_BYTES = 32

export function newApiKey(): string {
  return KEY_PREFIX + randomBytes(KEY_BYTES).toString('base64url')
}

export function hashApiKey(key: string): string {
  return `sha256:${createHash('sha256').update(key, 'utf8').digest('hex')}`
}

/** The key a caller presents: `x-api-key`, else `authorization: Bearer`. */
export function presentedKey(headers: Record<string, string | string[] | undefined>): string | null {
  const apiKey = headers['x-api-key']
  // A blank x-api-key is no key: it must not hide a Bearer key sent with it.
  const trimmed = typeof apiKey === 'string' ? apiKey.trim() : ''
  if (trimmed !== '') return trimmed
  const auth = headers.authorization
  if (typeof auth === 'string') {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(auth)
    if (match) return match[1] as string
  }
  return null
}
