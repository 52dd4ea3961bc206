import { describe, expect, it } from 'vitest'
import { gzipSync } from 'node:zlib'
import type { CacheEntry } from '../../src/cache/cache-entry.js'
import { etagOf } from '../../src/cache/cache-entry.js'
import { endJob, newJob, PLATFORM_ANSWER, requeueJob, startJob, type Job } from '../../src/jobs/job.js'
import { MemoryJobStore, type JobStore } from '../../src/jobs/job-store.js'
import { RedisJobStore } from '../../src/jobs/redis-job-store.js'
import { MemoryDeliveryStore, type DeliveryStore } from '../../src/jobs/delivery-store.js'
import { RedisDeliveryStore } from '../../src/jobs/redis-delivery-store.js'
import { newDelivery, type Delivery } from '../../src/jobs/delivery.js'
import { redisKey } from '../../src/redis/keys.js'
import { RedisSeal } from '../../src/redis/seal.js'
import { canonicalGetReport } from '../../src/reports/report-query.js'
import { fakeClock } from '../helpers/clock.js'
import { useRedis } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { dueDeliveries } from '../helpers/due-deliveries.js'

// The promises of a job store (jobs/job-store.ts), one suite against the memory store of
// demo mode and the Redis store of the replicas, on a real redis-server: a job changes
// only if it is still as it was read (two runners racing to start one, one wins), a
// team's open jobs are bounded, ended jobs leave the open set; a job's end and its webhook
// delivery are one step (no end stored without it); and Redis's records are sealed: one
// this gateway did not write is read as absent.

const { available } = redisAvailability('the job store contract')
const PREFIX = 'test:'
const LEASE = 15_000
const KEEP = 60_000
/** The most of a platform answer's body a job's record held itself, as gateways wrote it before bodies went beside the record. */
const RECORD_ANSWER_BYTES = 64 * 1024
const report = canonicalGetReport('/api/v1/report/campaigns/get', 'advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-31', { maxRangeDays: 400 })

/** A job `id` of team growth, added to `store` and started by runner r1 (its run `{ runner: 'r1', runs: 1 }`). */
async function runningIn(store: JobStore, id: string, now: number): Promise<Job> {
  const job = newJob({ id, team: 'growth', credential: 'default', key: 'k', report, expectedSeconds: null }, now)
  await store.add(job, 10, now)
  const running = startJob(job, 'r1', now, LEASE) as Job
  expect(await store.swap(job, running, now)).toBe(true)
  return running
}

function entryOf(text: string, now: number): CacheEntry {
  const identity = Buffer.from(text)
  return { contentType: 'application/json', gzip: gzipSync(identity), identity, fetchedAt: now, freshUntil: now + 60_000, staleUntil: now + 120_000, errorUntil: now + 180_000, advertiserIds: [101], etag: etagOf(identity) }
}

