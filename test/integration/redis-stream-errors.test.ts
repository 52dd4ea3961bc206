import { describe, expect, it } from 'vitest'
import pino from 'pino'
import type { Socket } from 'node:net'
import type { Redis } from 'ioredis'
import { createRedisClient, type RedisClient } from '../../src/redis/client.js'
import { SentinelStreams } from '../../src/redis/stream-errors.js'
import { useCleanups, useRedis } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// A connection that fails may emit more than one error (a TLS socket refused mid-handshake
// does: an alert, then the decode error of what follows). ioredis listens for a stream's
// first error only; a second with no listener would end the process, and a deployment
// whose Redis refuses its TLS would crash-loop rather than run without Redis.

const { available, notice } = redisAvailability()
if (notice) console.warn(notice)

describe.skipIf(!available)('a Redis connection that errs twice', () => {
  const { server } = useRedis()
  const cleanups = useCleanups()

  it('is reconnected, and the process goes on', async () => {
    const client = createRedisClient({ url: server.url, commandTimeoutMs: 1000 } as Parameters<typeof createRedisClient>[0], pino({ level: 'silent' })) as RedisClient
    cleanups.push(() => client.disconnect())
    await waitFor('the client to connect', () => client.status === 'ready')
    const stream = (client as unknown as { stream: Socket }).stream
    expect(() => {
      stream.emit('error', new Error('first'))
      stream.emit('error', new Error('second'))
    }).not.toThrow()
    stream.destroy()
    await waitFor('the client to connect again', () => client.status === 'ready' && (client as unknown as { stream: Socket }).stream !== stream)
    expect(await client.ping()).toBe('PONG')
  })

  it('to a Sentinel (asked where the master is), too: the process goes on', async () => {
    // The connector asks a Sentinel through a client of its own; here a plain redis-server
    // stands for the Sentinel, which is all the connection needs to be up.
    const connector = new (SentinelStreams as unknown as new (options: object) => { connectToSentinel(endpoint: { host: string; port: number }): Redis })({ sentinels: [{ host: '127.0.0.1', port: server.port }], name: 'mymaster' })
    const toSentinel = connector.connectToSentinel({ host: '127.0.0.1', port: server.port })
    toSentinel.on('error', () => undefined)
    cleanups.push(() => toSentinel.disconnect())
    await waitFor('the connection to the Sentinel', () => toSentinel.status === 'ready')
    const stream = (toSentinel as unknown as { stream: Socket }).stream
    expect(() => {
      stream.emit('error', new Error('first'))
      stream.emit('error', new Error('second'))
    }).not.toThrow()
  })
})
