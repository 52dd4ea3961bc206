import { pino } from 'pino'
import { Redis } from 'ioredis'
import { afterEach, describe, expect, it } from 'vitest'
import { CallGovernor, type Release } from '../../src/platform/governor/call-governor.js'
import { RedisSeats, type RedisSeatsOptions } from '../../src/platform/governor/redis-seats.js'
import { seatShares } from '../../src/platform/governor/seat-shares.js'
import { RedisBreaker } from '../../src/redis/breaker.js'
import { RedisBus } from '../../src/redis/bus.js'
import { redisKey } from '../../src/redis/keys.js'
import { useRedis } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// Seats leased across replicas (redis-seats.ts) against a real redis-server: each replica
// a governor with its own connections, its lease sized by what its teams use and wait for.

const { available, notice } = redisAvailability()
if (notice) console.warn(notice)

const log = pino({ level: 'silent' })
const KEY = redisKey.seats('test:', 'default')

describe.skipIf(!available)('seats leased across replicas', () => {
  const redis = useRedis()
  const open: { seats: RedisSeats; clients: Redis[]; bus: RedisBus | null }[] = []
  afterEach(async () => {
    for (const r of open.splice(0)) {
      r.seats.stop()
      await r.bus?.close()
      for (const c of r.clients) c.disconnect()
    }
  })

  /** A replica: a governor of `limit` seats (fixed), with its own Redis connection, bus and lease. */
  async function replica(limit: number, opts: Partial<RedisSeatsOptions> & { weightOf?: (team: string) => number; cap?: (team: string) => number | null; offline?: boolean } = {}) {
    const client = new Redis(redis.server.url, { maxRetriesPerRequest: 0, enableOfflineQueue: false, lazyConnect: true })
    client.on('error', () => undefined)
    if (!opts.offline) await client.connect()
    const bus = new RedisBus(client, 'test:bus:', log as never)
    const seats = new RedisSeats({ redis: client, breaker: new RedisBreaker({ cooldownMs: 200, log: log as never }), bus, key: KEY, credential: 'default', replica: 'r', perReplica: null, unseen: 1, leaseMs: 600, log, onLost: () => undefined, ...opts })
    await seats.start()
    open.push({ seats, clients: [client], bus })
    const governor = new CallGovernor({
      credential: 'default',
      maxConcurrent: limit,
      queueLimit: 100,
      queueTimeoutMs: 20_000,
      log,
      seats,
      ...(opts.weightOf ? { weightOf: opts.weightOf } : {}),
      limitsOf: (team) => ({ maxConcurrent: opts.cap?.(team) ?? null }),
    })
    const held: Release[] = []
    const calls = (team: string, n: number) => {
      for (let i = 0; i < n; i++) void governor.acquire(team).then(({ release }) => held.push(release), () => undefined)
    }
    return { governor, seats, client, held, calls }
  }

  /** Each live record's lease and calls in flight, as Redis holds them. */
  async function records(): Promise<{ lease: number; inFlight: number }[]> {
    return Object.values(await redis.client.hgetall(KEY)).map((v) => {
      const [, lease, inFlight] = v.split('|')
      return { lease: Number(lease), inFlight: Number(inFlight) }
    })
  }
  const leased = async () => (await records()).reduce((sum, r) => sum + r.lease, 0)

  it('keeps the calls of three replicas within the limit: their leases add up to it', async () => {
    const replicas = [await replica(6), await replica(6), await replica(6)]
    for (const r of replicas) r.calls('a', 6)
    await waitFor('every seat in use', () => replicas.reduce((sum, r) => sum + r.governor.inFlight, 0) === 6)
    expect(await leased()).toBeLessThanOrEqual(6)
    for (const r of replicas) expect(r.governor.inFlight).toBeLessThanOrEqual(r.seats.held ?? 0)
    // As calls end, the seats go round: every call is served, never more than 6 at once.
    let peak = 0
    await waitFor('every call served', () => {
      const inFlight = replicas.reduce((sum, r) => sum + r.governor.inFlight, 0)
      peak = Math.max(peak, inFlight)
      for (const r of replicas) r.held.splice(0).forEach((release) => release())
      return replicas.every((r) => r.governor.queued === 0 && r.governor.inFlight === 0)
    }, 10_000, 5)
    expect(peak).toBeLessThanOrEqual(6)
  })

  it('gives the seats a team borrowed on one replica back to another team waiting on another, as its calls end, up to its share', async () => {
    const [one, two] = [await replica(6), await replica(6)]
    one.calls('long', 12)
    await waitFor('the long team holding every seat', () => one.governor.inFlight === 6)
    two.calls('short', 6)
    // Told that a team waits elsewhere, the replica of the long team keeps to its share: 3.
    await waitFor('the long team\'s lease down to its share', () => two.governor.queued === 6 && one.seats.held === 3)
    // Each of the long team's calls that ends gives its seat to the short team, until both hold 3.
    for (let i = 0; i < 3; i++) {
      one.held.shift()?.()
      await waitFor(`seat ${i + 1} handed over`, () => two.governor.inFlight === i + 1, 5000)
    }
    one.held.shift()?.()
    await waitFor('the long team back at its share', () => one.governor.inFlight === 3 && two.governor.inFlight === 3, 5000)
    expect(one.governor.queued).toBeGreaterThan(0)
    expect(await leased()).toBeLessThanOrEqual(6)
  })

  it('shares the seats between teams on different replicas by weight', async () => {
    const weightOf = (team: string) => (team === 'heavy' ? 3 : 1)
    const [one, two] = [await replica(8, { weightOf }), await replica(8, { weightOf })]
    one.calls('light', 10)
    two.calls('heavy', 10)
    // Calls end one by one on both, and as many come; where the seats go settles at 2 and 6.
    await waitFor('the seats shared 2 : 6', async () => {
      for (const [r, team] of [[one, 'light'], [two, 'heavy']] as const) {
        if (r.held.length === 0) continue
        r.held.shift()?.()
        r.calls(team, 1)
      }
      return one.governor.inFlight === 2 && two.governor.inFlight === 6
    }, 10_000, 50)
  })

  it('holds a team to its ceiling across replicas', async () => {
    const cap = (team: string) => (team === 'capped' ? 2 : null)
    const [one, two] = [await replica(8, { cap }), await replica(8, { cap })]
    one.calls('capped', 6)
    await waitFor('the team at its ceiling on one replica', () => one.governor.inFlight === 2)
    two.calls('capped', 6)
    await waitFor('the other replica leased', () => two.governor.inFlight > 0, 5000)
    // Its calls end and others start, on both: the ceiling holds across them, but for a
    // call a replica starts before it hears of the other's (one per other replica, at most).
    let most = 0
    await waitFor('every call served', () => {
      most = Math.max(most, one.governor.inFlight + two.governor.inFlight)
      for (const r of [one, two]) r.held.shift()?.()
      return one.governor.queued + two.governor.queued + one.governor.inFlight + two.governor.inFlight === 0
    }, 10_000, 20)
    expect(most).toBeLessThanOrEqual(3)
  })


  it('holds a team braked on one replica there alone: its calls on another replica get their seats', async () => {
    // One replica's learned limit braked the team on what it saw there (a platform that
    // hung with only this team's calls on it); the other replica did not.
    const [one, two] = [await replica(8), await replica(8)]
    one.governor.setBrakes(new Map([['reader', 1]]))
    one.calls('reader', 20)
    await waitFor('the braked replica at its brake', () => one.governor.inFlight === 1)
    two.calls('reader', 6)
    await waitFor('the other replica running the team\'s calls', () => two.governor.inFlight === 6, 5000)
    expect(one.governor.inFlight).toBe(1)
    expect(await leased()).toBeLessThanOrEqual(8)
  })
  it('lets a dead replica\'s lease lapse within permitLease: another replica gets its seats', async () => {
    const dying = await replica(4)
    dying.calls('a', 4)
    await waitFor('the dying replica holding every seat', () => dying.governor.inFlight === 4)
    // Its connection gone for good: it renews nothing any more.
    dying.client.disconnect()
    const survivor = await replica(4)
    survivor.calls('b', 2)
    const started = Date.now()
    await waitFor('the survivor served', () => survivor.governor.inFlight === 2, 5000)
    // The lease (600 ms) and a retry, with room for a busy machine.
    expect(Date.now() - started).toBeLessThan(3000)
  })

  it('grants no replica more than it held after Redis lost every lease (a restart, a flush): they still add up to the limit', async () => {
    const lost: number[] = []
    const [one, two] = [await replica(6, { onLost: (n) => lost.push(n) }), await replica(6, { onLost: (n) => lost.push(n) })]
    one.calls('a', 3)
    await waitFor('the first replica at 3', () => one.governor.inFlight === 3)
    two.calls('b', 6)
    await waitFor('every seat in use', () => one.governor.inFlight + two.governor.inFlight === 6)
    await redis.client.flushall()
    // Both ask again (the second wants more than it holds).
    await waitFor('both leases asked for again', async () => (await records()).length === 2, 5000)
    expect(await leased()).toBeLessThanOrEqual(6)
    expect(one.seats.held ?? 0).toBeLessThanOrEqual(3)
    await waitFor('the lost seats counted', () => lost.length > 0, 5000)
  })

  it('gives every replica a seat in turn when there are more replicas than seats, handing seats over once a turn rather than once a call', async () => {
    const replicas = await Promise.all(Array.from({ length: 5 }, () => replica(2)))
    for (const r of replicas) r.calls('a', 2)
    const served = new Set<number>()
    let calls = 0
    let handovers = 0
    let peak = 0
    let holding = replicas.map(() => false)
    // Each replica's calls end as soon as they start and another comes: it always waits for a seat.
    await waitFor('every replica served', () => {
      peak = Math.max(peak, replicas.reduce((sum, r) => sum + r.governor.inFlight, 0))
      const now = replicas.map((r) => r.governor.inFlight > 0)
      handovers += now.filter((h, i) => holding[i] && !h).length
      holding = now
      replicas.forEach((r, i) => {
        if (r.held.length > 0) served.add(i)
        for (const release of r.held.splice(0)) {
          release()
          calls += 1
          r.calls('a', 1)
        }
      })
      return served.size === replicas.length
    }, 20_000, 5)
    expect(peak).toBeLessThanOrEqual(2)
    // A seat per call would change hands with every call; a turn holds it for many.
    expect(handovers).toBeLessThan(calls / 3)
  })

  it('keeps to its lease as last granted while Redis stalls, then to an even share of the limit: never the whole limit', async () => {
    const [one, two] = [await replica(8), await replica(8)]
    one.calls('a', 3)
    two.calls('b', 2)
    // Each has renewed since the other leased (a keep-alive, every third of the lease): it knows of two.
    await waitFor('5 seats leased, each replica knowing of the other', () => one.governor.inFlight === 3 && two.governor.inFlight === 2 && one.seats.replicas === 2 && two.seats.replicas === 2, 5000)
    await redis.server.stop()
    try {
      // Calls end, more come: within its lease while leases would live (600 ms)...
      for (const r of [one, two]) {
        r.held.splice(0).forEach((release) => release())
        r.calls('a', 8)
      }
      await new Promise((resolve) => setTimeout(resolve, 300))
      expect(one.governor.inFlight).toBeLessThanOrEqual(one.seats.held ?? 0)
      expect(two.governor.inFlight).toBeLessThanOrEqual(two.seats.held ?? 0)
      expect(one.governor.inFlight + two.governor.inFlight).toBeLessThanOrEqual(8)
      // ...then half the limit each: the two replicas it saw.
      await waitFor('an even share each', () => one.governor.inFlight === 4 && two.governor.inFlight === 4, 5000)
    } finally {
      await redis.server.restart()
    }
  })

  it('gives each team of one replica the shares seat-shares.ts works out', async () => {
    const weightOf = (team: string) => (team === 'b' ? 3 : 1)
    const one = await replica(8, { weightOf })
    one.calls('a', 10)
    one.calls('b', 10)
    one.calls('c', 1)
    await waitFor('the lease granted', () => one.governor.inFlight === 8)
    const expected = seatShares(8, [
      { team: 'a', weight: 1, demand: 10, cap: null },
      { team: 'b', weight: 3, demand: 10, cap: null },
      { team: 'c', weight: 1, demand: 1, cap: null },
    ])
    // The last renewal saw every call waiting or in flight: its targets are the shares.
    await waitFor('the targets of the whole demand', () => (one.seats.targets()?.size ?? 0) === 3, 5000)
    for (const [team, share] of expected) expect(one.seats.targets()?.get(team)).toBeCloseTo(share, 2)
  })
})
