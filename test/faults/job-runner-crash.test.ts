import { describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH, teamsYamlWith } from '../helpers/build-gateway.js'
import { useCleanups, useRedis, useSandbox } from '../helpers/fixtures.js'
import { spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { startsTimeout, testTimeLeft, waitFor } from '../helpers/wait.js'

// The replica running a report job is killed (SIGKILL), or stopped (SIGTERM), while its
// platform call is under way. Two gateway processes (dist/main.js) on one redis-server and
// the sandbox: the other replica takes the job over (once the killed one's lease has run
// out; at once from a stopped one, which hands it back when its shutdown's grace aborts the
// call) and runs it once more: its platform call starts after the first replica's ended,
// never beside a live one; the job ends done there, its result served, and an identical
// job asked afterwards costs no call.

const GATEWAY_SECRET = 'job-crash-gateway-secret-0123456789'
const YEAR = 'advertiserId=101&byDate=1&dateFrom=2025-01-01&dateTo=2025-12-31'
// SIGKILL: a short lease and fill lock, so that the takeover comes within the test's
// seconds. SIGTERM: a lease longer than the test waits (the job must come back at once),
// and a short drain and grace.
const KILL_YAML = teamsYamlWith({ jobs: { lease: '2s', poll: '200ms' }, cache: { lockTtl: '2s' } })
const STOP_YAML = teamsYamlWith({ jobs: { lease: '60s', poll: '200ms' }, cache: { lockTtl: '2s' }, shutdownDrain: '200ms', shutdownGrace: '500ms' })

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

  function start(yaml: string): Promise<GatewayProcess> {
    return spawnGateway({ env: { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: redis.url, GATEWAY_SECRET }, yaml })
  }

  const get = (gw: GatewayProcess, path: string, headers: Record<string, string> = {}) => fetch(`${gw.url}${path}`, { headers: { 'x-api-key': KEYS.all, ...headers } })
  const status = async (gw: GatewayProcess, location: string) => (await (await get(gw, location)).json()) as Status
  const reportCalls = () => sandbox.requests.filter((r) => r.path === REPORT_PATH)

  it.each([
    { signal: 'SIGKILL' as const, yaml: KILL_YAML, how: 'after its lease ran out' },
    { signal: 'SIGTERM' as const, yaml: STOP_YAML, how: 'handed back by the stopping replica' },
  ])('$signal to the runner: the other replica takes the job over ($how) and runs it once more at the platform', async ({ signal, yaml }) => {
    const runner = await start(yaml)
    cleanups.push(() => runner.close(), () => sandbox.releaseHeld())
    sandbox.clearRequests()
    // The job's call stays at the platform until the runner is gone.
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    const asked = await get(runner, `${REPORT_PATH}?${YEAR}`, { prefer: 'respond-async' })
    expect(asked.status).toBe(202)
    const location = asked.headers.get('location') as string
    await waitFor('the job\'s call at the platform', () => reportCalls().length === 1)

    // The other replica starts while the job runs on the first: it sees the job running.
    const other = await start(yaml)
    cleanups.push(() => other.close())
    const before = await status(other, location)
    expect(before.state).toBe('running')

    const signalledAt = Date.now()
    runner.kill(signal)
    // Killed, it is gone at its exit; stopped, its call is aborted at the end of its grace, before it exits.
    const stoppedAt = signal === 'SIGKILL' ? (await runner.exited).at : signalledAt
    await waitFor('the job done on the other replica', async () => (await status(other, location)).state === 'done', testTimeLeft(), 50)
    sandbox.releaseHeld()
    const after = await status(other, location)
    // Started again, by the other replica.
    expect(Date.parse(after.startedAt as string)).toBeGreaterThan(Date.parse(before.startedAt as string))
    expect(after.error).toBeNull()

    // Two calls in all: the first run's, cut off, and the one run that ended it.
    const calls = reportCalls()
    expect(calls).toHaveLength(2)
    // The second began once the first runner was gone: never two runs of the job at once.
    expect((calls[1] as { at: number }).at).toBeGreaterThanOrEqual(stoppedAt)
    const id = location.split('/').at(-1) as string
    expect(calls.map((c) => c.headers['x-request-id'])).toEqual([`job-${id}`, `job-${id}`])
    // The replica that took a killed runner's job over says so, naming the job and the runner it took it from.
    const takeovers = other.output().split('\n').filter((l) => l.includes('"msg":"report job taken over'))
    if (signal === 'SIGKILL') {
      expect(takeovers).toHaveLength(1)
      expect(JSON.parse(takeovers[0] as string)).toMatchObject({ level: 40, job: id, team: 'all', from: expect.any(String), runs: 2 })
    } else expect(takeovers).toEqual([])
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
  }, startsTimeout(2))
})
