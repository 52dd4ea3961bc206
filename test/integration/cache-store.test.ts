import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { gunzipSync, gzipSync } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { Redis } from 'ioredis'
import { pino } from 'pino'
import { ANY_ADVERTISER, entrySize, etagOf, type CacheEntry } from '../../src/cache/cache-entry.js'
import type { CacheStore } from '../../src/cache/cache-store.js'
import { MemoryStore } from '../../src/cache/memory-store.js'
import { RedisStore } from '../../src/cache/redis-store.js'
import { TieredStore } from '../../src/cache/tiered-store.js'
import { RedisBreaker } from '../../src/redis/breaker.js'
import { entryHead } from '../../src/http/reads/report-reply.js'
import { fakeClock } from '../helpers/clock.js'
import { useRedis } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// One suite, run against both tiers of the report cache: whatever L1 does with an
// entry, L2 does too.

const { available, notice } = redisAvailability()
if (notice) console.warn(notice)

const silent = pino({ level: 'silent' })
// Generous bounds: the suite's entries live up to 500 s and are small.
const LIMITS = { maxEntryBytes: 8 * 1024 * 1024, maxFreshMs: 3_600_000, staleWhileRevalidateMs: 3_600_000, staleIfErrorMs: 3_600_000 }

interface StoreCase {
  name: string
  needsRedis: boolean
  /** A store on a fresh key space, reading time from `now`. */
  make(now: () => number): CacheStore
  /** Key of a report entry in that key space. */
  key(id: string): string
}

// The stores' client fails a command at once instead of retrying or queueing it.
const redis: Redis | null = available ? useRedis({ maxRetriesPerRequest: 0, enableOfflineQueue: false, commandTimeout: 1000 }).client : null
let spaces = 0

function memoryCase(): StoreCase {
  return { name: 'MemoryStore', needsRedis: false, make: (now) => new MemoryStore({ maxBytes: 16 * 1024 * 1024, now }), key: (id) => `rgw:report:v1:${id}` }
}

function redisCase(): StoreCase {
  let prefix = ''
  return {
    name: 'RedisStore',
    needsRedis: true,
    make: (now) => {
      // A prefix per store: purgeAll of one test never sees another's keys.
      prefix = `s${++spaces}:`
      return new RedisStore({ redis: redis as Redis, breaker: new RedisBreaker({ cooldownMs: 1000, log: silent }), prefix, now, limits: LIMITS })
    },
    key: (id) => `${prefix}report:v1:${id}`,
  }
}

function entryAt(now: number, opts: { body?: Buffer; advertiserId?: number | null; errorInMs?: number } = {}): CacheEntry {
  const identity = opts.body ?? Buffer.from(JSON.stringify({ data: [{ date: '2026-01-01', impressions: 1, name: 'Ünïcode ✓' }] }))
  return {
    contentType: 'application/json',
    gzip: gzipSync(identity),
    identity,
    fetchedAt: now,
    freshUntil: now + 60_000,
    staleUntil: now + 90_000,
    errorUntil: now + (opts.errorInMs ?? 600_000),
    advertiserIds: opts.advertiserId === undefined ? [101] : opts.advertiserId === null ? [] : [opts.advertiserId],
    etag: etagOf(identity),
  }
}

function expectSameEntry(got: CacheEntry | null, want: CacheEntry): void {
  expect(got).not.toBeNull()
  const { gzip, identity, ...meta } = got as CacheEntry
  const { gzip: wantGzip, identity: wantIdentity, ...wantMeta } = want
  expect(meta).toEqual(wantMeta)
  // The stored gzip bytes come back exactly; they decompress to the platform's body.
  expect(Buffer.compare(gzip, wantGzip)).toBe(0)
  expect(gunzipSync(gzip).equals(wantIdentity as Buffer)).toBe(true)
  // L2 keeps only the gzip bytes; L1 may keep the body as well.
  if (identity !== null) expect(identity.equals(wantIdentity as Buffer)).toBe(true)
}

