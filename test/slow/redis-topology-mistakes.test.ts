import { afterEach, describe, expect, it } from 'vitest'
import { testConfig, TEAMS_YAML } from '../helpers/build-gateway.js'
import { useGateways, useSandbox } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { startRedisSentinel, type RedisTopology } from '../helpers/start-redis-topology.js'
import { waitFor } from '../helpers/wait.js'

// The mistakes an operator makes with a real Sentinel or Cluster, configured as
// docs/configuration.md says: each one's log line says what to fix.

const { available, notice } = redisAvailability('the Redis topology mistakes tests')
if (notice) console.warn(notice)

const GATEWAY_SECRET = 'topology-mistakes-secret-0123456789'

describe.skipIf(!available)('Redis topology mistakes', () => {
  const sandbox = useSandbox()
  const replicas = useGateways()
  let topology: RedisTopology | undefined
  afterEach(async () => {
    await topology?.close()
    topology = undefined
  })

  it('a sentinelName the Sentinels do not monitor: the line names redis.sentinelName, the name given, and where the right one is', async () => {
    topology = await startRedisSentinel('mymaster')
    const lines = topology.configLines.map((line) => line.replace(/sentinelName: .*/, 'sentinelName: mymastr'))
    expect(lines.join('\n')).toContain('mymastr')
    const gw = await replicas.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), GATEWAY_SECRET }, `${TEAMS_YAML}\nredis:\n${lines.join('\n')}\n`))
    await waitFor('the redis unavailable line', () => gw.logs.text().includes('redis unavailable'), 10_000)
    const line = gw.logs.records().find((l) => String(l.msg).startsWith('redis unavailable'))
    expect(line?.cause).toMatch(/no master named "mymastr".*redis\.sentinelName.*sentinel monitor/)
  }, 60_000)
})
