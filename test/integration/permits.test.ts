import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { MemoryPermits, type Permits, type Release, type Taken } from '../../src/platform/permits.js'
import { RedisPermits } from '../../src/platform/redis-permits.js'
import { RedisBreaker } from '../../src/redis.js'
import { useRedis } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// Issue 15: one suite for both kinds of permits (counted on a replica, leased in Redis).

const { available, notice } = redisAvailability()
if (notice) console.warn(notice)

const log = pino({ level: 'silent' })

function release(taken: Taken): Release {
  if ('full' in taken) throw new Error(`refused: ${taken.full} full`)
  return taken.release
}

function sharedSuite(name: string, make: (limit: number) => Permits) {
  describe(name, () => {
    it('grants `limit` permits, refuses the next, and grants again once one is given back', async () => {
      const permits = make(3)
      const held = [release(await permits.take('a', 3)), release(await permits.take('b', 3)), release(await permits.take('c', 3))]
      expect(await permits.take('d', 3)).toEqual({ full: 'credential' })
      expect(permits.held).toBe(3)
      held[0]?.()
      held[0]?.() // a second release gives back nothing more
      expect(permits.held).toBe(2)
      release(await permits.take('d', 3))
      expect(await permits.take('e', 3)).toEqual({ full: 'credential' })
    })

    it('holds a team to its own cap while other teams still get permits', async () => {
      const permits = make(4)
      release(await permits.take('a', 2))
      release(await permits.take('a', 2))
      expect(await permits.take('a', 2)).toEqual({ full: 'team' })
      release(await permits.take('b', 2))
      expect(permits.held).toBe(3)
    })
  })
}

sharedSuite('MemoryPermits', (limit) => new MemoryPermits(limit))

describe.skipIf(!available)('RedisPermits', () => {
  const redis = useRedis()
  const breaker = () => new RedisBreaker({ cooldownMs: 1000, log })
  const replica = (limit: number, leaseMs = 5000, perReplica = limit) =>
    new RedisPermits({ redis: redis.client, breaker: breaker(), bus: null, key: 'test:permits:default', credential: 'default', limit, perReplica, leaseMs, log, onLost: () => undefined, onFreed: () => undefined })

  sharedSuite('one replica', (limit) => replica(limit))

  it('counts the permits of every replica against one limit, and a team\'s cap across them', async () => {
    const [a, b] = [replica(4), replica(4)]
    release(await a.take('x', 2))
    release(await b.take('x', 2))
    expect(await b.take('x', 2)).toEqual({ full: 'team' })
    release(await b.take('y', 2))
    const last = release(await a.take('y', 2))
    expect(await a.take('z', 2)).toEqual({ full: 'credential' })
    expect([a.held, b.held]).toEqual([2, 2])
    last()
    await waitFor('the permit back in Redis', async () => 'release' in (await b.take('z', 2)))
  })

  it('lets a lease lapse once nobody renews it: a dead replica\'s permits come back', async () => {
    const lost: string[] = []
    const dying = new RedisPermits({ redis: redis.client, breaker: breaker(), bus: null, key: 'test:permits:default', credential: 'default', limit: 2, perReplica: 2, leaseMs: 400, log, onLost: () => lost.push('lost'), onFreed: () => undefined })
    release(await dying.take('x', 2))
    release(await dying.take('x', 2))
    const other = replica(2, 400)
    expect(await other.take('y', 2)).toEqual({ full: 'credential' })
    // The leases as a dead replica leaves them: renewed no more, older than the lease.
    const key = 'semaphore:test:permits:default'
    for (const member of await redis.client.zrange(key, 0, -1)) await redis.client.zadd(key, Date.now() - 1000, member)
    release(await other.take('y', 2))
    // The live holder finds its lease gone at its next renewal: counted, its call goes on.
    await waitFor('the lost leases noticed', () => lost.length === 2)
  })

  it('caps the replica at perReplica, counting the calls it has in flight, while Redis is down', async () => {
    const permits = replica(10, 5000, 2)
    release(await permits.take('x', 10))
    await redis.server.stop()
    try {
      release(await permits.take('x', 10))
      expect(await permits.take('x', 10)).toEqual({ full: 'credential' })
      expect(permits.held).toBe(2)
    } finally {
      await redis.server.restart()
    }
  })
})
