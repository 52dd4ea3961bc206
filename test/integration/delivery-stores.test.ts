import { describe, expect, it } from 'vitest'
import { attempted, claimDelivery, newDelivery, type Delivery } from '../../src/jobs/delivery.js'
import { MemoryDeliveryStore, type DeliveryStore, type DueMark, type OutboxBounds } from '../../src/jobs/delivery-store.js'
import { RedisDeliveryStore } from '../../src/jobs/redis-delivery-store.js'
import { redisKey } from '../../src/redis/keys.js'
import { RedisSeal } from '../../src/redis/seal.js'
import { fakeClock } from '../helpers/clock.js'
import { useRedis } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { dueDeliveries } from '../helpers/due-deliveries.js'

// The promises of the webhook outbox (jobs/delivery-store.ts), one suite against the
// memory store of demo mode and the Redis store of the replicas, on a real redis-server:
// a job's end told twice is one delivery; two deliverers racing to claim one, one wins,
// and an attempt recorded by a claim no longer held changes nothing; a claim that ran out
// is due again; a team keeps at most its bound, the oldest dropped; the list is every
// team's, newest first; and Redis's records are sealed.

const { available } = redisAvailability('the webhook outbox contract')
const PREFIX = 'test:'
const CLAIM = 12_000
const RETRY_FOR = 60_000
const BOUNDS: OutboxBounds = { keepMs: 60_000, lifeMs: 10 * 60_000, perTeam: 2 }

const delivery = (job: string, team: string, now: number): Delivery => newDelivery({ job, team, jobState: 'done', url: 'https://hooks.example.org/jobs', body: `{"id":"${job}"}` }, now)
const failed503 = { ok: false as const, status: 503, error: 'the receiver answered 503', retry: true, made: true }