describe.each([memoryCase(), redisCase()])('$name', (c) => {
  describe.skipIf(c.needsRedis && !available)('as a report cache tier', () => {
    it('answers null for a key it never held', async () => {
      const store = c.make(Date.now)
      expect(await store.get(c.key('absent'))).toBeNull()
    })

    it('gives back what was set: metadata and binary gzip bytes, byte for byte', async () => {
      const clock = fakeClock()
      const store = c.make(clock.now)
      const json = entryAt(clock.now())
      // Incompressible binary (every byte value, NULs included) and a larger body.
      const binary = entryAt(clock.now(), { body: Buffer.concat([Buffer.from(Array.from({ length: 256 }, (_, i) => i)), randomBytes(4096)]), advertiserId: null })
      const large = entryAt(clock.now(), { body: randomBytes(1024 * 1024), advertiserId: 102 })
      await store.set(c.key('json'), json)
      await store.set(c.key('binary'), binary)
      await store.set(c.key('large'), large)
      expectSameEntry(await store.get(c.key('json')), json)
      expectSameEntry(await store.get(c.key('binary')), binary)
      expectSameEntry(await store.get(c.key('large')), large)
    })

    it('replaces an entry set again under the same key', async () => {
      const clock = fakeClock()
      const store = c.make(clock.now)
      await store.set(c.key('k'), entryAt(clock.now(), { body: Buffer.from('{"v":1}') }))
      clock.advance(1000)
      const second = entryAt(clock.now(), { body: Buffer.from('{"v":2}') })
      await store.set(c.key('k'), second)
      expectSameEntry(await store.get(c.key('k')), second)
    })

    it('drops an entry once past its errorUntil on the clock it was given', async () => {
      const clock = fakeClock()
      const store = c.make(clock.now)
      const entry = entryAt(clock.now(), { errorInMs: 120_000 })
      await store.set(c.key('k'), entry)
      clock.advance(119_999)
      expectSameEntry(await store.get(c.key('k')), entry)
      clock.advance(2)
      expect(await store.get(c.key('k'))).toBeNull()
    })

    it('drops an entry at its errorUntil in real time', async () => {
      const store = c.make(Date.now)
      // Its presence before errorUntil is the fake clock's test above: here only that real
      // time (Redis's own expiry for its store) drops it, whatever the machine's load.
      await store.set(c.key('short'), entryAt(Date.now(), { errorInMs: 150 }))
      await store.set(c.key('long'), entryAt(Date.now(), { errorInMs: 60_000 }))
      await waitFor('the short entry dropped', async () => (await store.get(c.key('short'))) === null)
      expect(await store.get(c.key('long'))).not.toBeNull()
    })

    it('does not store an entry that is already past its errorUntil', async () => {
      const clock = fakeClock()
      const store = c.make(clock.now)
      const entry = entryAt(clock.now() - 700_000)
      await store.set(c.key('old'), entry)
      expect(await store.get(c.key('old'))).toBeNull()
    })

    it('deletes one key', async () => {
      const store = c.make(Date.now)
      await store.set(c.key('a'), entryAt(Date.now()))
      await store.set(c.key('b'), entryAt(Date.now()))
      await store.delete(c.key('a'))
      expect(await store.get(c.key('a'))).toBeNull()
      expect(await store.get(c.key('b'))).not.toBeNull()
    })

    it('purges every entry, saying how many', async () => {
      const store = c.make(Date.now)
      for (const [id, adv] of [['a', 101], ['b', 102], ['c', null]] as const) await store.set(c.key(id), entryAt(Date.now(), { advertiserId: adv }))
      expect(await store.purgeAll()).toBe(3)
      for (const id of ['a', 'b', 'c']) expect(await store.get(c.key(id))).toBeNull()
      expect(await store.purgeAll()).toBe(0)
      // Usable afterwards, advertiser index included.
      await store.set(c.key('d'), entryAt(Date.now(), { advertiserId: 101 }))
      expect(await store.purgeAdvertiser(101)).toBe(1)
    })

    it("purges one advertiser's entries only", async () => {
      const store = c.make(Date.now)
      const entries = { a1: 101, a2: 101, b1: 102, n1: null } as const
      for (const [id, adv] of Object.entries(entries)) await store.set(c.key(id), entryAt(Date.now(), { advertiserId: adv }))
      expect(await store.purgeAdvertiser(101)).toBe(2)
      expect(await store.get(c.key('a1'))).toBeNull()
      expect(await store.get(c.key('a2'))).toBeNull()
      expect(await store.get(c.key('b1'))).not.toBeNull()
      expect(await store.get(c.key('n1'))).not.toBeNull()
      expect(await store.purgeAdvertiser(101)).toBe(0)
      expect(await store.purgeAdvertiser(999)).toBe(0)
      // An entry re-set after the purge belongs to the advertiser again.
      await store.set(c.key('a1'), entryAt(Date.now(), { advertiserId: 101 }))
      expect(await store.purgeAdvertiser(101)).toBe(1)
    })

    it("purges an entry of owners not known (ANY_ADVERTISER) with any advertiser's entries, once", async () => {
      const store = c.make(Date.now)
      const entries = { a1: 101, any: ANY_ADVERTISER, b1: 102 } as const
      for (const [id, adv] of Object.entries(entries)) await store.set(c.key(id), entryAt(Date.now(), { advertiserId: adv }))
      expect(await store.countAdvertiser(102)).toBe(2)
      expect(await store.purgeAdvertiser(102)).toBe(2)
      expect(await store.get(c.key('any'))).toBeNull()
      expect(await store.get(c.key('a1'))).not.toBeNull()
      expect(await store.purgeAdvertiser(101)).toBe(1)
    })
  })
})

