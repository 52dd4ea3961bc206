import { randomBytes } from 'node:crypto'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH, TEAMS_YAML } from '../helpers/build-gateway.js'
import { useCleanups, useRedis, useSandbox } from '../helpers/fixtures.js'
import { spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'
import { useReceivers } from '../helpers/webhook-receiver.js'

// A report job whose Redis fails under it while its platform call is under way (a gateway
// process, dist/main.js, on a real redis-server, the sandbox, a webhook receiver): Redis
// restarted with its data, restarted without it, and frozen for longer than the job's
// lease. What docs/jobs.md promises ("Across replicas and crashes"): with its data the job
// ends once, pushed once; without, its id is 404, its run logs why, nothing is pushed;
// frozen past the lease, the job ends once when Redis answers again, pushed once, its
// platform call made once (the run lets go of its fill at the lease's end, the call at the
// platform goes on and answers the run that takes the job over).

const GATEWAY_SECRET = 'jobs-redis-faults-gateway-secret-0123456789'
const SECRET = `whsec_${randomBytes(24).toString('base64')}`
const YEAR = 'advertiserId=101&byDate=1&dateFrom=2025-01-01&dateTo=2025-12-31'

const redisCheck = redisAvailability('the report jobs under Redis faults test')

interface Status {
  state: string
  runs?: number
  error: unknown
}

describe.skipIf(!redisCheck.available)('a report job whose Redis fails while its call is at the platform (a gateway process, one Redis)', () => {
  const sandbox = useSandbox()
  const { server: redis, client } = useRedis()
  const cleanups = useCleanups()
  const receiver = useReceivers()

  async function start(url: string, lease = '2s'): Promise<GatewayProcess> {
    const team = TEAMS_YAML.replace('    refresh: true\n', `    refresh: true\n    webhook: { url: "${url}", secret: "${SECRET}" }\n`)
    const yaml = `${team}jobs:\n  webhookHosts: [localhost]\n  lease: ${lease}\n  poll: 200ms\ncache:\n  lockTtl: 2s\nredis:\n  breakerCooldown: 200ms\n`
    const gw = await spawnGateway({ env: { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: redis.url, GATEWAY_SECRET }, yaml })
    cleanups.push(() => gw.close())
    return gw
  }

  const get = (gw: GatewayProcess, path: string, headers: Record<string, string> = {}) => fetch(`${gw.url}${path}`, { headers: { 'x-api-key': KEYS.all, ...headers } })
  const reportCalls = () => sandbox.requests.filter((r) => r.path === REPORT_PATH).length
  const lines = (gw: GatewayProcess, msg: string) => gw.output().split('\n').filter((l) => l.includes(`"msg":"${msg}`))

  /** A job asked of `gw` whose call is held at the platform: its location. */
  async function heldJob(gw: GatewayProcess): Promise<string> {
    sandbox.clearRequests()
    cleanups.push(() => sandbox.releaseHeld())
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    const asked = await get(gw, `${REPORT_PATH}?${YEAR}`, { prefer: 'respond-async' })
    expect(asked.status).toBe(202)
    await asked.arrayBuffer()
    await waitFor("the job's call at the platform", () => reportCalls() === 1)
    return asked.headers.get('location') as string
  }

  /**
   * Redis stopped (its data saved first when `save`), the job's call answered, and Redis
   * started again once the run's end met it down: the end is stored (or finds its job
   * gone) when Redis answers again, within the lease, its failure said by the runner's
   * warn line for each try (before: one line, and the job left to its lease).
   */
  async function endMeetsRedisDown(gw: GatewayProcess, save: boolean): Promise<void> {
    if (save) {
      // Its data on disk (RDB), loaded by the restart; the file gone after the test, so that the next restart is without data.
      const [, dir] = (await client.call('CONFIG', 'GET', 'dir')) as [string, string]
      cleanups.push(() => rmSync(join(dir, 'dump.rdb'), { force: true }))
      await client.call('SAVE')
    }
    await redis.stop()
    sandbox.releaseHeld()
    await waitFor("the run's end met Redis down", () => lines(gw, "storing a report job's end failed").length + lines(gw, 'ending a report job failed').length > 0, testTimeLeft(), 10)
    await redis.restart()
  }

  const statusOf = async (gw: GatewayProcess, location: string): Promise<{ code: number; body: Status | null }> => {
    const res = await get(gw, location)
    const body = res.status === 200 ? ((await res.json()) as Status) : (await res.arrayBuffer(), null)
    return { code: res.status, body }
  }

  it('restarted with its data as the run ends: the run stores its end once Redis answers, within its lease: done once, pushed once, one platform call, no takeover', async () => {
    const r = await receiver(0)
    r.answer(204)
    // A lease longer than Redis' restart and the client's reconnection take.
    const gw = await start(r.url, '6s')
    const location = await heldJob(gw)
    await endMeetsRedisDown(gw, true)
    await waitFor('the job done', async () => (await statusOf(gw, location)).body?.state === 'done', testTimeLeft(), 50)
    await waitFor('the push delivered', () => r.hits.length >= 1, testTimeLeft(), 50)
    const result = await get(gw, `${location}/result`)
    expect(result.status).toBe(200)
    await result.arrayBuffer()
    expect([reportCalls(), r.hits.map((h) => h.status), lines(gw, 'report job taken over').length]).toEqual([1, [204], 0])
  }, 120_000)

  it('restarted without its data as the run ends: the job is 404, its run says it was gone and stores nothing, nothing is pushed', async () => {
    const r = await receiver(0)
    r.answer(204)
    const gw = await start(r.url, '6s')
    const location = await heldJob(gw)
    await endMeetsRedisDown(gw, false)
    await waitFor('the run told its job was gone', () => lines(gw, 'report job gone from Redis while it ran').length === 1, testTimeLeft(), 50)
    expect((await statusOf(gw, location)).code).toBe(404)
    expect((await get(gw, `${location}/result`)).status).toBe(404)
    // Nothing in the outbox: no delivery is made, however long one waits.
    expect(await client.keys('*deliver*')).toEqual([])
    expect([reportCalls(), r.hits.length]).toEqual([1, 0])
  }, 120_000)

  it('frozen for longer than the lease: once it answers again the job ends done once, pushed once, its platform call made once', async () => {
    const r = await receiver(0)
    r.answer(204)
    const gw = await start(r.url)
    const location = await heldJob(gw)
    redis.freeze()
    cleanups.push(() => redis.thaw())
    // Past the lease (2 s): its renewals, every third of it, have failed four times.
    await waitFor('four renewals failed', () => lines(gw, "renewing a report job's lease failed").length >= 4, testTimeLeft(), 50)
    redis.thaw()
    sandbox.releaseHeld()
    await waitFor('the job done', async () => (await statusOf(gw, location)).body?.state === 'done', testTimeLeft(), 50)
    await waitFor('the push delivered', () => r.hits.length >= 1, testTimeLeft(), 50)
    const result = await get(gw, `${location}/result`)
    expect(result.status).toBe(200)
    await result.arrayBuffer()
    expect([reportCalls(), r.hits.map((h) => h.status)]).toEqual([1, [204]])
  }, 120_000)
})
