import type { CacheResult } from './report-cache.js'

/**
 * The platform time (ms) of the fill an answer of `result` came from: 0 for a copy the
 * cache had (HIT, STALE), the call that filled the entry for a MISS or REFRESH (this
 * read's, one it joined, another replica's: the entry carries it), the call made for a
 * passed-through answer. What a report answer's `platform-usage: fill` and a job's
 * `tookSeconds` say.
 */
export function fillMsOf(result: CacheResult): number {
  if (result.kind !== 'entry') return result.platformMs ?? 0
  return result.status === 'HIT' || result.status === 'STALE' ? 0 : (result.entry.fillMs ?? 0)
}
