import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { createMetrics } from '../../src/observe/metrics.js'
import { TeamUsage, utcDay } from '../../src/observe/usage.js'
import { RedisBreaker } from '../../src/redis/breaker.js'
import { useRedis } from '../helpers/fixtures.js'

// A Redis restarted without its data (or flushed) while a replica runs: the replica had
// named its teams in the day's set of teams once, and must name them again, or
// `GET /admin/usage` (every team) answers the day with no team at all until the next UTC day.

const redis = useRedis()

describe('usage after Redis lost its data', () => {
  it('names the day\'s teams again, so a query of every team still finds them', async () => {
    const usage = new TeamUsage({
      redis: redis.client,
      breaker: new RedisBreaker({ cooldownMs: 1000, log: pino({ level: 'silent' }) }),
      prefix: 'rgw:',
      metrics: createMetrics(),
      flushMs: 3_600_000,
      retentionDays: 2,
    })
    const day = utcDay(Date.now())
    usage.request('growth', 200, true, 10)
    await usage.flush()
    expect((await usage.query(day, day, null))?.map((row) => row.team)).toEqual(['growth'])

    await redis.client.flushall() // as a Redis restarted empty

    usage.request('growth', 200, true, 10)
    await usage.flush()
    const rows = await usage.query(day, day, null)
    expect(rows?.map((row) => [row.team, row.requests])).toEqual([['growth', 1]])
  })
})
