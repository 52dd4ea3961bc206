import { expect, it } from 'vitest'
import { KEYS, SANDBOX_TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import { waitFor } from '../helpers/wait.js'
import { ADMIN_TOKEN, call, itLoggedNoSecret, useAttackGateway } from './attack-gateway.js'

// A report fill sent on one team's seat for its caller, joined by another team's report
// job; the caller leaves while the platform works, the platform answers 503, and the retry,
// now the job's, finds no idle seat of the job's team (its one seat held). The try sent was
// a platform call: it is counted, for the team whose seat it was sent on, as its
// platform-seconds are. Teams `all` and `growth` are each held to one call in flight.

const sg = useAttackGateway({
  yaml: SANDBOX_TEAMS_YAML.replace('    refresh: true\n  growth:', '    refresh: true\n    maxConcurrent: 1\n  growth:').replace('    advertisers: [101, 102]\n  writer:', '    advertisers: [101, 102]\n    maxConcurrent: 1\n  writer:'),
})
const PATH = '/api/v1/report/campaigns/get'
const REPORT = `${PATH}?advertiserId=101`
const BUSY = `${REPORT}&dateFrom=2026-05-01&dateTo=2026-05-07`
const SHARED = `${REPORT}&dateFrom=2026-06-01&dateTo=2026-06-07`

const sent = (from: string): number => sg.callerRequests().filter((r) => r.query?.includes(`dateFrom=${from}`) === true).length
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
const jobState = async (id: string): Promise<string> => ((await (await fetch(`${sg.url}/api/v1/jobs/${id}`, { headers: { 'x-api-key': KEYS.all } })).json()) as { state: string }).state

it("a shared fill's try, charged to its seat's team before a retry that found no idle seat, is a platform call of that team", async () => {
  const growthBefore = await metric('gateway_team_platform_calls_total', 'team="growth"')
  const growthSeconds = await platformSeconds('growth')
  const answers: Promise<{ status: number }>[] = []
  try {
    // `all` takes its one seat with a call the platform holds.
    sg.sandbox.setFailure({ kind: 'held', times: 1 })
    answers.push(call(sg, 'GET', BUSY, { key: KEYS.all }))
    await waitFor('the busy call held at the platform', () => sg.sandbox.concurrency().held === 1)
    sg.sandbox.setLatency(2000)
    sg.sandbox.setRouteFailure(PATH, { kind: 'status', status: 503, times: 1 })
    // growth's caller has the fill sent on its seat.
    const left = new AbortController()
    const growth = fetch(`${sg.url}${SHARED}`, { headers: { 'x-api-key': KEYS.growth }, signal: left.signal }).catch(() => 'left')
    await waitFor('the shared report sent', () => sent('2026-06-01') === 1)
    // all's report job of the same report joins the fill under way.
    const asked = await fetch(`${sg.url}${SHARED}`, { headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
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
