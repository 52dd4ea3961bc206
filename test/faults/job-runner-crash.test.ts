import { describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH, teamsYamlWith } from '../helpers/build-gateway.js'
import { useCleanups, useRedis, useSandbox } from '../helpers/fixtures.js'
import { spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// The replica running a report job is killed (SIGKILL) while its platform call is under
// way. Two gateway processes (dist/main.js) on one redis-server and the sandbox: the
// other replica takes the job over once its lease has run out, and runs it once: its
// platform call starts after the killed replica's fill lock expired, never beside a live
// one; the job ends done there, its result served by either replica, and an identical
// job asked afterwards costs no call.

const GATEWAY_SECRET = 'job-crash-gateway-secret-0123456789'
const YEAR = 'advertiserId=101&byDate=1&dateFrom=2025-01-01&dateTo=2025-12-31'
// A short lease and fill lock, so that the takeover comes within the test's seconds.
const YAML = teamsYamlWith({ jobs: { lease: '2s', poll: '200ms' }, cache: { lockTtl: '2s' } })

const redisCheck = redisAvailability('the job runner crash test')

interface Status {
  state: string
  startedAt: string | null
  error: unknown
}

describe.skipIf(!redisCheck.available)('a replica running a report job crashes (gateway processes, one Redis)', () => {
  const sandbox = useSandbox()
  const { server: redis } = useRedis()
  const cleanups = useCleanups()

  function start(): Promise<GatewayProcess> {
    return spawnGateway({ env: { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: redis.url, GATEWAY_SECRET }, yaml: YAML })
  }

  const get = (gw: GatewayProcess, path: string, headers: Record<string, string> = {}) => fetch(`${gw.url}${path}`, { headers: { 'x-api-key': KEYS.all, ...headers } })
  const status = async (gw: GatewayProcess, location: string) => (await (await get(gw, location)).json()) as Status
  const reportCalls = () => sandbox.requests.filter((r) => r.path === REPORT_PATH)

  it('SIGKILL to the runner: the other replica takes the job over after its lease and runs it once at the platform', async () => {
    const runner = await start()
    cleanups.push(() => runner.close(), () => sandbox.releaseHeld())
    sandbox.clearRequests()
    // The job's call stays at the platform until the runner is gone.
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    const asked = await get(runner, `${REPORT_PATH}?${YEAR}`, { prefer: 'respond-async' })
    expect(asked.status).toBe(202)
    const location = asked.headers.get('location') as string
    await waitFor('the job\'s call at the platform', () => reportCalls().length === 1, 10_000)

    // The other replica starts while the job runs on the first: it sees the job running.
    const other = await start()
    cleanups.push(() => other.close())
    const before = await status(other, location)
    expect(before.state).toBe('running')

    runner.kill('SIGKILL')
    const killedAt = (await runner.exited).at
    sandbox.releaseHeld()
    await waitFor('the job done on the other replica', async () => (await status(other, location)).state === 'done', 30_000, 50)
    const after = await status(other, location)
    // Started again by the other replica, after the killed one's lease ran out.
    expect(Date.parse(after.startedAt as string)).toBeGreaterThan(Date.parse(before.startedAt as string))
    expect(after.error).toBeNull()

    // Two calls in all: the killed run's, cut off, and the one run that ended it.
    const calls = reportCalls()
    expect(calls).toHaveLength(2)
    // The second began once the first runner was gone: never two runs of the job at once.
    expect((calls[1] as { at: number }).at).toBeGreaterThanOrEqual(killedAt)
    const id = location.split('/').at(-1) as string
    expect(calls.map((c) => c.headers['x-request-id'])).toEqual([`job-${id}`, `job-${id}`])
    const result = await get(other, `${location}/result`)
    expect(result.status).toBe(200)
    expect(result.headers.get('etag')).toBeTruthy()
    await result.arrayBuffer()

    // The report is in the cache now: an identical job is answered at once, without a call.
    const again = await get(other, `${REPORT_PATH}?${YEAR}`, { prefer: 'respond-async' })
    expect(again.status).toBe(200)
    expect(again.headers.get('x-cache')).toBe('HIT')
    await again.arrayBuffer()
    expect(reportCalls()).toHaveLength(2)
  }, 120_000)
})
