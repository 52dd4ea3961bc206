import type { Forward } from '../../reports/report-cache.js'

// RFC 9211 `Cache-Status`: what the gateway's cache (L1 and L2 are one cache to a caller)
// did with a report read, beside the older `x-cache`. One member, named for the gateway:
// - served from a copy: `hit` and `ttl`, the freshness left (negative once stale; with
//   `age` and `cache-control: max-age`, ttl = max-age - age);
// - sent on to the platform: `fwd` and why (`uri-miss`: no copy, `stale`: a copy too old
//   to serve, `request`: the caller asked for a fresh copy), `collapsed` when the read
//   waited for another read's platform call (in this process or on another replica),
//   `stored` and `ttl` when the answer is the copy now kept, `fwd-status` when it is not.

/** The name of the gateway's cache in `Cache-Status`. */
export const CACHE_NAME = 'report-gateway'

/** The header's name, written lower-case as every header of the gateway. */
export const CACHE_STATUS = 'cache-status'

/**
 * `Cache-Status` of an answer from a copy with `x-cache` `status`: served from it
 * (`forward` absent), the copy a forward stored (MISS, REFRESH), or a copy served because
 * the forward failed (STALE, or HIT while the copy is still fresh: its ttl positive).
 */
export function entryCacheStatus(status: 'HIT' | 'MISS' | 'STALE' | 'REFRESH', ttlSeconds: number, forward: Forward | undefined): string {
  if (forward === undefined) return `${CACHE_NAME}; hit; ttl=${ttlSeconds}`
  const stored = status === 'MISS' || status === 'REFRESH'
  return `${CACHE_NAME}; fwd=${forward.reason}${forward.collapsed ? '; collapsed' : ''}${stored ? '; stored' : ''}; ttl=${ttlSeconds}`
}

/** `Cache-Status` of the platform's answer passed on uncached (`x-cache: BYPASS`), with its status. */
export function passedCacheStatus(forward: Forward | undefined, status: number): string {
  const reason = forward?.reason ?? 'uri-miss'
  return `${CACHE_NAME}; fwd=${reason}${forward?.collapsed ? '; collapsed' : ''}; fwd-status=${status}`
}
