import { afterAll, describe, expect, it } from 'vitest'
import { Redis } from 'ioredis'
import { pino } from 'pino'
import type { TeamConfig } from '../../src/config.js'
import type { Clock } from '../../src/clock.js'
import { RedisBreaker } from '../../src/redis/breaker.js'
import { RateLimiter } from '../../src/access/rate-limit.js'
import { TeamDirectory } from '../../src/access/team-auth.js'
import { useRedis } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { onRealTimers } from '../helpers/clock.js'

// Team limits shared across replicas without a Redis round trip per request.

const { available, notice } = redisAvailability()
if (notice) console.warn(notice)
const silent = pino({ level: 'silent' })

function team(name: string, max: number): TeamConfig {
  return { name, keys: [], advertisers: null, write: false, refresh: false, credential: 'default', rateLimit: { max, windowMs: 60_000 }, weight: 1, maxConcurrent: null, queue: null, platformSecondsPerDay: null, webhook: null }
}

// Every team named here is configured: its windows are kept while current (each one's is 60 s long).
const everyTeam = { teamOf: (name: string) => team(name, 1), onReplace: () => undefined }

function admitted(limiter: RateLimiter, t: TeamConfig, n: number): number {
  let allowed = 0
  for (let i = 0; i < n; i++) if (limiter.hit(t).allowed) allowed++
  return allowed
}

describe('RateLimiter without Redis', () => {
  it('admits exactly max per window and tells when the window ends', () => {
    let now = 120_000 + 15_000
    const limiter = new RateLimiter({ redis: null, breaker: null, prefix: 't:', teams: everyTeam, clock: onRealTimers(() => now) })
    const t = team('solo', 5)
    expect(admitted(limiter, t, 8)).toBe(5)
    expect(limiter.hit(t)).toEqual({ allowed: false, retryAfterSec: 45, remaining: 0, resetSec: 45 })
    now += 45_000
    expect(admitted(limiter, t, 8)).toBe(5)
  })

  it('never limits a team without a rate limit', () => {
    const limiter = new RateLimiter({ redis: null, breaker: null, prefix: 't:', teams: everyTeam })
    expect(admitted(limiter, { ...team('free', 1), rateLimit: null }, 100)).toBe(100)
  })
})

describe.skipIf(!available)('RateLimiter shared through Redis', () => {
  const { server } = useRedis()
  const clients: Redis[] = []

  afterAll(() => {
    for (const c of clients) c.disconnect()
  })

  async function replica(prefix: string, url = server.url): Promise<RateLimiter> {
    const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, commandTimeout: 200, retryStrategy: () => null })
    redis.on('error', () => undefined)
    clients.push(redis)
    await redis.connect().catch(() => undefined)
    return new RateLimiter({ redis, breaker: new RedisBreaker({ cooldownMs: 60_000, log: silent }), prefix, teams: everyTeam, syncMs: 60_000 })
  }

  it('shares one budget between two replicas after a sync, overshooting by at most one interval of traffic', async () => {
    const [a, b] = [await replica('share:'), await replica('share:')]
    const t = team('growth', 10)
    await a.sync()
    // Before any sync each replica only knows its own hits: the bound of the design.
    expect(admitted(a, t, 6)).toBe(6)
    expect(admitted(b, t, 6)).toBe(6)
    await a.sync()
    await b.sync()
    // b synced last and knows both replicas' hits; a learns b's at its next sync.
    expect(admitted(b, t, 5)).toBe(0)
    // a had no hit since its sync: nothing of a's to add, it sends nothing and learns b's
    // hits at its next sync after a hit of its own.
    await a.sync()
    expect(admitted(a, t, 1)).toBe(1)
    await a.sync()
    expect(admitted(a, t, 5)).toBe(0)
    const key = (await clients[0]!.keys('share:*'))[0] as string
    expect(key).toMatch(/^share:rl:\{growth\}:\d+$/)
    expect(await clients[0]!.get(key)).toBe('13')
    expect(await clients[0]!.pttl(key)).toBeGreaterThan(60_000)
    await a.close()
    await b.close()
  })

  it('adds hits made while a sync is in flight to the next one', async () => {
    const a = await replica('flight:')
    const t = team('t', 100)
    admitted(a, t, 3)
    const syncing = a.sync()
    admitted(a, t, 2)
    await syncing
    await a.sync()
    expect(await clients.at(-1)!.get((await clients.at(-1)!.keys('flight:*'))[0] as string)).toBe('5')
    await a.close()
  })

  it('syncs only the teams with hits since the last sync, and a team quiet for an interval at its next hit', async () => {
    const redis = new Redis(server.url)
    clients.push(redis)
    let now = 1_000_000
    const clock = { ...onRealTimers(() => now), setInterval: () => ({ unref() { return this } }), clearInterval: () => undefined } as unknown as Clock
    const make = () => new RateLimiter({ redis, breaker: new RedisBreaker({ cooldownMs: 60_000, log: silent }), prefix: 'quiet:', teams: everyTeam, syncMs: 500, clock })
    const [a, b] = [make(), make()]
    a.start()
    b.start()
    const [busy, quiet] = [team('busy', 100), team('quiet', 10)]
    const counted = async (fn: () => Promise<void>): Promise<number> => {
      await redis.config('RESETSTAT')
      await fn()
      const stats = await redis.info('commandstats')
      return Number(/cmdstat_evalsha:calls=(\d+)/.exec(stats)?.[1] ?? 0)
    }
    admitted(a, busy, 1)
    admitted(a, quiet, 1)
    await a.sync()
    // Nothing since: nothing sent, however many teams have a window open.
    expect(await counted(() => a.sync())).toBe(0)
    expect(await counted(async () => {
      admitted(a, busy, 3)
      await a.sync()
    })).toBe(1)
    // b uses up the quiet team's budget; a, quiet for an interval, syncs at its next hit.
    expect(admitted(b, quiet, 9)).toBe(9)
    await b.sync()
    now += 500
    expect(admitted(a, quiet, 1)).toBe(1)
    await a.sync()
    expect(admitted(a, quiet, 5)).toBe(0)
    await a.close()
    await b.close()
  })

  it('keeps the windows of the teams configured now: a reload drops a removed team\'s, whose hits are then synced nowhere', async () => {
    const redis = new Redis(server.url)
    clients.push(redis)
    const [kept, removed] = [team('kept', 10), team('removed', 10)]
    const teams = new TeamDirectory([kept, removed])
    const limiter = new RateLimiter({ redis, breaker: new RedisBreaker({ cooldownMs: 60_000, log: silent }), prefix: 'reload:', teams, syncMs: 60_000 })
    admitted(limiter, kept, 2)
    admitted(limiter, removed, 3)
    expect(limiter.size).toBe(2)
    teams.replace([kept])
    expect(limiter.size).toBe(1)
    await limiter.sync()
    expect(await redis.keys('reload:*')).toEqual([expect.stringMatching(/^reload:rl:\{kept\}:\d+$/)])
    await limiter.close()
  })

  it('counts locally while Redis is unreachable', async () => {
    const gone = await replica('gone:', 'redis://127.0.0.1:1')
    const t = team('t', 4)
    await gone.sync()
    expect(admitted(gone, t, 10)).toBe(4)
    await gone.sync()
    expect(admitted(gone, t, 10)).toBe(0)
    await gone.close()
  })
})