describe('MemoryStore bounds', () => {
  it('stays within its byte budget, evicting the least recently used entry', async () => {
    const body = () => randomBytes(3000)
    const store = new MemoryStore({ maxBytes: 10_000 })
    const now = Date.now()
    // Each entry holds gzip (~3 KB of random bytes) and identity (3 KB): about 6.3 KB.
    await store.set('a', entryAt(now, { body: body() }))
    expect(store.size).toBe(1)
    await store.set('b', entryAt(now, { body: body() }))
    expect(store.size).toBe(1)
    expect(await store.get('a')).toBeNull()
    expect(await store.get('b')).not.toBeNull()
  })

  it('holds an entry by its own bytes, not by the larger buffers zlib and the buffer pool made them views of', async () => {
    const store = new MemoryStore({ maxBytes: 1_000_000 })
    const entry = entryAt(Date.now())
    // gzipSync answers a view of its whole output chunk (64 KiB on Node 24); Buffer.from a view of a pool slab.
    expect(entry.gzip.buffer.byteLength).toBeGreaterThan(10 * entry.gzip.length)
    expect(entry.identity?.buffer.byteLength).toBeGreaterThan(10 * (entry.identity?.length ?? 0))
    await store.set('k', entry)
    const held = store.getSync('k') as CacheEntry
    expect([held.gzip.buffer.byteLength, held.identity?.buffer.byteLength]).toEqual([entry.gzip.length, entry.identity?.length])
    expect([held.gzip.equals(entry.gzip), held.identity?.equals(entry.identity as Buffer)]).toEqual([true, true])
  })

  it('counts each entry at no less than the heap and buffers it holds, answered as hits (its rendered heads), for 20,000 small reports', async () => {
    setFlagsFromString('--expose-gc')
    const gc = runInNewContext('gc') as (options: object) => void
    const held = async () => {
      for (let i = 0; i < 3; i++) {
        gc({ type: 'major', execution: 'sync', flavor: 'last-resort' })
        await sleep(10)
      }
      const { heapUsed, arrayBuffers } = process.memoryUsage()
      return heapUsed + arrayBuffers
    }
    const store = new MemoryStore({ maxBytes: 1024 * 1024 * 1024 })
    const now = Date.now()
    let counted = 0
    const before = await held()
    for (let i = 0; i < 20_000; i++) {
      const entry = entryAt(now, { body: Buffer.from(JSON.stringify({ data: [{ impressions: 31_033 + i, clicks: 196, ctr: 0.63, spent: 32.76 }] })) })
      counted += entrySize(entry)
      const key = `rgw:report:v1:${String(i).padStart(43, 'k')}`
      await store.set(key, entry)
      // What its hits keep for the entry's life (reports/report-reply.ts): to plain and gzip callers.
      const kept = store.getSync(key) as CacheEntry
      entryHead(kept, 'HIT', false)
      entryHead(kept, 'HIT', true)
    }
    const after = await held()
    expect(store.size).toBe(20_000)
    expect(after - before).toBeLessThanOrEqual(counted)
  }, 60_000)

  describe('each team an even part', () => {
    // About 8.3 KB an entry (3 KB of random bytes, gzip and identity, and ENTRY_OVERHEAD_BYTES): three fit in 27,000 bytes.
    const filled = (team: string | null, bytes = 3000): CacheEntry => {
      const entry = entryAt(Date.now(), { body: randomBytes(bytes) })
      return team === null ? entry : { ...entry, filledBy: { team, replica: 'r1' } }
    }
    const held = (store: MemoryStore): string[] => [...store.entries()].map(([k]) => k).sort()

    it('makes room from the team past its part, its least recently used first, never from a team within its part', async () => {
      const store = new MemoryStore({ maxBytes: 27_000, teams: () => 2 })
      await store.set('a1', filled('a'))
      await store.set('b1', filled('b'))
      await store.set('b2', filled('b'))
      store.getSync('b1')
      // a's one entry is the least recently used, but a is within its 13,500 bytes: b's b2 goes.
      await store.set('b3', filled('b'))
      expect(held(store)).toEqual(['a1', 'b1', 'b3'])
    })

    it("keeps no entry of a team past its part that only other teams' entries within their part would make room for", async () => {
      const store = new MemoryStore({ maxBytes: 27_000, teams: () => 3 })
      await store.set('a1', filled('a'))
      await store.set('b1', filled('b'))
      await store.set('c1', filled('c'))
      // c's 12 KB entry is past its 9,000 bytes alone: its own c1 does not make room enough, and a's
      // and b's are within their part: it is not kept, and nothing is dropped (c1 stays).
      await store.set('c2', filled('c', 4800))
      expect(held(store)).toEqual(['a1', 'b1', 'c1'])
      await store.set('c3', filled('c'))
      expect(held(store)).toEqual(['a1', 'b1', 'c3'])
    })

    it('lets one team use the whole budget while no other holds its part, an entry filled by no team counting on none', async () => {
      const store = new MemoryStore({ maxBytes: 27_000, teams: () => 4 })
      await store.set('a1', filled('a'))
      await store.set('a2', filled('a'))
      await store.set('a3', filled('a'))
      expect(store.size).toBe(3)
      // Entries of no filler push out a's oldest: a is past its part, and is the least recently used.
      await store.set('x1', filled(null))
      expect(held(store)).toEqual(['a2', 'a3', 'x1'])
      await store.set('x2', filled(null))
      expect(held(store)).toEqual(['a3', 'x1', 'x2'])
    })

    it('makes room from the copies of a team no longer configured, or of none, before those of a team within its part', async () => {
      let configured = ['a', 'b', 'gone']
      const store = new MemoryStore({ maxBytes: 27_000, teams: () => configured.length, configured: (team) => configured.includes(team) })
      await store.set('a1', filled('a'))
      await store.set('gone1', filled('gone'))
      // A reload removes team gone: a and b each have 13,500 bytes, and hold less.
      configured = ['a', 'b']
      await store.set('b1', filled('b'))
      await store.set('b2', filled('b', 1000))
      expect(held(store)).toEqual(['a1', 'b1', 'b2'])
      await store.set('x1', filled(null, 1000))
      await store.set('a2', filled('a', 1000))
      expect(held(store)).toEqual(['a1', 'a2', 'b1', 'b2'])
    })

    it('counts a replaced, deleted or purged entry off its team', async () => {
      const store = new MemoryStore({ maxBytes: 27_000, teams: () => 2 })
      await store.set('a1', filled('a'))
      await store.set('a1', filled('a'))
      await store.delete('a1')
      await store.set('b1', filled('b'))
      await store.purgeAll()
      // a holds one entry, within its part: b's fourth takes b's oldest, not a's older one.
      for (const k of ['a1', 'b2', 'b3', 'b4']) await store.set(k, filled(k.slice(0, 1)))
      expect(held(store)).toEqual(['a1', 'b3', 'b4'])
    })
  })

  it('does not hold an entry larger than the whole budget', async () => {
    const store = new MemoryStore({ maxBytes: 4096 })
    await store.set('big', entryAt(Date.now(), { body: randomBytes(8192) }))
    expect(store.size).toBe(0)
  })
})

