import { describe, expect, it } from 'vitest'
import type { TeamConfig } from '../../src/config.js'
import { hashApiKey, newApiKey } from '../../src/access/api-keys.js'
import { TeamDirectory } from '../../src/access/team-auth.js'
import { rateLimitHeaders } from '../../src/access/rate-limit-headers.js'
import { RateLimiter } from '../../src/access/rate-limit.js'
import { TeamUsage, answeredByCache, usageResult } from '../../src/observe/usage.js'
import { createMetrics } from '../../src/observe/metrics.js'
import { fakeClock, onRealTimers } from '../helpers/clock.js'

const KEY = 'rgw_directory_test_key_000000000000000000000'
const OTHER = 'rgw_directory_test_key_111111111111111111111'

function team(name: string, keys: { key: string; id?: string; expiresAt?: number; successor?: string; graceUntil?: number }[], rateLimit: TeamConfig['rateLimit'] = null): TeamConfig {
  return {
    name,
    keys: keys.map((k) => ({
      hash: hashApiKey(k.key),
      id: k.id ?? name,
      lineage: k.id ?? name,
      replaces: null,
      successor: k.successor ?? null,
      graceUntil: k.graceUntil ?? null,
      expiresAt: k.expiresAt ?? null,
      createdAt: null,
    })),
    advertisers: null,
    write: false,
    refresh: false,
    credential: 'default',
    rateLimit,
    weight: 1,
    maxConcurrent: null,
    queue: null,
    platformSecondsPerDay: null,
    webhook: null,
  }
}

