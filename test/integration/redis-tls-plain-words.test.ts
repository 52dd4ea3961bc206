import { describe, expect, it } from 'vitest'
import pino from 'pino'
import { RedisBus } from '../../src/redis/bus.js'
import { createRedisClient, failureCause } from '../../src/redis/client.js'
import { captureLogs } from '../helpers/build-gateway.js'
import { useCleanups, useRedis } from '../helpers/fixtures.js'
import { waitFor } from '../helpers/wait.js'

// A rediss:// REDIS_URL for a Redis that listens in clear on that port: Redis reads the TLS
// ClientHello as an unfinished command and answers nothing, so each connect times out. The
// cause the breaker's warn line gives says what that may be, not `connect ETIMEDOUT` alone.
const redis = useRedis()
const WORDS =
  "connect ETIMEDOUT (over TLS, as REDIS_URL's rediss:// says: a Redis that listens in clear on that port never answers the TLS handshake; redis:// reaches it in clear, its tls-port over TLS)"

describe('a rediss:// REDIS_URL of a Redis that speaks no TLS on its port', () => {
  const cleanups = useCleanups()

  it('says its connect timed out over TLS, which a Redis in clear never answers', async () => {
    const url = redis.server.url.replace('redis://', 'rediss://')
    const client = createRedisClient({ url, commandTimeoutMs: 250 } as Parameters<typeof createRedisClient>[0], pino({ level: 'silent' }))!
    cleanups.push(() => client.disconnect())
    client.on('error', () => undefined)
    await waitFor('a connect timed out', () => failureCause(client, new Error('a command')) !== 'a command')
    expect(failureCause(client, new Error('a command'))).toBe(WORDS)
  })

  it("says so in the bus's deferred subscription too, whose subscriber connects on its own", async () => {
    const url = redis.server.url.replace('redis://', 'rediss://')
    const client = createRedisClient({ url, commandTimeoutMs: 250 } as Parameters<typeof createRedisClient>[0], pino({ level: 'silent' }))!
    client.on('error', () => undefined)
    const logs = captureLogs()
    const bus = new RedisBus(client, 'test:bus:', pino({ level: 'debug' }, logs.stream), { startWaitMs: 100 })
    cleanups.push(async () => {
      await bus.close()
      client.disconnect()
    })
    // A SUBSCRIBE sent before the subscriber's first connect timed out fails on its own
    // command timeout: a channel is subscribed at each look until one is deferred for the connect.
    const deferred = () => logs.records().filter((r) => r.msg === 'redis subscription deferred until redis is reachable').map((r) => r.cause)
    let channel = 0
    await waitFor('a subscription deferred for its connect', async () => {
      await bus.subscribe(`news-${channel++}`, () => undefined)
      return deferred().some((cause) => cause !== 'Command timed out')
    })
    expect(new Set(deferred().filter((cause) => cause !== 'Command timed out'))).toEqual(new Set([WORDS]))
  })
})
