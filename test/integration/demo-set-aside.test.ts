import { describe, expect, it } from 'vitest'
import { demoConfig } from '../../src/demo.js'
import { loadConfigFrom } from '../helpers/load-config.js'
import { useSandbox } from '../helpers/fixtures.js'

// DEMO=1 runs demo mode whatever else is set (configuration.md, DEMO): the bundled sandbox
// stands in for a configured platform, and the cache is in memory whatever Redis is
// configured. A start that sets them aside says so (a warn line), so that a user trying
// Redis under DEMO=1 is not left reading `redis: off` with REDIS_URL set.
const sandbox = useSandbox()
const SET_ASIDE = /^DEMO=1: demo mode sets aside/

describe('demo mode with settings of a real installation', () => {
  it('warns of each it sets aside', () => {
    const { config } = demoConfig(loadConfigFrom({ DEMO: '1', REDIS_URL: 'redis://redis.internal:6379', PLATFORM_BASE_URL: 'https://dsp-api.example.com', PLATFORM_TOKEN: 'platform-token-abcdef123456' }), sandbox)
    const warning = config.warnings.find((w) => SET_ASIDE.test(w))
    expect(warning).toBe('DEMO=1: demo mode sets aside the configured Redis (the cache is in memory) and the configured platform (PLATFORM_BASE_URL and its credential: the bundled sandbox and its login stand in); unset DEMO to use them')
    expect(warning).not.toContain('platform-token-abcdef123456')
    expect(config.redis.url).toBeNull()
  })

  it('names Redis alone, or nothing, when that is all that is set aside', () => {
    const redisOnly = demoConfig(loadConfigFrom({ DEMO: '1', REDIS_URL: 'redis://redis.internal:6379' }), sandbox).config
    expect(redisOnly.warnings.filter((w) => SET_ASIDE.test(w))).toEqual(['DEMO=1: demo mode sets aside the configured Redis (the cache is in memory); unset DEMO to use it'])
    expect(demoConfig(loadConfigFrom({ DEMO: '1' }), sandbox).config.warnings.filter((w) => SET_ASIDE.test(w))).toEqual([])
    expect(demoConfig(loadConfigFrom({}), sandbox).config.warnings.filter((w) => SET_ASIDE.test(w))).toEqual([])
  })
})
