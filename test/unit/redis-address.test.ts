import { describe, expect, it } from 'vitest'
import { commandFailureInWords, overTls, redisAddress } from '../../src/redis/client.js'

// Every Redis state line names where Redis is, and never its password; its cause says
// what happened to the connection, never an option of the driver's.

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

  it('writes an IPv6 address in brackets, as a URL does', () => {
    expect(redisAddress({ ...none, url: 'redis://[::1]:6380' })).toBe('[::1]:6380')
    expect(redisAddress({ ...none, url: 'redis://:pw@x', sentinels: [{ host: 'fd00::5', port: 26379 }, { host: 's2', port: 26379 }] })).toBe('sentinel mymaster via [fd00::5]:26379,s2:26379')
    expect(redisAddress({ ...none, cluster: [{ host: '2001:db8::7', port: 7000 }] })).toBe('cluster [2001:db8::7]:7000')
  })
})

describe('commandFailureInWords', () => {
  it('says a connection closed under the command, not yet made again, or made no more, without the driver\'s option names or words', () => {
    const inFlight = Object.assign(new Error('Reached the max retries per request limit (which is 0). Refer to "maxRetriesPerRequest" option for details.'), { name: 'MaxRetriesPerRequestError' })
    expect(commandFailureInWords(inFlight)).toBe('the connection to Redis closed with the command in flight')
    expect(commandFailureInWords(new Error("Stream isn't writeable and enableOfflineQueue options is false"))).toBe('not connected to Redis (reconnecting)')
    expect(commandFailureInWords(new Error('Connection is closed.'))).toBe('not connected to Redis (the connection was closed and is not made again)')
  })

  it('says a connection reset (Redis killed with bytes unread, or a write after its close) closed, keeping the system\'s word', () => {
    expect(commandFailureInWords(new Error('read ECONNRESET'))).toBe('the connection to Redis closed abruptly (read ECONNRESET)')
    expect(commandFailureInWords(new Error('write EPIPE'))).toBe('the connection to Redis closed abruptly (write EPIPE)')
  })

  it('keeps any other failure\'s own message', () => {
    expect(commandFailureInWords(new Error('connect ECONNREFUSED 10.0.0.7:6379'))).toBe('connect ECONNREFUSED 10.0.0.7:6379')
    expect(commandFailureInWords('not an error')).toBe('not an error')
  })
})

describe('overTls', () => {
  it("adds to a connect timed out over TLS that a Redis in clear never answers the handshake, and leaves every other cause as it is", () => {
    expect(overTls('connect ETIMEDOUT', true)).toBe(
      "connect ETIMEDOUT (over TLS, as REDIS_URL's rediss:// says: a Redis that listens in clear on that port never answers the TLS handshake; redis:// reaches it in clear, its tls-port over TLS)",
    )
    expect(overTls('connect ETIMEDOUT', false)).toBe('connect ETIMEDOUT')
    expect(overTls('connect ECONNREFUSED 127.0.0.1:6380', true)).toBe('connect ECONNREFUSED 127.0.0.1:6380')
  })
})
