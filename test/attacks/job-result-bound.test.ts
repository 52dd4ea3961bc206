import { afterEach, describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH, teamsYamlWith } from '../helpers/build-gateway.js'
import { useRedis } from '../helpers/fixtures.js'
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

  const start = async (jobs: Record<string, unknown>): Promise<SandboxGateway> => {
    sg = await startSandboxGateway({ yaml: teamsYamlWith({ jobs: { perReplica: TWINS, ...jobs } }), env: { REDIS_URL: redis.server.url } })
    return sg
  }
  const ask = async (gw: SandboxGateway): Promise<string> => {
    const res = await fetch(`${gw.url}${REPORT_PATH}?${YEAR}`, { headers: { 'x-api-key': KEYS.all, ...ASYNC } })
    expect(res.status).toBe(202)
    return ((await res.json()) as { id: string }).id
  }
  const status = async (gw: SandboxGateway, id: string): Promise<Status> => (await (await fetch(`${gw.url}/api/v1/jobs/${id}`, { headers: { 'x-api-key': KEYS.all } })).json()) as Status
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
})
