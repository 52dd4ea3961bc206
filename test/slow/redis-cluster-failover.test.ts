import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { KEYS, TEAMS_YAML, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { Redis } from 'ioredis'
import { closeAfterTest } from '../helpers/build-gateway.js'
import { useGateways, useSandbox } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { startReplicatedCluster, type ReplicatedClusterTopology } from '../helpers/start-redis-topology.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'

// A production Redis Cluster has a replica for each master (Bitnami's redis-cluster: 3
// masters, 1 replica each), and its StatefulSet's rolling restart, a node's eviction or
// a crash kills a master: the Cluster promotes its replica once cluster-node-timeout
// passes (2 s here), and the node started again follows the new master. Two gateway
// replicas under steady reads and with report jobs at the platform, through the master of
// the {jobs} slot killed, then started again (docs/operations/replicas.md, "Cluster").

const { available, notice } = redisAvailability('the Redis Cluster failover tests')
if (notice) console.warn(notice)

const ADMIN_TOKEN = 'failover-admin-token-0123456789abcdef'
const GATEWAY_SECRET = 'failover-gateway-secret-0123456789'
const PATH = '/api/v1/report/campaigns/get'
/** A week's report; `n` picks one of 240 weeks of 2025, so that each n is a key of its own (some on every master). */
const query = (advertiserId: number, n = 0) => {
  const month = String(1 + (Math.floor(n / 20) % 12)).padStart(2, '0')
  const day = 1 + (n % 20)
  return `advertiserId=${advertiserId}&byDate=1&dateFrom=2025-${month}-${String(day).padStart(2, '0')}&dateTo=2025-${month}-${String(day + 6).padStart(2, '0')}`
}

describe.skipIf(!available)('a Redis Cluster master killed under traffic, its replica promoted, the node started again', () => {
  const sandbox = useSandbox()
  const replicas = useGateways()
  let cluster: ReplicatedClusterTopology
  beforeAll(async () => {
    cluster = await startReplicatedCluster()
  }, 60_000)
  afterAll(async () => {
    await cluster?.close()
  })

  const yaml = () => `${TEAMS_YAML}
platform:
  timeout: 10s
redis:
${cluster.configLines.join('\n')}
  commandTimeout: 500ms
  breakerCooldown: 200ms
`
  const get = (gw: TestGateway, q: string) => gw.proxy.inject({ method: 'GET', url: `${PATH}?${q}`, headers: { 'x-api-key': KEYS.all } })
  const admin = (gw: TestGateway, method: 'GET' | 'PUT' | 'DELETE', url: string, payload?: object) =>
    gw.admin.inject({ method, url, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, ...(payload ? { payload } : {}) })
  const redisLines = (gw: TestGateway) => gw.logs.records().filter((r) => typeof r.msg === 'string' && /^redis (unavailable|available again)/.test(r.msg)).map((r) => String(r.msg))
  const redisState = async (gw: TestGateway) => (await gw.admin.inject({ method: 'GET', url: '/readyz' })).json<{ redis?: string }>().redis

  it('every read answered, the jobs at the platform end done once, the bus and the shared token carry on, and the node back as a replica is no outage', async () => {
    const config = () => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN, GATEWAY_SECRET }, yaml())
    const a = await replicas.build(config())
    const b = await replicas.build(config())
    const jobsSlot = Number(await cluster.client.call('CLUSTER', 'KEYSLOT', '{jobs}'))

    // Steady reads on both replicas: a third of them new reports (a platform call, a write on every master), the rest cached ones.
    const statuses: Record<string, number> = {}
    const served: Record<string, number> = {}
    let sent = 0
    let running = true
    const traffic = (async () => {
      for (let i = 0; running; i++) {
        const res = await get(i % 2 ? a : b, i % 3 === 0 ? query(103, i) : query(101, i % 7))
        sent++
        statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1
        served[String(res.headers['x-cache'])] = (served[String(res.headers['x-cache'])] ?? 0) + 1
        await sleep(10)
      }
    })()

    // Four report jobs held at the platform through the failover.
    sandbox.clearRequests()
    // Weeks of December 2025 the reads never ask (theirs end 6 days after they start).
    const jobWeek = (i: number) => `dateFrom=2025-12-0${1 + i}&dateTo=2025-12-1${i}`
    const jobCalls = () => sandbox.countRequests((r) => r.path === PATH && [0, 1, 2, 3].some((i) => r.query.includes(jobWeek(i))))
    sandbox.setRouteFailure(PATH, { kind: 'held', times: 4 })
    const locations: string[] = []
    for (let i = 0; i < 4; i++) {
      const res = await (i % 2 ? a : b).proxy.inject({ method: 'GET', url: `${PATH}?advertiserId=${101 + (i % 2)}&byDate=1&${jobWeek(i)}`, headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
      expect(res.statusCode, res.body).toBe(202)
      locations.push(String(res.headers.location))
    }
    await waitFor('every job at the platform', () => jobCalls() === 4)

    const killedAt = Date.now()
    const { from, to } = await cluster.killMaster(jobsSlot)
    const promotedMs = Date.now() - killedAt
    sandbox.releaseHeld()
    const state = async (location: string) => {
      const res = await b.proxy.inject({ method: 'GET', url: location, headers: { 'x-api-key': KEYS.all } })
      return res.statusCode === 200 ? res.json<{ state: string }>().state : `HTTP ${res.statusCode}`
    }
    let seen: string[] = []
    await waitFor(() => `every job done (${seen.join(', ')})`, async () => (seen = await Promise.all(locations.map(state))).every((s) => s === 'done'), testTimeLeft(), 100)
    await waitFor('both replicas on Redis again', async () => (await redisState(a)) === 'ok' && (await redisState(b)) === 'ok', testTimeLeft(), 100)
    const backMs = Date.now() - killedAt
    const linesAfterFailover = [redisLines(a), redisLines(b)]

    // The node started again follows the promoted master: no outage of its own.
    await cluster.restartNode(from)
    const readsBefore = sent
    await waitFor('a hundred reads after the restart', () => sent >= readsBefore + 100, testTimeLeft(), 50)
    running = false
    await traffic
    console.log(
      `cluster failover: master ${from} -> ${to} promoted in ${promotedMs} ms, both replicas on Redis ${backMs} ms after the kill; ${sent} reads ${JSON.stringify(statuses)} ${JSON.stringify(served)}; lines ${JSON.stringify(linesAfterFailover)}, jobs' platform calls ${jobCalls()}`,
    )
    expect(statuses).toEqual({ 200: sent })
    // Each job's lease outlived the failover: none taken over and run again.
    expect(jobCalls()).toBe(4)
    expect([redisLines(a), redisLines(b)], 'no outage while the node rejoins').toEqual(linesAfterFailover)
    expect([await redisState(a), await redisState(b)]).toEqual(['ok', 'ok'])

    // The bus: a purge on B reaches A's memory; a token put on A reaches B.
    expect((await get(a, query(101, 1))).headers['x-cache']).toBe('HIT')
    expect((await admin(b, 'DELETE', '/admin/cache?advertiserId=101')).statusCode).toBe(200)
    await waitFor('the purge on the other replica', async () => (await get(a, query(101, 1))).headers['x-cache'] === 'MISS', testTimeLeft(), 50)
    const put = await admin(a, 'PUT', '/admin/token', { token: sandbox.issueToken() })
    expect(put.statusCode, put.body).toBe(200)
    expect(put.json<{ replicas: string }>().replicas).toBe('all')
    const printOf = async (gw: TestGateway) => (await admin(gw, 'GET', '/admin/token')).json<{ fingerprint: string }>().fingerprint
    await waitFor('the token on the other replica', async () => (await printOf(b)) === (await printOf(a)), testTimeLeft(), 50)
  }, 180_000)

  it('a token rotation the killed master had not passed to its replica: the running replicas store it again, and a replica started after takes it, not the token it replaced', async () => {
    await cluster.flush()
    const first = sandbox.issueToken()
    const config = () => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: first, ADMIN_TOKEN, GATEWAY_SECRET }, yaml())
    const a = await replicas.build(config())
    const b = await replicas.build(config())
    const printOf = async (gw: TestGateway) => (await admin(gw, 'GET', '/admin/token')).json<{ fingerprint: string }>().fingerprint
    const firstPrint = await printOf(a)
    expect(await printOf(b)).toBe(firstPrint)
    const tokenSlot = Number(await cluster.client.call('CLUSTER', 'KEYSLOT', 'rgw:token:default'))
    expect(await cluster.client.exists('rgw:token:default')).toBe(1)
    const LOST = '{rgw:token:default}lost'
    // The rotation reaches B by the bus, and its record only the master, which is killed before its replica reads it.
    const { from } = await cluster.killMaster(tokenSlot, async () => {
      const put = await admin(a, 'PUT', '/admin/token', { token: sandbox.issueToken() })
      expect(put.statusCode, put.body).toBe(200)
      await waitFor('the rotation on the other replica', async () => (await printOf(b)) !== firstPrint, testTimeLeft(), 50)
      // A key of the record's slot (its hash tag is the record's name), written after the record.
      await cluster.client.set(LOST, '1')
    })
    let lost: number | undefined
    await waitFor('the promoted master read', async () => (lost = await cluster.client.exists(LOST).catch(() => undefined)) !== undefined, testTimeLeft(), 100)
    expect(lost, 'the writes made while the replica was frozen are lost').toBe(0)
    const rotated = await printOf(a)
    expect([rotated, await printOf(b)]).toEqual([rotated, rotated])
    expect(rotated).not.toBe(firstPrint)
    await waitFor('both replicas on Redis again', async () => (await redisState(a)) === 'ok' && (await redisState(b)) === 'ok', testTimeLeft(), 100)
    // A replica of the first token's configuration, started now: it ends on the rotation, as A and B stay.
    const c = await replicas.build(config())
    await waitFor(() => `the new replica on the rotation (${firstPrint} replaced by ${rotated})`, async () => (await printOf(c)) === rotated, testTimeLeft(), 100)
    expect([await printOf(a), await printOf(b)]).toEqual([rotated, rotated])
    await cluster.restartNode(from)
  }, 120_000)

  /** The nodes holding a connection subscribed to channels (the gateways' bus subscribers), with their roles. */
  async function subscriberNodes(): Promise<{ port: number; replica: boolean }[]> {
    const found: { port: number; replica: boolean }[] = []
    for (const port of cluster.ports) {
      const node = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0 })
      node.on('error', () => undefined)
      try {
        if (/ sub=[1-9]/.test((await node.call('CLIENT', 'LIST')) as string)) found.push({ port, replica: (await node.info('replication')).includes('role:slave') })
      } catch {
        // A node down: it holds no subscriber.
      } finally {
        node.disconnect()
      }
    }
    return found
  }

  it("a replica node holding a gateway replica's bus subscriber lost while a token was announced: no outage, and the replica takes the stored token once subscribed on another node, not a maintenanceInterval later", async () => {
    // A seed node (the config names the first masters) turned replica by a failover: ioredis
    // may put a subscriber on any node it knows, the seeds included.
    const { from } = await cluster.killMaster(0)
    await cluster.restartNode(from)
    await cluster.flush()
    const first = sandbox.issueToken()
    const config = () => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: first, ADMIN_TOKEN, GATEWAY_SECRET }, yaml())
    let a: TestGateway | undefined
    let node: number | undefined
    for (let tries = 0; node === undefined; tries++) {
      expect(tries, 'a subscriber on a replica node within 20 starts').toBeLessThan(20)
      const gw = await replicas.build(config())
      let nodes: { port: number; replica: boolean }[] = []
      await waitFor('the subscriber connected', async () => (nodes = await subscriberNodes()).length === 1, testTimeLeft(), 50)
      if (nodes[0]?.replica === true) {
        a = gw
        node = nodes[0].port
      } else {
        replicas.open.splice(replicas.open.indexOf(gw), 1)
        await closeAfterTest(gw)
      }
    }
    const b = await replicas.build(config())
    const printOf = async (gw: TestGateway) => (await admin(gw, 'GET', '/admin/token')).json<{ fingerprint: string }>().fingerprint
    const before = await printOf(a as TestGateway)
    expect(await printOf(b)).toBe(before)
    // The rotation is stored and announced while A's subscriber's node hears nothing; then that node is gone.
    await cluster.killNode(node as number, async () => {
      const put = await admin(b, 'PUT', '/admin/token', { token: sandbox.issueToken() })
      expect(put.statusCode, put.body).toBe(200)
      expect(put.json<{ replicas: string }>().replicas).toBe('all')
    })
    const killedAt = Date.now()
    const rotated = await printOf(b)
    expect(rotated).not.toBe(before)
    // Well within platform.maintenanceInterval (1 minute), the periodic catch-up.
    await waitFor(() => `A on the rotated token (it holds ${before})`, async () => (await printOf(a as TestGateway)) === rotated, 15_000, 100)
    console.log(`token on A ${Date.now() - killedAt} ms after the kill`)
    // A replica node lost is no outage of Redis.
    expect([redisLines(a as TestGateway), redisLines(b)]).toEqual([[], []])
    await cluster.restartNode(node as number)
  }, 120_000)
})
