import { describe, expect, it } from 'vitest'
import { redisAddress } from '../../src/redis/client.js'

// Every Redis state line names where Redis is, and never its password.

const none = { url: null, sentinels: null, sentinelName: 'mymaster', cluster: null }

describe('redisAddress', () => {
  it('is host:port of a URL, without user or password, with the default port when none is given', () => {
    expect(redisAddress({ ...none, url: 'redis://user:s3cret@cache.internal:6380/2' })).toBe('cache.internal:6380')
    expect(redisAddress({ ...none, url: 'rediss://:s3cret@cache.internal' })).toBe('cache.internal:6379')
  })

  it('names the Sentinel master and its sentinels, or the cluster seeds', () => {
    expect(redisAddress({ ...none, url: 'redis://:pw@x', sentinels: [{ host: 's1', port: 26379 }, { host: 's2', port: 26379 }] })).toBe('sentinel mymaster via s1:26379,s2:26379')
    expect(redisAddress({ ...none, cluster: [{ host: 'n1', port: 7000 }] })).toBe('cluster n1:7000')
  })
})
