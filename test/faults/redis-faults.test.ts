import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startSandbox, type Sandbox } from '../../src/sandbox/sandbox.js'
import { KEYS, teamsYamlWith } from '../helpers/build-gateway.js'
import { spawnGateways, steadyLoad, timedRequest, type GatewayProcess, type TimedResponse } from '../helpers/gateway-process.js'
import { redisAvailability, startRedis, type RedisServer } from '../helpers/start-redis.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'

// redis-server SIGKILLed, and then frozen (SIGSTOP), under steady
// traffic through two gateway processes: every request is answered, and calls sent while
// Redis is down are answered while it is still down, by a replica that held no seat too.

const { available } = redisAvailability()

const YAML = teamsYamlWith({
  platform: { timeout: '3s' },
  redis: { commandTimeout: '250ms', breakerCooldown: '500ms' },
  cache: { ttl: { recent: '1s', settled: '1s' }, lockTtl: '1s' },
})

const WORKERS = 6
const MAX_REQUESTS = 4000
// Answers each worker has to calls it sent during an outage before the outage ends: a
// call held until Redis is back would hold its worker, and the outage, to the test's timeout.
const OUTAGE_ANSWERS = 10
// Answers each worker has before an outage and after it.
const AROUND_ANSWERS = 3

describe.skipIf(!available)('Redis killed and frozen under load (two gateway processes)', () => {
  let sandbox: Sandbox
  let redis: RedisServer
  let gateways: GatewayProcess[]

  beforeAll(async () => {
    sandbox = await startSandbox()
    redis = await startRedis()
    const env = { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: redis.url }
    gateways = await spawnGateways(2, { env, yaml: YAML })
  }, 120_000)

  afterAll(async () => {
    redis?.thaw()
    await Promise.all((gateways ?? []).map((g) => g.close()))
    await redis?.close()
    await sandbox?.close()
  })

  /** Report reads over 12 keys (hits, and misses as entries expire) and proxied reads, both replicas in turn, until stopped. */
  function load(): { answeredBy: () => number[]; stop: () => Promise<TimedResponse[]> } {
    return steadyLoad(WORKERS, MAX_REQUESTS, (i) => {
      const gw = gateways[i % 2] as GatewayProcess
      return i % 4 === 3
        ? timedRequest(`${gw.url}/api/v1/campaign/get`, { method: 'POST', headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json' }, body: '{"userId":101}' })
        : timedRequest(`${gw.url}/api/v1/report/campaigns/get?advertiserId=101&byDate=1&dateFrom=2026-04-01&dateTo=2026-04-${String(1 + (i % 12)).padStart(2, '0')}`, {
            headers: { 'x-api-key': KEYS.all },
          })
    })
  }

  /** `n` answers each worker has to calls it sends from now on (its call out now, if any, not counted). */
  async function answersTo(traffic: { answeredBy: () => number[] }, n: number, what: string): Promise<void> {
    const from = traffic.answeredBy()
    const left = () => traffic.answeredBy().map((got, w) => Math.max(0, (from[w] as number) + 1 + n - got))
    await waitFor(() => `${n} answers ${what} for each worker (left: ${left().join(', ')})`, () => left().every((l) => l === 0), testTimeLeft(), 50)
  }

  /** Load through an outage of Redis (`down` to `up`): it lasts until calls sent during it are answered. */
  async function throughOutage(down: () => unknown, up: () => unknown): Promise<void> {
    const traffic = load()
    await answersTo(traffic, AROUND_ANSWERS, 'before the outage')
    await down()
    // A frozen Redis costs a command timeout per step: no caller waits for it to come back.
    await answersTo(traffic, OUTAGE_ANSWERS, 'during the outage')
    await up()
    await answersTo(traffic, AROUND_ANSWERS, 'after the outage')
    const answers = await traffic.stop()
    expect(answers.filter((a) => a.status !== 200).map((a) => `${a.status} ${a.body}`)).toEqual([])
  }

  it('loses no request when redis-server is SIGKILLed and comes back', async () => {
    await throughOutage(() => redis.stop(true), () => redis.restart())
  })

  it('loses no request when redis-server is frozen (SIGSTOP) and thawed', async () => {
    await throughOutage(() => redis.freeze(), () => redis.thaw())
  })

  // A replica whose lease held no seat as Redis froze (its seat given back once unused)
  // had none to fill for a lease and the calls started before it: its calls 504 "not sent
  // to the platform" while the other's were answered (the project's CI on 08f8e0e).
  it('answers the calls of a replica that held no seat as redis-server froze, beside one that held seats', async () => {
    const [busy, idle] = gateways as [GatewayProcess, GatewayProcess]
    const seatsHeld = async (gw: GatewayProcess) => Number(/^gateway_platform_seats_held\{credential="default"\} (\d+)$/m.exec(await (await fetch(`${gw.adminUrl}/metrics`)).text())?.[1] ?? NaN)
    const campaigns = (gw: GatewayProcess) => timedRequest(`${gw.url}/api/v1/campaign/get`, { method: 'POST', headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json' }, body: '{"userId":101}' })
    expect((await campaigns(idle)).status).toBe(200)
    const traffic = steadyLoad(2, MAX_REQUESTS, () => campaigns(busy))
    try {
      await waitFor('the idle replica holding no seat, the busy one holding some', async () => (await seatsHeld(idle)) === 0 && (await seatsHeld(busy)) > 0, testTimeLeft(), 50)
      redis.freeze()
      const answers = await Promise.all([campaigns(idle), campaigns(idle), campaigns(idle)])
      expect(answers.map((a) => `${a.status} ${a.status === 200 ? '' : a.body}`)).toEqual(['200 ', '200 ', '200 '])
    } finally {
      redis.thaw()
      const answers = await traffic.stop()
      expect(answers.filter((a) => a.status !== 200).map((a) => `${a.status} ${a.body}`)).toEqual([])
    }
  })
})
