import { describe, expect, it } from 'vitest'
import { ConfigError } from '../../src/config.js'
import { loadConfigYaml } from '../helpers/load-config.js'

// A duration a timer waits is at most 2^31 - 1 ms (24 days and 20 hours): Node fires a
// longer timer after 1 ms, and an interval every millisecond (jobs.lease: 25d looked for
// jobs about 2,000 times a second on an idle replica, each with a TimeoutOverflowWarning on
// stderr). An age (how long a copy, a result or a retry lives) is compared to the clock
// and may be longer.

/** The problems a load of `yaml` stops with (none: it loaded). */
function problems(yaml: string): string[] {
  try {
    loadConfigYaml(yaml)
    return []
  } catch (err) {
    if (err instanceof ConfigError) return err.problems
    throw err
  }
}

describe('durations a timer waits', () => {
  it.each([
    ['shutdownDrain: 25d', 'shutdownDrain'],
    ['shutdownGrace: 25d', 'shutdownGrace'],
    ['server: { keepAliveTimeout: 25d }', 'server.keepAliveTimeout'],
    ['platform: { maintenanceInterval: 25d }', 'platform.maintenanceInterval'],
    ['platform: { queueTimeout: 2147483648 }', 'platform.queueTimeout'],
    ['redis: { breakerCooldown: 600h }', 'redis.breakerCooldown'],
    ['usage: { flush: 25d }', 'usage.flush'],
    ['teamsReload: { poll: 25d }', 'teamsReload.poll'],
    ['jobs: { lease: 25d }', 'jobs.lease'],
    ['jobs: { poll: 25d }', 'jobs.poll'],
  ])('refuses %s, naming the setting', (yaml, name) => {
    expect(problems(yaml)).toContainEqual(`${name}: must be at most 24d (a timer's longest wait, 2147483647 ms; got ${yaml.includes('2147483648') ? '2147483648' : yaml.match(/\d+[a-z]+/)?.[0]})`)
  })

  it('names a timer past 24 days beside a setting of the wrong type: every problem in one start', () => {
    const found = problems('cache: { ttl: banana }\nplatform: { timeout: 30d, queueTimeout: soon }')
    expect(found).toContainEqual("platform.timeout: must be at most 24d (a timer's longest wait, 2147483647 ms; got 30d)")
    expect(found.some((p) => p.startsWith('cache.ttl: '))).toBe(true)
    expect(found.some((p) => p.startsWith('platform.queueTimeout: '))).toBe(true)
  })

  it('tells a timer past 24 days alone, not a check of another setting against it (server.connectionTimeout against platform.timeout)', () => {
    expect(problems('platform: { timeout: 30d }')).toEqual(["platform.timeout: must be at most 24d (a timer's longest wait, 2147483647 ms; got 30d)"])
  })

  it('takes a timer of 24 days, and ages past it: a copy, a result, a retry, a rate limit window, a token warning', () => {
    expect(problems('shutdownGrace: 24d\njobs: { lease: 2147483647 }')).toEqual([])
    const ages = [
      'cache: { ttl: { recent: 30d, settled: 400d }, staleWhileRevalidate: 30d, staleIfError: 90d, refreshMinAge: 30d }',
      'ownership: { ttl: 30d, refreshMinInterval: 30d }',
      'platform: { refreshBefore: 30d, expiryWarnings: [60d, 30d] }',
      'jobs: { keep: 90d, webhookRetryFor: 30d }',
      'teams: { growth: { keys: [], advertisers: ["*"], rateLimit: { max: 100000, window: 30d } } }',
    ]
    expect(problems(ages.join('\n'))).toEqual([])
  })
})
