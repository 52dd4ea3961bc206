import { createServer, type Server, type Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import pino from 'pino'
import { RedisBus } from '../../src/redis/bus.js'
import { createRedisClient, type RedisClient } from '../../src/redis/client.js'
import type { Config } from '../../src/config.js'
import { useCleanups } from '../helpers/fixtures.js'
import { CLOSED_PORT } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// A gateway starts whatever Redis does: it subscribes its channels at start, and a
// SUBSCRIBE sent before the subscriber's connection has failed once may never be
// answered (a Cluster's subscriber keeps it queued through every failed reconnect).
// Subscribing waits at most `startWaitMs` for it; the channel is subscribed again on
// the subscriber's next connection.

const silent = (sockets: Set<Socket>): Server =>
  createServer((socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })

describe('subscribing while Redis cannot be reached', () => {
  const cleanups = useCleanups()
  const sockets = new Set<Socket>()
  let server: Server
  let silentPort = 0
  beforeAll(async () => {
    server = silent(sockets)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    silentPort = (server.address() as { port: number }).port
  })
  afterAll(async () => {
    for (const socket of sockets) socket.destroy()
    await new Promise((resolve) => server.close(resolve))
  })

  const shapes: [string, () => Partial<Config['redis']>][] = [
    ['a Cluster whose nodes refuse connections', () => ({ cluster: [{ host: '127.0.0.1', port: CLOSED_PORT }] })],
    ['a Cluster whose nodes accept and never answer', () => ({ cluster: [{ host: '127.0.0.1', port: silentPort }] })],
    ['a standalone Redis that accepts and never answers', () => ({ url: `redis://127.0.0.1:${silentPort}` })],
  ]

  it.each(shapes)('%s: subscribe returns, the start goes on', async (_name, where) => {
    const client = createRedisClient({ commandTimeoutMs: 60_000, ...where() } as Config['redis'], pino({ level: 'silent' })) as RedisClient
    const bus = new RedisBus(client, 'rgw:bus:', pino({ level: 'silent' }), { startWaitMs: 50 })
    cleanups.push(async () => {
      await bus.close()
      client.disconnect()
    })
    await bus.subscribe('purge', () => undefined)
    expect(client.status).not.toBe('ready')
  })

  it('one warn line for the channels deferred at a start without Redis, not one per channel; the others at debug', async () => {
    const client = createRedisClient({ commandTimeoutMs: 500, url: `redis://127.0.0.1:${CLOSED_PORT}` } as Config['redis'], pino({ level: 'silent' })) as RedisClient
    const lines: { level: number; msg: string; channels?: string[] }[] = []
    const log = pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line) as { level: number; msg: string }) })
    const bus = new RedisBus(client, 'rgw:bus:', log, { startWaitMs: 50 })
    cleanups.push(async () => {
      await bus.close()
      client.disconnect()
    })
    for (const channel of ['purge', 'token', 'filled', 'fill-failed', 'log-level']) await bus.subscribe(channel, () => undefined)
    await waitFor('every deferral logged', () => lines.filter((l) => l.msg.startsWith('redis subscription')).length === 5)
    expect(lines.filter((l) => l.level === 40).map((l) => l.msg)).toEqual(['redis subscription deferred until redis is reachable'])
  })

  it("the deferral's line says why Redis is not reached (the connection's error), never the driver's option names", async () => {
    const client = createRedisClient({ commandTimeoutMs: 500, url: `redis://127.0.0.1:${CLOSED_PORT}` } as Config['redis'], pino({ level: 'silent' })) as RedisClient
    const lines: string[] = []
    const log = pino({ level: 'warn' }, { write: (line: string) => lines.push(line) })
    const bus = new RedisBus(client, 'rgw:bus:', log, { startWaitMs: 50 })
    cleanups.push(async () => {
      await bus.close()
      client.disconnect()
    })
    await bus.subscribe('purge', () => undefined)
    await waitFor('the deferral logged', () => lines.length === 1)
    expect(JSON.parse(lines[0]!)).toMatchObject({ msg: 'redis subscription deferred until redis is reachable', cause: expect.stringContaining('ECONNREFUSED') })
    expect(lines[0]).not.toMatch(/maxRetriesPerRequest|enableOfflineQueue/)
  })
})
