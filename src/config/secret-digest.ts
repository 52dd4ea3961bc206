import { createHash } from 'node:crypto'

/**
 * The lower-case hex SHA-256 of `secret`: the form in which ADMIN_TOKENS_FILE names a
 * token, and the digest a fingerprint (observe/fingerprint.ts) is made from.
 */
export function sha256Hex(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex')
}
