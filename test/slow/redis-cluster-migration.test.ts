import { Redis } from 'ioredis'
import { afterEach, describe, expect, it } from 'vitest'
import { answeredTryAgain } from '../../src/redis/client.js'
import { testConfig, TEAMS_YAML } from '../helpers/build-gateway.js'
import { useGateways, useSandbox } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { startRedisCluster, type ClusterTopology } from '../helpers/start-redis-topology.js'

// A slot that a resharding holds split between two masters (some of its keys moved, some
// not yet) answers a command on several of its keys TRYAGAIN: Redis is up, and the
// command is asked again until the slot's last key has moved. That is no outage: the
// call gets its fallback, the circuit stays closed, and once the slot has moved the same
// command is answered.

const { available, notice } = redisAvailability('the Redis Cluster migration tests')
if (notice) console.warn(notice)

const GATEWAY_SECRET = 'cluster-migration-secret-0123456789'
const BOTH = "return {redis.call('get', KEYS[1]), redis.call('get', KEYS[2])}"
const KEY_A = '{migration}a'
const KEY_B = '{migration}b'

/** A direct connection to the master on `port`. */
function node(port: number): Redis {
  const c = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 1 })
  c.on('error', () => undefined)
  return c
}

describe.skipIf(!available)('Redis Cluster slot migration', () => {
  const sandbox = useSandbox()
  const replicas = useGateways()
  let cluster: ClusterTopology | undefined
  const direct: Redis[] = []
  afterEach(async () => {
    for (const c of direct.splice(0)) c.disconnect()
    await cluster?.close()
    cluster = undefined
  })

  it('a script on a slot split mid-migration (TRYAGAIN) gets its fallback with the circuit closed, and is answered once the slot has moved', async () => {
    cluster = await startRedisCluster()
    const gw = await replicas.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), GATEWAY_SECRET }, `${TEAMS_YAML}\nredis:\n${cluster.configLines.join('\n')}\n`))
    const { client, breaker } = gw.redis
    if (!client || !breaker) throw new Error('the gateway has no Redis')
    expect(breaker.state).toBe('closed')
    await cluster.client.set(KEY_A, 'a')
    await cluster.client.set(KEY_B, 'b')

    const ports = [...cluster.configLines.join('\n').matchAll(/port: (\d+)/g)].map((m) => Number(m[1]))
    const masters = ports.map(node)
    direct.push(...masters)
    const slot = Number(await masters[0]!.call('CLUSTER', 'KEYSLOT', KEY_A))
    const owners = await Promise.all(masters.map(async (m) => Number(await m.call('CLUSTER', 'COUNTKEYSINSLOT', String(slot)))))
    const from = owners.findIndex((n) => n === 2)
    const to = (from + 1) % masters.length
    const source = masters[from]!
    const target = masters[to]!
    const sourceId = String(await source.call('CLUSTER', 'MYID'))
    const targetId = String(await target.call('CLUSTER', 'MYID'))
    // Held split as a resharding leaves it between two batches: KEY_A moved, KEY_B not yet.
    await target.call('CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', sourceId)
    await source.call('CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', targetId)
    await source.call('MIGRATE', '127.0.0.1', String(ports[to]), '', '0', '5000', 'KEYS', KEY_A)

    // One key follows the move (ASK); both keys are TRYAGAIN while the slot is split.
    expect(await breaker.run(() => client.get(KEY_A), 'fallback')).toBe('a')
    for (let i = 0; i < 3; i++) {
      expect(await breaker.run(() => client.eval(BOTH, 2, KEY_A, KEY_B), 'fallback')).toBe('fallback')
      expect(breaker.state).toBe('closed')
      expect(await breaker.run(() => client.multi().get(KEY_A).get(KEY_B).exec(), 'fallback')).toBe('fallback')
      expect(breaker.state).toBe('closed')
      // A pipeline resolves with each command's own TRYAGAIN, as a pipeline's failed command is read.
      const batch = await breaker.run(() => client.pipeline().eval(BOTH, 2, KEY_A, KEY_B).eval(BOTH, 2, KEY_A, KEY_B).exec(), 'fallback')
      expect(Array.isArray(batch) && batch.map(([err]) => answeredTryAgain(err))).toEqual([true, true])
      expect(breaker.state).toBe('closed')
    }
    expect(gw.logs.text()).not.toContain('redis unavailable')

    await source.call('MIGRATE', '127.0.0.1', String(ports[to]), '', '0', '5000', 'KEYS', KEY_B)
    for (const m of masters) await m.call('CLUSTER', 'SETSLOT', String(slot), 'NODE', targetId)
    expect(await breaker.run(() => client.eval(BOTH, 2, KEY_A, KEY_B), 'fallback')).toEqual(['a', 'b'])
    expect(breaker.state).toBe('closed')
    expect(gw.logs.text()).not.toContain('redis unavailable')
  }, 60_000)
})
