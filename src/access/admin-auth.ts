import { createHash, timingSafeEqual } from 'node:crypto'
import type { AdminToken } from '../config.js'

/**
 * Which operator an admin bearer token belongs to (ADMIN_TOKEN is "admin", the others
 * are named in ADMIN_TOKENS_FILE), so that audit lines name people rather than
 * fingerprints. Only digests are held; `replace` swaps them on a reload.
 */
export class AdminAuth {
  #tokens: { name: string; digest: Buffer }[] = []

  constructor(tokens: AdminToken[]) {
    this.replace(tokens)
  }

  replace(tokens: AdminToken[]): void {
    this.#tokens = tokens.map((t) => ({ name: t.name, digest: Buffer.from(t.hash.slice('sha256:'.length), 'hex') }))
  }

  get enabled(): boolean {
    return this.#tokens.length > 0
  }

  /** The operator's name, or null. Every digest is compared, in constant time each. */
  verify(token: string): string | null {
    const offered = createHash('sha256').update(token, 'utf8').digest()
    let name: string | null = null
    for (const t of this.#tokens) if (timingSafeEqual(offered, t.digest) && name === null) name = t.name
    return name
  }
}