describe.skipIf(!available)('delivery stores: memory and Redis keep the same promises', () => {
  const redis = useRedis()
  const unverified: string[] = []
  const stores: [string, () => DeliveryStore][] = [
    ['memory', () => new MemoryDeliveryStore(BOUNDS)],
    ['redis', () => new RedisDeliveryStore({ redis: redis.client, seal: new RedisSeal('delivery-store-test-secret-0123456789'), prefix: PREFIX, bounds: BOUNDS, onUnverified: (key) => unverified.push(key) })],
  ]

  describe.each(stores)('%s', (_name, make) => {
    it('adds a job\'s delivery once; two deliverers race to claim it, one wins; the loser records nothing', async () => {
      const store = make()
      const clock = fakeClock()
      const d = delivery('j1', 'growth', clock.now())
      expect(await store.add(d, clock.now())).toBe(true)
      expect(await store.add(delivery('j1', 'growth', clock.now() + 5), clock.now())).toBe(false)
      expect(await dueDeliveries(store, clock.now(), 10)).toEqual([d])
      const [seen1, seen2] = [await store.get(d.id), await store.get(d.id)] as [Delivery, Delivery]
      const by1 = claimDelivery(seen1, 'r1', clock.now(), CLAIM) as Delivery
      const by2 = claimDelivery(seen2, 'r2', clock.now(), CLAIM) as Delivery
      const wins = await Promise.all([store.swap(seen1, by1, clock.now()), store.swap(seen2, by2, clock.now())])
      expect(wins.filter(Boolean)).toHaveLength(1)
      const claimed = (await store.get(d.id)) as Delivery
      // Claimed: due to nobody until the claim ran out.
      expect(await dueDeliveries(store, clock.now(), 10)).toEqual([])
      expect(await store.nextDue()).toBe(clock.now() + CLAIM)

      // The claim ran out (its replica stopped): another claims it, and the first claim's record is refused.
      clock.advance(CLAIM)
      expect(await dueDeliveries(store, clock.now(), 10)).toEqual([claimed])
      const taken = claimDelivery(claimed, 'r3', clock.now(), CLAIM) as Delivery
      expect(await store.swap(claimed, taken, clock.now())).toBe(true)
      const stale = attempted(claimed, { runner: claimed.runner as string, runs: claimed.runs }, clock.now(), failed503, RETRY_FOR) as Delivery
      expect(await store.swap(claimed, stale, clock.now())).toBe(false)
      const retry = attempted(taken, { runner: 'r3', runs: taken.runs }, clock.now(), failed503, RETRY_FOR) as Delivery
      expect(await store.swap(taken, retry, clock.now())).toBe(true)
      expect(await store.nextDue()).toBe(clock.now() + 1000)
      clock.advance(1000)
      expect(await dueDeliveries(store, clock.now(), 10)).toEqual([retry])
      const again = claimDelivery(retry, 'r1', clock.now(), CLAIM) as Delivery
      expect(await store.swap(retry, again, clock.now())).toBe(true)
      const done = attempted(again, { runner: 'r1', runs: again.runs }, clock.now(), { ok: true, status: 204 }, RETRY_FOR) as Delivery
      expect(await store.swap(again, done, clock.now())).toBe(true)
      expect(await dueDeliveries(store, clock.now() + RETRY_FOR, 10)).toEqual([])
      expect(await store.nextDue()).toBeNull()
      expect(((await store.get(d.id)) as Delivery).attempts.map((a) => [a.replica, a.status])).toEqual([['r3', 503], ['r1', 204]])
    })

    it('keeps a team\'s latest deliveries up to its bound; lists every team\'s, newest first', async () => {
      const store = make()
      const clock = fakeClock()
      for (const [job, team] of [['a1', 'a'], ['b1', 'b'], ['a2', 'a'], ['a3', 'a']] as const) {
        await store.add(delivery(job, team, clock.now()), clock.now())
        clock.advance(10)
      }
      expect((await store.latest(10, clock.now())).map((d) => d.job)).toEqual(['a3', 'a2', 'b1'])
      expect((await store.latest(2, clock.now())).map((d) => d.job)).toEqual(['a3', 'a2'])
      // The dropped one is due to nobody.
      expect((await dueDeliveries(store, clock.now(), 10)).map((d) => d.job).sort()).toEqual(['a2', 'a3', 'b1'])
    })

    it('names the due deliveries a page at a time, the earliest due first; reads the records of those still kept', async () => {
      const store = make()
      const clock = fakeClock()
      const made = ['p1', 'p2', 'p3', 'p4', 'p5'].map((job, i) => delivery(job, `t${i}`, clock.now() + i))
      for (const d of made) await store.add(d, clock.now() + 10)
      const ids = made.map((d) => d.id)
      const page = async (now: number, after: DueMark | null, count: number) => (await store.dueIds(now, after, count)).map((mark) => mark.id)
      const first = await store.dueIds(clock.now() + 10, null, 2)
      expect(first).toEqual(made.slice(0, 2).map((d) => ({ id: d.id, at: d.nextAttemptAt })))
      // Claimed by another replica before the next page is read: the page starts after the
      // last one read all the same (by offset, it would start one further and skip p3).
      expect(await store.swap(made[0]!, claimDelivery(made[0]!, 'another', clock.now(), 60_000)!, clock.now())).toBe(true)
      const second = await store.dueIds(clock.now() + 10, first.at(-1)!, 2)
      expect(second.map((mark) => mark.id)).toEqual(ids.slice(2, 4))
      expect(await page(clock.now() + 10, second.at(-1)!, 2)).toEqual(ids.slice(4))
      expect(await page(clock.now() + 2, null, 10), 'due by then').toEqual(ids.slice(1, 3))
      // Due at one moment: ordered by id, each read once however the pages fall.
      const together = ['q5', 'q1', 'q4', 'q2', 'q3', 'q10'].map((job) => delivery(job, `u${job}`, clock.now() + 20))
      for (const d of together) await store.add(d, clock.now() + 20)
      const pages: string[] = []
      let after: DueMark | null = second.at(-1)!
      for (;;) {
        const marks = await store.dueIds(clock.now() + 20, after, 2)
        pages.push(...marks.map((mark) => mark.id))
        if (marks.length < 2) break
        after = marks.at(-1)!
      }
      expect(pages).toEqual([ids[4], ...together.map((d) => d.id).sort()])
      expect(await store.records([ids[3] as string, 'msg_none', ids[1] as string])).toEqual([made[3], made[1]])
    })
  })

  it('reads a delivery this gateway did not seal as absent, and says so', async () => {
    const store = stores[1]![1]()
    unverified.length = 0
    const forged = delivery('forged', 'growth', Date.now())
    await redis.client.set(redisKey.delivery(PREFIX, forged.id), JSON.stringify(forged))
    await redis.client.zadd(redisKey.deliveries(PREFIX), forged.createdAt, forged.id)
    expect(await store.get(forged.id)).toBeNull()
    expect(await store.latest(10, Date.now())).toEqual([])
    expect(unverified).toEqual([redisKey.delivery(PREFIX, forged.id), redisKey.delivery(PREFIX, forged.id)])
  })
})
