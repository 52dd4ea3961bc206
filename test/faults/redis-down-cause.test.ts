import { describe, expect, it } from 'vitest'
import type { Redis } from 'ioredis'
import { KEYS, REPORT_PATH, TEAMS_YAML, testConfig } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'

// The line that says Redis is down names what happened to Redis, in words an operator
// acts on: a Redis that stopped (killed, restarted, a Sentinel's master gone) with
// commands in flight is a closed connection, never the driver's advice to set an option
// of its own (ioredis's `maxRetriesPerRequest`, `enableOfflineQueue`), which no setting
// of the gateway reaches.

const { available } = redisAvailability()
const DOWN = 'redis unavailable: serving without it (circuit open)'
const DRIVER_OPTIONS = /maxRetriesPerRequest|enableOfflineQueue|Stream isn't writeable/
// Long enough that a command held by a paused Redis is still waiting when it is killed.
const YAML = `${TEAMS_YAML}
redis:
  commandTimeout: 30s
  breakerCooldown: 30s
`

describe.skipIf(!available)('the cause of Redis down', () => {
  const sandbox = useSandbox()
  const gateways = useGateways()
  const { server, client: side } = useRedis()

  it('a Redis killed with a command in flight: the line says the connection closed, with no option of the driver', async () => {
    const gw = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: server.url }, YAML))
    const client = gw.redis.client as Redis
    // Redis reads the command and holds it (a paused client), so that the kill closes
    // the connection cleanly, as a Redis that stops or fails over does, with nothing to reset.
    await side.call('CLIENT', 'PAUSE', '30000', 'ALL')
    try {
      const read = gw.proxy.inject({ method: 'GET', url: `${REPORT_PATH}?advertiserId=101&byDate=1&dateFrom=2025-01-01&dateTo=2025-01-07`, headers: { 'x-api-key': KEYS.all } })
      await waitFor('a command held by the paused Redis', () => client.commandQueue.length > 0)
      await server.stop(true)
      expect((await read).statusCode).toBe(200)
      await waitFor('the line saying Redis is down', () => gw.logs.records().some((r) => r.msg === DOWN), testTimeLeft())
      const [line] = gw.logs.records().filter((r) => r.msg === DOWN)
      expect(line).toMatchObject({ redis: `127.0.0.1:${server.port}`, cause: expect.stringMatching(/connection .*closed/) })
      expect(String(line?.cause)).not.toMatch(DRIVER_OPTIONS)
    } finally {
      await server.restart()
    }
  })

  it('a command sent while the connection is down: the cause is the connection\'s, with no option of the driver', async () => {
    const gw = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: server.url }, YAML))
    const client = gw.redis.client as Redis
    await server.stop(true)
    try {
      await waitFor('the connection seen closed', () => client.status !== 'ready')
      const read = await gw.proxy.inject({ method: 'GET', url: `${REPORT_PATH}?advertiserId=101&byDate=1&dateFrom=2025-01-08&dateTo=2025-01-14`, headers: { 'x-api-key': KEYS.all } })
      expect(read.statusCode).toBe(200)
      await waitFor('the line saying Redis is down', () => gw.logs.records().some((r) => r.msg === DOWN), testTimeLeft())
      const [line] = gw.logs.records().filter((r) => r.msg === DOWN)
      expect(String(line?.cause)).not.toMatch(DRIVER_OPTIONS)
    } finally {
      await server.restart()
    }
  })
})
