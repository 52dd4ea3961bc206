import { setTimeout as sleep } from 'node:timers/promises'
import { pino } from 'pino'
import { Redis } from 'ioredis'
import { afterEach, describe, expect, it } from 'vitest'
import { MemoryPermits, type PermitRequest, type Permits, type Release, type Taken } from '../../src/platform/governor/permits.js'
import { RedisPermits } from '../../src/platform/governor/redis-permits.js'
import { redisKey } from '../../src/redis/keys.js'
import { RedisBreaker } from '../../src/redis/breaker.js'
import { useRedis } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// One suite for both kinds of permits (counted on a replica, leased in Redis).

const { available, notice } = redisAvailability()
if (notice) console.warn(notice)

const log = pino({ level: 'silent' })
const KEYS = redisKey.permits('test:', 'default')

function release(taken: Taken): Release {
  if ('full' in taken) throw new Error(`refused: ${taken.full} full`)
  return taken.release
}

/** A caller's call of `team` under `limit`, with an optional ceiling. */
function ask(team: string, limit: number, cap: number | null = null, more: Partial<PermitRequest> = {}): PermitRequest {
  return { team, priority: 'caller', weight: 1, cap, limit, ...more }
}

function sharedSuite(name: string, make: () => Permits) {
  describe(name, () => {
    it('grants `limit` permits, refuses the next, and grants again once one is given back', async () => {
      const permits = make()
      const taken = [await permits.take(ask('a', 3)), await permits.take(ask('b', 3)), await permits.take(ask('c', 3))]
      expect(taken.map((t) => 'inFlight' in t && t.inFlight)).toEqual([1, 2, 3])
      const held = taken.map(release)
      expect(await permits.take(ask('d', 3))).toEqual({ full: 'credential' })
      expect(permits.held).toBe(3)
      held[0]?.()
      held[0]?.() // a second release gives back nothing more
      expect(permits.held).toBe(2)
      release(await permits.take(ask('d', 3)))
      expect(await permits.take(ask('e', 3))).toEqual({ full: 'credential' })
    })

    it('holds a team to the ceiling an operator set while other teams still get permits, and follows the limit in force', async () => {
      const permits = make()
      release(await permits.take(ask('a', 4, 2)))
      release(await permits.take(ask('a', 4, 2)))
      expect(await permits.take(ask('a', 4, 2))).toEqual({ full: 'team' })
      release(await permits.take(ask('b', 4)))
      expect(permits.held).toBe(3)
      // A lower limit in force: no permit until the calls in flight are under it.
      expect(await permits.take(ask('c', 3))).toEqual({ full: 'credential' })
      release(await permits.take(ask('c', 5)))
    })
  })
}

sharedSuite('MemoryPermits', () => new MemoryPermits())

