import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Redis } from 'ioredis'
import { TEAMS_YAML, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useSandbox } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { startRedisSentinel, type SentinelTopology } from '../helpers/start-redis-topology.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'
import { failureCause } from '../../src/redis/client.js'

// Behind a Sentinel whose master is gone and not yet replaced, the cause a Redis-down line
// gives is the master's refusal, on every reconnection. ioredis begins each reconnection
// where the last one left its list of Sentinels: one that left it at its end says "All
// sentinels are unreachable. Retrying from scratch after 10ms." before it asks any
// Sentinel, though every one answers; that is no cause, and does not replace the known one.

const { available, notice } = redisAvailability('the Sentinel cause test')
if (notice) console.warn(notice)
const UNREACHABLE = /All sentinels are unreachable/

/**
 * A Sentinel topology of the describe's own (each test kills its master), and a gateway
 * behind it with the circuit's `breakerCooldown`.
 */
function behindSentinel(): (breakerCooldown: string, env?: Record<string, string>) => Promise<{ gw: TestGateway; topology: SentinelTopology }> {
  const sandbox = useSandbox()
  const gateways = useGateways()
  let topology: SentinelTopology
  beforeAll(async () => {
    topology = await startRedisSentinel()
  }, 60_000)
  afterAll(async () => {
    await topology?.close()
  })
  return async (breakerCooldown, env = {}) => {
    const yaml = `${TEAMS_YAML}\nredis:\n${topology.configLines.join('\n')}\n  breakerCooldown: ${breakerCooldown}\n`
    return { gw: await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ...env }, yaml)), topology }
  }
}

describe.skipIf(!available)('behind a Sentinel, a master gone and not replaced', () => {
  const gatewayBehind = behindSentinel()

  it("is the master's refusal as the cause, on every reconnection, never that the Sentinels are unreachable", async () => {
    const { gw, topology } = await gatewayBehind('30s')
    const client = gw.redis.client as Redis
    // Registered after the gateway's own listener: each sees the cause the gateway keeps
    // once that listener has taken the error in.
    const causes: { error: string; cause: string }[] = []
    client.on('error', (err: Error) => causes.push({ error: err.message, cause: failureCause(client, new Error('not sent')) }))
    const master = await topology.killMasterUnpromoted()
    await waitFor('a reconnection that began at the end of the Sentinels', () => causes.some((c) => UNREACHABLE.test(c.error)) && causes.length >= 4, testTimeLeft())
    expect(causes.filter((c) => UNREACHABLE.test(c.cause))).toEqual([])
    expect(causes.at(-1)?.cause).toContain(`ECONNREFUSED 127.0.0.1:${master}`)
  })
})

// A transition's line names the master the Sentinels named last beside the Sentinels: the
// Sentinels answer while the master is gone, so the master is where to look.
describe.skipIf(!available)('behind a Sentinel, a transition of the circuit', () => {
  const gatewayBehind = behindSentinel()

  it("names the master's host:port the Sentinels named last, beside the Sentinels", async () => {
    const { gw, topology } = await gatewayBehind('200ms')
    const master = await topology.killMasterUnpromoted()
    const down = () => gw.logs.records().filter((r) => r.msg === 'redis unavailable: serving without it (circuit open)')
    await waitFor('the circuit open', () => down().length > 0, testTimeLeft())
    expect(down()[0]?.redis).toMatch(new RegExp(`^sentinel \\S+ via \\S+ \\(master 127\\.0\\.0\\.1:${master} as they named it last\\)$`))
  })
})

// GET /admin/status (and the console's Redis section) said only `sentinel <name> via <sentinels>`
// through a failover, while the log line named the master: which node serves was not in the status.
describe.skipIf(!available)('behind a Sentinel, GET /admin/status', () => {
  const gatewayBehind = behindSentinel()
  const ADMIN_TOKEN = 'status-admin-token-0123456789abcdef'

  it('names the master the Sentinels named last in redis.address, the new one after a failover', async () => {
    const { gw, topology } = await gatewayBehind('200ms', { ADMIN_TOKEN })
    const address = async () => ((await gw.admin.inject({ method: 'GET', url: '/admin/status', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json() as { redis: { address: string } }).redis.address
    const named = (port: number) => new RegExp(`^sentinel \\S+ via \\S+ \\(master 127\\.0\\.0\\.1:${port} as they named it last\\)$`)
    const { from, to } = await topology.failover()
    await waitFor('the status naming the new master', async () => named(to).test(await address()), testTimeLeft())
    expect(await address()).not.toMatch(named(from))
  })
})
