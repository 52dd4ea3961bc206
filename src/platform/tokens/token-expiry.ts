// Expiry maths of platform tokens: a JWT's `exp` when the token is a JWT
// (decoded, not verified: the platform verifies it), else the token reply's
// `expires_in`, else one year from when it was obtained (platform-api.md). A JWT's
// `sub` names the account a token acts for (TokenProvider.account).

export const DEFAULT_TOKEN_LIFETIME_MS = 365 * 24 * 3600 * 1000

/** The last instant a Date holds (ECMAScript's time value range): an expiry past it is kept at it, so it always prints. */
export const LAST_DATE_MS = 8_640_000_000_000_000

export function jwtExpiry(token: string): number | null {
  const exp = jwtClaims(token)?.exp
  return typeof exp === 'number' && Number.isFinite(exp) && exp > 0 ? exp * 1000 : null
}

/** A JWT's `sub` (Passport's: the user the token acts for), or null when the token is no JWT naming one. */
export function jwtSubject(token: string): string | null {
  const sub = jwtClaims(token)?.sub
  return typeof sub === 'string' && sub !== '' ? sub : typeof sub === 'number' && Number.isFinite(sub) ? String(sub) : null
}

/** A JWT's claims, decoded, not verified; null when the token is no JWT. */
function jwtClaims(token: string): Record<string, unknown> | null {
  const parts = token.split('.')
  if (parts.length !== 3) return null
  try {
    const payload: unknown = JSON.parse(Buffer.from(parts[1] as string, 'base64url').toString('utf8'))
    return typeof payload === 'object' && payload !== null ? (payload as Record<string, unknown>) : null
  } catch {
    return null
  }
}

export function tokenExpiry(token: string, obtainedAt: number, expiresInSeconds?: unknown): number {
  const fromJwt = jwtExpiry(token)
  if (fromJwt !== null) return Math.min(fromJwt, LAST_DATE_MS)
  if (typeof expiresInSeconds === 'number' && Number.isFinite(expiresInSeconds) && expiresInSeconds > 0) {
    return Math.min(obtainedAt + expiresInSeconds * 1000, LAST_DATE_MS)
  }
  return obtainedAt + DEFAULT_TOKEN_LIFETIME_MS
}

/** When a password-login token should be replaced: `refreshBeforeMs` ahead of expiry, at least a minute from now. */
export function refreshAt(expiresAt: number, refreshBeforeMs: number, now: number): number {
  return Math.max(expiresAt - refreshBeforeMs, now + 60_000)
}

/** The warning thresholds (ms left) crossed between two readings of time left. */
export function crossedWarnings(thresholdsMs: number[], previousLeftMs: number | null, leftMs: number): number[] {
  return thresholdsMs.filter((t) => leftMs <= t && (previousLeftMs === null || previousLeftMs > t))
}