describe.skipIf(!available)('RedisPermits', () => {
  const redis = useRedis()
  const breaker = () => new RedisBreaker({ cooldownMs: 1000, log })
  // Each test's replicas stop renewing after it, as a replica that shuts down does.
  const made: RedisPermits[] = []
  afterEach(() => made.splice(0).forEach((p) => p.stop()))
  const replica = (opts: { leaseMs?: number; perReplica?: number | null; client?: Redis; onLost?: (n: number) => void; replica?: string } = {}) =>
    remember(new RedisPermits({
      redis: opts.client ?? redis.client,
      breaker: breaker(),
      bus: null,
      keys: KEYS,
      credential: 'default',
      replica: opts.replica ?? `r${made.length}`,
      perReplica: opts.perReplica ?? null,
      leaseMs: opts.leaseMs ?? 5000,
      log,
      onLost: opts.onLost ?? (() => undefined),
      onFreed: () => undefined,
    }))
  const remember = (p: RedisPermits) => {
    made.push(p)
    return p
  }
  const liveLeases = async () => {
    const [sec, micro] = await redis.client.time()
    return redis.client.zcount(KEYS.permits, `(${Number(sec) * 1000 + Math.floor(Number(micro) / 1000)}`, '+inf')
  }

  sharedSuite('one replica', () => replica())

  it('counts the permits of every replica against one limit, and a team\'s ceiling across them', async () => {
    const [a, b] = [replica(), replica()]
    release(await a.take(ask('x', 4, 2)))
    release(await b.take(ask('x', 4, 2)))
    expect(await b.take(ask('x', 4, 2))).toEqual({ full: 'team' })
    release(await b.take(ask('y', 4)))
    const fourth = await a.take(ask('y', 4))
    // The calls in flight once granted are every replica's: what the platform carries.
    expect('inFlight' in fourth && fourth.inFlight).toBe(4)
    const last = release(fourth)
    expect(await a.take(ask('z', 4))).toEqual({ full: 'credential' })
    expect([a.held, b.held]).toEqual([2, 2])
    last()
    await waitFor('the permit back in Redis', async () => 'release' in (await b.take(ask('z', 4))))
  })

  it('keeps the last permits for a team waiting on another replica with fewer in flight, and for callers before background work', async () => {
    const [a, b] = [replica(), replica()]
    for (let i = 0; i < 3; i++) release(await a.take(ask('busy', 4)))
    release(await b.take(ask('quiet', 4)))
    // The quiet team asks again on replica b while the limit is reached: it is marked as waiting.
    expect(await b.take(ask('quiet', 4))).toEqual({ full: 'credential' })
    // One permit comes free under a limit of 5: the quiet team (1 in flight) has a better claim than busy (3).
    expect(await a.take(ask('busy', 5))).toEqual({ full: 'turn' })
    release(await b.take(ask('quiet', 5)))
    // The quiet team's caller waits again on replica b: its own refreshes on replica a give way to it.
    expect(await b.take(ask('quiet', 5))).toEqual({ full: 'credential' })
    expect(await a.take(ask('quiet', 6, null, { priority: 'ahead' }))).toEqual({ full: 'turn' })
    // With more permits free than calls waiting with a better claim (quiet's caller, busy's), a refresh takes an idle one.
    release(await a.take(ask('quiet', 8, null, { priority: 'ahead' })))
  })

  it('gives a permit that frees to the replica holding fewer of the same team\'s, not back to the one that freed it', async () => {
    const [a, b] = [replica(), replica()]
    const held = [release(await a.take(ask('x', 2))), release(await a.take(ask('x', 2)))]
    // Replica b's caller of the same team waits: it is marked.
    expect(await b.take(ask('x', 2))).toEqual({ full: 'credential' })
    held[0]?.()
    await waitFor('the permit given back', async () => (await liveLeases()) === 1)
    // Replica a, holding one, leaves the freed permit to replica b, holding none.
    expect(await a.take(ask('x', 2))).toEqual({ full: 'turn' })
    release(await b.take(ask('x', 2)))
  })

  it('lets a lease lapse once nobody renews it: a dead replica\'s permits come back', async () => {
    const dying = replica({ leaseMs: 400 })
    release(await dying.take(ask('x', 2)))
    release(await dying.take(ask('x', 2)))
    dying.stop()
    const other = replica({ leaseMs: 400 })
    expect(await other.take(ask('y', 2))).toEqual({ full: 'credential' })
    await waitFor('the dead replica\'s leases lapsed', async () => 'release' in (await other.take(ask('y', 2))))
  })

  it('gives back at start what an earlier run of the same replica (a killed pod, started again) still held', async () => {
    const killed = replica({ replica: 'pod-1' })
    release(await killed.take(ask('x', 2)))
    release(await killed.take(ask('x', 2)))
    killed.stop()
    const other = replica({ replica: 'pod-2' })
    await other.start()
    expect(await other.take(ask('y', 2))).toEqual({ full: 'credential' })
    const again = replica({ replica: 'pod-1' })
    await again.start()
    release(await again.take(ask('x', 2)))
    release(await other.take(ask('y', 2)))
  })

  it('writes back a running call\'s lease that Redis lost, so that Redis holds what the replicas hold', async () => {
    const lost: number[] = []
    const permits = replica({ leaseMs: 600, onLost: (n) => lost.push(n) })
    release(await permits.take(ask('x', 4)))
    release(await permits.take(ask('x', 4)))
    await redis.client.del(KEYS.permits)
    await waitFor('the leases written back', async () => (await liveLeases()) === 2)
    expect(lost.reduce((a, b) => a + b, 0)).toBe(2)
  })

  it('stops renewing a permit given back while Redis cannot be reached: it lapses within its lease', async () => {
    const client = new Redis(redis.server.url, { maxRetriesPerRequest: 0, enableOfflineQueue: false, lazyConnect: true })
    client.on('error', () => undefined)
    await client.connect()
    try {
      const permits = replica({ leaseMs: 900, client })
      const held = [release(await permits.take(ask('x', 4))), release(await permits.take(ask('x', 4)))]
      expect(await liveLeases()).toBe(2)
      // Every connection of the replica's client is killed while it gives its permits back.
      await redis.client.client('KILL', 'TYPE', 'normal', 'SKIPME', 'yes')
      held.forEach((r) => r())
      expect(permits.held).toBe(0)
      await waitFor('Redis holds what the replica holds: nothing', async () => (await liveLeases()) === 0, 5000)
    } finally {
      client.disconnect()
    }
  })

  it('drops a lease Redis granted but whose answer never came, and that the replica refused here, at its next take', async () => {
    // The replica's commands time out after 100 ms; Redis is kept busy 400 ms, so the TAKE
    // runs after its caller gave up on it.
    const client = new Redis(redis.server.url, { commandTimeout: 100, maxRetriesPerRequest: 0, lazyConnect: true })
    client.on('error', () => undefined)
    await client.connect()
    const sleeper = new Redis(redis.server.url)
    try {
      const permits = replica({ client, perReplica: 1 })
      const held = release(await permits.take(ask('x', 4)))
      // A script holds the server (DEBUG SLEEP is not enabled on the test servers).
      const busy = sleeper.eval("local t = redis.call('TIME') local s = t[1] * 1e6 + t[2] repeat t = redis.call('TIME') until t[1] * 1e6 + t[2] - s > 400000 return 1", 0)
      await sleep(50)
      // Unanswered, and refused by the fallback (this replica's cap of 1 is used).
      expect(await permits.take(ask('x', 4))).toEqual({ full: 'credential' })
      await busy
      expect(await liveLeases()).toBe(2)
      await waitFor('a permit through Redis again', async () => 'release' in (await permits.take(ask('x', 4))), 5000)
      held()
      // The unanswered lease went with that take: Redis holds what the replica holds.
      await waitFor('the first permit given back', async () => (await liveLeases()) === 1)
      expect(await redis.client.zrange(KEYS.permits, 0, -1)).toEqual(permits.leases())
    } finally {
      sleeper.disconnect()
      client.disconnect()
    }
  })

  it('caps the replica at perReplica, counting the calls it has in flight, while Redis is down', async () => {
    const permits = replica({ perReplica: 2 })
    release(await permits.take(ask('x', 10)))
    await redis.server.stop()
    try {
      release(await permits.take(ask('x', 10)))
      expect(await permits.take(ask('x', 10))).toEqual({ full: 'credential' })
      expect(permits.held).toBe(2)
    } finally {
      await redis.server.restart()
    }
  })
})
