import { gzipSync } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { etagOf, type CacheEntry } from '../../src/cache/cache-entry.js'
import { JobRunner, type JobReads, type JobSettings, type RunOutcome } from '../../src/jobs/job-runner.js'
import { MemoryJobStore, type JobStore } from '../../src/jobs/job-store.js'
import { RedisJobStore } from '../../src/jobs/redis-job-store.js'
import { newJob, type Job } from '../../src/jobs/job.js'
import type { CacheResult } from '../../src/reports/report-cache.js'
import type { TokenProvider } from '../../src/platform/tokens/token-provider.js'
import { canonicalGetReport } from '../../src/reports/report-query.js'
import { RedisSeal } from '../../src/redis/seal.js'
import { TeamDirectory } from '../../src/access/team-auth.js'
import { fakeClock, type FakeClock } from '../helpers/clock.js'
import { useRedis } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// A run that loses its job between its last look at the job (still its own) and the
// store of its end (jobs/job-runner.ts, #ended) must not leave its result in place of the
// one the run that took the job over stored: the job's record names that run's size and
// fetch time, and its result must be that run's report. Each store (demo mode's memory,
// the replicas' Redis, on a real redis-server) gets the same interleaving, made by a gate
// in the losing run's store between its look and its write: no timed waits.

const { available } = redisAvailability('the race of a job\'s end with its takeover')
const SETTINGS: JobSettings = { maxOpenPerTeam: 10, maxKeptPerTeam: 10_000, resultBytesPerTeam: 1024 * 1024, keepMs: 60 * 60_000, leaseMs: 15_000, pollMs: 1000, perReplica: 2, retryMs: 5000, retries: 10, maxPauseMs: 60_000 }
const report = canonicalGetReport('/api/v1/report/campaigns/get', 'advertiserId=101&dateFrom=2026-01-01&dateTo=2026-12-31', { maxRangeDays: 400 })
const SECRET = 'job-end-race-test-secret-0123456789'

/** Reads that end when the test says. */
function heldReads(): JobReads & { asked: () => number; answer(result: CacheResult): void } {
  const waiting: ((r: CacheResult) => void)[] = []
  let asks = 0
  return {
    asked: () => asks,
    read: () => {
      asks += 1
      return new Promise<CacheResult>((resolve) => waiting.push(resolve))
    },
    answer: (result) => waiting.shift()?.(result),
  }
}

function entryOf(text: string, now: number): CacheEntry {
  const identity = Buffer.from(text)
  return { contentType: 'application/json', gzip: gzipSync(identity), identity, fetchedAt: now, freshUntil: now + 60_000, staleUntil: now + 120_000, errorUntil: now + 180_000, advertiserIds: [101], etag: etagOf(identity) }
}

/**
 * A gate on a store's `ofTeam`, which a run's end reads after it saw the job still its own
 * and before it stores its result (the team's bound): the first call waits until `open`.
 */
function gated<S extends JobStore>(store: S): { store: S; reached: () => boolean; open: () => void } {
  let reached = false
  let open: () => void = () => undefined
  const passed = new Promise<void>((resolve) => (open = resolve))
  const ofTeam = store.ofTeam.bind(store)
  store.ofTeam = async (team, now) => {
    if (!reached) {
      reached = true
      await passed
    }
    return ofTeam(team, now)
  }
  return { store, reached: () => reached, open: () => open() }
}

describe.skipIf(!available)('a job\'s end raced by its takeover', () => {
  const redis = useRedis()
  const stores: [string, () => { a: JobStore; b: JobStore }][] = [
    ['memory', () => {
      const one = new MemoryJobStore()
      return { a: one, b: one }
    }],
    ['redis', () => {
      // Two replicas: each its own store on the one Redis.
      const make = () => new RedisJobStore({ redis: redis.client, seal: new RedisSeal(SECRET), prefix: 'race:', maxEntryBytes: 1024 * 1024, onUnverified: () => undefined })
      return { a: make(), b: make() }
    }],
  ]

  describe.each(stores)('%s', (_name, make) => {
    it('a run that lost its job while ending it stores nothing: the result is the taking-over run\'s, as the job\'s record says', async () => {
      const { a: storeA, b: storeB } = make()
      const gate = gated(storeA)
      const clockA = fakeClock(Date.UTC(2026, 10, 1))
      const clockB = fakeClock(Date.UTC(2026, 10, 1))
      const outcomes = new Map<string, RunOutcome[]>([['rA', []], ['rB', []]])
      const runnerOf = (store: JobStore, reads: JobReads, clock: FakeClock, name: string) =>
        new JobRunner({ store, reads, provider: () => ({ name: 'default' }) as TokenProvider, settings: SETTINGS, clock, log: { warn: () => undefined, info: () => undefined }, runner: name, maxEntryBytes: 1024 * 1024, failures: { warn: () => undefined }, onRun: (o) => outcomes.get(name)?.push(o), teams: new TeamDirectory([]) })
      const job = newJob({ id: 'j1', team: 'growth', credential: 'default', key: 'k', report, expectedSeconds: null }, clockA.now())
      expect(await storeA.add(job, 10, clockA.now())).toBe(true)
      const stored = async () => (await storeB.get('j1')) as Job

      // A starts the job; its clock stands still from then on (no renewal lands, as a stalled replica's).
      const readsA = heldReads()
      const a = runnerOf(storeA, readsA, clockA, 'rA')
      a.start()
      await waitFor('A running the job', async () => (await stored()).runner === 'rA')
      // A's read ends: its end saw the job still its own, and stops at the gate before storing it.
      const mine = entryOf('{"data":["A: fetched first, by the run that lost the job"]}', clockA.now())
      readsA.answer({ kind: 'entry', entry: mine, status: 'MISS' })
      await waitFor("A's end at the gate", gate.reached)

      // Meanwhile A's lease ran out: B takes the job over and ends it with its own report.
      const readsB = heldReads()
      const b = runnerOf(storeB, readsB, clockB, 'rB')
      b.start()
      await waitFor("B's first look done", () => !b.looking)
      clockB.advance(SETTINGS.leaseMs)
      await waitFor('B took the job over', async () => (await stored()).runner === 'rB' && readsB.asked() === 1)
      clockB.advance(5000)
      const theirs = entryOf('{"data":["B"]}', clockB.now())
      readsB.answer({ kind: 'entry', entry: theirs, status: 'MISS' })
      await waitFor('the job done by B', async () => (await stored()).state === 'done')

      // A's end goes on past the gate.
      gate.open()
      await waitFor('A done with it', () => a.running === 0)
      expect(outcomes.get('rA')).toEqual(['started', 'lost'])
      const record = await stored()
      expect(record).toMatchObject({ state: 'done', runs: 2, resultBytes: theirs.gzip.length, fetchedAt: theirs.fetchedAt })
      const result = await storeB.result('j1', clockB.now())
      expect({ etag: result?.etag, fetchedAt: result?.fetchedAt, body: result?.identity?.toString() }).toEqual({ etag: theirs.etag, fetchedAt: theirs.fetchedAt, body: '{"data":["B"]}' })
      a.stop()
      b.stop()
    })
  })
})
