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
import { waitFor } from '../helpers/wait.js'

// On a Redis Cluster the report copies' keys spread over the masters by hash slot: the
// room for them all is what the first master to fill allows, not the smallest master's
// maxmemory for the whole (which made each team's part as many times too small as there
// are masters). A real 3-master Cluster, each master at 8 MiB.

const { available, notice } = redisAvailability('the copies\' room on a Redis Cluster')
if (notice) console.warn(notice)

const MiB = 1024 * 1024

/** A sealed store of report copies on `cluster` under `prefix`, no bound on a team's part unless `opts` (over these) sets one. */
function clusterStore(cluster: Cluster, prefix: string, opts: Partial<ConstructorParameters<typeof RedisStore>[0]> = {}): RedisStore {
  return new RedisStore({
    redis: cluster,
    breaker: new RedisBreaker({ cooldownMs: 1000, log: pino({ level: 'silent' }) }),
    prefix,
    seal: new RedisSeal('copy-room-cluster-secret-0123456789abcdef'),
    limits: { maxEntryBytes: MiB, maxFreshMs: 3_600_000, staleWhileRevalidateMs: 3_600_000, staleIfErrorMs: 3_600_000 },
    copyPart: () => Number.MAX_SAFE_INTEGER,
    ...opts,
  })
}

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
      const store = clusterStore(cluster, prefix)
      const now = Date.now()
      const identity = Buffer.from('{"data":[{"clicks":1}]}')
      await store.set(key, { contentType: 'application/json', gzip: gzipSync(identity), identity, fetchedAt: now, freshUntil: now + 600_000, staleUntil: now + 1_200_000, errorUntil: now + 1_800_000, advertiserIds: [101], etag: etagOf(identity), filledBy: { team: 'edge', replica: 'r1' } })
      expect(await cluster.exists(key), 'refused by its master').toBe(0)
      expect(await cluster.hget(redisKey.copyOwners(prefix), key), 'the refused copy is counted on no team').toBeNull()
      expect(Number((await cluster.hget(redisKey.copySums(prefix), 'edge')) ?? '0')).toBe(0)
      // Its advertiser's index, written before it, lists it: harmless, a purge drops nothing for it.
      expect(await cluster.zrange(redisKey.advertiserIndex(prefix, 101), 0, -1)).toEqual([key])
      expect(await store.purgeAdvertiser(101)).toBe(0)
      expect(await cluster.exists(redisKey.advertiserIndex(prefix, 101))).toBe(0)
    } finally {
      await copyMaster.config('SET', 'maxmemory', '0')
    }
  })

  // On a Cluster the room's records and a copy sit in different slots: the room is taken,
  // then the copy written. A write that fails past the room (the copy's master gone in a
  // failover, this replica killed between) cannot give the room back: the room taken holds
  // the copy's place only for the pending window (pendingMs), until the copy's write is
  // confirmed, never until the copy's expiry.
  it('a copy whose master fails its write and its check after its room was taken holds its team\'s part no longer than the pending window', async () => {
    const cluster = topology.client as Cluster
    const prefix = 'drift:'
    const masterOf = async (key: string): Promise<string> => cluster.slots[Number(await cluster.cluster('KEYSLOT', key))]![0]!
    const roomMaster = await masterOf(redisKey.copyExpiries(prefix))
    const keys: string[] = []
    for (let n = 0; keys.length < 2; n++) if ((await masterOf(`${prefix}report:v1:c${n}`)) !== roomMaster) keys.push(`${prefix}report:v1:c${n}`)
    const [lost, next] = keys as [string, string]
    const address = await masterOf(lost)
    const copyMaster = cluster.nodes('master').find((m) => `${m.options.host}:${m.options.port}` === address) as Redis
    const pendingMs = 3000
    const store = clusterStore(cluster, prefix, {
      breaker: new RedisBreaker({ cooldownMs: 1, log: pino({ level: 'silent' }) }),
      // Room for one copy of the team, not two.
      copyPart: () => 2000,
      pendingMs,
    })
    const entryOf = (clicks: number) => {
      const now = Date.now()
      const identity = Buffer.from(`{"data":[{"clicks":${clicks}}]}`)
      return { contentType: 'application/json', gzip: gzipSync(identity), identity, fetchedAt: now, freshUntil: now + 600_000, staleUntil: now + 1_200_000, errorUntil: now + 1_800_000, advertiserIds: [101], etag: etagOf(identity), filledBy: { team: 'drift', replica: 'r1' } }
    }
    // The copy's master refuses the copy's write and the look at it after (as a master gone would), the room's master answers.
    await copyMaster.acl('SETUSER', 'default', '-set', '-exists', '-pttl')
    try {
      await store.set(lost, entryOf(1))
    } finally {
      await copyMaster.acl('SETUSER', 'default', '+@all')
    }
    expect(await cluster.exists(lost), 'refused by its master').toBe(0)
    // The room it took is held until the pending window's end, not the copy's expiry.
    const held = await cluster.zscore(redisKey.copyExpiries(prefix), lost)
    if (held !== null) expect(Number(held)).toBeLessThanOrEqual(Date.now() + pendingMs)
    // Within the window, the team's next copy finds its part taken; once it is past, it has the room.
    await store.set(next, entryOf(2))
    expect(await cluster.exists(next), 'refused while the lost copy\'s room is held').toBe(0)
    await waitFor('the team\'s next copy written', async () => {
      await store.set(next, entryOf(2))
      return (await cluster.exists(next)) === 1
    })
    expect(await cluster.hget(redisKey.copyOwners(prefix), lost), 'the copy not written is counted on no team').toBeNull()
    // A copy written is counted until its expiry, not the pending window's end.
    expect(Number(await cluster.zscore(redisKey.copyExpiries(prefix), next))).toBeGreaterThan(Date.now() + 600_000)
  })

  // On a Cluster the advertiser's index sits in another slot than the copy: no one script
  // writes both. The index is written first and the copy only once it was taken; an index
  // entry for a copy never written is harmless (its purge unlinks a key Redis does not hold).
  it('a copy whose advertiser\'s index its master refuses at its maxmemory (noeviction) is not written: the advertiser\'s purge leaves none to read', async () => {
    const cluster = topology.client as Cluster
    const prefix = 'purge:'
    const masterOf = async (key: string): Promise<string> => cluster.slots[Number(await cluster.cluster('KEYSLOT', key))]![0]!
    const key = `${prefix}report:v1:c0`
    // An advertiser whose index is on another master than the copy's, that master filled up.
    let advertiserId = 101
    while ((await masterOf(redisKey.advertiserIndex(prefix, advertiserId))) === (await masterOf(key))) advertiserId++
    const index = redisKey.advertiserIndex(prefix, advertiserId)
    const address = await masterOf(index)
    const indexMaster = cluster.nodes('master').find((m) => `${m.options.host}:${m.options.port}` === address) as Redis
    const storeOf = (copyPart: number | null) => clusterStore(cluster, prefix, { copyPart: () => copyPart })
    const now = Date.now()
    const identity = Buffer.from('{"data":[{"clicks":2}]}')
    const entry = { contentType: 'application/json', gzip: gzipSync(identity), identity, fetchedAt: now, freshUntil: now + 600_000, staleUntil: now + 1_200_000, errorUntil: now + 1_800_000, advertiserIds: [advertiserId], etag: etagOf(identity), filledBy: { team: 'purged', replica: 'r1' } }
    await fillRedisUp(indexMaster, (i) => `{${index}}:junk:${i}`)
    try {
      // Counted on its team's part, and with no part known.
      for (const part of [Number.MAX_SAFE_INTEGER, null]) {
        await storeOf(part).set(key, entry)
        await indexMaster.config('SET', 'maxmemory', '0')
        const store = storeOf(part)
        await store.purgeAdvertiser(advertiserId)
        expect(await store.get(key), 'no copy of the purged advertiser is read').toBeNull()
        expect(await cluster.hget(redisKey.copyOwners(prefix), key), 'the copy not written is counted on no team').toBeNull()
        await fillRedisUp(indexMaster, (i) => `{${index}}:junk:${i}`)
      }
    } finally {
      await indexMaster.config('SET', 'maxmemory', '0')
    }
  })

  // A purge on a Cluster gives back the room of the copies it drops (their records sit in
  // another slot than each copy), each only while its record is the one the purge read
  // before the drop: a copy written again since is scored by its own write, and its room
  // is never given back while Redis holds it (copy-room.test.ts on one Redis).
  it('a purge gives back its copies\' room, never that of a copy written again since it read the records', async () => {
    const cluster = topology.client as Cluster
    const prefix = 'purged:'
    const store = clusterStore(cluster, prefix)
    const identity = Buffer.from('{"data":[{"clicks":2}]}')
    const copy = (advertiser: number, at: number) => ({ contentType: 'application/json', gzip: gzipSync(identity), identity, fetchedAt: at, freshUntil: at + 600_000, staleUntil: at + 1_200_000, errorUntil: at + 1_800_000, advertiserIds: [advertiser], etag: etagOf(identity), filledBy: { team: 'purging', replica: 'r1' } })
    const key = (i: number) => `${prefix}report:v1:p${i}`
    const sum = async () => Number((await cluster.hget(redisKey.copySums(prefix), 'purging')) ?? '0')
    const now = Date.now()
    for (let i = 0; i < 6; i++) await store.set(key(i), copy(101 + (i % 2), now))
    expect(await store.purgeKey(key(0))).toBe(1)
    expect(await store.purgeAdvertiser(102)).toBe(3)
    expect(await store.purgeAll()).toBe(2)
    expect(await sum(), 'every copy\'s room given back').toBe(0)
    expect(await cluster.hlen(redisKey.copyOwners(prefix))).toBe(0)
    // A copy counted, its record read by a purge, then written again (a later expiry) before
    // the give-back: the give-back leaves the new write's room.
    await store.set(key(9), copy(101, now))
    const read = (await cluster.zscore(redisKey.copyExpiries(prefix), key(9)))!
    await store.set(key(9), copy(101, now + 1000))
    // The give-back as the purges above defined it on this client (RedisStore's GIVE_BACK).
    const giveBack = (cluster as unknown as Record<string, (...args: string[]) => Promise<number>>).gatewayCopyGiveBack!
    expect(await giveBack.call(cluster, redisKey.copyExpiries(prefix), redisKey.copyOwners(prefix), redisKey.copySums(prefix), read, key(9))).toBe(0)
    expect(await cluster.exists(key(9))).toBe(1)
    expect(await cluster.hget(redisKey.copyOwners(prefix), key(9)), 'still counted').not.toBeNull()
    expect(await sum()).toBeGreaterThan(0)
  })
})
