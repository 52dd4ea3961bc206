import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { createMetrics } from '../../src/observe/metrics.js'
import { TeamUsage, utcDay } from '../../src/observe/usage.js'
import { RedisBreaker } from '../../src/redis/breaker.js'
import { useRedis } from '../helpers/fixtures.js'

// A Redis restarted without its data (or flushed) while replicas run: each had named its
// teams in the day's set of teams once, and must name them again, or `GET /admin/usage`
// (every team) answers the day with no team at all until the next UTC day; and each gives
// back the counts of the day it had added, once, or a team that spent its day's
// platform-seconds (teams.<name>.platformSecondsPerDay) gets them again (black-box pass H).

const redis = useRedis()

describe('usage after Redis lost its data', () => {
  it('names the day\'s teams again, and each run gives back the day\'s counts it had added, once', async () => {
    const replica = () => new TeamUsage({
      redis: redis.client,
      breaker: new RedisBreaker({ cooldownMs: 1000, log: pino({ level: 'silent' }) }),
      prefix: 'rgw:',
      metrics: createMetrics(),
      flushMs: 3_600_000,
      retentionDays: 2,
    })
    const [a, b] = [replica(), replica()]
    const day = utcDay(Date.now())
    a.request('growth', 200, true, 10)
    a.platformSpent('growth', 700)
    b.request('growth', 200, false, 10)
    b.platformSpent('growth', 400)
    await Promise.all([a.flush(), b.flush()])
    const row = async () => (await a.query(day, day, null))?.map((r) => [r.team, r.requests, r.platformSeconds])
    expect(await row()).toEqual([['growth', 2, 1.1]])

    await redis.client.flushall() // as a Redis restarted empty

    // Each run's next flush of the team gives its day back, once; a later flush adds its own counts alone.
    a.request('growth', 200, true, 10)
    await a.flush()
    expect(await row()).toEqual([['growth', 2, 0.7]])
    b.request('growth', 200, true, 10)
    b.platformSpent('growth', 100)
    await b.flush()
    expect(await row()).toEqual([['growth', 4, 1.2]])
    a.request('growth', 200, true, 10)
    await a.flush()
    expect(await row()).toEqual([['growth', 5, 1.2]])
  })
})
