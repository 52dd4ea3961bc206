import { describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH, teamsYamlWith, testConfig, TEST_GATEWAY_SECRET, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'

// A replica told to stop (SIGTERM: main.ts drains, then closes) answers through its drain
// and grace as ever, a report read preferring respond-async included, but starts no report
// job from the drain on: a call it started then would be aborted at the grace's end, the
// platform's work lost and the job run again by another replica. A job asked on it runs on
// a replica that is not stopping (the bus wakes them), once.

const { available } = redisAvailability()
const YEAR = 'advertiserId=101&byDate=1&dateFrom=2025-01-01&dateTo=2025-12-31'

describe.skipIf(!available)('a replica that drains starts no report job', () => {
  const sandbox = useSandbox()
  const { server } = useRedis()
  const gateways = useGateways()

  const started = async (gw: TestGateway): Promise<number> => {
    const text = (await gw.admin.inject({ method: 'GET', url: '/metrics' })).body
    return Number(/^gateway_report_jobs_total\{outcome="started"\} (\d+)$/m.exec(text)?.[1] ?? 0)
  }

  const state = async (gw: TestGateway, id: string): Promise<string> => ((await gw.proxy.inject({ method: 'GET', url: `/api/v1/jobs/${id}`, headers: { 'x-api-key': KEYS.all } })).json() as { state: string }).state

  it('a job asked on a draining replica runs on the other one, its platform call made once', async () => {
    const config = testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: server.url, GATEWAY_SECRET: TEST_GATEWAY_SECRET }, teamsYamlWith({ jobs: { poll: '100ms' } }))
    const stopping = await gateways.build(config)
    const other = await gateways.build(config)
    sandbox.clearRequests()

    stopping.drain()
    const asked = await stopping.proxy.inject({ method: 'GET', url: `${REPORT_PATH}?${YEAR}`, headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
    expect(asked.statusCode).toBe(202)
    const { id } = asked.json() as { id: string }

    await waitFor(`job ${id} ended`, async () => ['done', 'failed'].includes(await state(other, id)), testTimeLeft())
    expect(await state(other, id)).toBe('done')
    expect(await started(stopping)).toBe(0)
    expect(await started(other)).toBe(1)
    expect(sandbox.countRequests((r) => r.path === REPORT_PATH)).toBe(1)
  }, 30_000)
})
