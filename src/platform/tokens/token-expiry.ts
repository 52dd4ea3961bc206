// Expiry maths of platform tokens: a JWT's `exp` when the token is a JWT
// (decoded, not verified: the platform verifies it), else the token reply's
// `expires_in`, else one year from when it was obtained (platform-api.md).

export const DEFAULT_TOKEN_LIFETIME_MS = 365 * 24 * 3600 * 1000

export function jwtExpiry(token: string): number | null {
  const parts = token.split('.')
  if (parts.length !== 3) return null
  try {
    const payload: unknown = JSON.parse(Buffer.from(parts[1] as string, 'base64url').toString('utf8'))
    const exp = (payload as { exp?: unknown }).exp
    return typeof exp === 'number' && Number.isFinite(exp) && exp > 0 ? exp * 1000 : null
  } catch {
    return null
  }
}

export function tokenExpiry(token: string, obtainedAt: number, expiresInSeconds?: unknown): number {
  const fromJwt = jwtExpiry(token)
  if (fromJwt !== null) return fromJwt
  if (typeof expiresInSeconds === 'number' && Number.isFinite(expiresInSeconds) && expiresInSeconds > 0) {
    return obtainedAt + expiresInSeconds * 1000
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
