import { spawnSync } from 'node:child_process'
import { beforeAll, describe, expect, it, vi } from 'vitest'
import pino from 'pino'
import { createRedisClient, type RedisClient } from '../../src/redis/client.js'
import { installIoredisCommandTimeoutPatch } from '../../src/redis/command-timeout.js'
import { useCleanups, useRedis } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// The command timeout measures Redis, not this process: a reply that came in time is not
// failed because the event loop was stalled (GC, CPU throttling, synchronous work) past
// the timeout before reading it, and a Redis that does not answer still fails the command.

const { available, notice } = redisAvailability()
if (notice) console.warn(notice)

const COMMAND_TIMEOUT_MS = 50

/** Whether Redis on `port` has run a connection's `get` and written all of its reply to the socket (CLIENT LIST: last command get, output buffers empty). */
function replyWritten(port: number): boolean {
  const { stdout } = spawnSync('redis-cli', ['-p', String(port), 'client', 'list'], { encoding: 'utf8' })
  return stdout.split('\n').some((line) => /\bcmd=get\b/.test(line) && /\bobl=0\b/.test(line) && /\boll=0\b/.test(line))
}

/**
 * Blocks the event loop, as a stalled process does, for `ms` and until Redis on `port` has
 * written the reply: a reply that came in time waits in the socket however long the
 * machine's load keeps Redis itself from answering.
 */
function stallPastReply(ms: number, port: number): void {
  const until = Date.now() + ms
  while (Date.now() < until) {
    // busy
  }
  while (!replyWritten(port)) {
    // busy: each check is a synchronous child process
  }
}

describe.skipIf(!available)('redis command timeout', () => {
  const { server, client: admin } = useRedis()
  const cleanups = useCleanups()

  // As createGateway does before it makes its client.
  beforeAll(() => {
    expect(installIoredisCommandTimeoutPatch(pino({ level: 'silent' }))).toBe(true)
  })

  async function gatewayClient(): Promise<RedisClient> {
    const client = createRedisClient({ url: server.url, commandTimeoutMs: COMMAND_TIMEOUT_MS } as Parameters<typeof createRedisClient>[0], pino({ level: 'silent' })) as RedisClient
    cleanups.push(() => client.disconnect())
    await waitFor('the client to connect', () => client.status === 'ready')
    return client
  }

  it('answers a command whose reply came while the process was stalled past the timeout', async () => {
    const client = await gatewayClient()
    await admin.set('rgw:stall', 'answered')
    const reply = client.get('rgw:stall')
    // The reply waits in the socket until the stall ends, past the command's timeout.
    stallPastReply(COMMAND_TIMEOUT_MS * 6, server.port)
    await expect(reply).resolves.toBe('answered')
  })

  it('still fails a command that Redis does not answer within the timeout', async () => {
    const client = await gatewayClient()
    server.freeze()
    cleanups.push(() => server.thaw())
    // The command's timer on a fake clock: pending 1 ms before the timeout, failed at it.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    let failed: unknown = null
    try {
      const reply = client.get('rgw:frozen').catch((err: unknown) => (failed = err))
      await vi.advanceTimersByTimeAsync(COMMAND_TIMEOUT_MS - 1)
      expect(failed).toBeNull()
      await vi.advanceTimersByTimeAsync(1)
      await reply
    } finally {
      vi.useRealTimers()
    }
    expect(failed).toMatchObject({ message: 'Command timed out' })
  })
})
