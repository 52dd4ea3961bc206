import { describe, expect, it } from 'vitest'
import { DEFAULT_TOKEN_LIFETIME_MS, crossedWarnings, jwtExpiry, refreshAt, tokenExpiry } from '../../src/platform/tokens/token-expiry.js'

const DAY = 86_400_000
const NOW = Date.UTC(2026, 0, 10, 12)

function b64(value: unknown): string {
  return Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url')
}

/** A JWT-shaped token; the signature is junk because the gateway never verifies it. */
function jwt(payload: unknown): string {
  return `${b64({ typ: 'JWT', alg: 'RS256' })}.${b64(payload)}.c2lnbmF0dXJl`
}

describe('jwtExpiry', () => {
  it('reads exp (seconds) from the payload, without verifying the signature', () => {
    expect(jwtExpiry(jwt({ sub: '100', exp: 1_800_000_000 }))).toBe(1_800_000_000_000)
  })

  it('reads a payload that uses base64url characters (- and _)', () => {
    // A name chosen so the base64url payload holds '-' or '_', which plain base64 would not decode.
    const payload = { exp: 1_800_000_000, name: '>>>???~~~' }
    const token = jwt(payload)
    expect(token.split('.')[1]).toMatch(/[-_]/)
    expect(jwtExpiry(token)).toBe(1_800_000_000_000)
  })

  it.each([
    ['an opaque token', 'f3a9c2d1e0b87a6554433221100ffeeddccbbaa9'],
    ['two parts', `${b64({ alg: 'none' })}.${b64({ exp: 1_800_000_000 })}`],
    ['four parts', `${jwt({ exp: 1_800_000_000 })}.extra`],
    ['a payload that is not JSON', `${b64({ alg: 'RS256' })}.${b64('not json')}.sig`],
    ['a payload that is JSON null', `${b64({ alg: 'RS256' })}.${b64('null')}.sig`],
    ['no exp', jwt({ sub: '100', iat: 1_700_000_000 })],
    ['exp as a string', jwt({ exp: '1800000000' })],
    ['exp zero', jwt({ exp: 0 })],
    ['exp negative', jwt({ exp: -5 })],
  ])('gives null for %s', (_label, token) => {
    expect(jwtExpiry(token)).toBeNull()
  })
})

describe('tokenExpiry', () => {
  it('prefers the JWT exp over expires_in', () => {
    expect(tokenExpiry(jwt({ exp: 1_800_000_000 }), NOW, 60)).toBe(1_800_000_000_000)
  })

  it('uses expires_in (seconds from when the token was obtained) when the token is not a JWT', () => {
    expect(tokenExpiry('opaque-token-value', NOW, 3600)).toBe(NOW + 3_600_000)
  })

  it('uses expires_in when the JWT has no exp', () => {
    expect(tokenExpiry(jwt({ sub: '1' }), NOW, 120)).toBe(NOW + 120_000)
  })

  it.each([
    ['absent', undefined],
    ['a string', '3600'],
    ['zero', 0],
    ['negative', -1],
    ['not finite', Number.POSITIVE_INFINITY],
    ['NaN', Number.NaN],
  ])('falls back to one year after it was obtained when expires_in is %s', (_label, expiresIn) => {
    expect(tokenExpiry('opaque-token-value', NOW, expiresIn)).toBe(NOW + DEFAULT_TOKEN_LIFETIME_MS)
  })

  // A platform (or an ops-pasted token) whose JWT exp or expires_in lies past the last
  // instant a Date holds made /admin/token, POST /admin/token/refresh and /metrics
  // answer 500 (RangeError: Invalid time value) for as long as the token was in use.
  it.each([
    ['a JWT exp', jwt({ exp: 1e300 }), undefined],
    ['a JWT exp just past the last date', jwt({ exp: 8.64e12 + 1 }), undefined],
    ['expires_in', 'opaque-token-value', 1e300],
  ])('keeps an expiry past the last date a Date holds (%s) within it', (_label, token, expiresIn) => {
    const at = tokenExpiry(token, NOW, expiresIn)
    expect(Number.isFinite(at)).toBe(true)
    expect(() => new Date(at).toISOString()).not.toThrow()
    expect(at).toBeGreaterThan(NOW + DEFAULT_TOKEN_LIFETIME_MS)
  })

  it('the default lifetime is 365 days', () => {
    expect(DEFAULT_TOKEN_LIFETIME_MS).toBe(365 * DAY)
  })
})

describe('refreshAt', () => {
  it('is refreshBefore ahead of expiry', () => {
    expect(refreshAt(NOW + 365 * DAY, 7 * DAY, NOW)).toBe(NOW + 358 * DAY)
  })

  it('is never sooner than a minute after the token was obtained (no login loop for short-lived tokens)', () => {
    expect(refreshAt(NOW + 3600_000, 7 * DAY, NOW)).toBe(NOW + 60_000)
    expect(refreshAt(NOW - DAY, 7 * DAY, NOW)).toBe(NOW + 60_000)
  })
})

describe('crossedWarnings', () => {
  const thresholds = [30 * DAY, 7 * DAY]

  it('warns for nothing while more than 30 days are left', () => {
    expect(crossedWarnings(thresholds, null, 31 * DAY)).toEqual([])
    expect(crossedWarnings(thresholds, 32 * DAY, 31 * DAY)).toEqual([])
  })

  it('warns once when 30 days are crossed, not again on the next reading', () => {
    expect(crossedWarnings(thresholds, 30 * DAY + 1, 30 * DAY)).toEqual([30 * DAY])
    expect(crossedWarnings(thresholds, 30 * DAY, 29 * DAY)).toEqual([])
  })

  it('warns once when 7 days are crossed', () => {
    expect(crossedWarnings(thresholds, 8 * DAY, 6 * DAY)).toEqual([7 * DAY])
    expect(crossedWarnings(thresholds, 6 * DAY, 5 * DAY)).toEqual([])
  })

  it('on the first reading (start, or a new token) warns for every threshold already passed', () => {
    expect(crossedWarnings(thresholds, null, 20 * DAY)).toEqual([30 * DAY])
    expect(crossedWarnings(thresholds, null, 3 * DAY)).toEqual([30 * DAY, 7 * DAY])
    expect(crossedWarnings(thresholds, null, -DAY)).toEqual([30 * DAY, 7 * DAY])
  })

  it('a jump over both thresholds warns for both', () => {
    expect(crossedWarnings(thresholds, 40 * DAY, 1 * DAY)).toEqual([30 * DAY, 7 * DAY])
  })
})
