import type { Logger } from 'pino'
import { Redis, type Cluster } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { systemClock } from '../../src/clock.js'
import type { RedisBreaker } from '../../src/redis/breaker.js'
import { ResultRoom } from '../../src/redis/memory-room.js'
import { COPY_ROOM_TAG, JOBS_TAG } from '../../src/redis/keys.js'
import { redisAvailability } from '../helpers/start-redis.js'
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
})
