import { describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH, WEEK_BY_DATE, teamsYamlWith, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useCleanups, useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { redisGate } from '../helpers/redis-gate.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'

const GATEWAY_SECRET = 'job-partition-gateway-secret-0123456789'
const YEAR = 'advertiserId=101&byDate=1&dateFrom=2025-01-01&dateTo=2025-12-31'
const YAML = teamsYamlWith({ jobs: { lease: '2s', poll: '200ms' }, cache: { lockTtl: '2s' } })
const ONE_SEAT_YAML = YAML.replace('    refresh: true\n  growth:', '    refresh: true\n    maxConcurrent: 1\n  growth:')
const metricsOf = async (gw: TestGateway) => (await gw.admin.inject({ method: 'GET', url: '/metrics' })).body
const queued = (metrics: string) => Number(/^gateway_platform_queued_calls\{credential="default"\} (\d+)$/m.exec(metrics)?.[1] ?? 0)
const msgs = (gw: TestGateway) => gw.logs.records().filter((l) => typeof l.job === 'string').map((l) => l.msg)

// The replica running a report job is cut off from Redis (its connections dropped). Its
// lease renewals fail (a warn line each); at the lease's end, on its own clock, the run lets
// go of its read's fill, since the other replica may take the job over then and run it
// again (it says so). A call already at the platform goes on (a call that reached a worker
// runs to its end, docs/governor.md: cutting it saves no platform time): the platform has
// two calls of the job at once. A call still waiting for a seat is not sent, unless a caller
// of the report on the cut-off replica shares the fill: it goes on for that caller. The job
// ends done once, on the other replica; the cut-off run's end is not stored.

const redisCheck = redisAvailability()

describe.skipIf(!redisCheck.available)('the runner of a report job cut off from Redis', () => {
  const sandbox = useSandbox()
  const { server: redis } = useRedis()
  const gateways = useGateways()
  const cleanups = useCleanups()

  it('the other replica takes the job over once the lease has run out and ends it; the cut-off run goes on beside it and its end is not stored', async () => {
    const gate = await redisGate(redis.port, cleanups)
    gate.open()
    const env = { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), GATEWAY_SECRET }
    const b = await gateways.build(testConfig({ ...env, REDIS_URL: gate.url }, YAML))
    sandbox.clearRequests()
    sandbox.resetConcurrency()
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    const asked = await b.proxy.inject({ method: 'GET', url: `${REPORT_PATH}?${YEAR}`, headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
    expect(asked.statusCode).toBe(202)
    const location = String(asked.headers.location)
    await waitFor('the job at the platform', () => sandbox.countRequests((r) => r.path === REPORT_PATH) === 1)
    const a: TestGateway = await gateways.build(testConfig({ ...env, REDIS_URL: redis.url }, YAML))
    gate.cut()
    const state = async () => (await a.proxy.inject({ method: 'GET', url: location, headers: { 'x-api-key': KEYS.all } })).json() as { state: string; startedAt: string }
    await waitFor('the job done on A', async () => (await state()).state === 'done', testTimeLeft(), 100)
    expect(sandbox.concurrency().peak).toBe(2)
    expect(sandbox.countRequests((r) => r.path === REPORT_PATH)).toBe(2)
    expect(msgs(b)).toContain("renewing a report job's lease failed")
    expect(a.logs.records()).toContainEqual(expect.objectContaining({ level: 40, team: 'all', from: expect.any(String), runs: 2, msg: expect.stringMatching(/^report job taken over/) }))
    const takenAt = (await state()).startedAt
    sandbox.releaseHeld()
    // Its end cannot be stored while it is cut off: a warn line says so, and the job stays the other replica's.
    await waitFor("the cut-off run's end", () => msgs(b).includes('ending a report job failed: it is run again once its lease runs out, by the replica that takes it over (this one or another)'))
    gate.open()
    expect(await state()).toMatchObject({ state: 'done', startedAt: takenAt })
  }, 60_000)


  /**
   * A job asked on B (team `all` one call at the platform at once there) whose call waits for
   * a seat behind a caller's read of another report held at the platform; a caller of the
   * job's report on B joins its fill when `withCaller`. B is cut off, A takes the job over
   * and ends it; then the held read ends. The job's calls at the platform and the caller's answer.
   */
  const seatWaitingJobCutOff = async (withCaller: boolean): Promise<{ jobCalls: number; caller: number | null }> => {
    const gate = await redisGate(redis.port, cleanups)
    gate.open()
    const env = { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), GATEWAY_SECRET }
    const b = await gateways.build(testConfig({ ...env, REDIS_URL: gate.url }, ONE_SEAT_YAML))
    sandbox.clearRequests()
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    const read = (query: string) => b.proxy.inject({ method: 'GET', url: `${REPORT_PATH}?${query}`, headers: { 'x-api-key': KEYS.all } })
    const week = read(WEEK_BY_DATE)
    await waitFor("the caller's read at the platform", () => sandbox.concurrency().held === 1)
    const asked = await b.proxy.inject({ method: 'GET', url: `${REPORT_PATH}?${YEAR}`, headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
    expect(asked.statusCode).toBe(202)
    const location = String(asked.headers.location)
    await waitFor("the job's call waiting for a seat on B", async () => queued(await metricsOf(b)) === 1)
    // The same report's caller joins the job's fill: still one place in the queue.
    const year = withCaller ? read(YEAR) : null
    const a: TestGateway = await gateways.build(testConfig({ ...env, REDIS_URL: redis.url }, YAML))
    gate.cut()
    const state = async () => ((await a.proxy.inject({ method: 'GET', url: location, headers: { 'x-api-key': KEYS.all } })).json() as { state: string }).state
    await waitFor('the job done on A', async () => (await state()) === 'done', testTimeLeft(), 100)
    sandbox.releaseHeld()
    expect((await week).statusCode).toBe(200)
    const caller = year && (await year).statusCode
    await waitFor("the cut-off run's end", () => msgs(b).includes('ending a report job failed: it is run again once its lease runs out, by the replica that takes it over (this one or another)'))
    gate.open()
    expect(await state()).toBe('done')
    return { jobCalls: sandbox.countRequests((r) => r.path === REPORT_PATH && r.query === YEAR), caller }
  }

  it('a job whose call still waits for a seat on the cut-off replica when its lease runs out lets go of it: the call is not sent, the job makes one platform call, where it was taken over', async () => {
    expect(await seatWaitingJobCutOff(false)).toEqual({ jobCalls: 1, caller: null })
  }, 60_000)

  it('a job whose fill a caller on the cut-off replica waits for lets go of it when its lease runs out: the fill goes on for the caller, who is answered', async () => {
    expect(await seatWaitingJobCutOff(true)).toEqual({ jobCalls: 2, caller: 200 })
  }, 60_000)
})
