import { expect, it } from 'vitest'
import { KEYS, SANDBOX_TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import { waitFor } from '../helpers/wait.js'
import { ADMIN_TOKEN, call, itLoggedNoSecret, useAttackGateway } from '../attacks/attack-gateway.js'

// A report fill two teams wait on, sent on one team's seat, answered 503 after that team's
// caller left: the retry is made for the team still there, on its seat; each try's
// platform-seconds are those of the team whose seat it was sent on.
// Teams `all` and `growth` are each held to one call in flight; growth reads advertiser 101 too.

const sg = useAttackGateway({
  yaml: SANDBOX_TEAMS_YAML.replace('    refresh: true\n  growth:', '    refresh: true\n    maxConcurrent: 1\n  growth:').replace('    advertisers: [101, 102]\n  writer:', '    advertisers: [101, 102]\n    maxConcurrent: 1\n  writer:'),
})
const PATH = '/api/v1/report/campaigns/get'
const REPORT = `${PATH}?advertiserId=101`
const BUSY = `${REPORT}&dateFrom=2026-03-01&dateTo=2026-03-07`
const SHARED = `${REPORT}&dateFrom=2026-04-01&dateTo=2026-04-07`

const sent = (from: string): number => sg.callerRequests().filter((r) => r.query?.includes(`dateFrom=${from}`) === true).length
/** The team's platform-seconds in /admin/usage (in memory: no Redis, no flush to wait for). */
async function platformSeconds(team: string): Promise<number> {
  const res = await sg.gw.admin.inject({ method: 'GET', url: `/admin/usage?team=${team}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  return res.json<{ usage: { platformSeconds: number }[] }>().usage.reduce((n, r) => n + r.platformSeconds, 0)
}
async function metric(name: string, label = ''): Promise<number> {
  const body = (await sg.gw.admin.inject({ method: 'GET', url: '/metrics' })).body
  let n = 0
  for (const line of body.split('\n')) if (line.startsWith(`${name}{`) && line.includes(label)) n += Number(line.split(' ').at(-1))
  return n
}

it("a shared fill's retry after its seat's team left waits for a seat of the team still there, and its try on the first team's seat is that team's platform-seconds", async () => {
  const growthBefore = await metric('gateway_team_platform_calls_total', 'team="growth"')
  const allBefore = await metric('gateway_team_platform_calls_total', 'team="all"')
  const retriesBefore = await metric('gateway_platform_retries_total')
  const growthSeconds = await platformSeconds('growth')
  const answers: Promise<{ status: number }>[] = []
  try {
    // `all` takes its one seat with a call the platform holds, then asks the shared report: it waits in all's queue.
    sg.sandbox.setFailure({ kind: 'held', times: 1 })
    answers.push(call(sg, 'GET', BUSY, { key: KEYS.all }))
    await waitFor('the busy call held at the platform', () => sg.sandbox.concurrency().held === 1)
    sg.sandbox.setLatency(600)
    sg.sandbox.setRouteFailure(PATH, { kind: 'status', status: 503, times: 1 })
    answers.push(call(sg, 'GET', SHARED, { key: KEYS.all }))
    await waitFor("all's read of the shared report queued", () => sg.gw.governors.views().some((g) => g.queued > 0))
    // growth joins: the fill is sent on growth's seat; growth's caller leaves while the platform works on it.
    const left = new AbortController()
    const growth = fetch(`${sg.url}${SHARED}`, { headers: { 'x-api-key': KEYS.growth }, signal: left.signal }).catch(() => 'left')
    await waitFor('the shared report sent', () => sent('2026-04-01') === 1)
    left.abort()
    expect(await growth).toBe('left')
    await waitFor('the 503 retried', async () => (await metric('gateway_platform_retries_total')) > retriesBefore)
    await waitFor('the retry sent or queued', () => sent('2026-04-01') === 2 || sg.gw.governors.views().some((g) => g.queued > 0))
    // all's seat is still held by its busy call: the retry is all's, and waits for it.
    expect(sent('2026-04-01')).toBe(1)
  } finally {
    sg.sandbox.setLatency(0)
    sg.sandbox.clearRouteFailures()
    sg.sandbox.setFailure({ kind: 'none' })
    sg.sandbox.releaseHeld()
  }
  expect((await Promise.all(answers)).map((a) => a.status)).toEqual([200, 200])
  expect(sent('2026-04-01')).toBe(2)
  // The fill is one platform call, counted for the team whose seat its last try took (all: its busy call and the fill).
  expect([(await metric('gateway_team_platform_calls_total', 'team="growth"')) - growthBefore, (await metric('gateway_team_platform_calls_total', 'team="all"')) - allBefore]).toEqual([0, 2])
  // The try sent on growth's seat held the platform 600 ms and more for growth's caller: growth's platform-seconds, not all's.
  expect((await platformSeconds('growth')) - growthSeconds).toBeGreaterThanOrEqual(0.6)
})

// The same fill joined by all's report job instead of its caller: growth's caller leaves while
// the platform works, the platform answers 503, and the retry, now the job's, finds no idle
// seat of all's (its one seat held). The try sent was a platform call: it is counted, for the
// team whose seat it was sent on, as its platform-seconds are.
const BUSY_JOB = `${REPORT}&dateFrom=2026-05-01&dateTo=2026-05-07`
const SHARED_JOB = `${REPORT}&dateFrom=2026-06-01&dateTo=2026-06-07`
const jobState = async (id: string): Promise<string> => ((await (await fetch(`${sg.url}/api/v1/jobs/${id}`, { headers: { 'x-api-key': KEYS.all } })).json()) as { state: string }).state

it("a shared fill's try, charged to its seat's team before a retry that found no idle seat, is a platform call of that team", async () => {
  const growthBefore = await metric('gateway_team_platform_calls_total', 'team="growth"')
  const growthSeconds = await platformSeconds('growth')
  const answers: Promise<{ status: number }>[] = []
  try {
    // `all` takes its one seat with a call the platform holds.
    sg.sandbox.setFailure({ kind: 'held', times: 1 })
    answers.push(call(sg, 'GET', BUSY_JOB, { key: KEYS.all }))
    await waitFor('the busy call held at the platform', () => sg.sandbox.concurrency().held === 1)
    sg.sandbox.setLatency(2000)
    sg.sandbox.setRouteFailure(PATH, { kind: 'status', status: 503, times: 1 })
    // growth's caller has the fill sent on its seat.
    const left = new AbortController()
    const growth = fetch(`${sg.url}${SHARED_JOB}`, { headers: { 'x-api-key': KEYS.growth }, signal: left.signal }).catch(() => 'left')
    await waitFor('the shared report sent', () => sent('2026-06-01') === 1)
    // all's report job of the same report joins the fill under way.
    const asked = await fetch(`${sg.url}${SHARED_JOB}`, { headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
    expect(asked.status).toBe(202)
    const { id } = (await asked.json()) as { id: string }
    await waitFor('the job running', async () => (await jobState(id)) === 'running')
    left.abort()
    expect(await growth).toBe('left')
    // The retry is the job's: all's seat is held, so it finds none idle and the job goes back to its queue.
    await waitFor("growth's try charged", async () => (await platformSeconds('growth')) - growthSeconds >= 2)
    await waitFor('the job given back', async () => (await jobState(id)) !== 'running')
    expect(sent('2026-06-01')).toBe(1)
    // On main: growth 0 (the try's platform-seconds growth's, its call no team's).
    expect((await metric('gateway_team_platform_calls_total', 'team="growth"')) - growthBefore).toBe(1)
  } finally {
    sg.sandbox.setLatency(0)
    sg.sandbox.clearRouteFailures()
    sg.sandbox.setFailure({ kind: 'none' })
    sg.sandbox.releaseHeld()
  }
  expect((await Promise.all(answers)).map((a) => a.status)).toEqual([200])
})

itLoggedNoSecret(sg)
