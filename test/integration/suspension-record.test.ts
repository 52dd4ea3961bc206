import { describe, expect, it } from 'vitest'
import { pino } from 'pino'
import { TeamSuspensions } from '../../src/access/team-suspensions.js'
import { RedisBreaker } from '../../src/redis/breaker.js'
import { RedisSeal } from '../../src/redis/seal.js'
import { fakeClock } from '../helpers/clock.js'
import { useRedis } from '../helpers/fixtures.js'
import { waitFor } from '../helpers/wait.js'
import { redisAvailability } from '../helpers/start-redis.js'

// The team suspensions a replica that starts later reads from Redis: a hash with no
// expiry, so that a Redis evicting keys with one at its maxmemory (volatile-lru, the
// replicas guide's policy for the report copies) keeps it; the ended ones are dropped as
// the next is written.

const { available, notice } = redisAvailability()
if (notice) console.warn(notice)

const KEY = 'rgw:suspensions'
const HOUR = 3_600_000
const silent = pino({ level: 'silent' })
const seal = new RedisSeal('suspension-record-test-secret-0000000')

describe.skipIf(!available)('the shared record of team suspensions', () => {
  const { client } = useRedis()
  const clock = fakeClock()
  const suspensions = () =>
    new TeamSuspensions({ redis: client, breaker: new RedisBreaker({ cooldownMs: 60_000, log: silent }), bus: null, seal, keyPrefix: 'rgw:', periodMs: HOUR, clock, log: silent, onSuspended: () => undefined, onUnverified: () => undefined })
  const written = (team: string) => waitFor(`the suspension of ${team} in Redis`, async () => (await client.hexists(KEY, team)) === 1)

  it('carries no expiry, and drops the suspensions that ended at the next one written', async () => {
    const replica = suspensions()
    replica.suspend('growth', 'k1', 'x-request-id')
    await written('growth')
    expect(await client.pttl(KEY)).toBe(-1)
    clock.advance(HOUR / 2)
    replica.suspend('dash', 'k2', 'query')
    await written('dash')
    clock.advance(HOUR / 2)
    // growth's ended now, dash's not: written next, growth's is dropped, dash's kept.
    replica.suspend('ads', 'k3', 'body')
    await written('ads')
    await waitFor('the ended suspension dropped', async () => (await client.hlen(KEY)) === 2)
    expect((await client.hkeys(KEY)).sort()).toEqual(['ads', 'dash'])
    expect(await client.pttl(KEY)).toBe(-1)
    const later = suspensions()
    await later.start()
    expect(later.list().map((s) => s.team)).toEqual(['dash', 'ads'])
  })

  it('keeps a lift as the moment it was made: a replica that held the suspension drops it; a suspension begun after it stands; the lift\'s record goes a period on', async () => {
    const lifter = suspensions()
    const holder = suspensions()
    lifter.suspend('growth', 'k1', 'x-request-id')
    await written('growth')
    await holder.start()
    expect(holder.list().map((s) => s.team)).toEqual(['growth'])
    clock.advance(1000)
    expect(await lifter.lift('growth')).toEqual({ lifted: true, replicas: 'all' })
    // The holder heard no bus (none here): it reads the lift when Redis is back to it.
    await holder.catchUp()
    expect(holder.list()).toEqual([])
    // A suspension Redis does not hold, and no lift for: written again (Redis lost it).
    holder.suspend('dash', 'k2', 'query')
    await written('dash')
    await client.hdel(KEY, 'dash')
    await holder.catchUp()
    await written('dash')
    // A hit after the lift suspends the team again, over the lift's record.
    clock.advance(1000)
    lifter.suspend('growth', 'k1', 'body')
    await waitFor('the new suspension over the lift', async () => Number(seal.openText(`${KEY}#growth`, (await client.hget(KEY, 'growth')) as string)) > 0)
    await holder.catchUp()
    expect(holder.list().map((s) => s.team).sort()).toEqual(['dash', 'growth'])
    // The lift of dash ends its record a period on, when the next suspension is written.
    await holder.lift('dash')
    clock.advance(HOUR)
    lifter.suspend('ads', 'k3', 'body')
    await written('ads')
    await waitFor('the lift\'s record dropped', async () => (await client.hexists(KEY, 'dash')) === 0)
  })
})
