import { createHmac, randomBytes } from 'node:crypto'

// Tokens shaped like Laravel Passport's (a JWT with aud = client id, sub = user id),
// so the gateway's expiry logic reads `exp` from them exactly as in production.
// The sandbox signs with HS256 and a per-sandbox secret: nobody verifies the
// signature but the sandbox itself, and it looks tokens up instead.

export interface JwtClaims {
  aud: string
  jti: string
  iat: number
  nbf: number
  exp: number
  sub: string
  scopes: string[]
}

const HEADER = base64url({ typ: 'JWT', alg: 'HS256' })

export function newJwtSecret(): Buffer {
  return randomBytes(32)
}

export function mintJwt(claims: JwtClaims, secret: Buffer): string {
  const unsigned = `${HEADER}.${base64url(claims)}`
  return `${unsigned}.${createHmac('sha256', secret).update(unsigned).digest('base64url')}`
}

function base64url(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url')
}
