import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startSandbox, type Sandbox } from '../../src/sandbox/sandbox.js'
import { KEYS, teamsYamlWith } from '../helpers/build-gateway.js'
import { spawnGateways, steadyLoad, timedRequest, type GatewayProcess, type TimedResponse } from '../helpers/gateway-process.js'
import { redisAvailability, startRedis, type RedisServer } from '../helpers/start-redis.js'

// redis-server SIGKILLed, and then frozen (SIGSTOP), under steady
// traffic through two gateway processes: every request is answered, and none waits on
// Redis longer than its command timeout (plus the platform call).

const { available } = redisAvailability()

const YAML = teamsYamlWith({
  platform: { timeout: '3s' },
  redis: { commandTimeout: '250ms', breakerCooldown: '500ms' },
  cache: { ttl: { recent: '1s', settled: '1s' }, lockTtl: '1s' },
})

const WORKERS = 6
const MAX_REQUESTS = 4000
// Longer than any answer may take: a request held until Redis is back would show.
const OUTAGE_MS = 5000

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
  function load(): { stop: () => Promise<TimedResponse[]> } {
    return steadyLoad(WORKERS, MAX_REQUESTS, (i) => {
      const gw = gateways[i % 2] as GatewayProcess
      return i % 4 === 3
        ? timedRequest(`${gw.url}/api/v1/campaign/get`, { method: 'POST', headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json' }, body: '{"userId":101}' })
        : timedRequest(`${gw.url}/api/v1/report/campaigns/get?advertiserId=101&byDate=1&dateFrom=2026-04-01&dateTo=2026-04-${String(1 + (i % 12)).padStart(2, '0')}`, {
            headers: { 'x-api-key': KEYS.all },
          })
    })
  }

  function expectNoneLost(answers: TimedResponse[]): void {
    expect(answers.length).toBeGreaterThan(20)
    expect(answers.filter((a) => a.status !== 200).map((a) => `${a.status} ${a.body}`)).toEqual([])
    // A frozen Redis costs a command timeout per step: no caller waits for it to come back.
    expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(OUTAGE_MS - 1000)
  }

  it('loses no request when redis-server is SIGKILLed and comes back', async () => {
    const traffic = load()
    await sleep(700)
    await redis.stop(true)
    await sleep(OUTAGE_MS)
    await redis.restart()
    await sleep(1500)
    expectNoneLost(await traffic.stop())
  })

  it('loses no request when redis-server is frozen (SIGSTOP) and thawed', async () => {
    const traffic = load()
    await sleep(700)
    redis.freeze()
    await sleep(OUTAGE_MS)
    redis.thaw()
    await sleep(1500)
    expectNoneLost(await traffic.stop())
  })
})
