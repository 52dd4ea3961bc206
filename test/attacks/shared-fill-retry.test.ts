import { expect, it } from 'vitest'
import { KEYS, SANDBOX_TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import { waitFor } from '../helpers/wait.js'
import { ADMIN_TOKEN, call, itLoggedNoSecret, useAttackGateway } from './attack-gateway.js'

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

itLoggedNoSecret(sg)
