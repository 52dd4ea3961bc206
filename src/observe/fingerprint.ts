import { createHash } from 'node:crypto'

/** A short, stable name for a secret (a token, a key) that logs and admin answers may show. */
export function fingerprint(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex').slice(0, 12)
}
