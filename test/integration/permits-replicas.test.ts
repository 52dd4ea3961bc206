import { afterEach, describe, expect, it } from 'vitest'
import type { TestGateway } from '../helpers/build-gateway.js'
import { KEYS, TEAMS_YAML, testConfig } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { distinctReport, proxyGet } from '../helpers/gateway-calls.js'
import { spawnGateway, timedRequest, type GatewayProcess } from '../helpers/gateway-process.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// The limit in force across replicas sharing one Redis (each replica leases its share of
// the seats from one script, sized by what its teams use and wait for), against the
// sandbox over loopback HTTP.

const { available, notice } = redisAvailability()
if (notice) console.warn(notice)

const SEATS_KEY = 'rgw:seats:{default}'

/** Runs of the seat script since the last RESETSTAT: its one HGETALL each (nothing else of a miss reads a hash whole). */
function leaseCalls(info: string): number {
  return Number(/cmdstat_hgetall:calls=(\d+)/.exec(info)?.[1] ?? 0)
}

describe.skipIf(!available)('the limit across replicas', () => {
  const sandbox = useSandbox()
  const redis = useRedis()
  const gateways = useGateways()
  const children: GatewayProcess[] = []
  afterEach(async () => {
    for (const child of children.splice(0)) await child.close()
  })
  const env = () => ({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: redis.server.url })
  // A slow Redis on a busy machine would open the breaker, and each replica would fall
  // back to its own cap: these tests give commands time (the fallback has its own test).
  const replica = (yaml: string, teams = TEAMS_YAML) => gateways.build(testConfig(env(), `${teams}\n${yaml}\nredis: { commandTimeout: 2s }`))

  it('keeps at most maxConcurrent calls at the platform from three replicas, answers every call, and pays a bounded number of lease renewals per call', async () => {
    const yaml = 'platform: { maxConcurrent: 4, adaptive: false }'
    const replicas = [await replica(yaml), await replica(yaml), await replica(yaml)]
    sandbox.setLatency(150)
    await redis.client.config('RESETSTAT')
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => proxyGet(replicas[i % 3] as TestGateway, distinctReport(i))))
    expect(answers.map((a) => a.statusCode)).toEqual(Array(30).fill(200))
    const { peak } = sandbox.concurrency()
    expect(peak).toBeLessThanOrEqual(4)
    // Each replica alone would have sent up to 4: the cap was reached, across replicas.
    expect(peak).toBeGreaterThanOrEqual(3)
    const leases = leaseCalls(await redis.client.info('commandstats'))
    // Seats change hands between replicas as calls end (a renewal to give one back, one to
    // take it): a few renewals per call, whatever the number of replicas.
    expect(leases).toBeLessThanOrEqual(5 * 30)
    console.info(`seat renewals: ${leases} for 30 platform calls over 3 replicas`)
    // A cache hit asks nothing of the seats.
    await waitFor('every lease given back', async () => Object.values(await redis.client.hgetall(SEATS_KEY)).every((v) => v.split('|')[1] === '0'), 5000)
    await redis.client.config('RESETSTAT')
    const hit = await proxyGet(replicas[0] as TestGateway, distinctReport(0))
    expect(hit.headers['x-cache']).toBe('HIT')
    expect(leaseCalls(await redis.client.info('commandstats'))).toBe(0)
    const metrics = await (replicas[0] as TestGateway).admin.inject({ method: 'GET', url: '/metrics' })
    expect(metrics.body).toContain('gateway_platform_permits_held{credential="default"} 0')
  })

  it('starts an uncontended call without a Redis command once the replica holds a lease', async () => {
    const gw = await replica('platform: { maxConcurrent: 4, adaptive: false }')
    expect((await proxyGet(gw, distinctReport(50))).statusCode).toBe(200)
    await redis.client.config('RESETSTAT')
    for (let i = 0; i < 5; i++) expect((await proxyGet(gw, distinctReport(i))).statusCode).toBe(200)
    // The lease asked for room to grow: five calls one after another renew it once at most
    // (its keep-alive, or giving back what sat unused), never once per call.
    expect(leaseCalls(await redis.client.info('commandstats'))).toBeLessThanOrEqual(1)
  })

  it('lets one team\'s burst spread over two replicas use every slot, and answers another team\'s call at once', async () => {
    const yaml = 'platform: { maxConcurrent: 4, adaptive: false }'
    const [a, b] = [await replica(yaml), await replica(yaml)]
    sandbox.setLatency(300)
    let answered = 0
    const burst = Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        proxyGet(i % 2 ? a : b, distinctReport(i)).then((r) => {
          answered += 1
          return r
        }),
      ),
    )
    const running = () => a.governors.of('default').running('all') + b.governors.of('default').running('all')
    // A team alone takes every slot of the credential, across replicas.
    await waitFor('the burst holding every slot', () => running() === 4 && a.governors.of('default').queued > 0 && b.governors.of('default').queued > 0)
    const other = await proxyGet(b, distinctReport(100, 102), KEYS.growth)
    expect(other.statusCode).toBe(200)
    expect(other.headers['x-cache']).toBe('MISS')
    // Answered while most of the burst still waited: it did not queue behind it.
    expect(answered).toBeLessThan(16)
    const answers = await burst
    expect(answers.every((r) => r.statusCode === 200)).toBe(true)
    // The limit holds across both replicas, the other team's call included.
    expect(sandbox.concurrency().peak).toBeLessThanOrEqual(4)
  })

  it('falls back to maxConcurrentPerReplica on each replica while Redis is down', async () => {
    const yaml = 'platform: { maxConcurrent: 8, maxConcurrentPerReplica: 2 }'
    const [a, b] = [await replica(yaml), await replica(yaml)]
    await redis.server.stop()
    try {
      sandbox.setLatency(150)
      const answers = await Promise.all(Array.from({ length: 16 }, (_, i) => proxyGet(i % 2 ? a : b, distinctReport(i))))
      expect(answers.map((r) => r.statusCode)).toEqual(Array(16).fill(200))
      // 2 per replica, where Redis would have let 8 through.
      expect(sandbox.concurrency().peak).toBeLessThanOrEqual(4)
      expect(sandbox.concurrency().peak).toBeGreaterThanOrEqual(3)
    } finally {
      await redis.server.restart()
    }
  })

  it('gives back the seats of a SIGKILLed replica within the lease: the other replica\'s call goes through', async () => {
    const yaml = `${TEAMS_YAML}\nplatform: { maxConcurrent: 2, adaptive: false, permitLease: 1s }\nredis: { commandTimeout: 2s }`
    const dying = await spawnGateway({ env: env(), yaml })
    children.push(dying)
    const survivor = await replica('platform: { maxConcurrent: 2, adaptive: false, permitLease: 1s }')
    sandbox.setLatency(4000)
    // Two slow calls of two teams hold both seats.
    const held = [timedRequest(`${dying.url}${distinctReport(0)}`, { headers: { 'x-api-key': KEYS.all } }), timedRequest(`${dying.url}${distinctReport(1, 102)}`, { headers: { 'x-api-key': KEYS.growth } })]
    await waitFor('both seats leased', async () => Object.values(await redis.client.hgetall(SEATS_KEY)).some((v) => v.split('|')[2] === '2'), 15_000)
    dying.kill('SIGKILL')
    await dying.exited
    await Promise.all(held)
    sandbox.setLatency(0)
    const started = Date.now()
    const answer = await proxyGet(survivor, distinctReport(2))
    expect(answer.statusCode).toBe(200)
    // Within the lease (1 s) and a retry interval, with a wide margin for a busy machine;
    // seats that never lapsed would leave it queued until queueTimeout (10 s), then 503.
    expect(Date.now() - started).toBeLessThan(8000)
  })
})
