// The price of sharing the platform's count across replicas (src/platform/pauses/count-sync.ts):
// while a replica shares the count out, one script every 250 ms per credential writes its
// record and reads the others'. Measured: the exchange's round trip on a real redis-server
// (standalone, on the load core) with 2, 4 and 50 replicas' records of 3 teams each, sealed
// as GATEWAY_SECRET seals them, and the CPU of a platform call asked of the rule (admit and
// told) once the others' records are heard, against none. Medians of 5 runs. Run after
// `npm run build:gateway`:
//   flock /tmp/bench.lock node bench/count-sync-price.mjs
import { Redis } from 'ioredis'
import { CountShares } from '../dist/platform/pauses/count-shares.js'
import { CountSync } from '../dist/platform/pauses/count-sync.js'
import { RedisBreaker } from '../dist/redis/breaker.js'
import { RedisSeal } from '../dist/redis/seal.js'
import { systemClock } from '../dist/clock.js'
import { startStandalone } from './lib/redis-servers.mjs'

const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const LIMIT = 1_000_000
const seal = new RedisSeal('bench-count-sync-secret-000000000000')

/** A replica's count, shared out (the platform refused), its teams asking. */
function enforced(clock, teams, prefix) {
  const shares = new CountShares({ weightOf: () => 1, clock })
  shares.told(shares.pass(), 429, { limit: LIMIT, remaining: 0, refusal: true }, null)
  for (const team of teams) shares.refusing(`${prefix}${team}`)
  return shares
}

async function exchangeMs(redis, replicas) {
  const key = `bench:counts:{r${replicas}}`
  const log = { warn: () => undefined, info: () => undefined, error: () => undefined, debug: () => undefined }
  const breaker = new RedisBreaker({ cooldownMs: 1000, log })
  const syncs = Array.from({ length: replicas }, (_, i) => new CountSync({ redis, breaker, key, counts: enforced(systemClock, ['a', 'b', 'c'], `r${i}-`), clock: systemClock, seal, maxPauseMs: 60_000, onUnverified: () => { throw new Error('unverified') } }))
  for (const s of syncs) await s.exchange()
  const runs = []
  for (let r = 0; r < 5; r++) {
    const n = 500
    const started = process.hrtime.bigint()
    for (let i = 0; i < n; i++) await syncs[0].exchange()
    runs.push(Number(process.hrtime.bigint() - started) / n / 1e6)
  }
  for (const s of syncs) s.stop()
  return median(runs)
}

function callNs(heard) {
  let now = 1_800_000_000_000
  const clock = { now: () => now }
  const shares = enforced(clock, [], '')
  if (heard) shares.heard(Array.from({ length: 3 }, (_, i) => ({ windowAt: now, refusedUntil: 0, lendAsks: 0, teams: ['a', 'b', 'c'].map((t) => ({ team: `r${i}-${t}`, sent: 0, asks: 1, last: null, askedAt: now })) })))
  let left = LIMIT
  const n = 200_000
  const started = process.hrtime.bigint()
  for (let i = 0; i < n; i++) {
    now += 0.06
    const a = shares.admit(`team${i % 3}`)
    if (a.kind === 'sent') shares.told(a, 200, { limit: LIMIT, remaining: Math.max(0, --left), refusal: false }, null)
  }
  return Number(process.hrtime.bigint() - started) / n
}

const server = await startStandalone('count-sync-price')
const redis = new Redis(server.redis.url, { maxRetriesPerRequest: 1 })
try {
  for (const replicas of [2, 4, 50]) console.log(`${replicas} replicas' records: ${(await exchangeMs(redis, replicas)).toFixed(3)} ms an exchange (one every 250 ms while the count is shared out)`)
  const alone = median(Array.from({ length: 5 }, () => callNs(false)))
  const withOthers = median(Array.from({ length: 5 }, () => callNs(true)))
  console.log(`a call asked of the rule: ${alone.toFixed(0)} ns alone, ${withOthers.toFixed(0)} ns with 3 other replicas' 9 teams heard`)
} finally {
  redis.disconnect()
  await server.stop()
}
