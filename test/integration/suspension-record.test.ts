import { describe, expect, it } from 'vitest'
import { Redis } from 'ioredis'
import { pino } from 'pino'
import { TeamSuspensions } from '../../src/access/team-suspensions.js'
import { RedisBreaker } from '../../src/redis/breaker.js'
import { RedisBus } from '../../src/redis/bus.js'
import { RedisSeal } from '../../src/redis/seal.js'
import { fakeClock } from '../helpers/clock.js'
import { useRedis } from '../helpers/fixtures.js'
import { waitFor } from '../helpers/wait.js'
import { captureLogs } from '../helpers/build-gateway.js'
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
  const { client, server } = useRedis()
  const clock = fakeClock()
  const suspensions = (redis: Redis = client, cooldownMs = 60_000, bus: RedisBus | null = null, log = silent) =>
    new TeamSuspensions({ redis, breaker: new RedisBreaker({ cooldownMs, log: silent, now: clock.now }), bus, seal, keyPrefix: 'rgw:', periodMs: HOUR, clock, log, onSuspended: () => undefined, onUnverified: () => undefined })
  // A connection Redis answers but refuses writes and scripts to, as user `lifter`.
  const refusingWrites = async (): Promise<Redis> => {
    await client.acl('SETUSER', 'lifter', 'on', 'nopass', '~*', '&*', '+@all', '-@write', '-@scripting')
    const restricted = new Redis(server.url, { username: 'lifter', password: 'x', maxRetriesPerRequest: 1, lazyConnect: true })
    restricted.on('error', () => undefined)
    await restricted.connect()
    return restricted
  }
  const allowWrites = async (): Promise<void> => {
    await client.acl('SETUSER', 'lifter', '+@all')
  }
  const dropRestricted = async (restricted: Redis): Promise<void> => {
    restricted.disconnect()
    await client.acl('DELUSER', 'lifter')
  }
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
  it('lets no write-back of a suspension Redis lost overwrite a lift made meanwhile', async () => {
    const holder = suspensions()
    const lifter = suspensions()
    holder.suspend('growth', 'k1', 'x-request-id')
    await written('growth')
    await lifter.start()
    // Redis loses the record; the holder writes it back as the operator lifts it elsewhere.
    await client.flushall()
    const [, lift] = await Promise.all([holder.catchUp(), lifter.lift('growth')])
    expect(lift).toEqual({ lifted: true, replicas: 'all' })
    await waitFor('the holder settled', async () => (await client.hexists(KEY, 'growth')) === 1)
    const fresh = suspensions()
    await fresh.start()
    expect(fresh.list()).toEqual([])
    await holder.catchUp()
    expect(holder.list()).toEqual([])
  })
  it('says once that Redis lost a suspension when its return is told twice at once (the circuit closing, the bus subscribing again), and writes it back', async () => {
    const logs = captureLogs()
    const holder = suspensions(client, 60_000, null, pino(logs.stream))
    holder.suspend('growth', 'k1', 'x-request-id')
    await written('growth')
    await client.flushall()
    await Promise.all([holder.catchUp(), holder.catchUp(), holder.catchUp()])
    expect(logs.records().filter((r) => String(r.msg).startsWith('team suspensions missing from Redis')).map((r) => r.teams)).toEqual([['growth']])
    expect(await client.hexists(KEY, 'growth')).toBe(1)
    // A return told after those ended is read again: Redis lost it once more.
    await client.flushall()
    await holder.catchUp()
    expect(logs.records().filter((r) => String(r.msg).startsWith('team suspensions missing from Redis'))).toHaveLength(2)
    expect(await client.hexists(KEY, 'growth')).toBe(1)
  })
  it('weighs a message told late against when the lift was made', async () => {
    // What another replica tells on the bus: here, sent as that replica would send it, late.
    const tell = async (message: object, team = 'growth') => {
      await client.publish('rgw:bus:team-suspension', JSON.stringify({ from: 'another replica', team, ...message }))
    }
    // Messages on one channel arrive in order: one about another team after them says they were read.
    let marks = 0
    const read = async (replica: TeamSuspensions) => {
      const mark = `mark-${++marks}`
      await tell({ ms: HOUR }, mark)
      await waitFor('the messages read', () => replica.secondsLeft(mark) !== null)
    }
    const bus = new RedisBus(client, 'rgw:bus:', silent)
    const restricted = await refusingWrites()
    try {
      const replica = suspensions(restricted, 60_000, bus)
      await replica.start()
      await tell({ ms: HOUR })
      await read(replica)
      expect(replica.secondsLeft('growth')).toBe(HOUR / 1000)
      clock.advance(1000)
      const liftedAt = clock.now()
      // The lift waits for Redis here: a write-back of the suspension it ended, told meanwhile, is no news.
      expect(await replica.lift('growth')).toEqual({ lifted: true, replicas: 'this replica until Redis answers again' })
      await tell({ ms: HOUR - 1000 })
      await read(replica)
      expect(replica.secondsLeft('growth')).toBeNull()
      // A hit after the lift, then the lift (made before that hit) told after it: the suspension stands.
      clock.advance(1000)
      await tell({ ms: HOUR })
      await tell({ at: liftedAt })
      await read(replica)
      expect(replica.secondsLeft('growth')).toBe(HOUR / 1000)
      // A lift made after the hit ends it.
      await tell({ at: clock.now() })
      await read(replica)
      expect(replica.secondsLeft('growth')).toBeNull()
      replica.close()
    } finally {
      await bus.close()
      await dropRestricted(restricted)
    }
  })

  it('keeps a lift told while it reads the suspensions: the read from before the lift does not bring the suspension back', async () => {
    const bus = new RedisBus(client, 'rgw:bus:', silent)
    let onRead: (() => Promise<void>) | null = null
    // The holder's connection, whose HGETALL answer reaches it only once onRead has run: the
    // lift is written and told between Redis's answer and the holder's reading of it.
    const late = new Proxy(client, {
      get(target, prop) {
        const value: unknown = Reflect.get(target, prop, target)
        if (prop !== 'hgetall' || typeof value !== 'function') return typeof value === 'function' ? value.bind(target) : value
        return async (...args: unknown[]) => {
          const answer: unknown = await value.apply(target, args)
          const run = onRead
          onRead = null
          if (run) await run()
          return answer
        }
      },
    })
    try {
      const lifter = suspensions(client, 60_000, bus)
      const holder = suspensions(late, 60_000, bus)
      await lifter.start()
      await holder.start()
      lifter.suspend('growth', 'k1', 'x-request-id')
      await written('growth')
      await waitFor('the suspension told to the holder', () => holder.secondsLeft('growth') !== null)
      clock.advance(1000)
      onRead = async () => {
        expect(await lifter.lift('growth')).toEqual({ lifted: true, replicas: 'all' })
        await waitFor('the lift told to the holder', () => holder.secondsLeft('growth') === null)
      }
      await holder.reseal()
      expect(onRead).toBeNull()
      expect(holder.secondsLeft('growth')).toBeNull()
      lifter.close()
      holder.close()
    } finally {
      await bus.close()
    }
  })

  it('tries a lift Redis refused again in a while, with no reconnect to bring it', async () => {
    const holder = suspensions()
    holder.suspend('growth', 'k1', 'x-request-id')
    await written('growth')
    // A connection Redis answers but refuses writes to: its failure opens the circuit for a
    // second, and nothing closes it but a command (no whenBack here, no reconnect).
    const restricted = await refusingWrites()
    try {
      const lifter = suspensions(restricted, 1000)
      expect(await lifter.lift('growth')).toEqual({ lifted: false, replicas: 'this replica until Redis answers again' })
      await allowWrites()
      clock.advance(5_000)
      await waitFor('the lift written', async () => Number(seal.openText(`${KEY}#growth`, (await client.hget(KEY, 'growth')) as string)) < 0)
      lifter.close()
    } finally {
      await dropRestricted(restricted)
    }
  })
})
