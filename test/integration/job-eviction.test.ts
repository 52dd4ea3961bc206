import { gzipSync } from 'node:zlib'
import { afterEach, describe, expect, it } from 'vitest'
import { etagOf, type CacheEntry } from '../../src/cache/cache-entry.js'
import { dropAt, endJob, newJob, startJob, type Job } from '../../src/jobs/job.js'
import { RedisJobStore } from '../../src/jobs/redis-job-store.js'
import { RedisDeliveryStore } from '../../src/jobs/redis-delivery-store.js'
import { newDelivery } from '../../src/jobs/delivery.js'
import { redisKey } from '../../src/redis/keys.js'
import { RedisSeal } from '../../src/redis/seal.js'
import { canonicalGetReport } from '../../src/reports/report-query.js'
import { useRedis } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { dueDeliveries } from '../helpers/due-deliveries.js'

// The replicas guide has Redis evict under memory pressure (maxmemory with volatile-lru:
// report entries carry an expiry). A report job's record and its result are no such
// copies: one evicted, its caller's status and result were 404 long before jobs.keep,
// and a queued job's id stayed in the due set for ever, ahead of every job asked after.
// So is a webhook delivery not yet made: evicted, the team was never told its job ended.
// Redis evicts under volatile-* only keys with an expiry: these keys carry none, and
// their stores drop them themselves once their time is past.

const { available } = redisAvailability('report jobs under Redis eviction')
const PREFIX = 'evict:'
const LEASE = 15_000
const KEEP = 3_600_000
const report = canonicalGetReport('/api/v1/report/campaigns/get', 'advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-31', { maxRangeDays: 400 })

function entryOf(text: string, now: number): CacheEntry {
  const identity = Buffer.from(text)
  return { contentType: 'application/json', gzip: gzipSync(identity), identity, fetchedAt: now, freshUntil: now + 60_000, staleUntil: now + 120_000, errorUntil: now + 180_000, advertiserIds: [101], etag: etagOf(identity) }
}