describe.skipIf(!available)('job stores: memory and Redis keep the same promises', () => {
  const redis = useRedis()
  const unverified: string[] = []
  const stores: [string, () => JobStore][] = [
    ['memory', () => new MemoryJobStore()],
    ['redis', () => new RedisJobStore({ redis: redis.client, seal: new RedisSeal('job-store-test-secret-0123456789'), prefix: PREFIX, maxEntryBytes: 1024 * 1024, onUnverified: (key) => unverified.push(key) })],
  ]

  const seal = new RedisSeal('job-store-test-secret-0123456789')
  const bounds = { keepMs: KEEP, lifeMs: 10 * KEEP, perTeam: 10 }
  const withOutboxes: [string, () => { jobs: JobStore; outbox: DeliveryStore }][] = [
    ['memory', () => {
      const outbox = new MemoryDeliveryStore(bounds)
      return { jobs: new MemoryJobStore(outbox), outbox }
    }],
    ['redis', () => {
      const outbox = new RedisDeliveryStore({ redis: redis.client, seal, prefix: PREFIX, bounds, onUnverified: (key) => unverified.push(key) })
      return { jobs: new RedisJobStore({ redis: redis.client, seal, prefix: PREFIX, maxEntryBytes: 1024 * 1024, onUnverified: (key) => unverified.push(key), outbox }), outbox }
    }],
  ]

  describe.each(withOutboxes)('%s, with its outbox', (_name, make) => {
    const push = (job: string, now: number): Delivery => newDelivery({ job, team: 'growth', jobState: 'done', url: 'https://hooks.example.org/jobs', body: `{"id":"${job}"}` }, now)
    const outcome = { kind: 'done' as const, resultBytes: 1, tookSeconds: 0, fetchedAt: 0 }

    it('stores a job\'s end and its delivery in one step: an end refused adds none, a delivery kept already is kept as it is', async () => {
      const { jobs, outbox } = make()
      const clock = fakeClock()
      const job = newJob({ id: 'a', team: 'growth', credential: 'default', key: 'k', report, expectedSeconds: null }, clock.now())
      await jobs.add(job, 10, clock.now())
      const running = startJob(job, 'r1', clock.now(), LEASE) as Job
      await jobs.swap(job, running, clock.now())
      // r1 stopped; r2 took the job over: r1's late end is refused, and so is its delivery.
      clock.advance(LEASE)
      const taken = startJob(running, 'r2', clock.now(), LEASE) as Job
      await jobs.swap(running, taken, clock.now())
      const late = endJob(running, { runner: 'r1', runs: 1 }, clock.now(), outcome, KEEP) as Job
      expect(await jobs.swap(running, late, clock.now(), push('a', clock.now()), entryOf('{"by":"r1"}', clock.now()))).toBe(false)
      expect(await outbox.get('msg_a')).toBeNull()
      expect(await dueDeliveries(outbox, clock.now(), 10)).toEqual([])
      expect(await jobs.result('a', clock.now())).toBeNull()
      // r2's end is stored with its delivery, due at once, and its result.
      const done = endJob(taken, { runner: 'r2', runs: 2 }, clock.now(), outcome, KEEP) as Job
      const d = push('a', clock.now())
      expect(await jobs.swap(taken, done, clock.now(), d, entryOf('{"by":"r2"}', clock.now()))).toBe(true)
      expect(await jobs.get('a')).toEqual(done)
      expect((await jobs.result('a', clock.now()))?.identity?.toString()).toBe('{"by":"r2"}')
      expect(await outbox.get('msg_a')).toEqual(d)
      expect(await dueDeliveries(outbox, clock.now(), 10)).toEqual([d])

      // A job whose delivery the outbox holds already: its end is stored, the delivery kept as it was.
      const other = newJob({ id: 'b', team: 'growth', credential: 'default', key: 'k', report, expectedSeconds: null }, clock.now())
      await jobs.add(other, 10, clock.now())
      const first = push('b', clock.now())
      await outbox.add(first, clock.now())
      clock.advance(5)
      const started = startJob(other, 'r1', clock.now(), LEASE) as Job
      await jobs.swap(other, started, clock.now())
      const ended = endJob(started, { runner: 'r1', runs: 1 }, clock.now(), outcome, KEEP) as Job
      expect(await jobs.swap(started, ended, clock.now(), push('b', clock.now()))).toBe(true)
      expect(await jobs.get('b')).toEqual(ended)
      expect(await outbox.get('msg_b')).toEqual(first)
    })
  })

  it('a store given no outbox refuses an end with a delivery rather than drop it', async () => {
    for (const [, make] of stores) {
      const jobs = make()
      const clock = fakeClock()
      const job = newJob({ id: 'c', team: 'growth', credential: 'default', key: 'k', report, expectedSeconds: null }, clock.now())
      await jobs.add(job, 10, clock.now())
      const running = startJob(job, 'r1', clock.now(), LEASE) as Job
      await jobs.swap(job, running, clock.now())
      const done = endJob(running, { runner: 'r1', runs: 1 }, clock.now(), { kind: 'done', resultBytes: 1, tookSeconds: 0, fetchedAt: clock.now() }, KEEP) as Job
      const d = newDelivery({ job: 'c', team: 'growth', jobState: 'done', url: 'https://hooks.example.org/jobs', body: '{}' }, clock.now())
      await expect(jobs.swap(running, done, clock.now(), d)).rejects.toThrow(/no outbox/)
      expect(await jobs.get('c')).toEqual(running)
    }
  })

  describe.each(stores)('%s', (_name, make) => {
    it('starts a job once when two runners race for it; the loser\'s stale copy changes nothing', async () => {
      const store = make()
      const clock = fakeClock()
      const job = newJob({ id: 'a', team: 'growth', credential: 'default', key: 'k', report, expectedSeconds: null }, clock.now())
      expect(await store.add(job, 10, clock.now())).toBe(true)
      const [seen1, seen2] = [await store.get('a'), await store.get('a')] as [Job, Job]
      const byR1 = startJob(seen1, 'r1', clock.now(), LEASE) as Job
      const byR2 = startJob(seen2, 'r2', clock.now(), LEASE) as Job
      const wins = await Promise.all([store.swap(seen1, byR1, clock.now()), store.swap(seen2, byR2, clock.now())])
      expect(wins.filter(Boolean)).toHaveLength(1)
      const running = (await store.get('a')) as Job
      expect(running.runs).toBe(1)
      // Running under a live lease: due to no runner; once it ran out, due again.
      expect(await store.due(clock.now(), 10)).toEqual([])
      expect(await store.openOfTeam('growth')).toEqual([running])
      clock.advance(LEASE)
      expect(await store.due(clock.now(), 10)).toEqual([running])

      // Another runner takes it, and the first run's end is refused by the store too.
      const taken = startJob(running, 'r3', clock.now(), LEASE) as Job
      expect(await store.swap(running, taken, clock.now())).toBe(true)
      const late = endJob(running, { runner: running.runner as string, runs: 1 }, clock.now(), { kind: 'done', resultBytes: 1, tookSeconds: 0, fetchedAt: clock.now() }, KEEP) as Job
      expect(await store.swap(running, late, clock.now())).toBe(false)
      const done = endJob(taken, { runner: 'r3', runs: 2 }, clock.now(), { kind: 'done', resultBytes: 1, tookSeconds: 0, fetchedAt: clock.now() }, KEEP) as Job
      expect(await store.swap(taken, done, clock.now())).toBe(true)
      expect(await store.due(clock.now() + LEASE, 10)).toEqual([])
      expect(await store.openOfTeam('growth')).toEqual([])
      expect(await store.ofTeam('growth', clock.now())).toEqual([done])
    })

    it('bounds a team\'s open jobs; an ended job leaves room; another team has its own', async () => {
      const store = make()
      const clock = fakeClock()
      const job = (id: string, team = 'growth') => newJob({ id, team, credential: 'default', key: id, report, expectedSeconds: null }, clock.now())
      expect(await store.add(job('a'), 2, clock.now())).toBe(true)
      clock.advance(1)
      expect(await store.add(job('b'), 2, clock.now())).toBe(true)
      expect(await store.add(job('c'), 2, clock.now())).toBe(false)
      expect(await store.add(job('x', 'other'), 2, clock.now())).toBe(true)
      // By when they are due (asked), then by id; none before it is due.
      expect((await store.due(clock.now(), 10)).map((j) => j.id)).toEqual(['a', 'b', 'x'])
      expect((await store.due(clock.now(), 2)).map((j) => j.id)).toEqual(['a', 'b'])
      expect((await store.due(clock.now() - 1, 10)).map((j) => j.id)).toEqual(['a'])
      const a = (await store.get('a')) as Job
      const started = startJob(a, 'r1', clock.now(), LEASE) as Job
      await store.swap(a, started, clock.now())
      // A requeued job is open still.
      const requeued = requeueJob(started, { runner: 'r1', runs: 1 }, clock.now()) as Job
      expect(await store.swap(started, requeued, clock.now())).toBe(true)
      expect(await store.add(job('c'), 2, clock.now())).toBe(false)
      const again = startJob(requeued, 'r1', clock.now(), LEASE) as Job
      await store.swap(requeued, again, clock.now())
      const failed = endJob(again, { runner: 'r1', runs: 2 }, clock.now(), { kind: 'failed', error: { code: 'GW_UPSTREAM', message: 'x', statusCode: 502 }, tookSeconds: 1 }, KEEP) as Job
      expect(await store.swap(again, failed, clock.now())).toBe(true)
      expect(await store.add(job('c'), 2, clock.now())).toBe(true)
    })

    it('bounds a team\'s kept jobs, ended ones until dropped, in the add itself: asks made at once are counted with each other', async () => {
      const store = make()
      const clock = fakeClock()
      const job = (id: string, team = 'growth') => newJob({ id, team, credential: 'default', key: id, report, expectedSeconds: null }, clock.now())
      expect(await store.add(job('a'), 10, clock.now(), 3)).toBe(true)
      const a = (await store.get('a')) as Job
      const started = startJob(a, 'r1', clock.now(), LEASE) as Job
      await store.swap(a, started, clock.now())
      const failed = endJob(started, { runner: 'r1', runs: 1 }, clock.now(), { kind: 'failed', error: { code: 'GW_UPSTREAM', message: 'x', statusCode: 502 }, tookSeconds: 0 }, KEEP) as Job
      expect(await store.swap(started, failed, clock.now())).toBe(true)
      const added = await Promise.all(['b', 'c', 'd', 'e'].map((id) => store.add(job(id), 10, clock.now(), 3)))
      expect(added.filter(Boolean)).toHaveLength(2)
      expect(await store.keptOfTeam('growth', clock.now())).toBe(3)
      expect(await store.add(job('x', 'other'), 10, clock.now(), 3)).toBe(true)
    })

    it('removes a job only as it was read (a cancel loses to a start)', async () => {
      const store = make()
      const clock = fakeClock()
      const job = newJob({ id: 'a', team: 'growth', credential: 'default', key: 'k', report, expectedSeconds: null }, clock.now())
      await store.add(job, 10, clock.now())
      const started = startJob(job, 'r1', clock.now(), LEASE) as Job
      expect(await store.swap(job, started, clock.now())).toBe(true)
      expect(await store.remove(job)).toBe(false)
      const other = newJob({ id: 'b', team: 'growth', credential: 'default', key: 'k', report, expectedSeconds: null }, clock.now())
      await store.add(other, 10, clock.now())
      expect(await store.remove(other)).toBe(true)
      expect(await store.get('b')).toBeNull()
      expect((await store.ofTeam('growth', clock.now())).map((j) => j.id)).toEqual(['a'])
    })

    it('keeps the platform\'s answer a failed job kept with its body in its record (64 KiB, as gateways wrote it before bodies went beside), whole; a failed record without one reads as before', async () => {
      const store = make()
      const clock = fakeClock()
      const job = newJob({ id: 'p', team: 'growth', credential: 'default', key: 'k', report, expectedSeconds: null }, clock.now())
      await store.add(job, 10, clock.now())
      const running = startJob(job, 'r1', clock.now(), LEASE) as Job
      expect(await store.swap(job, running, clock.now())).toBe(true)
      const body = Buffer.alloc(RECORD_ANSWER_BYTES, 'x')
      const answer = { status: 422, headers: { 'content-type': 'application/json' }, body: body.toString('base64'), forward: { reason: 'uri-miss' as const, collapsed: false } }
      const error = { code: PLATFORM_ANSWER, statusCode: 422, message: 'refused', answer }
      const failed = endJob(running, { runner: 'r1', runs: 1 }, clock.now(), { kind: 'failed', error, tookSeconds: 0.1, resultBytes: RECORD_ANSWER_BYTES }, KEEP) as Job
      expect(failed.resultBytes).toBe(RECORD_ANSWER_BYTES)
      expect(await store.swap(running, failed, clock.now())).toBe(true)
      expect((await store.get('p'))?.error).toEqual(error)
      // A record of the previous version: a failure without an answer.
      const { answer: _none, ...before } = error
      const old = { ...failed, id: 'q', error: { ...before, code: 'GW_UPSTREAM', statusCode: 502 }, resultBytes: 0 }
      await store.add({ ...job, id: 'q' }, 10, clock.now())
      const q = (await store.get('q')) as Job
      const qRunning = startJob(q, 'r1', clock.now(), LEASE) as Job
      expect(await store.swap(q, qRunning, clock.now())).toBe(true)
      expect(await store.swap(qRunning, { ...old, runner: null }, clock.now())).toBe(true)
      expect((await store.get('q'))?.error).toEqual({ code: 'GW_UPSTREAM', statusCode: 502, message: 'refused' })
    })

    it('keeps the platform\'s no-store answer a done job kept: its status and headers in its record, its body (past 64 KiB) beside it, whole', async () => {
      const store = make()
      const clock = fakeClock()
      const running = await runningIn(store, 'n', clock.now())
      const answer = { status: 200, headers: { 'content-type': 'application/json' }, forward: { reason: 'uri-miss' as const, collapsed: false } }
      const body = entryOf(JSON.stringify({ rows: 'r'.repeat(200_000) }), clock.now())
      const done = endJob(running, { runner: 'r1', runs: 1 }, clock.now(), { kind: 'done', resultBytes: body.gzip.length, tookSeconds: 0.1, fetchedAt: clock.now(), platformAnswer: answer }, KEEP) as Job
      expect(await store.swap(running, done, clock.now(), null, body)).toBe(true)
      const read = (await store.get('n')) as Job
      expect([read.state, read.platformAnswer, read.resultBytes]).toEqual(['done', answer, body.gzip.length])
      expect((await store.result('n', clock.now()))?.identity).toEqual(body.identity)
    })

    it('keeps a job\'s result whole: body, ETag, lifetimes', async () => {
      const store = make()
      const now = Date.now()
      const entry = entryOf('{"data":[{"clicks":1}]}', now)
      const running = await runningIn(store, 'a', now)
      const done = endJob(running, { runner: 'r1', runs: 1 }, now, { kind: 'done', resultBytes: entry.gzip.length, tookSeconds: 0, fetchedAt: now }, KEEP) as Job
      expect(await store.swap(running, done, now, null, entry)).toBe(true)
      const kept = (await store.result('a', now)) as CacheEntry
      expect(kept.identity?.toString()).toBe('{"data":[{"clicks":1}]}')
      expect({ ...kept, gzip: null, identity: null }).toEqual({ ...entry, gzip: null, identity: null })
    })

    it('keeps a result only by the end of the run that holds the job: a late end of a run that lost it stores none', async () => {
      const store = make()
      const clock = fakeClock()
      const running = await runningIn(store, 'a', clock.now())
      clock.advance(LEASE)
      const taken = startJob(running, 'r2', clock.now(), LEASE) as Job
      expect(await store.swap(running, taken, clock.now())).toBe(true)
      const late = endJob(running, { runner: 'r1', runs: 1 }, clock.now(), { kind: 'done', resultBytes: 1, tookSeconds: 0, fetchedAt: clock.now() }, KEEP) as Job
      expect(await store.swap(running, late, clock.now(), null, entryOf('{"by":"r1"}', clock.now()))).toBe(false)
      expect(await store.result('a', clock.now())).toBeNull()
      const entry = entryOf('{"by":"r2"}', clock.now())
      const done = endJob(taken, { runner: 'r2', runs: 2 }, clock.now(), { kind: 'done', resultBytes: entry.gzip.length, tookSeconds: 0, fetchedAt: clock.now() }, KEEP) as Job
      expect(await store.swap(taken, done, clock.now(), null, entry)).toBe(true)
      expect(await store.swap(running, late, clock.now(), null, entryOf('{"by":"r1"}', clock.now()))).toBe(false)
      expect((await store.result('a', clock.now()))?.identity?.toString()).toBe('{"by":"r2"}')
    })

    it('keeps a result checked against its team\'s held results only if no other result of the team was kept since the check read them', async () => {
      const store = make()
      const now = Date.now()
      const a = await runningIn(store, 'a', now)
      const b = await runningIn(store, 'b', now)
      const entry = entryOf('{"data":[{"clicks":1}]}', now)
      const doneOf = (running: Job): Job => endJob(running, { runner: 'r1', runs: 1 }, now, { kind: 'done', resultBytes: entry.gzip.length, tookSeconds: 0, fetchedAt: now }, KEEP) as Job
      // Two replicas' ends read the team's results at once: none held.
      const readByA = await store.heldResults('growth', now)
      const readByB = await store.heldResults('growth', now)
      expect([readByA.bytes, readByB.bytes]).toEqual([0, 0])
      expect(await store.swap(a, doneOf(a), now, null, entry, readByA.mark)).toBe(true)
      // B's check missed A's result: its end is refused, nothing of it kept.
      expect(await store.swap(b, doneOf(b), now, null, entry, readByB.mark)).toBe(false)
      expect(await store.get('b')).toEqual(b)
      expect(await store.result('b', now)).toBeNull()
      // Read again, A's result counted, its end is kept.
      const again = await store.heldResults('growth', now)
      expect(again.bytes).toBe(entry.gzip.length)
      expect(await store.swap(b, doneOf(b), now, null, entry, again.mark)).toBe(true)
      // Another team's results move no mark of this one.
      expect((await store.heldResults('growth', now)).mark).not.toBe(again.mark)
      expect((await store.heldResults('other', now)).mark).toBe(readByA.mark)
    })
  })

  it('reads a job record or result this gateway did not seal as absent, and says so', async () => {
    const store = stores[1]![1]()
    unverified.length = 0
    await redis.client.set(redisKey.job(PREFIX, 'forged'), JSON.stringify({ id: 'forged', team: 'growth', state: 'done', runs: 1 }))
    await redis.client.set(redisKey.jobResult(PREFIX, 'forged'), 'not a sealed entry')
    expect(await store.get('forged')).toBeNull()
    expect(await store.result('forged', Date.now())).toBeNull()
    expect(unverified).toEqual([redisKey.job(PREFIX, 'forged'), redisKey.jobResult(PREFIX, 'forged')])
  })
})