describe('TeamDirectory', () => {
  it('finds a key in text as it is, percent-encoded, or leading more key characters (`<key>x`): a made key always, another once read', () => {
    const made = newApiKey()
    const dir = new TeamDirectory([team('growth', [{ key: made }]), team('other', [{ key: KEY }])])
    for (const text of [`/x/${made}`, `/x/${made}x`, `/x/${made}-`, `q=${made}_&a=1`, `/x/${made.replace('_', '%5F')}x`]) expect([text, dir.holdsKey(text)]).toEqual([text, true])
    expect(dir.holdsKey(`/x/${made.slice(0, -1)}`)).toBe(false)
    expect(dir.holdsKey('/x/rgw_not_a_key_of_anyone_0000000000000000000x')).toBe(false)
    // A key of another length than a made one is found leading other characters once a call was read with it.
    expect(dir.holdsKey(`/x/${KEY}x`)).toBe(false)
    dir.authenticate({ 'x-api-key': KEY })
    expect(dir.holdsKey(`/x/${KEY}x`)).toBe(true)
  })

  it("knows a running team's webhook secret as the log scrubs it, whole or its key's base64, and no longer once a reload removed it", () => {
    const secret = 'whsec_Q2hhbmdlZC1XZWJob29rLUtleS0wMTIzNDU2Nzg5'
    const hooked = { ...team('growth', [{ key: KEY }]), webhook: { url: 'http://localhost:9/hook', secret } }
    const dir = new TeamDirectory([hooked, team('other', [{ key: OTHER }])])
    expect([secret, secret.slice('whsec_'.length), `${secret}x`, 'whsec_', ''].map((text) => dir.isWebhookSecret(text))).toEqual([true, true, false, false, false])
    dir.replace([team('growth', [{ key: KEY }])])
    expect(dir.isWebhookSecret(secret)).toBe(false)
  })

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

  it('tells who listens of each replace, the teams already new (the room for job results reads them)', () => {
    const dir = new TeamDirectory([team('growth', [{ key: KEY }])])
    const seen: number[] = []
    dir.onReplace(() => seen.push(dir.teams.length))
    dir.replace([team('growth', [{ key: KEY }]), team('writer', [{ key: OTHER }])])
    expect(seen).toEqual([2])
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

describe('TeamDirectory.current: an admitted call looked up again', () => {
  it('is the running team and key while the key runs, the team as a reload made it', () => {
    const dir = new TeamDirectory([team('growth', [{ key: KEY }])])
    const admitted = dir.authenticate({ 'x-api-key': KEY })
    const renewed = { ...team('growth', [{ key: KEY }]), advertisers: new Set([101]) }
    dir.replace([renewed])
    expect(dir.current(admitted).team).toBe(renewed)
  })

  it('is 401 once a reload removed the key, or gave it to another team', () => {
    const dir = new TeamDirectory([team('growth', [{ key: KEY }, { key: OTHER }])])
    const admitted = dir.authenticate({ 'x-api-key': KEY })
    dir.replace([team('growth', [{ key: OTHER }])])
    expect(() => dir.current(admitted)).toThrow(expect.objectContaining({ code: 'GW_UNAUTHORIZED', statusCode: 401 }))
    dir.replace([team('growth', [{ key: OTHER }]), team('writer', [{ key: KEY }])])
    expect(() => dir.current(admitted)).toThrow(expect.objectContaining({ code: 'GW_UNAUTHORIZED', statusCode: 401 }))
  })

  it('is 401 naming the expiry once the key expired while its call was under way', () => {
    let now = Date.parse('2026-12-31T23:59:59Z')
    const dir = new TeamDirectory([team('growth', [{ key: KEY, id: 'growth-2026', expiresAt: Date.parse('2027-01-01T00:00:00Z') }])], () => now)
    const admitted = dir.authenticate({ 'x-api-key': KEY })
    now += 2000
    expect(() => dir.current(admitted)).toThrow(expect.objectContaining({ statusCode: 401, message: 'API key growth-2026 expired at 2027-01-01T00:00:00.000Z; ask for a new key' }))
  })

  it('runningTeam: the team of the running key the headers present, null for none, an unknown or a removed one', () => {
    const dir = new TeamDirectory([team('growth', [{ key: KEY }])])
    expect(dir.runningTeam({ 'x-api-key': KEY })).toBe('growth')
    expect(dir.runningTeam({ authorization: `Bearer ${KEY}` })).toBe('growth')
    expect(dir.runningTeam({})).toBeNull()
    expect(dir.runningTeam({ 'x-api-key': OTHER })).toBeNull()
    dir.replace([team('growth', [{ key: OTHER }]), team('writer', [{ key: KEY }])])
    expect(dir.runningTeam({ 'x-api-key': KEY })).toBe('writer')
    dir.replace([team('growth', [{ key: OTHER }])])
    expect(dir.runningTeam({ 'x-api-key': KEY })).toBeNull()
  })
})

describe('a rotated key', () => {
  const refusal = (dir: TeamDirectory, key: string) => {
    try {
      dir.authenticate({ 'x-api-key': key })
    } catch (err) {
      return err as Error & { code?: string; statusCode?: number }
    }
    return null
  }

  it('works until its grace ends, then is refused with 401 naming its successor, remembered or not; the successor works throughout', () => {
    const grace = Date.parse('2026-03-08T12:00:00Z')
    let now = grace - 1000
    const dir = new TeamDirectory([team('growth', [{ key: KEY, id: 'growth-1', successor: 'growth-2', graceUntil: grace }, { key: OTHER, id: 'growth-2' }])], () => now)
    expect(dir.authenticate({ 'x-api-key': KEY }).key.id).toBe('growth-1')
    now = grace
    const error = refusal(dir, KEY)
    expect(error).toMatchObject({ code: 'GW_UNAUTHORIZED', statusCode: 401 })
    expect(error?.message).toBe('API key growth-1 was replaced by growth-2: its grace ended at 2026-03-08T12:00:00.000Z; use the key growth-2 (your team was given it)')
    expect(error?.message).not.toContain(KEY)
    expect(dir.authenticate({ 'x-api-key': OTHER }).key.id).toBe('growth-2')
  })

  it('names its successor also when its own end comes first', () => {
    const end = Date.parse('2026-03-05T00:00:00Z')
    const dir = new TeamDirectory([team('growth', [{ key: KEY, id: 'growth-1', expiresAt: end, successor: 'growth-2', graceUntil: end + 86_400_000 }])], () => end)
    expect(refusal(dir, KEY)?.message).toBe('API key growth-1 was replaced by growth-2: its grace ended at 2026-03-05T00:00:00.000Z; use the key growth-2 (your team was given it)')
  })

  it('is no key about to expire in gateway_api_key_expiry_seconds: its successor carries on', async () => {
    const now = Date.parse('2026-03-01T00:00:00Z')
    const dir = new TeamDirectory([team('growth', [{ key: KEY, id: 'growth-1', expiresAt: now + 86_400_000, successor: 'growth-2', graceUntil: now + 3600_000 }, { key: OTHER, id: 'growth-2', expiresAt: now + 90 * 86_400_000 }])], () => now)
    expect(dir.keyLifetimes()).toEqual([{ team: 'growth', key: 'growth-2', secondsLeft: 90 * 86_400 }])
  })
})

describe('gateway_api_key_expiry_seconds', () => {
  const series = async (metrics: ReturnType<typeof createMetrics>) =>
    (await metrics.registry.getSingleMetricAsString('gateway_api_key_expiry_seconds')).split('\n').filter((l) => l !== '' && !l.startsWith('#'))

  it('gives the seconds left of each key with an end, by team and key id (negative once passed), and follows the running teams', async () => {
    let now = Date.parse('2027-01-01T00:00:00Z')
    const THIRD = 'rgw_directory_test_key_222222222222222222222'
    const dir = new TeamDirectory(
      [team('growth', [{ key: KEY, id: 'growth-2027', expiresAt: now + 14 * 86_400_000 }, { key: OTHER, id: 'growth-2026', expiresAt: now - 60_000 }]), team('ops', [{ key: THIRD, id: 'ops-forever' }])],
      () => now,
    )
    const metrics = createMetrics()
    metrics.watchKeyLifetimes(() => dir.keyLifetimes())
    expect(await series(metrics)).toEqual(['gateway_api_key_expiry_seconds{team="growth",key="growth-2027"} 1209600', 'gateway_api_key_expiry_seconds{team="growth",key="growth-2026"} -60'])
    // A reload that drops a key and adds one shows at the next scrape; the time left runs down.
    now += 1500
    dir.replace([team('growth', [{ key: KEY, id: 'growth-2027', expiresAt: Date.parse('2027-01-15T00:00:00Z') }]), team('ops', [{ key: THIRD, id: 'ops-2027', expiresAt: Date.parse('2027-03-01T00:00:00Z') }])])
    expect(await series(metrics)).toEqual(['gateway_api_key_expiry_seconds{team="growth",key="growth-2027"} 1209598.5', 'gateway_api_key_expiry_seconds{team="ops",key="ops-2027"} 5097598.5'])
    dir.replace([])
    expect(await series(metrics)).toEqual([])
    // Never a key or its hash in a label.
    const text = await metrics.registry.metrics()
    for (const k of [KEY, OTHER, THIRD]) expect(text).not.toContain(hashApiKey(k).slice(7, 19))
  })
})

describe('rate-limit headers (IETF draft form)', () => {
  it('give the quota and window, and what is left and when the window ends', () => {
    let now = 60_000 * 1000 + 18_000
    const limited = team('limited', [], { max: 2, windowMs: 60_000 })
    const limiter = new RateLimiter({ redis: null, breaker: null, prefix: 'x:', teams: new TeamDirectory([limited]), clock: onRealTimers(() => now) })
    const first = limiter.hit(limited)
    expect(rateLimitHeaders(limited, first)).toEqual(['"default";q=2;w=60', '"default";r=1;t=42'])
    now += 1000
    expect(rateLimitHeaders(limited, limiter.hit(limited))).toEqual(['"default";q=2;w=60', '"default";r=0;t=41'])
    const refused = limiter.hit(limited)
    expect(refused).toMatchObject({ allowed: false, retryAfterSec: 41, remaining: 0 })
    // A peek does not count.
    expect(limiter.peek(limited)).toMatchObject({ allowed: false, remaining: 0, resetSec: 41 })
  })

  it('are kept for the teams configured now: a reload drops the windows of the teams it removed, without Redis', () => {
    const clock = fakeClock(60_000 * 1000)
    const dir = new TeamDirectory([])
    const limiter = new RateLimiter({ redis: null, breaker: null, prefix: 'x:', clock, teams: dir })
    for (let round = 0; round < 50; round++) {
      const teams = [0, 1, 2].map((i) => team(`t${round}-${i}`, [], { max: 5, windowMs: 3_600_000 }))
      dir.replace(teams)
      for (const t of teams) expect(limiter.hit(t).allowed).toBe(true)
      expect(limiter.size).toBeLessThanOrEqual(teams.length)
      clock.advance(1000)
    }
  })

  it('are absent for a team without a limit', () => {
    const open = team('open', [])
    const limiter = new RateLimiter({ redis: null, breaker: null, prefix: 'x:', teams: new TeamDirectory([open]) })
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

describe('TeamUsage without Redis', () => {
  it('keeps daily totals per team across a day boundary and a flush, and publishes Prometheus counts at scrape', async () => {
    let now = Date.parse('2026-11-22T23:59:59Z')
    const metrics = createMetrics()
    const usage = new TeamUsage({ redis: null, breaker: null, prefix: 'x:', metrics, flushMs: 60_000, retentionDays: 2, clock: onRealTimers(() => now) })
    usage.request('growth', 200, true, 100)
    usage.platformCall('growth')
    usage.platformSpent('growth', 1234.2)
    usage.request('growth', 200, false, 50)
    await usage.flush()
    usage.request('growth', 429, false, 10)
    now += 2000
    usage.request('growth', 502, false, 5)
    usage.request('ops', 200, true, 1)
    expect(await usage.query('2026-11-22', '2026-11-23', null)).toEqual([
      // A call's platform time is counted in whole ms, rounded up.
      { day: '2026-11-22', team: 'growth', requests: 3, cacheHits: 1, platformCalls: 1, bytes: 160, rateLimited: 1, errors: 0, platformCallsSaved: 1, platformSeconds: 1.235 },
      { day: '2026-11-23', team: 'growth', requests: 1, cacheHits: 0, platformCalls: 0, bytes: 5, rateLimited: 0, errors: 1, platformCallsSaved: 0, platformSeconds: 0 },
      { day: '2026-11-23', team: 'ops', requests: 1, cacheHits: 1, platformCalls: 0, bytes: 1, rateLimited: 0, errors: 0, platformCallsSaved: 1, platformSeconds: 0 },
    ])
    expect(await usage.query('2026-11-23', '2026-11-23', 'ops')).toHaveLength(1)

    usage.publishMetrics()
    usage.publishMetrics()
    const text = await metrics.registry.metrics()
    expect(text).toContain('gateway_team_requests_total{team="growth",result="hit"} 1')
    expect(text).toContain('gateway_team_requests_total{team="growth",result="rate_limited"} 1')
    expect(text).toContain('gateway_team_requests_total{team="growth",result="error"} 1')
    expect(text).toContain('gateway_team_platform_calls_total{team="growth"} 1')

    // Days older than the retention are dropped.
    now += 3 * 86_400_000
    usage.request('ops', 200, false, 1)
    await usage.flush()
    expect(await usage.query('2026-11-22', '2026-11-22', null)).toEqual([])
  })
})
