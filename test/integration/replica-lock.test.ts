import { afterEach, describe, expect, it } from 'vitest'
import { Redis } from 'ioredis'
import { pino } from 'pino'
import { ReplicaLock, type FillAsker, type OnJoined } from '../../src/cache/single-flight.js'
import { RedisSeal } from '../../src/redis/seal.js'
import { RedisBreaker } from '../../src/redis/breaker.js'
import { RedisBus } from '../../src/redis/bus.js'
import { useRedis } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// The fill lock across replicas: a waiter hears the leader's failure however
// its own reads and the announcement interleave. The announcement comes on the
// subscriber's connection, the lock's answers on the command connection: a failure
// announced while the waiter is between two waits (reading L2, trying the lock) must
// still reach it, or it takes the lapsed lock over and calls the platform a second time.

const { available, notice } = redisAvailability()
if (notice) console.warn(notice)

const silent = pino({ level: 'silent' })
const SECRET = 'replica-lock-test-secret-0000000000000'

describe.skipIf(!available)('ReplicaLock', () => {
  const { server } = useRedis()
  const opened: Redis[] = []
  afterEach(() => {
    for (const r of opened.splice(0)) r.disconnect()
  })

  /** One replica's lock: its own connections to the one Redis, its bus sealed. */
  async function replica(onJoined?: OnJoined) {
    const redis = new Redis(server.url, { maxRetriesPerRequest: 1 })
    opened.push(redis)
    const bus = new RedisBus(redis, 'rl:bus:', silent, { seal: new RedisSeal(SECRET) })
    const lock = new ReplicaLock({ redis, breaker: new RedisBreaker({ cooldownMs: 1000, log: silent }), bus, prefix: 'rl:', lockTtlMs: 10_000, pollMs: 50, ...(onJoined ? { onJoined } : {}) })
    await lock.start()
    return Object.assign(lock, { bus })
  }

  /** Replica a leads the fill of `key`, replica b waits for it. */
  async function leaderAndWaiter(key: string) {
    const [a, b] = [await replica(), await replica()]
    const leading = await a.acquire(key)
    const waiting = await b.acquire(key)
    if (leading.role !== 'leader' || waiting.role !== 'waiter') throw new Error(`roles: ${leading.role}, ${waiting.role}`)
    return { a, b, lease: leading.lease, wait: waiting.wait }
  }

  it('gives a waiter the failure its leader announced while the waiter was reading L2, not the lock', async () => {
    const { lease, wait } = await leaderAndWaiter('k')
    let reads = 0
    const outcome = await wait(async () => {
      reads += 1
      // The first read after a quiet poll: the leader fails, announces it and lets go of the lock meanwhile.
      if (reads === 1) await lease.release({ code: 'GW_UPSTREAM_TIMEOUT' })
      return null
    }, Date.now() + 5000)
    expect(outcome).toEqual({ kind: 'failed', failure: { code: 'GW_UPSTREAM_TIMEOUT' } })
  })

  it('gives a waiter the leader\'s failure marked transient (no answer, a 5xx): a report job that joined it is tried again', async () => {
    const { lease, wait } = await leaderAndWaiter('kt')
    let reads = 0
    const outcome = await wait(async () => {
      reads += 1
      if (reads === 1) await lease.release({ code: 'GW_UPSTREAM', transient: true })
      return null
    }, Date.now() + 5000)
    expect(outcome).toEqual({ kind: 'failed', failure: { code: 'GW_UPSTREAM', transient: true } })
  })

  it('gives a waiter the failure it hears only after it took the lock, and lets the lock go', async () => {
    const { a, b, lease, wait } = await leaderAndWaiter('k2')
    let reads = 0
    const outcome = await wait(async () => {
      reads += 1
      // The lock is gone before the waiter tries it; the announcement, sent before the
      // lock was deleted, is heard only after the waiter took the lock (the second
      // read), as when the lock's answer is read before the subscriber's message.
      if (reads === 1) await lease.abandon()
      if (reads === 2) {
        // Handlers run in the order they subscribed: once this one has the message, so has b's lock.
        const delivered = new Promise<void>((resolve) => void b.bus.subscribe('fill-failed', () => resolve()))
        await lease.release({ code: 'GW_UPSTREAM' })
        await delivered
      }
      return null
    }, Date.now() + 5000)
    expect(outcome.kind).toBe('failed')
    // Nobody holds the lock: the next reader leads.
    const next = await a.acquire('k2')
    expect(next.role).toBe('leader')
    if (next.role === 'leader') await next.lease.release()
  })

  it('still takes over the lock of a leader that died without a word', async () => {
    const { lease, wait } = await leaderAndWaiter('k3')
    const outcome = await wait(async () => {
      // The leader's process is gone: its lock lapses with no announcement.
      await lease.abandon()
      return null
    }, Date.now() + 5000)
    expect(outcome.kind).toBe('lead')
    if (outcome.kind === 'lead') await outcome.lease.release()
  })

  it('does not tell a replica of its own waiters: their callers are in its fill\'s group already, with their hang-ups', async () => {
    const heardByA: string[] = []
    const heardByB: string[] = []
    const a = await replica((key) => heardByA.push(key))
    const b = await replica((key) => heardByB.push(key))
    const leading = await a.acquire('k5')
    const waiting = await b.acquire('k5')
    if (leading.role !== 'leader' || waiting.role !== 'waiter') throw new Error('roles')
    const wait = waiting.wait(async () => null, Date.now() + 5000, { team: 'growth', priority: 'caller' })
    await waitFor('the leader\'s replica heard the waiting team', () => heardByA.includes('k5'))
    // Published after b's own word (a heard it): b hears it after its own.
    await a.bus.publish('fill-joined', JSON.stringify({ key: 'after', team: 'all', priority: 'caller' }))
    await waitFor('b heard the later word', () => heardByB.includes('after'))
    await leading.lease.stored(Date.now())
    await wait
    expect(heardByB).toEqual(['after'])
  })

  it('tells the leader\'s replica each team waiting for its fill, once per team and priority while it waits; a message that names no asker is dropped', async () => {
    const heard: [string, FillAsker][] = []
    const a = await replica((key, asker) => heard.push([key, asker]))
    const b = await replica()
    const leading = await a.acquire('k4')
    const [w1, w2, w3] = [await b.acquire('k4'), await b.acquire('k4'), await b.acquire('k4')]
    if (leading.role !== 'leader' || w1.role !== 'waiter' || w2.role !== 'waiter' || w3.role !== 'waiter') throw new Error('roles')
    const none = async () => null
    const waits = [w1.wait(none, Date.now() + 5000, { team: 'growth', priority: 'caller' }), w2.wait(none, Date.now() + 5000, { team: 'growth', priority: 'caller' }), w3.wait(none, Date.now() + 5000, { team: 'all', priority: 'job' })]
    // A replica's own bus carries a message that is no asker: dropped.
    await a.bus.publish('fill-joined', JSON.stringify({ key: 'k4', team: 42, priority: 'caller' }))
    await waitFor('both teams heard', () => heard.length >= 2)
    await leading.lease.stored(Date.now())
    await Promise.all(waits)
    expect(heard).toEqual([['k4', { team: 'growth', priority: 'caller' }], ['k4', { team: 'all', priority: 'job' }]])
  })
})
