/**
 * RFC 9211 `Cache-Status` of each kind of report answer: the member the gateway writes
 * for a hit, a stale hit, a miss it made or joined, a refresh, a stale copy served after
 * a failed call, and a platform answer passed on uncached.
 */
import { describe, expect, it } from 'vitest'
import { entryCacheStatus, passedCacheStatus } from '../../src/http/reads/cache-status.js'

describe('Cache-Status', () => {
  it.each([
    ['a fresh hit', 'HIT', 48, undefined, 'report-gateway; hit; ttl=48'],
    ['a stale hit (stale-while-revalidate, a paused route)', 'STALE', -10, undefined, 'report-gateway; hit; ttl=-10'],
    ['a miss that made the call', 'MISS', 60, { reason: 'uri-miss', collapsed: false }, 'report-gateway; fwd=uri-miss; stored; ttl=60'],
    ['a miss that joined another read\'s call', 'MISS', 60, { reason: 'uri-miss', collapsed: true }, 'report-gateway; fwd=uri-miss; collapsed; stored; ttl=60'],
    ['a miss for a copy too old to serve', 'MISS', 60, { reason: 'stale', collapsed: false }, 'report-gateway; fwd=stale; stored; ttl=60'],
    ['a refresh the caller asked for', 'REFRESH', 60, { reason: 'request', collapsed: false }, 'report-gateway; fwd=request; stored; ttl=60'],
    ['a stale copy served because the call failed', 'STALE', -35, { reason: 'stale', collapsed: false }, 'report-gateway; fwd=stale; ttl=-35'],
    ['a fresh copy served because a forced refresh failed', 'HIT', 40, { reason: 'request', collapsed: false }, 'report-gateway; fwd=request; ttl=40'],
  ] as const)('%s', (_what, status, ttl, forward, value) => {
    expect(entryCacheStatus(status, ttl, forward)).toBe(value)
  })

  it('names the status of a platform answer passed on uncached, and why the read went on', () => {
    expect(passedCacheStatus({ reason: 'uri-miss', collapsed: false }, 422)).toBe('report-gateway; fwd=uri-miss; fwd-status=422')
    expect(passedCacheStatus({ reason: 'stale', collapsed: true }, 429)).toBe('report-gateway; fwd=stale; collapsed; fwd-status=429')
    expect(passedCacheStatus(undefined, 200)).toBe('report-gateway; fwd=uri-miss; fwd-status=200')
  })
})
