import { pino } from 'pino'
import { afterEach, describe, expect, it } from 'vitest'
import { CallGovernor } from '../../src/platform/governor/call-governor.js'
import { LearnedLimit } from '../../src/platform/governor/learned-limit.js'
import { LimitEstimator } from '../../src/platform/governor/limit-estimator.js'
import { redisKey } from '../../src/redis/keys.js'
import { RedisBreaker } from '../../src/redis/breaker.js'
import { RedisBus } from '../../src/redis/bus.js'
import { RedisSeal } from '../../src/redis/seal.js'
import { fakeClock, type FakeClock } from '../helpers/clock.js'
import { useRedis } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// The learned limit shared by replicas through Redis: one limit for all, sealed, and the
// same again after Redis's connections are killed.

const { available, notice } = redisAvailability()
if (notice) console.warn(notice)

const log = pino({ level: 'silent' })
const WINDOW_MS = 100
// A replica with nothing to write reads the record this often (READ_EVERY_MS in production, 10 s).
const READ_EVERY_MS = 1000
const KEY = redisKey.limit('test:', 'default')

describe.skipIf(!available)('the learned limit across replicas', () => {
  const redis = useRedis()
  const started: LearnedLimit[] = []
  const buses: RedisBus[] = []
  afterEach(async () => {
    started.splice(0).forEach((l) => l.stop())
    for (const bus of buses.splice(0)) await bus.close()
  })

  /** Messages of the limit's channel each replica's bus handed on, and those published: the bus is quiet when every replica heard every one. */
  const heard = { published: 0, delivered: 0 }

  async function replica(secret = 'a-gateway-secret-of-32-characters!', clock?: FakeClock) {
    const governor = new CallGovernor({ credential: 'default', maxConcurrent: 64, queueLimit: 10, queueTimeoutMs: 1000, log })
    const seal = new RedisSeal(secret)
    const bus = new RedisBus(redis.client, 'test:bus:', log as never, { seal })
    const [subscribe, publish] = [bus.subscribe.bind(bus), bus.publish.bind(bus)]
    bus.subscribe = (channel, handler) => subscribe(channel, (message) => {
      heard.delivered++
      handler(message)
    })
    bus.publish = (channel, message) => {
      heard.published++
      return publish(channel, message)
    }
    buses.push(bus)
    const learned = new LearnedLimit({
      credential: 'default',
      governor,
      estimator: new LimitEstimator({ initial: 4, min: 2, max: 64, windowMs: WINDOW_MS }),
      windowMs: WINDOW_MS,
      shared: { redis: redis.client, breaker: new RedisBreaker({ cooldownMs: 200, log }), bus, key: KEY, seal },
      log,
      onLimit: () => undefined,
      onChange: () => undefined,
      readEveryMs: READ_EVERY_MS,
      ...(clock ? { clock } : {}),
    })
    await learned.start()
    started.push(learned)
    return { governor, learned }
  }

  /** Answers at the floor from a replica whose limit is used: evidence to raise it. */
  function busyAnswers(learned: LearnedLimit, governor: CallGovernor) {
    for (let i = 0; i < 20; i++) learned.record({ url: `/api/v1/report/campaigns/get?dateFrom=2026-01-01&dateTo=2026-01-07&n=${i}`, team: 'a', latencyMs: 50, inFlight: governor.limit, outcome: 'ok' })
  }

  const stored = async () => Number(await redis.client.hget(KEY, 'limit'))

  it('moves every replica to the limit one of them learned, and keeps Redis and the replicas in agreement after its connections are killed', async () => {
    const a = await replica()
    const b = await replica()
    expect([a.governor.limit, b.governor.limit]).toEqual([4, 4])
    await waitFor('a raised limit, shared', async () => {
      busyAnswers(a.learned, a.governor)
      return a.governor.limit > 4 && b.governor.limit === a.governor.limit && (await stored()) === a.governor.limit
    }, 10_000, 20)
    await redis.client.client('KILL', 'TYPE', 'normal', 'SKIPME', 'yes')
    await waitFor('the replicas and Redis in agreement again, on a limit raised further', async () => {
      busyAnswers(b.learned, b.governor)
      return b.governor.limit > 8 && a.governor.limit === b.governor.limit && (await stored()) === b.governor.limit
    }, 10_000, 20)
  })

  it('asks Redis about the limit once a window or so whatever the replicas, not once a window per replica', async () => {
    // The replicas' windows move on one clock the test steps by STEP_MS, each step once every
    // reply and message of the one before arrived: Redis answers within a step, as it answers
    // within a fraction of a window in production, whatever the machine's load. Replicas
    // start STEP_MS apart, as replicas start at their own instants.
    const STEP_MS = 3
    const clock = fakeClock()
    const quiet = async (): Promise<void> => {
      // Commands on one connection are answered in order: three round trips past a step's
      // syncs, each has been answered and its record published.
      for (let i = 0; i < 3; i++) await redis.client.ping()
      await waitFor('every replica heard every record published', () => heard.delivered === heard.published * replicas.length, 5000, 1)
    }
    const replicas: Awaited<ReturnType<typeof replica>>[] = []
    for (let i = 0; i < 8; i++) {
      replicas.push(await replica(undefined, clock))
      clock.advance(STEP_MS)
    }
    // The first replica's record was published before the others listened.
    for (let i = 0; i < 3; i++) await redis.client.ping()
    Object.assign(heard, { published: 0, delivered: 0 })
    await redis.client.config('RESETSTAT')
    // Every replica busy at the floor for 30 windows: each changes its limit every window it closes.
    const windows = 30
    for (let t = 0; t < windows * WINDOW_MS; t += STEP_MS) {
      if (t % 24 === 0) for (const r of replicas) busyAnswers(r.learned, r.governor)
      clock.advance(STEP_MS)
      await quiet()
    }
    const info = await redis.client.info('commandstats')
    const syncs = Number(/cmdstat_evalsha:calls=(\d+)/.exec(info)?.[1] ?? 0)
    expect(replicas.every((r) => r.governor.limit > 4)).toBe(true)
    // Eight replicas syncing each window they close would send eight a window.
    expect(syncs).toBeLessThan(3 * windows)
  })

  it('writes the limit in force again when Redis lost its record (a restart, a flush)', async () => {
    const a = await replica()
    const b = await replica()
    await waitFor('a raised limit, shared', async () => {
      busyAnswers(a.learned, a.governor)
      return a.governor.limit > 4 && b.governor.limit === a.governor.limit && (await stored()) === a.governor.limit
    }, 10_000, 20)
    await redis.client.del(KEY)
    // Idle replicas read the record every READ_EVERY_MS: the first to find it gone writes it back.
    await waitFor('the record written back', async () => (await stored()) === a.governor.limit && b.governor.limit === a.governor.limit, READ_EVERY_MS + 5000, 20)
  })

  it('ignores a shared limit that does not carry this gateway\'s seal, and writes its own over it', async () => {
    await redis.client.hset(KEY, 'epoch', String(Number.MAX_SAFE_INTEGER), 'limit', '2', 'sealed', JSON.stringify({ limit: 2, epoch: Number.MAX_SAFE_INTEGER }))
    const forged = await replica()
    expect(forged.governor.limit).toBe(4)
    await waitFor('its own limit written over the forgery', async () => (await stored()) === 4 && Number(await redis.client.hget(KEY, 'epoch')) < Number.MAX_SAFE_INTEGER, 5000, 20)
  })

  it('does not pin the replicas to a genuine record written back with its epoch far ahead, nor to one long past', async () => {
    const a = await replica()
    await waitFor('a raised limit, shared', async () => {
      busyAnswers(a.learned, a.governor)
      return a.governor.limit > 4 && (await stored()) === a.governor.limit
    }, 10_000, 20)
    // A Redis writer keeps an old genuine record (limit 4 would do) and writes it back with
    // its unsealed epoch far ahead: no replica could write after it, and all would adopt it.
    const old = await redis.client.hget(KEY, 'sealed')
    await redis.client.hset(KEY, 'epoch', String(Number.MAX_SAFE_INTEGER), 'limit', '2', 'sealed', old as string)
    const b = await replica()
    await waitFor('the replicas writing their own over it', async () => Number(await redis.client.hget(KEY, 'epoch')) < Number.MAX_SAFE_INTEGER, 5000, 20)
    expect(b.governor.limit).toBeGreaterThanOrEqual(4)
    expect(a.governor.limit).toBeGreaterThanOrEqual(4)
    // Not pinned: what a replica learns next is written and shared again.
    const before = Math.max(a.governor.limit, b.governor.limit)
    await waitFor('a limit raised past it, shared', async () => {
      busyAnswers(a.learned, a.governor)
      return a.governor.limit > before && b.governor.limit === a.governor.limit && (await stored()) === a.governor.limit
    }, 10_000, 20)
    // A record of long ago, its epoch intact: older than a replica writes, it is written over.
    const stale = new RedisSeal('a-gateway-secret-of-32-characters!').sealText(KEY, JSON.stringify({ limit: 2, epoch: Math.floor(Date.now() / WINDOW_MS) - 10_000 }))
    await redis.client.hset(KEY, 'epoch', String(Math.floor(Date.now() / WINDOW_MS) - 10_000), 'limit', '2', 'sealed', stale)
    const c = await replica()
    expect(c.governor.limit).not.toBe(2)
    await waitFor('the stale record written over', async () => (await redis.client.hget(KEY, 'sealed')) !== stale, 5000, 20)
    expect(c.governor.limit).not.toBe(2)
  })
})
