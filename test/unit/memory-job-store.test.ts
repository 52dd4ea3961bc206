import { gzipSync } from 'node:zlib'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { describe, expect, it } from 'vitest'
import { etagOf, type CacheEntry } from '../../src/cache/cache-entry.js'
import { MemoryJobStore } from '../../src/jobs/job-store.js'
import { endJob, newJob, startJob, type Job } from '../../src/jobs/job.js'
import { canonicalGetReport } from '../../src/reports/report-query.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'

// The jobs of a gateway without Redis (demo mode, or a chart without redis.url) keep their
// results in the replica's memory, bounded per team by jobs.resultBytesPerTeam, which
// counts a result's gzip bytes (job-runner.ts). The store holds those bytes and no more:
// a report's plain body, often ten times its gzip, is made again when the result is read.

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

const KEEP = 60_000

const report = canonicalGetReport('/api/v1/report/campaigns/get', 'advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-31', { maxRangeDays: 400 })

/** A job `id` run and ended done with a kept result; the result's plain body, held only weakly by the test. */
async function keptBody(store: MemoryJobStore, id: string, now: number): Promise<WeakRef<Buffer>> {
  const identity = Buffer.from(JSON.stringify({ data: Array.from({ length: 20_000 }, (_, i) => ({ campaignId: i, clicks: 1 })) }))
  const entry: CacheEntry = { contentType: 'application/json', gzip: gzipSync(identity), identity, fetchedAt: now, freshUntil: now, staleUntil: now, errorUntil: now, advertiserIds: [101], etag: etagOf(identity) }
  const job = newJob({ id, team: 'growth', credential: 'default', key: 'k', report, expectedSeconds: null }, now)
  await store.add(job, 10, now)
  const running = startJob(job, 'r1', now, KEEP) as Job
  await store.swap(job, running, now)
  const done = endJob(running, { runner: 'r1', runs: 1 }, now, { kind: 'done', resultBytes: entry.gzip.length, tookSeconds: 0, fetchedAt: now }, KEEP) as Job
  expect(await store.swap(running, done, now, null, entry)).toBe(true)
  return new WeakRef(identity)
}

describe('the memory job store', () => {
  it('holds a result as the gzip bytes its team\'s bound counts, not its plain body beside them, and reads it back whole', async () => {
    const store = new MemoryJobStore()
    const now = Date.now()
    const body = await keptBody(store, 'a', now)
    await waitFor('the plain body of the kept result collected', () => {
      gc()
      return body.deref() === undefined
    }, testTimeLeft(), 100)
    const kept = (await store.result('a', now)) as CacheEntry
    expect(JSON.parse(kept.identity!.toString()).data).toHaveLength(20_000)
    expect(kept.etag).toBe(etagOf(kept.identity!))
  })
})
