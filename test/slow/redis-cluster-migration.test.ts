import { Redis } from 'ioredis'
import { afterEach, describe, expect, it } from 'vitest'
import { answeredTryAgain } from '../../src/redis/client.js'
import { KEYS, testConfig, TEAMS_YAML } from '../helpers/build-gateway.js'
import { freshRequest, openLoad, type Answer } from '../helpers/balancers.js'
import { useGateways, useSandbox } from '../helpers/fixtures.js'
import { spawnGateways, type GatewayProcess } from '../helpers/gateway-process.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { startRedisCluster, type ClusterTopology } from '../helpers/start-redis-topology.js'
import { startsTimeout, testTimeLeft, waitFor } from '../helpers/wait.js'

// A slot that a resharding holds split between two masters (some of its keys moved, some
// not yet) answers a command on several of its keys TRYAGAIN: Redis is up, and the
// command is asked again until the slot's last key has moved. That is no outage: the
// call gets its fallback, the circuit stays closed, and once the slot has moved the same
// command is answered. A resharding of every slot of one master, under traffic on two
// gateway processes, loses no answer.

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

  it('every slot of one master moved to another under traffic on two gateway processes: every answer 200, the circuit never opens, and a token set after the move reaches the other replica', async () => {
    cluster = await startRedisCluster()
    const ports = [...cluster.configLines.join('\n').matchAll(/port: (\d+)/g)].map((m) => Number(m[1]))
    const masters = ports.map(node)
    direct.push(...masters)
    const ADMIN_TOKEN = 'cluster-move-admin-token-0123456789'
    const env = { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), GATEWAY_SECRET, ADMIN_TOKEN }
    const gateways: GatewayProcess[] = await spawnGateways(2, { env, yaml: `${TEAMS_YAML}\nredis:\n${cluster.configLines.join('\n')}\n` })
    try {
      // Reports of 56 spellings, so that copies, fill locks and owner lists sit in slots of every master.
      const answers: Answer[] = []
      const load = openLoad(80, async (i) => {
        const day = String(1 + (i % 28)).padStart(2, '0')
        const path = `/api/v1/report/campaigns/get?advertiserId=${101 + (i % 2)}&dateFrom=2026-02-${day}&dateTo=2026-02-${day}`
        const answer = await freshRequest(`${(gateways[i % 2] as GatewayProcess).url}${path}`, { 'x-api-key': KEYS.all })
        answers.push(answer)
        return answer
      })
      await waitFor('answers from both replicas', () => answers.length > 100, testTimeLeft(), 20)
      // The first master's slots, each moved as redis-cli --cluster reshard moves it: IMPORTING
      // on the target, MIGRATING on the source, its keys by MIGRATE in batches, then the slot
      // assigned to the target on every master.
      const [source, target] = [masters[0] as Redis, masters[1] as Redis]
      const sourceId = String(await source.call('CLUSTER', 'MYID'))
      const targetId = String(await target.call('CLUSTER', 'MYID'))
      const slots = ((await source.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][]).filter((r) => r[2][1] === ports[0])
      for (const [first, last] of slots) {
        for (let slot = first; slot <= last; slot++) {
          await target.call('CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', sourceId)
          await source.call('CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', targetId)
          for (let keys = (await source.call('CLUSTER', 'GETKEYSINSLOT', String(slot), '100')) as string[]; keys.length > 0; keys = (await source.call('CLUSTER', 'GETKEYSINSLOT', String(slot), '100')) as string[]) {
            await source.call('MIGRATE', '127.0.0.1', String(ports[1]), '', '0', '5000', 'KEYS', ...keys)
          }
          for (const m of masters) await m.call('CLUSTER', 'SETSLOT', String(slot), 'NODE', targetId)
        }
      }
      expect(await source.dbsize(), 'the source master holds no key').toBe(0)
      const moved = answers.length
      const put = await fetch(`${(gateways[0] as GatewayProcess).adminUrl}/admin/token`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ token: sandbox.issueToken() }),
      })
      expect(await put.json()).toMatchObject({ changed: true, replicas: 'all' })
      const fingerprint = (gw: GatewayProcess) => fetch(`${gw.adminUrl}/admin/token`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }).then(async (r) => ((await r.json()) as { fingerprint: string }).fingerprint)
      await waitFor('the other replica to take the token', async () => (await fingerprint(gateways[1] as GatewayProcess)) === (await fingerprint(gateways[0] as GatewayProcess)), testTimeLeft(), 50)
      await waitFor('answers after the move', () => answers.length > moved + 100, testTimeLeft(), 20)
      const all = await load.stop()
      const lost = all.filter((a) => a.status !== 200).map((a) => `${a.status} ${a.error ?? ''}`)
      console.log(`every slot of a master moved under traffic: ${all.length} answers, lost ${JSON.stringify(lost)}`)
      expect(lost).toEqual([])
      for (const gw of gateways) expect(gw.output()).not.toContain('redis unavailable')
    } finally {
      await Promise.all(gateways.map((gw) => gw.close()))
    }
  }, startsTimeout(2))
})
