import { describe, expect, it } from 'vitest'
import type { TeamConfig } from '../../src/config.js'
import { hashApiKey } from '../../src/teams/api-keys.js'
import { TeamDirectory } from '../../src/teams/team-auth.js'
import { rateLimitHeaders } from '../../src/teams/rate-limit-headers.js'
import { RateLimiter } from '../../src/teams/rate-limit.js'
import { answeredByCache, usageResult } from '../../src/teams/team-usage.js'

const KEY = 'rgw_directory_test_key_000000000000000000000'
const OTHER = 'rgw_directory_test_key_111111111111111111111'

function team(name: string, keys: { key: string; id?: string; expiresAt?: number }[], rateLimit: TeamConfig['rateLimit'] = null): TeamConfig {
  return {
    name,
    keys: keys.map((k) => ({ hash: hashApiKey(k.key), id: k.id ?? name, expiresAt: k.expiresAt ?? null })),
    advertisers: null,
    write: false,
    credential: 'default',
    rateLimit,
  }
}

describe('TeamDirectory (issue #8)', () => {
  it('names the team and the key', () => {
    const dir = new TeamDirectory([team('growth', [{ key: KEY, id: 'growth-2026' }])])
    const { team: t, key } = dir.authenticate({ 'x-api-key': KEY })
    expect(t.name).toBe('growth')
    expect(key.id).toBe('growth-2026')
  })

  it('refuses a key revoked by replace, even one it remembered', () => {
    const dir = new TeamDirectory([team('growth', [{ key: KEY }, { key: OTHER }])])
    dir.authenticate({ 'x-api-key': KEY })
    dir.replace([team('growth', [{ key: OTHER }])])
    expect(() => dir.authenticate({ 'x-api-key': KEY })).toThrow(expect.objectContaining({ code: 'GW_UNAUTHORIZED', statusCode: 401 }))
    expect(dir.authenticate({ 'x-api-key': OTHER }).team.name).toBe('growth')
  })

  it('refuses an expired key, remembered or not, with a message that says so and never holds the key', () => {
    let now = Date.parse('2026-12-31T23:59:59Z')
    const dir = new TeamDirectory([team('growth', [{ key: KEY, id: 'growth-2026', expiresAt: Date.parse('2027-01-01T00:00:00Z') }])], () => now)
    expect(dir.authenticate({ 'x-api-key': KEY }).team.name).toBe('growth')
    now += 1000
    let error: (Error & { code?: string; statusCode?: number }) | null = null
    try {
      dir.authenticate({ 'x-api-key': KEY })
    } catch (err) {
      error = err as Error
    }
    expect(error).toMatchObject({ code: 'GW_UNAUTHORIZED', statusCode: 401 })
    expect(error?.message).toBe('API key growth-2026 expired at 2027-01-01T00:00:00.000Z; ask for a new key')
    expect(error?.message).not.toContain(KEY)
  })
})

describe('rate-limit headers (IETF draft form)', () => {
  it('give the quota and window, and what is left and when the window ends', () => {
    let now = 60_000 * 1000 + 18_000
    const limiter = new RateLimiter({ redis: null, breaker: null, prefix: 'x:', now: () => now })
    const limited = team('limited', [], { max: 2, windowMs: 60_000 })
    const first = limiter.hit(limited)
    expect(rateLimitHeaders(limited, first)).toEqual(['"default";q=2;w=60', '"default";r=1;t=42'])
    now += 1000
    expect(rateLimitHeaders(limited, limiter.hit(limited))).toEqual(['"default";q=2;w=60', '"default";r=0;t=41'])
    const refused = limiter.hit(limited)
    expect(refused).toMatchObject({ allowed: false, retryAfterSec: 41, remaining: 0 })
    // A peek does not count.
    expect(limiter.peek(limited)).toMatchObject({ allowed: false, remaining: 0, resetSec: 41 })
  })

  it('are absent for a team without a limit', () => {
    const limiter = new RateLimiter({ redis: null, breaker: null, prefix: 'x:' })
    const open = team('open', [])
    expect(rateLimitHeaders(open, limiter.hit(open))).toBeNull()
  })
})

describe('usage results', () => {
  it.each([
    [200, 'HIT', 0, true],
    [200, 'STALE', 1, true],
    [200, 'MISS', 0, true],
    [200, 'MISS', 1, false],
    [200, 'REFRESH', 1, false],
    [200, 'BYPASS', 0, false],
    [200, null, 0, false],
    [502, 'MISS', 0, false],
  ] as const)('status %d, x-cache %s, %d own platform calls: a cache hit is %s', (status, cache, calls, hit) => {
    expect(answeredByCache(status, cache, calls)).toBe(hit)
  })

  it('labels answers', () => {
    expect([usageResult(200, true), usageResult(201, false), usageResult(429, false), usageResult(403, false), usageResult(502, false)]).toEqual([
      'hit',
      'ok',
      'rate_limited',
      'refused',
      'error',
    ])
  })
})
