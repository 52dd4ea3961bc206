import type { TeamConfig } from '../config.js'

type Headers = Record<string, string | string[] | undefined>

// `no-cache` as a directive of its own in a list (not `no-cache="field"`), any case.
const NO_CACHE = /(^|,)\s*no-cache\s*(,|$)/i

/**
 * Whether a report read forces a fresh copy from the platform (REFRESH): its team is given
 * `refresh: true`, and it asks `cache-control: no-cache` (or `pragma: no-cache`) without a
 * validator. A read with `if-none-match` or `if-modified-since` revalidates the caller's
 * copy, and is answered from the gateway's: fetch() adds `no-cache` and `pragma: no-cache`
 * to every request that carries a validator in its default mode (the Fetch standard), so
 * that a dashboard's polls would otherwise each be a platform call. A team without
 * `refresh` is answered as any read, whatever it asks. The refresh itself is bounded and
 * coalesced by the report cache (ReportCache.read, `cache.refreshMinAge`).
 */
export function forcesRefresh(headers: Headers, team: Pick<TeamConfig, 'refresh'>): boolean {
  if (!team.refresh) return false
  if (headers['if-none-match'] !== undefined || headers['if-modified-since'] !== undefined) return false
  const cc = headers['cache-control']
  return (typeof cc === 'string' && NO_CACHE.test(cc)) || headers.pragma === 'no-cache'
}
