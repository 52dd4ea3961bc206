import { describe, expect, it } from 'vitest'
import { KEYS, listen, REPORT_PATH, teamsYamlWith, testConfig, TEST_GATEWAY_SECRET, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'

// A replica told to stop (SIGTERM: main.ts drains, then closes) answers through its drain
// and grace as ever, a report read preferring respond-async included, but starts no report
// job from the drain on: a call it started then would be aborted at the grace's end, the
// platform's work lost and the job run again by another replica. A job asked on it runs on
// a replica that is not stopping (the bus wakes them), once. Jobs kept in a replica's memory
// (no Redis) are that replica's alone: it goes on running them until it closes. A status
// call waiting (?wait) when the drain ends is answered then, the job as it is: the replica
// closes its connections at the grace's end, and a wait held past it got no answer.

const { available } = redisAvailability()
const YEAR = 'advertiserId=101&byDate=1&dateFrom=2025-01-01&dateTo=2025-12-31'

const started = async (gw: TestGateway): Promise<number> => {
  const text = (await gw.admin.inject({ method: 'GET', url: '/metrics' })).body
  return Number(/^gateway_report_jobs_total\{outcome="started"\} (\d+)$/m.exec(text)?.[1] ?? 0)
}

const state = async (gw: TestGateway, id: string): Promise<string> => ((await gw.proxy.inject({ method: 'GET', url: `/api/v1/jobs/${id}`, headers: { 'x-api-key': KEYS.all } })).json() as { state: string }).state

const ask = async (gw: TestGateway): Promise<string> => {
  const asked = await gw.proxy.inject({ method: 'GET', url: `${REPORT_PATH}?${YEAR}`, headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
  expect(asked.statusCode).toBe(202)
  return (asked.json() as { id: string }).id
}

describe.skipIf(!available)('a replica that drains starts no report job', () => {
  const sandbox = useSandbox()
  const { server } = useRedis()
  const gateways = useGateways()

  it('a job asked on a draining replica runs on the other one, its platform call made once', async () => {
    const config = testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: server.url, GATEWAY_SECRET: TEST_GATEWAY_SECRET }, teamsYamlWith({ jobs: { poll: '100ms' } }))
    const stopping = await gateways.build(config)
    const other = await gateways.build(config)
    sandbox.clearRequests()

    stopping.drain()
    const id = await ask(stopping)

    await waitFor(`job ${id} ended`, async () => ['done', 'failed'].includes(await state(other, id)), testTimeLeft())
    expect(await state(other, id)).toBe('done')
    expect(await started(stopping)).toBe(0)
    expect(await started(other)).toBe(1)
    expect(sandbox.countRequests((r) => r.path === REPORT_PATH)).toBe(1)
  }, 30_000)
})

describe('a replica that drains with its jobs in memory (no Redis)', () => {
  const sandbox = useSandbox()
  const gateways = useGateways()

  it('runs a job asked on it: no other replica could', async () => {
    const gw = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }, teamsYamlWith({ jobs: { poll: '100ms' } })))
    gw.drain()
    const id = await ask(gw)
    await waitFor(`job ${id} ended`, async () => ['done', 'failed'].includes(await state(gw, id)), testTimeLeft())
    expect(await state(gw, id)).toBe('done')
    expect(await started(gw)).toBe(1)
  }, 30_000)
})

describe('a status call waiting (?wait) on a replica that stops', () => {
  const sandbox = useSandbox()
  const gateways = useGateways()

  it('is answered when the drain ends, the job as it is, not cut with the connections at the grace\'s end', async () => {
    const gw = await listen(await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }, teamsYamlWith({ jobs: { poll: '100ms' } }))))
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    const id = await ask(gw)
    await waitFor('the job at the platform', () => sandbox.countRequests((r) => r.path === REPORT_PATH) === 1)
    const waiting = fetch(`${gw.url}/api/v1/jobs/${id}?wait=30`, { headers: { 'x-api-key': KEYS.all } })
    await waitFor('the wait held', async () => /^gateway_report_job_waits\{team="all"\} 1$/m.test((await gw.admin.inject({ method: 'GET', url: '/metrics' })).body))

    gw.drain()
    const closing = gw.close()
    const answered = await waiting
    expect(answered.status).toBe(200)
    expect(answered.headers.get('connection')).toBe('close')
    expect(((await answered.json()) as { state: string }).state).toBe('running')
    sandbox.releaseHeld()
    await closing
  }, 30_000)
})