describe.skipIf(!available)('RedisStore in Redis', () => {
  const breaker = () => new RedisBreaker({ cooldownMs: 1000, log: silent })

  it('gives each key a PX expiry at errorUntil, and the advertiser index at least as long', async () => {
    const r = redis as Redis
    const store = new RedisStore({ redis: r, breaker: breaker(), prefix: 'px:', limits: LIMITS })
    const now = Date.now()
    await store.set('px:report:v1:short', entryAt(now, { errorInMs: 100_000 }))
    await store.set('px:report:v1:long', entryAt(now, { errorInMs: 500_000 }))
    await store.set('px:report:v1:mid', entryAt(now, { errorInMs: 300_000 }))
    const pttl = await r.pttl('px:report:v1:long')
    expect(pttl).toBeGreaterThan(500_000 - 5_000)
    expect(pttl).toBeLessThanOrEqual(500_000)
    expect(await r.pttl('px:adv-entries:101')).toBeGreaterThan(500_000 - 5_000)
    expect((await r.zrange('px:adv-entries:101', 0, -1)).sort()).toEqual(['px:report:v1:long', 'px:report:v1:mid', 'px:report:v1:short'])
  })

  it('purges only report entries under its own prefix', async () => {
    const r = redis as Redis
    const store = new RedisStore({ redis: r, breaker: breaker(), prefix: 'own:', limits: LIMITS })
    await store.set('own:report:v1:x', entryAt(Date.now()))
    await r.set('own:rl:team:1', '5')
    await r.set('own:lock:own:report:v1:x', 'token')
    await r.set('other:report:v1:x', 'theirs')
    expect(await store.purgeAll()).toBe(1)
    expect((await r.keys('own:*')).sort()).toEqual(['own:lock:own:report:v1:x', 'own:rl:team:1'])
    expect(await r.get('other:report:v1:x')).toBe('theirs')
  })

  it('with Redis unreachable, misses and skips writes at once instead of failing', async () => {
    // A command timeout longer than the test: a store that waited on a command would end the test at its timeout.
    const gone = new Redis({ host: '127.0.0.1', port: 1, lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, commandTimeout: 60_000, retryStrategy: () => null })
    gone.on('error', () => undefined)
    const b = breaker()
    const store = new RedisStore({ redis: gone, breaker: b, prefix: 'gone:', limits: LIMITS })
    await store.set('gone:report:v1:x', entryAt(Date.now()))
    expect(await store.get('gone:report:v1:x')).toBeNull()
    expect(b.state).toBe('open')
    gone.disconnect()
  })
})

