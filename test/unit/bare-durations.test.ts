import { describe, expect, it } from 'vitest'
import { bareDurationWarnings } from '../../src/config/bare-durations.js'

describe('durations given as a number under a second', () => {
  it('names each, wherever it sits: a setting, a team\'s rate limit, an item of a list', () => {
    const raw = { platform: { timeout: 30, queueTimeout: '5s', expiryWarnings: [7, '30d'] }, teams: { growth: { rateLimit: { max: 600, window: 60 } } }, cache: { ttl: 0 } }
    expect(bareDurationWarnings(raw).map((w) => w.split(':')[0])).toEqual(['platform.timeout', 'platform.expiryWarnings.0', 'teams.growth.rateLimit.window'])
  })

  it('leaves alone 0, a second or more as a number, units, and numbers that are no duration', () => {
    const raw = { shutdownDrain: 0, platform: { timeout: 30_000, maxConcurrent: 64 }, jobs: { perReplica: 8, retry: '5s' }, teams: { a: { rateLimit: null, weight: 3 } } }
    expect(bareDurationWarnings(raw)).toEqual([])
  })
})
