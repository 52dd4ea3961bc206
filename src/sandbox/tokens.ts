import { randomBytes } from 'node:crypto'
import { mintJwt, newJwtSecret } from './jwt.js'

interface TokenGrant {
  accountId: number
  /** Epoch milliseconds; null for pasted tokens, which never expire here. */
  expiresAt: number | null
}

const BEARER = /^Bearer\s+(\S+)\s*$/i

/**
 * Every token the sandbox answers to. A token counts only while it is in this
 * store, which is what makes revocation (and a sandbox restart) invalidate it.
 */
export class IssuedTokens {
  readonly #grants = new Map<string, TokenGrant>()
  readonly #secret = newJwtSecret()
  readonly #clientId: number

  constructor(clientId: number) {
    this.#clientId = clientId
  }

  issue(accountId: number, ttlSeconds: number): string {
    const iat = Math.floor(Date.now() / 1000)
    const exp = iat + ttlSeconds
    const token = mintJwt({
      aud: String(this.#clientId),
      jti: randomBytes(20).toString('hex'),
      iat,
      nbf: iat,
      exp,
      sub: String(accountId),
      scopes: [],
    }, this.#secret)
    this.#grants.set(token, { accountId, expiresAt: exp * 1000 })
    return token
  }

  accept(token: string, accountId: number): void {
    this.#grants.set(token, { accountId, expiresAt: null })
  }

  revoke(token: string): void {
    this.#grants.delete(token)
  }

  revokeAll(): void {
    this.#grants.clear()
  }

  /** The account behind an `authorization` header, or undefined for a missing, unknown, revoked or expired token. */
  authenticate(authorization: string | undefined): number | undefined {
    const token = authorization === undefined ? undefined : BEARER.exec(authorization)?.[1]
    const grant = token === undefined ? undefined : this.#grants.get(token)
    if (grant === undefined || (grant.expiresAt !== null && grant.expiresAt <= Date.now())) return undefined
    return grant.accountId
  }
}