describe.runIf(available)('TieredStore with L1 off', () => {
  const breaker = () => new RedisBreaker({ cooldownMs: 1000, log: silent })
  const tiered = (prefix: string) =>
    new TieredStore({
      l1: new MemoryStore({ maxBytes: 0 }),
      l2: new RedisStore({ redis: redis as Redis, breaker: breaker(), prefix, limits: LIMITS, keepReads: true }),
      bus: null,
      log: silent,
      maxEntryBytes: LIMITS.maxEntryBytes,
    })

  it('decompresses each stored value once, and only ever serves the body of the bytes it read', async () => {
    const store = tiered('dec:')
    const key = 'dec:report:v1:x'
    const first = entryAt(Date.now(), { body: Buffer.from('{"version":1}') })
    await store.set(key, first)
    const a = (await store.lookup(key))?.entry
    const b = (await store.lookup(key))?.entry
    expect(a?.identity?.toString()).toBe('{"version":1}')
    // The second read of the same bytes is the entry made by the first, body and all.
    expect(b).toBe(a)
    expect(b?.identity).toBe(a?.identity)
    // Another writer's value under the same key (a refresh on another replica, or a
    // value planted in Redis) is decompressed anew: the kept body is not its body.
    const second = entryAt(Date.now(), { body: Buffer.from('{"version":2}') })
    await new RedisStore({ redis: redis as Redis, breaker: breaker(), prefix: 'dec:', limits: LIMITS }).set(key, { ...second, etag: first.etag })
    expect((await store.lookup(key))?.entry.identity?.toString()).toBe('{"version":2}')
  })
})

describe.runIf(available)('RedisStore key prefixes', () => {
  // redis.keyPrefix is any string: SCAN reads *, ?, [ and \ in it as a pattern.
  it("purges and counts its own entries only, whatever the prefix's characters: another deployment's on the same Redis stay", async () => {
    const run = `p${++spaces}`
    const store = (prefix: string) => new RedisStore({ redis: redis as Redis, breaker: new RedisBreaker({ cooldownMs: 1000, log: silent }), prefix, now: Date.now, limits: LIMITS })
    const prefixes = [`${run}?:`, `${run}[ab]:`, `${run}*:`, `${run}\\:`]
    const others = [`${run}x:`, `${run}a:`, `${run}zz:`, `${run}:`]
    for (const [i, prefix] of prefixes.entries()) {
      const mine = store(prefix)
      const theirs = store(others[i]!)
      await mine.set(`${prefix}report:v1:m`, entryAt(Date.now(), { advertiserId: 101 }))
      await theirs.set(`${others[i]}report:v1:t`, entryAt(Date.now(), { advertiserId: 101 }))
      expect(await mine.countAll(), prefix).toBe(1)
      expect(await mine.purgeAll(), prefix).toBe(1)
      expect(await mine.get(`${prefix}report:v1:m`), prefix).toBeNull()
      expect(await theirs.get(`${others[i]}report:v1:t`), `${others[i]} after a purge of ${prefix}`).not.toBeNull()
      expect(await theirs.purgeAdvertiser(101), `${others[i]}'s advertiser index after a purge of ${prefix}`).toBe(1)
    }
  })
})
