#!/usr/bin/env node
// The price of two Redis protections, paired on one client, medians of one run:
//
// - gatewayLockTake (src/redis/lock.ts): each try for a fill's lock (and a login's) is one
//   EVALSHA of a script that takes the lock with SET NX PX or else reads its holder, in place
//   of one SET NX PX. Each pair sends both on keys of their own, the order alternating: a
//   free lock (a miss's first try), then the same keys again, held (a try refused).
// - gatewayCopyConfirm (src/cache/redis-store.ts): on a Cluster a fill's copy is written with
//   one round trip more, the confirm of its room once the copy is written. Each fill writes a
//   copy through RedisStore on a Cluster of three masters (the room, the index, the SET and
//   the confirm), then sends that confirm once more as the fill sent it (its record unchanged):
//   the confirm's time beside the whole write's.
//
// Usage: npm run build && flock /tmp/bench.lock node bench/redis-script-price.mjs [pairs]
// (default 20000 pairs, 5000 fills); prints a Markdown table.

import { gzipSync } from 'node:zlib'
import { loadavg } from 'node:os'
import { Cluster, Redis } from 'ioredis'
import { pino } from 'pino'
import { RedisLock } from '../dist/redis/lock.js'
import { RedisBreaker } from '../dist/redis/breaker.js'
import { RedisSeal } from '../dist/redis/seal.js'
import { RedisStore } from '../dist/cache/redis-store.js'
import { etagOf } from '../dist/cache/cache-entry.js'
import { startCluster, startStandalone } from './lib/redis-servers.mjs'
import { cleanup, log } from './lib/processes.mjs'
import { markdownTable, median } from './lib/stats.mjs'

const PAIRS = Number(process.argv[2] ?? 20_000)
const FILLS = Math.max(100, Math.floor(PAIRS / 4))
const WARM = Math.min(1000, Math.ceil(PAIRS / 10))
const breaker = () => new RedisBreaker({ cooldownMs: 1000, log: pino({ level: 'silent' }) })

/** `fn`'s time in µs. */
async function timed(fn) {
  const t0 = process.hrtime.bigint()
  await fn()
  return Number(process.hrtime.bigint() - t0) / 1000
}

async function lockPairs(redis) {
  // Defines gatewayLockTake on this client, as the gateway's first fill does.
  await RedisLock.take(redis, breaker(), 'bench:lock:define', 1000)
  const owner = 'a'.repeat(22)
  const plain = { free: [], held: [] }
  const script = { free: [], held: [] }
  for (let i = 0; i < WARM + PAIRS; i++) {
    const set = (k) => redis.set(`bench:lock:set:${k}`, owner, 'PX', 60_000, 'NX')
    const take = (k) => redis.gatewayLockTake(`bench:lock:take:${k}`, owner, 60_000)
    // The keys are free at the first pass and held at the second; the order alternates.
    for (const kind of ['free', 'held']) {
      const [a, b] = i % 2 === 0 ? [await timed(() => set(i)), await timed(() => take(i))] : [await timed(() => take(i)), await timed(() => set(i))].reverse()
      if (i < WARM) continue
      plain[kind].push(a)
      script[kind].push(b)
    }
  }
  return { plain, script }
}

function copyOf(i, now) {
  const identity = Buffer.from(JSON.stringify({ data: Array.from({ length: 20 }, (_, d) => ({ date: `2025-01-${String(1 + d).padStart(2, '0')}`, impressions: i * 31 + d })) }))
  return { contentType: 'application/json', gzip: gzipSync(identity), identity, fetchedAt: now, freshUntil: now + 600_000, staleUntil: now + 1_200_000, errorUntil: now + 1_800_000, advertiserIds: [101 + (i % 50)], etag: etagOf(identity), filledBy: { team: 'bench', replica: 'r1' } }
}

async function confirmFills(cluster) {
  const store = new RedisStore({
    redis: cluster,
    breaker: breaker(),
    prefix: 'rgw:',
    seal: new RedisSeal('bench-script-price-secret-0123456789'),
    limits: { maxEntryBytes: 1024 * 1024, maxFreshMs: 3_600_000, staleWhileRevalidateMs: 3_600_000, staleIfErrorMs: 3_600_000 },
    copyPart: () => Number.MAX_SAFE_INTEGER,
  })
  const room = ['rgw:copies:{room}', 'rgw:copies:{room}:owners', 'rgw:copies:{room}:sums']
  const fill = []
  const confirm = []
  for (let i = 0; i < WARM + FILLS; i++) {
    const now = Date.now()
    const key = `rgw:report:v1:bench-${i}`
    const entry = copyOf(i, now)
    const whole = await timed(() => store.set(key, entry))
    const [bytes] = (await cluster.hget(room[1], key)).split(' ')
    // As the fill sent it: now, the key, its bytes, its expiry, the team, the part, the records' lifetime.
    const again = await timed(() => cluster.gatewayCopyConfirm(...room, now, key, bytes, entry.errorUntil, 'bench', Number.MAX_SAFE_INTEGER, 1_800_000))
    if (i < WARM) continue
    fill.push(whole)
    confirm.push(again)
  }
  return { fill, confirm }
}

const us = (x) => `${x.toFixed(1)} µs`
try {
  log(`load average before: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`)
  const standalone = await startStandalone('price-redis')
  const redis = new Redis(standalone.redis.url)
  const lock = await lockPairs(redis)
  redis.disconnect()
  await standalone.stop()
  const topology = await startCluster('price-cluster', 3)
  const cluster = new Cluster(topology.redis.cluster, { redisOptions: { maxRetriesPerRequest: 1 } })
  const copies = await confirmFills(cluster)
  cluster.disconnect()
  await topology.stop()
  const rows = [
    ['fill lock, free (a miss\'s first try)', `SET NX PX ${us(median(lock.plain.free))}`, `gatewayLockTake ${us(median(lock.script.free))}`, us(median(lock.script.free) - median(lock.plain.free)), String(PAIRS)],
    ['fill lock, held (a try refused)', `SET NX PX ${us(median(lock.plain.held))}`, `gatewayLockTake ${us(median(lock.script.held))}`, us(median(lock.script.held) - median(lock.plain.held)), String(PAIRS)],
    ['a Cluster fill\'s copy written (RedisStore.set)', `whole write ${us(median(copies.fill))}`, `of which the confirm ${us(median(copies.confirm))}`, `${((100 * median(copies.confirm)) / median(copies.fill)).toFixed(0)} % of the write`, String(FILLS)],
  ]
  process.stdout.write(`${markdownTable(['what', 'before / whole', 'now / part', 'price (median)', 'n'], rows)}\n`)
  log(`load average after: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`)
} finally {
  await cleanup()
}
