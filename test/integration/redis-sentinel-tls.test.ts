import { createServer, type Server, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import pino from 'pino'
import { createRedisClient } from '../../src/redis/client.js'
import { fakeSentinel } from '../helpers/fake-sentinel.js'
import { useCleanups } from '../helpers/fixtures.js'
import { waitFor } from '../helpers/wait.js'

// REDIS_URL's scheme and credentials apply behind Sentinel too (docs/operations/replicas.md):
// with rediss:// the master that a Sentinel names is reached over TLS, and its password
// never crosses the network in clear. A fake Sentinel names a fake master, which records
// the first bytes a connection sends: a TLS ClientHello starts with 0x16, RESP with '*'.

const PASSWORD = 'sentinel-master-pass-4b1e'

function listen(onSocket: (socket: Socket) => void): Promise<Server> {
  const server = createServer(onSocket)
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)))
}
const portOf = (server: Server) => (server.address() as AddressInfo).port

describe('a Redis behind Sentinel with a rediss:// REDIS_URL', () => {
  const cleanups = useCleanups()

  it('reaches the master over TLS: the first byte is a TLS handshake, never the password in clear', async () => {
    const firstChunks: Buffer[] = []
    const master = await listen((socket) => {
      socket.once('data', (chunk) => {
        firstChunks.push(chunk)
        socket.destroy()
      })
    })
    cleanups.push(() => new Promise<void>((resolve) => master.close(() => resolve())))
    const sentinel = await fakeSentinel(() => ({ host: '127.0.0.1', port: portOf(master) }))
    cleanups.push(() => sentinel.close())
    const client = createRedisClient(
      { url: `rediss://gateway:${PASSWORD}@ignored.invalid:6380`, sentinels: [{ host: '127.0.0.1', port: sentinel.port }], sentinelName: 'mymaster', commandTimeoutMs: 250 } as Parameters<typeof createRedisClient>[0],
      pino({ level: 'silent' }),
    )!
    cleanups.push(() => client.disconnect())
    await waitFor('a connection to the master', () => firstChunks.length > 0)
    expect(firstChunks[0]![0], 'the first byte to the master').toBe(0x16)
    expect(Buffer.concat(firstChunks).includes(PASSWORD)).toBe(false)
  })
})
