import { pino } from 'pino'
import { Redis } from 'ioredis'
import { afterEach, describe, expect, it } from 'vitest'
import { LearnedLimit, RECORD_MAX_AGE_MS } from '../../src/platform/governor/learned-limit.js'
import { LeasedSeats } from '../../src/platform/governor/leased-seats.js'
import { RedisLeaseStore } from '../../src/platform/governor/redis-lease-store.js'
import { CredentialSeats } from '../../src/platform/governor/seats.js'
import type { Seat } from '../../src/platform/governor/seat.js'
import { WorkEstimates } from '../../src/platform/governor/work-estimates.js'
import { RedisBreaker } from '../../src/redis/breaker.js'
import { RedisBus } from '../../src/redis/bus.js'
import { redisKey } from '../../src/redis/keys.js'
import { RedisSeal } from '../../src/redis/seal.js'
import { useRedis } from '../helpers/fixtures.js'
import { LimitRuleStandIn } from '../helpers/limit-rule.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// The learned limit shared by replicas through Redis (docs/governor.md, "the learner"):
// the replica whose calls answered most writes the limit and knee, sealed and dated, with
// its lease renewals into the credential's seats hash; the others take them from theirs.
// The limit rule is stood in for (its own tests are its own): what is shared is the point.

const { available, notice } = redisAvailability()
if (notice) console.warn(notice)

const log = pino({ level: 'silent' })
const SECRET = 'a-gateway-secret-of-32-characters!'
const KEY = redisKey.seats('test:', 'default')