describe.skipIf(!available)('report jobs in Redis: kept through eviction (maxmemory, volatile-lru), dropped at their time, never held behind records unread', () => {
  const redis = useRedis()
  afterEach(async () => {
    await redis.client.config('SET', 'maxmemory', '0')
    await redis.client.config('SET', 'maxmemory-policy', 'noeviction')
  })

  function store(): RedisJobStore {
    return new RedisJobStore({ redis: redis.client, seal: new RedisSeal('job-eviction-test-secret-0123456789'), prefix: PREFIX, maxEntryBytes: 1024 * 1024, onUnverified: () => undefined })
  }

  /** A job done at `now` with its result kept, and one queued behind it. */
  async function doneAndQueued(jobs: RedisJobStore, now: number): Promise<{ done: Job; queued: Job }> {
    const job = newJob({ id: 'done-1', team: 'growth', credential: 'default', key: 'k', report, expectedSeconds: null }, now)
    expect(await jobs.add(job, 10, now)).toBe(true)
    const running = startJob(job, 'r1', now, LEASE) as Job
    expect(await jobs.swap(job, running, now)).toBe(true)
    const done = endJob(running, { runner: 'r1', runs: 1 }, now, { kind: 'done', resultBytes: 16, tookSeconds: 1, fetchedAt: now }, KEEP) as Job
    expect(await jobs.swap(running, done, now, null, entryOf('{"data":[1,2,3]}', now))).toBe(true)
    const queued = newJob({ id: 'queued-1', team: 'growth', credential: 'default', key: 'k', report, expectedSeconds: null }, now)
    expect(await jobs.add(queued, 10, now)).toBe(true)
    return { done, queued }
  }

  const bounds = { keepMs: KEEP, lifeMs: 10 * KEEP, perTeam: 10 }
  function outbox(): RedisDeliveryStore {
    return new RedisDeliveryStore({ redis: redis.client, seal: new RedisSeal('job-eviction-test-secret-0123456789'), prefix: PREFIX, bounds, onUnverified: () => undefined })
  }
  const push = (job: string, now: number) => newDelivery({ job, team: 'growth', jobState: 'done', url: 'https://hooks.example.org/jobs', body: `{"id":"${job}"}` }, now)

  it('keeps a done job, its result, a queued job and a webhook delivery not yet made while report copies are evicted around them', async () => {
    const jobs = store()
    const now = Date.now()
    const { done, queued } = await doneAndQueued(jobs, now)
    const pending = push(done.id, now)
    expect(await outbox().add(pending, now)).toBe(true)
    await redis.client.config('SET', 'maxmemory', '4mb')
    await redis.client.config('SET', 'maxmemory-policy', 'volatile-lru')
    // Report copies, each with its expiry, well past maxmemory: Redis evicts as it must.
    const copy = 'x'.repeat(1000)
    for (let batch = 0; batch < 12; batch++) {
      const pipeline = redis.client.pipeline()
      for (let i = 0; i < 1000; i++) pipeline.set(`${PREFIX}report:v1:copy-${batch}-${i}`, copy, 'EX', 86_400)
      await pipeline.exec()
    }
    const evicted = Number(/evicted_keys:(\d+)/.exec(await redis.client.info('stats'))?.[1])
    expect(evicted, 'report copies evicted').toBeGreaterThan(4000)
    expect(await jobs.get(done.id)).toEqual(done)
    expect((await jobs.result(done.id, now))?.identity?.toString()).toBe('{"data":[1,2,3]}')
    expect(await jobs.get(queued.id)).toEqual(queued)
    expect((await jobs.due(now, 10)).map((j) => j.id)).toEqual([queued.id])
    expect(await dueDeliveries(outbox(), now, 10)).toEqual([pending])
  })

  it('drops a delivery not yet made once its life is over, at the next delivery added', async () => {
    const now = Date.now()
    const old = push('old-job', now)
    expect(await outbox().add(old, now)).toBe(true)
    expect(await outbox().add(push('new-job', now + bounds.lifeMs), now + bounds.lifeMs)).toBe(true)
    expect(await outbox().get(old.id)).toEqual(old)
    expect(await outbox().add(push('newer-job', now + bounds.lifeMs + 1), now + bounds.lifeMs + 1)).toBe(true)
    expect(await outbox().get(old.id)).toBeNull()
    expect(await redis.client.zscore(redisKey.dueDeliveries(PREFIX), old.id)).toBeNull()
  })

  it('drops a job and its result itself once the job is past its drop time, and no sooner', async () => {
    const jobs = store()
    const now = Date.now()
    const { done, queued } = await doneAndQueued(jobs, now)
    const drop = dropAt(done) as number
    // Each a replica of its own: a replica sweeps at most every JOB_SWEEP_MS.
    await jobs.due(drop - 1, 10)
    expect(await jobs.get(done.id)).toEqual(done)
    await store().due(drop, 10)
    expect(await jobs.get(done.id)).toBeNull()
    expect(await redis.client.exists(redisKey.jobResult(PREFIX, done.id))).toBe(0)
    expect(await redis.client.zscore(redisKey.teamJobs(PREFIX, 'growth'), done.id)).toBeNull()
    expect(await jobs.get(queued.id), 'an open job stays').toEqual(queued)
  })

  it('starts the jobs it can read however many it cannot are due before them (sealed with a GATEWAY_SECRET since changed)', async () => {
    const before = new RedisJobStore({ redis: redis.client, seal: new RedisSeal('job-eviction-old-secret-0123456789'), prefix: PREFIX, maxEntryBytes: 1024 * 1024, onUnverified: () => undefined })
    const now = Date.now()
    for (let i = 0; i < 12; i++) expect(await before.add(newJob({ id: `old-${i}`, team: 'growth', credential: 'default', key: 'k', report, expectedSeconds: null }, now - 1000), 20, now - 1000)).toBe(true)
    const jobs = store()
    const job = newJob({ id: 'new-1', team: 'reach', credential: 'default', key: 'k', report, expectedSeconds: null }, now)
    expect(await jobs.add(job, 10, now)).toBe(true)
    expect((await jobs.due(now, 10)).map((j) => j.id)).toEqual([job.id])
  })

  it('drops an open job nobody ran for a week, with its ids', async () => {
    const jobs = store()
    const now = Date.now()
    const { queued } = await doneAndQueued(jobs, now)
    await store().due(now + 7 * 24 * 3_600_000 - 1, 10)
    expect(await jobs.get(queued.id)).toEqual(queued)
    expect(await redis.client.hget(redisKey.jobResultEnds(PREFIX), 'growth'), 'the count of the team\'s results kept').toBe('1')
    await store().due(now + 7 * 24 * 3_600_000, 10)
    expect(await jobs.get(queued.id)).toBeNull()
    // The team has no job left: its count goes with its set.
    expect(await redis.client.hget(redisKey.jobResultEnds(PREFIX), 'growth')).toBeNull()
    expect(await redis.client.zscore(redisKey.dueJobs(PREFIX), queued.id)).toBeNull()
    expect(await redis.client.zscore(redisKey.teamJobs(PREFIX, 'growth'), queued.id)).toBeNull()
  })
})

