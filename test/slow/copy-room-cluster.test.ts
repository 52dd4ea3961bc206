import { gzipSync } from 'node:zlib'
import { pino, type Logger } from 'pino'
import { Redis, type Cluster } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { etagOf } from '../../src/cache/cache-entry.js'
import { RedisStore } from '../../src/cache/redis-store.js'
import { systemClock } from '../../src/clock.js'
import { RedisBreaker } from '../../src/redis/breaker.js'
import { ResultRoom } from '../../src/redis/memory-room.js'
import { COPY_ROOM_TAG, JOBS_TAG, redisKey } from '../../src/redis/keys.js'
import { RedisSeal } from '../../src/redis/seal.js'
import { fillRedisUp, redisAvailability } from '../helpers/start-redis.js'
import { startRedisCluster, type RedisTopology } from '../helpers/start-redis-topology.js'

// On a Redis Cluster the report copies' keys spread over the masters by hash slot: the
// room for them all is what the first master to fill allows, not the smallest master's
// maxmemory for the whole (which made each team's part as many times too small as there
// are masters). A real 3-master Cluster, each master at 8 MiB.

const { available, notice } = redisAvailability('the copies\' room on a Redis Cluster')
if (notice) console.warn(notice)

const MiB = 1024 * 1024

describe.skipIf(!available)('the report copies\' room on a 3-master Redis Cluster', () => {
  let topology: RedisTopology
  beforeAll(async () => {
    topology = await startRedisCluster()
  }, 60_000)
  afterAll(async () => {
    await topology?.close()
  })

  it('spans every master: each team\'s part is near three masters\' room less the results\', not one master\'s', async () => {
    const cluster = topology.client as Cluster
    for (const node of cluster.nodes('master')) await (node as Redis).config('SET', 'maxmemory', String(8 * MiB))
    const breaker = { run: (fn: () => Promise<unknown>) => fn() } as unknown as RedisBreaker
    const warned: string[] = []
    const log = { info: () => undefined, warn: (_fields: unknown, msg: string) => warned.push(msg) } as unknown as Logger
    const room = new ResultRoom({ redis: cluster, breaker, settings: { resultBytesPerTeam: 256 * MiB, resultsRoom: null }, teams: () => 1, log, clock: systemClock })
    await room.read()
    // The slot map names each master as ioredis reaches it: no master is left out.
    expect(warned).toEqual([])
    // The results' room: half the smallest master (4 MiB), on the master of {jobs}, which
    // serves a third of the slots and so holds a third of the copies beside it.
    const jobsSlot = Number(await cluster.cluster('KEYSLOT', JOBS_TAG))
    const jobsMaster = cluster.slots[jobsSlot]![0]!
    // The copies' records on another master here (their slot 15960, the jobs' 9631), whose room is the larger.
    expect(cluster.slots[Number(await cluster.cluster('KEYSLOT', COPY_ROOM_TAG))]![0]).not.toBe(jobsMaster)
    const served = cluster.slots.filter((nodes) => nodes[0] === jobsMaster).length
    expect(room.copyPart()).toBe(Math.floor(((8 - 4) * MiB * 16_384) / served))
    // One master's room less the results' was the part before: 4 MiB.
    expect(room.copyPart()).toBeGreaterThan(2 * 4 * MiB)
  })

  it('a copy its own master refuses at its maxmemory (noeviction) takes none of its team\'s part on the master of the room\'s records', async () => {
    const cluster = topology.client as Cluster
    const prefix = 'edge:'
    const masterOf = async (key: string): Promise<string> => cluster.slots[Number(await cluster.cluster('KEYSLOT', key))]![0]!
    const roomMaster = await masterOf(redisKey.copyExpiries(prefix))
    // A copy's key on another master than the room's records, that master filled up.
    let n = 0
    while ((await masterOf(`${prefix}report:v1:c${n}`)) === roomMaster) n++
    const key = `${prefix}report:v1:c${n}`
    const address = await masterOf(key)
    const copyMaster = cluster.nodes('master').find((m) => `${m.options.host}:${m.options.port}` === address) as Redis
    await fillRedisUp(copyMaster, (i) => `{${key}}:junk:${i}`)
    try {
      const store = new RedisStore({
        redis: cluster,
        breaker: new RedisBreaker({ cooldownMs: 1000, log: pino({ level: 'silent' }) }),
        prefix,
        seal: new RedisSeal('copy-room-cluster-secret-0123456789abcdef'),
        limits: { maxEntryBytes: MiB, maxFreshMs: 3_600_000, staleWhileRevalidateMs: 3_600_000, staleIfErrorMs: 3_600_000 },
        copyPart: () => Number.MAX_SAFE_INTEGER,
      })
      const now = Date.now()
      const identity = Buffer.from('{"data":[{"clicks":1}]}')
      await store.set(key, { contentType: 'application/json', gzip: gzipSync(identity), identity, fetchedAt: now, freshUntil: now + 600_000, staleUntil: now + 1_200_000, errorUntil: now + 1_800_000, advertiserIds: [101], etag: etagOf(identity), filledBy: { team: 'edge', replica: 'r1' } })
      expect(await cluster.exists(key), 'refused by its master').toBe(0)
      expect(await cluster.hget(redisKey.copyOwners(prefix), key), 'the refused copy is counted on no team').toBeNull()
      expect(Number((await cluster.hget(redisKey.copySums(prefix), 'edge')) ?? '0')).toBe(0)
    } finally {
      await copyMaster.config('SET', 'maxmemory', '0')
    }
  })
})
