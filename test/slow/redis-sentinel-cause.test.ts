import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Redis } from 'ioredis'
import { TEAMS_YAML, testConfig } from '../helpers/build-gateway.js'
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

describe.skipIf(!available)('behind a Sentinel, a master gone and not replaced', () => {
  const sandbox = useSandbox()
  const gateways = useGateways()
  let topology: SentinelTopology
  beforeAll(async () => {
    topology = await startRedisSentinel()
  }, 60_000)
  afterAll(async () => {
    await topology?.close()
  })

  it("is the master's refusal as the cause, on every reconnection, never that the Sentinels are unreachable", async () => {
    const yaml = `${TEAMS_YAML}\nredis:\n${topology.configLines.join('\n')}\n  breakerCooldown: 30s\n`
    const gw = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }, yaml))
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
