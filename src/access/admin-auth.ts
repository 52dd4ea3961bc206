import { hash, timingSafeEqual } from 'node:crypto'
import type { AdminRole, AdminToken } from '../config.js'
import { wordsOf } from '../observe/secret-search.js'

// The shortest admin token the configuration accepts (ADMIN_TOKEN's bound): shorter words are none.
const MIN_ADMIN_TOKEN_CHARS = 16

/** Who an admin token belongs to, and what it may do. */
export interface AdminActor {
  name: string
  role: AdminRole
}

/**
 * Which operator an admin bearer token belongs to (ADMIN_TOKEN is "admin",
 * ADMIN_VIEWER_TOKEN "viewer", the others are named in ADMIN_TOKENS_FILE) and its role,
 * so that audit lines name people rather than fingerprints and a viewer changes nothing.
 * Only digests are held; `replace` swaps them on a reload.
 */
export class AdminAuth {
  #tokens: (AdminActor & { digest: Buffer })[] = []

  constructor(tokens: AdminToken[]) {
    this.replace(tokens)
  }

  replace(tokens: AdminToken[]): void {
    this.#tokens = tokens.map((t) => ({ name: t.name, role: t.role, digest: Buffer.from(t.hash.slice('sha256:'.length), 'hex') }))
  }

  get enabled(): boolean {
    return this.#tokens.length > 0
  }

  /**
   * Whether `text` (what a caller would have sent the platform) holds an admin token as a
   * word, as it is or percent-encoded: the named tokens of ADMIN_TOKENS_FILE are known by
   * their digests alone, so each word is hashed and compared as verify compares a token.
   */
  heldIn(text: string): boolean {
    if (this.#tokens.length === 0) return false
    for (const word of wordsOf(text, MIN_ADMIN_TOKEN_CHARS)) if (this.verify(word) !== null) return true
    return false
  }

  /** The token's holder and role (the first that matches), or null. Every digest is compared, in constant time each. */
  verify(token: string): AdminActor | null {
    const offered = hash('sha256', token, 'buffer')
    let actor: AdminActor | null = null
    for (const t of this.#tokens) if (timingSafeEqual(offered, t.digest) && actor === null) actor = { name: t.name, role: t.role }
    return actor
  }
}
