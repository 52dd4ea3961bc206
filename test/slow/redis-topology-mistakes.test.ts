import { Redis } from 'ioredis'
import { afterEach, describe, expect, it } from 'vitest'
import { KEYS, testConfig, TEAMS_YAML, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useSandbox } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { startRedisCluster, startRedisSentinel, type RedisTopology } from '../helpers/start-redis-topology.js'
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
    await waitFor('the redis unavailable line', () => gw.logs.text().includes('redis unavailable'))
    const line = gw.logs.records().find((l) => String(l.msg).startsWith('redis unavailable'))
    expect(line?.cause).toMatch(/no master named "mymastr".*redis\.sentinelName.*sentinel monitor/)
  }, 60_000)

  it("a Cluster master down without traffic: the watch's first ping after it opens the circuit, not the second", async () => {
    const cluster = await startRedisCluster()
    topology = cluster
    // Pinged every 500 ms: a second ping comes long before anything else the replica sends Redis on its own.
    const gw = await replicas.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), GATEWAY_SECRET }, `${TEAMS_YAML}\nredis:\n${cluster.configLines.join('\n')}\n  breakerCooldown: 500ms\n`))
    expect(gw.redis.client?.status).toBe('ready')
    // Each ping asks every master CLUSTER INFO: a live master counts the pings.
    const live = new Redis(Number(cluster.configLines[1]?.match(/port: (\d+)/)?.[1]), '127.0.0.1')
    const pings = async () => Number(/cmdstat_cluster\|info:calls=(\d+)/.exec(await live.info('commandstats'))?.[1] ?? 0)
    try {
      await waitFor('a ping of the live master', async () => (await pings()) > 0)
      const before = await pings()
      const port = await cluster.stopMaster(2)
      await waitFor('the circuit open', () => gw.logs.text().includes('redis unavailable'))
      // The ping that found the master gone opened it (or a command of the replica's own did, before any ping).
      expect((await pings()) - before).toBeLessThanOrEqual(1)
      const line = gw.logs.records().find((r) => String(r.msg).startsWith('redis unavailable'))
      expect(String(line?.cause)).toContain(`127.0.0.1:${port}`)
      expect((await gw.admin.inject({ method: 'GET', url: '/readyz' })).json()).toMatchObject({ redis: 'down' })
    } finally {
      live.disconnect()
    }
  }, 60_000)

  it('a Cluster master down (no replica for its slots): Redis is down until it is back, one line naming the master, no flapping', async () => {
    const cluster = await startRedisCluster()
    topology = cluster
    const gw = await replicas.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), GATEWAY_SECRET }, `${TEAMS_YAML}\nredis:\n${cluster.configLines.join('\n')}\n  commandTimeout: 300ms\n  breakerCooldown: 500ms\n`))
    expect(gw.redis.client?.status).toBe('ready')
    const port = await cluster.stopMaster(2)
    let n = 0
    // A week's report of its own each time: some land in the stopped master's slots.
    const read = (g: TestGateway) => g.proxy.inject({ method: 'GET', url: `/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2025-01-01&dateTo=2025-01-${String(2 + (n++ % 27)).padStart(2, '0')}`, headers: { 'x-api-key': KEYS.all } })
    await waitFor('the breaker opened', async () => {
      await read(gw)
      return gw.logs.text().includes('redis unavailable')
    })
    // The watch's trials go on (each asks the masters it reaches CLUSTER INFO): a dozen of them on the live ones, with reads between.
    const live = [0, 1].map((i) => new Redis(Number(cluster.configLines[1 + i]?.match(/port: (\d+)/)?.[1]), '127.0.0.1', { lazyConnect: false }))
    const pings = async () => {
      let total = 0
      for (const node of live) {
        const stats = await node.info('commandstats')
        for (const command of ['ping', 'cluster\\|info']) total += Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(stats)?.[1] ?? 0)
      }
      return total
    }
    const dozenTrials = async () => {
      const before = await pings()
      await waitFor('a dozen trials', async () => {
        await read(gw)
        return (await pings()) >= before + 12
      })
    }
    const transitions = () => gw.logs.records().filter((r) => typeof r.msg === 'string' && r.msg.startsWith('redis '))
    try {
      await dozenTrials()
      const records = transitions()
      const first = records.findIndex((r) => String(r.msg).startsWith('redis unavailable'))
      expect(records.slice(first).map((r) => r.msg)).toEqual(['redis unavailable: serving without it (circuit open)'])
      expect(String(records[first]?.cause)).toContain(`127.0.0.1:${port}`)
      const ready = await gw.admin.inject({ method: 'GET', url: '/readyz' })
      expect(ready.json()).toMatchObject({ redis: 'down' })

      // Back: the master rejoins, the Cluster serves every slot again, and the circuit closes once, reads going on throughout.
      await cluster.restartMaster(2)
      await waitFor('redis available again', async () => {
        await read(gw)
        return (await gw.admin.inject({ method: 'GET', url: '/readyz' })).json<{ redis: string }>().redis === 'ok'
      })
      await dozenTrials()
      expect(transitions().slice(first).map((r) => r.msg)).toEqual(['redis unavailable: serving without it (circuit open)', 'redis available again (circuit closed)'])
    } finally {
      for (const node of live) node.disconnect()
    }
  }, 120_000)
})
