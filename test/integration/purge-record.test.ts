import { describe, expect, it } from 'vitest'
import { Redis } from 'ioredis'
import { pino } from 'pino'
import { MAX_PURGE_RECORDS, PurgeLedger } from '../../src/cache/purge-ledger.js'
import { RedisSeal } from '../../src/redis/seal.js'
import { useRedis } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'

// The purges a replica that starts later learns from Redis: sealed, bounded before they
// are read, and read as "everything purged now" when they cannot be trusted whole.

const { available, notice } = redisAvailability()
if (notice) console.warn(notice)

const KEY = 'rgw:purges'
const T = Date.now()
const silent = pino({ level: 'silent' })
const seal = new RedisSeal('purge-record-test-secret-000000000')

describe.skipIf(!available)('the shared purge record', () => {
  const { client } = useRedis()
  const ledger = (onUnverified: (where: string) => void = () => undefined) =>
    new PurgeLedger({ keepMs: 3_600_000, shared: { redis: client, seal, key: KEY }, log: silent, onUnverified })

  it('is learned by a replica that starts later', async () => {
    const writer = ledger()
    await writer.share({ at: T - 2000 })
    await writer.share({ at: T, advertiserId: 101 })
    const reader = ledger()
    await reader.load()
    expect(reader.refuses({ fetchedAt: T - 1, advertiserIds: [101] })).toBe(true)
    expect(reader.refuses({ fetchedAt: T - 1, advertiserIds: [102] })).toBe(false)
    expect(reader.refuses({ fetchedAt: T - 2001, advertiserIds: [102] })).toBe(true)
    // No expiry: a Redis that evicts keys with one at maxmemory (volatile-lru, as the
    // replicas guide has it for the report copies) keeps it; its replicas drop old purges.
    expect(await client.pttl(KEY)).toBe(-1)
  })

  it('drops the purges older than an entry lives at the next purge written', async () => {
    const writer = new PurgeLedger({ keepMs: 3_600_000, now: () => T, shared: { redis: client, seal, key: KEY }, log: silent })
    await writer.share({ at: T - 3_600_001, advertiserId: 101 })
    await writer.share({ at: T - 3_600_000, advertiserId: 102 })
    await writer.share({ at: T, advertiserId: 103 })
    expect((await client.hkeys(KEY)).sort()).toEqual(['adv:102', 'adv:103'])
  })

  it('starts over at a purge of everything', async () => {
    const writer = ledger()
    await writer.share({ at: T - 5000, advertiserId: 101 })
    await writer.share({ at: T })
    expect(await client.hkeys(KEY)).toEqual(['all'])
  })

  it('ignores fields without the seal, and fields of sizes the gateway never writes', async () => {
    await ledger().share({ at: T - 5000, advertiserId: 101 })
    await client.hset(KEY, 'all', String(T), 'adv:102', String(T), 'adv:103', 'x'.repeat(10_000))
    const unverified: string[] = []
    const reader = ledger((where) => unverified.push(where))
    await reader.load()
    expect(reader.refuses({ fetchedAt: T - 6000, advertiserIds: [101] })).toBe(true)
    expect(reader.refuses({ fetchedAt: T - 1, advertiserIds: [102, 104] })).toBe(false)
    expect(unverified.sort()).toEqual([`${KEY}#adv:102`, `${KEY}#all`])
  })

  it('read again (a reconnect), learns the purges made meanwhile; a read that fails notes nothing, a record too large is a purge of everything', async () => {
    const reader = ledger()
    await reader.load()
    await ledger().share({ at: T, advertiserId: 101 })
    expect(reader.refuses({ fetchedAt: T - 1, advertiserIds: [101] })).toBe(false)
    await reader.catchUp()
    expect(reader.refuses({ fetchedAt: T - 1, advertiserIds: [101] })).toBe(true)
    // Redis out as it is read again: the copies held stay servable, read again at its return.
    const gone = new Redis({ port: 1, lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null })
    gone.on('error', () => undefined)
    const cut = new PurgeLedger({ keepMs: 3_600_000, shared: { redis: gone, seal, key: KEY }, log: silent })
    await cut.catchUp()
    gone.disconnect()
    expect(cut.refuses({ fetchedAt: T - 1, advertiserIds: [102] })).toBe(false)
    const fields: string[] = []
    for (let i = 0; i <= MAX_PURGE_RECORDS + 1; i++) fields.push(`adv:${i}`, '1')
    await client.hset(KEY, ...fields)
    const before = Date.now()
    await reader.catchUp()
    expect(reader.refuses({ fetchedAt: before - 1, advertiserIds: [] })).toBe(true)
  })

  it('reads a record too large, or not a hash, as a purge of everything at the start', async () => {
    const fields: string[] = []
    for (let i = 0; i <= MAX_PURGE_RECORDS + 1; i++) fields.push(`adv:${i}`, '1')
    await client.hset(KEY, ...fields)
    const before = Date.now()
    const reader = ledger()
    await reader.load()
    expect(reader.refuses({ fetchedAt: before - 1, advertiserIds: [] })).toBe(true)
    await client.del(KEY)
    await client.set(KEY, 'not a hash')
    const other = ledger()
    await other.load()
    expect(other.refuses({ fetchedAt: before - 1, advertiserIds: [] })).toBe(true)
  })
})