describe.skipIf(!available)('the learned limit across replicas', () => {
  const redis = useRedis()
  const stops: (() => Promise<void>)[] = []
  afterEach(async () => {
    for (const stop of stops.splice(0)) await stop()
  })

  /** A replica of run id `run` (the learner is the one that answered most, then the smallest id), its limit rule stood in for, holding one call in flight so that it renews every third of its lease. */
  async function replica(run: string, secret = SECRET) {
    const client = new Redis(redis.server.url, { maxRetriesPerRequest: 0, enableOfflineQueue: false, lazyConnect: true })
    client.on('error', () => undefined)
    await client.connect()
    const bus = new RedisBus(client, 'test:bus:', log)
    const store = new RedisLeaseStore({ redis: client, breaker: new RedisBreaker({ cooldownMs: 200, log }), bus, key: KEY, credential: 'default' })
    const rule = new LimitRuleStandIn(8)
    let learned: LearnedLimit | null = null
    // Renewals answered: each brings the others' records and the shared limit.
    const renewals = { count: 0 }
    const lease = new LeasedSeats({
      store,
      credential: 'default',
      replica: 'r',
      run,
      perReplica: null,
      unseen: 1,
      leaseMs: 600,
      callsEndMs: 2000,
      log,
      onLost: () => undefined,
      onRenewed: (answer, plan) => {
        renewals.count += 1
        learned?.renewed(answer, plan)
      },
    })
    const seats = new CredentialSeats({ credential: 'default', maxConcurrent: 64, limit: rule.limit, queueLimit: 10, queueTimeoutMs: 10_000, maxPauseMs: 60_000, work: new WorkEstimates(), seats: lease })
    learned = new LearnedLimit({ credential: 'default', estimator: rule.estimator, seats, lease, seal: new RedisSeal(secret), key: KEY, log, onLimit: () => undefined, onMove: () => undefined })
    await lease.start()
    learned.start()
    const held: Seat = await seats.ask({ team: 'a', workClass: 'w', deadline: Infinity })
    const stop = async () => {
      learned?.stop()
      held.end({ kind: 'dropped' })
      lease.stop()
      await bus.close()
      client.disconnect()
    }
    stops.push(stop)
    return { run, rule, seats, lease, learned, renewals, stop }
  }

  /** The shared record in Redis, opened with the gateway's seal. */
  const stored = async (): Promise<{ limit: number; knee: number; at: number } | null> => {
    const sealed = await redis.client.hget(KEY, 'limit')
    const text = sealed === null ? null : new RedisSeal(SECRET).openText(KEY, sealed)
    return text === null ? null : (JSON.parse(text) as { limit: number; knee: number; at: number })
  }

  /** The learner's limit rule moves to `limit` (knee `knee`). */
  const move = (r: Awaited<ReturnType<typeof replica>>, limit: number, knee = limit) => {
    r.rule.next = { limit, knee, move: 'grew' }
    r.learned.tick()
  }

  it('moves every replica to the limit the learner learned, sealed in the seats hash, and again after Redis\'s connections are killed', async () => {
    const [a, b] = [await replica('r1'), await replica('r2')]
    await waitFor('each replica seeing the other, r1 learning', () => a.lease.replicas === 2 && b.lease.replicas === 2 && a.lease.learner && !b.lease.learner)
    move(a, 12, 10)
    await waitFor('the limit shared', async () => b.seats.limit === 12 && (await stored())?.limit === 12)
    expect(await stored()).toMatchObject({ limit: 12, knee: 10 })
    // The replica that does not learn runs no limit rule of its own.
    const ticks = b.rule.ticks
    await waitFor('a few ticks of the learner', () => a.rule.ticks > 5)
    expect(b.rule.ticks).toBe(ticks)

    await redis.client.client('KILL', 'TYPE', 'normal', 'SKIPME', 'yes')
    move(a, 16, 14)
    await waitFor('the replicas and Redis in agreement again', async () => b.seats.limit === 16 && (await stored())?.limit === 16)
  })

  it('writes the limit in force again when Redis lost its record (a restart, a flush)', async () => {
    const [a, b] = [await replica('r1'), await replica('r2')]
    await waitFor('r1 learning', () => a.lease.replicas === 2 && b.lease.replicas === 2 && a.lease.learner)
    move(a, 12)
    // Stored, and taken by r2 with its renewal: only then is there a limit in force to keep.
    await waitFor('the limit shared', async () => b.seats.limit === 12 && (await stored())?.limit === 12)
    await redis.client.hdel(KEY, 'limit')
    await waitFor('the record written back', async () => (await stored())?.limit === 12)
    expect(b.seats.limit).toBe(12)
  })

  it('ignores a shared limit that does not carry this gateway\'s seal, or is a genuine one of long ago, and takes the next one the learner writes', async () => {
    const [a, b] = [await replica('r1'), await replica('r2')]
    await waitFor('r1 learning', () => a.lease.replicas === 2 && b.lease.replicas === 2 && a.lease.learner)
    move(a, 12)
    await waitFor('the limit shared', () => b.seats.limit === 12)
    // A Redis writer's record, and a genuine record replayed from long ago.
    const forged = new RedisSeal('another-secret-of-32-characters!!!').sealText(KEY, JSON.stringify({ limit: 2, knee: 2, at: Date.now() }))
    const replayed = new RedisSeal(SECRET).sealText(KEY, JSON.stringify({ limit: 2, knee: 2, at: Date.now() - RECORD_MAX_AGE_MS - 60_000 }))
    for (const record of [forged, replayed]) {
      // Set until it stays over two renewals of each: a rewrite of the learner's own record,
      // asked at a renewal before it was set, lands with the next one and writes it over;
      // none is asked of a record the learner cannot open.
      await waitFor('the record in place', async () => {
        await redis.client.hset(KEY, 'limit', record)
        const since = [a.renewals.count, b.renewals.count] as const
        await waitFor('two renewals of each since', () => a.renewals.count >= since[0] + 2 && b.renewals.count >= since[1] + 2)
        return (await redis.client.hget(KEY, 'limit')) === record
      })
      // Renewals carry it to the replica that follows: it keeps its own.
      expect(b.seats.limit).toBe(12)
    }
    // A replica that starts meanwhile keeps its own too.
    const c = await replica('r3')
    await waitFor('r3 seeing the others', () => c.lease.replicas === 3)
    expect(c.seats.limit).toBe(8)
    // The learner's next move is written over it, and taken.
    move(a, 20)
    await waitFor('the next limit shared', () => b.seats.limit === 20 && c.seats.limit === 20)
  })

  it('hands the learning to another replica when the learner stops: it starts from the shared limit and writes its own moves', async () => {
    const [a, b] = [await replica('r1'), await replica('r2')]
    await waitFor('r1 learning', () => a.lease.replicas === 2 && b.lease.replicas === 2 && a.lease.learner)
    move(a, 12)
    await waitFor('the limit shared', () => b.seats.limit === 12)
    await a.stop()
    await waitFor('r2 learning', () => b.lease.learner && b.lease.replicas === 1)
    const ticks = b.rule.ticks
    await waitFor('r2\'s limit rule running', () => b.rule.ticks > ticks)
    expect([b.rule.limit, b.seats.limit]).toEqual([12, 12])
    move(b, 24)
    await waitFor('r2\'s limit shared', async () => (await stored())?.limit === 24)
  })
})
