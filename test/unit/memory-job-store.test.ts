import { gzipSync } from 'node:zlib'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { describe, expect, it } from 'vitest'
import { etagOf, type CacheEntry } from '../../src/cache/cache-entry.js'
import { MemoryJobStore } from '../../src/jobs/job-store.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'

// The jobs of a gateway without Redis (demo mode, or a chart without redis.url) keep their
// results in the replica's memory, bounded per team by jobs.resultBytesPerTeam, which
// counts a result's gzip bytes (job-runner.ts). The store holds those bytes and no more:
// a report's plain body, often ten times its gzip, is made again when the result is read.

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

const KEEP = 60_000

/** A kept result's plain body, held only weakly by the test. */
function keptBody(store: MemoryJobStore, id: string, now: number): Promise<WeakRef<Buffer>> {
  const identity = Buffer.from(JSON.stringify({ data: Array.from({ length: 20_000 }, (_, i) => ({ campaignId: i, clicks: 1 })) }))
  const entry: CacheEntry = { contentType: 'application/json', gzip: gzipSync(identity), identity, fetchedAt: now, freshUntil: now, staleUntil: now, errorUntil: now, advertiserIds: [101], etag: etagOf(identity) }
  return store.keepResult(id, entry, now + KEEP, now).then(() => new WeakRef(identity))
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
