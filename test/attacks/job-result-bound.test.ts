import { afterEach, describe, expect, it } from 'vitest'
import { buildGateway, closeAfterTest, KEYS, listen, REPORT_PATH, teamsYamlWith, testConfig } from '../helpers/build-gateway.js'
import { useRedis } from '../helpers/fixtures.js'
import { startSandbox, type Sandbox } from '../../src/sandbox/sandbox.js'
import { startSandboxGateway, type SandboxGateway } from '../helpers/sandbox-gateway.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'

// A team's kept job results are bounded (jobs.resultBytesPerTeam, its part of
// jobs.resultsRoom): the bound is what keeps one team's results from filling the Redis
// every team's jobs end in. A team that asks one report as several jobs at once has them
// join one platform call and end together: each end must see the results the others kept.

const ASYNC = { prefer: 'respond-async' }
const YEAR = 'advertiserId=101&byDate=1&byCampaign=1&dateFrom=2025-01-01&dateTo=2025-12-31'
const TWINS = 4

interface Status {
  state: string
  error: { code: string; message: string } | null
}

describe('a team\'s job results ending together', () => {
  const redis = useRedis()
  let sg: SandboxGateway | undefined
  afterEach(async () => {
    sg?.sandbox.releaseHeld()
    await sg?.close()
    sg = undefined
  })

  const replicas: { gw: Awaited<ReturnType<typeof listen>> }[] = []
  let platform: Sandbox | undefined
  afterEach(async () => {
    platform?.releaseHeld()
    for (const r of replicas.splice(0)) await closeAfterTest(r.gw)
    await platform?.close()
    platform = undefined
  })

  const start = async (jobs: Record<string, unknown>): Promise<SandboxGateway> => {
    sg = await startSandboxGateway({ yaml: teamsYamlWith({ jobs: { perReplica: TWINS, ...jobs } }), env: { REDIS_URL: redis.server.url } })
    return sg
  }
  const ask = (gw: SandboxGateway): Promise<string> => askOf(gw.url, YEAR)
  const askOf = async (url: string, query: string): Promise<string> => {
    const res = await fetch(`${url}${REPORT_PATH}?${query}`, { headers: { 'x-api-key': KEYS.all, ...ASYNC } })
    expect(res.status).toBe(202)
    return ((await res.json()) as { id: string }).id
  }
  const statusAt = async (url: string, id: string): Promise<Status> => (await (await fetch(`${url}/api/v1/jobs/${id}`, { headers: { 'x-api-key': KEYS.all } })).json()) as Status
  const status = (gw: SandboxGateway, id: string): Promise<Status> => statusAt(gw.url, id)
  const ended = (gw: SandboxGateway, ids: string[]) => waitFor('the jobs ended', async () => (await Promise.all(ids.map((id) => status(gw, id)))).every((s) => s.state === 'done' || s.state === 'failed'), testTimeLeft(), 20)

  it('keep no more than the team\'s bound: of identical jobs whose one result fits it, one is done, the rest fail 413 GW_JOB_RESULT_TOO_LARGE', async () => {
    // One result's stored size, as the 413 of a bound of 1 byte names it.
    const measure = await start({ resultBytesPerTeam: 1 })
    const probe = await ask(measure)
    await ended(measure, [probe])
    const bytes = Number(/would take (\d+) bytes/.exec((await status(measure, probe)).error?.message ?? '')?.[1])
    expect(bytes).toBeGreaterThan(1000)
    await measure.close()
    sg = undefined
    await redis.client.flushall()

    // Room for one result and a half: a second would pass the bound.
    const gw = await start({ resultBytesPerTeam: Math.floor(bytes * 1.5) })
    gw.sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    const ids: string[] = []
    for (let i = 0; i < TWINS; i++) ids.push(await ask(gw))
    await waitFor('every twin running', async () => (await Promise.all(ids.map((id) => status(gw, id)))).every((s) => s.state === 'running'), testTimeLeft(), 20)
    gw.sandbox.releaseHeld()
    await ended(gw, ids)
    const states = await Promise.all(ids.map((id) => status(gw, id)))
    expect(gw.callerRequests().filter((r) => r.path === REPORT_PATH)).toHaveLength(1)
    expect(states.filter((s) => s.state === 'done')).toHaveLength(1)
    expect(states.filter((s) => s.error?.code === 'GW_JOB_RESULT_TOO_LARGE')).toHaveLength(TWINS - 1)
  })

  it('keep no more than the team\'s bound when each of three replicas ends one at the same instant: one done, two 413', async () => {
    // Three reports of a year each, of one size near enough: one result's stored size each,
    // as the 413 of a bound of 1 byte names it.
    const years = ['2021', '2022', '2023'].map((y) => `advertiserId=101&byDate=1&byCampaign=1&dateFrom=${y}-01-01&dateTo=${y}-12-31`)
    const measure = await start({ resultBytesPerTeam: 1 })
    const bytes: number[] = []
    for (const query of years) {
      const probe = await askOf(measure.url, query)
      await waitFor('the probe ended', async () => (await statusAt(measure.url, probe)).state === 'failed', testTimeLeft(), 20)
      bytes.push(Number(/would take (\d+) bytes/.exec((await statusAt(measure.url, probe)).error?.message ?? '')?.[1]))
    }
    await measure.close()
    sg = undefined
    await redis.client.flushall()
    // Room for one result of any of them, never for two.
    const bound = Math.floor(Math.min(...bytes) * 1.5)
    expect(Math.max(...bytes)).toBeLessThan(bound)

    // One platform, three replicas of one job slot each: each runs one of the three jobs,
    // whose calls the platform holds and answers together.
    platform = await startSandbox()
    platform.setRouteFailure(REPORT_PATH, { kind: 'held', times: years.length })
    const yaml = teamsYamlWith({ jobs: { perReplica: 1, resultBytesPerTeam: bound } })
    for (let i = 0; i < years.length; i++) {
      replicas.push({ gw: await listen(await buildGateway(testConfig({ PLATFORM_BASE_URL: platform.url, PLATFORM_TOKEN: platform.issueToken(), REDIS_URL: redis.server.url }, yaml))) })
    }
    const urls = replicas.map((r) => r.gw.url)
    const ids: string[] = []
    for (let i = 0; i < years.length; i++) ids.push(await askOf(urls[i] as string, years[i] as string))
    await waitFor('each job running', async () => (await Promise.all(ids.map((id) => statusAt(urls[0] as string, id)))).every((s) => s.state === 'running'), testTimeLeft(), 20)
    await waitFor('the platform holding the three calls', async () => platform?.requests.filter((r) => r.path === REPORT_PATH).length === years.length, testTimeLeft(), 20)
    platform.releaseHeld()
    await waitFor('the jobs ended', async () => (await Promise.all(ids.map((id) => statusAt(urls[0] as string, id)))).every((s) => s.state === 'done' || s.state === 'failed'), testTimeLeft(), 20)
    const states = await Promise.all(ids.map((id) => statusAt(urls[0] as string, id)))
    expect(states.filter((s) => s.state === 'done')).toHaveLength(1)
    expect(states.filter((s) => s.error?.code === 'GW_JOB_RESULT_TOO_LARGE')).toHaveLength(years.length - 1)
  })
})
