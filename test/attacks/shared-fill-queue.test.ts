import { expect, it } from 'vitest'
import { KEYS, SANDBOX_TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import { waitFor } from '../helpers/wait.js'
import { ADMIN_TOKEN, call, itLoggedNoSecret, useAttackGateway } from './attack-gateway.js'

// A team that holds its own seats busy asks the reports another team reads first: the
// other team's reads join those fills. A fill waits for a seat of any of its callers'
// teams, so a team's burst holds back no read of another team that shares its report.
// Teams `all` and `growth` are each held to one call in flight; growth reads advertiser 101 too.

const sg = useAttackGateway({
  yaml: SANDBOX_TEAMS_YAML.replace('    refresh: true\n  growth:', '    refresh: true\n    maxConcurrent: 1\n  growth:').replace('    advertisers: [101, 102]\n  writer:', '    advertisers: [101, 102]\n    maxConcurrent: 1\n  writer:'),
})
const REPORT = '/api/v1/report/campaigns/get?advertiserId=101'
const BUSY = `${REPORT}&dateFrom=2026-03-01&dateTo=2026-03-07`
const SHARED = `${REPORT}&dateFrom=2026-04-01&dateTo=2026-04-07`

const sentAt = (query: string): boolean => sg.callerRequests().some((r) => r.query?.includes(query) === true)

it('a report another team asked first, while that team\'s seats are busy, is sent on a seat of the team that joins it', async () => {
  sg.sandbox.setFailure({ kind: 'held' })
  const answers: Promise<{ status: number }>[] = []
  try {
    // `all` takes its one seat with a call the platform holds, then asks the shared report: it waits in all's queue.
    answers.push(call(sg, 'GET', BUSY, { key: KEYS.all }))
    await waitFor('the busy call at the platform', () => sentAt('dateFrom=2026-03-01'))
    answers.push(call(sg, 'GET', SHARED, { key: KEYS.all }))
    await waitFor('all\'s read of the shared report queued', () => sg.gw.governors.views().some((g) => g.queued > 0))
    // growth, whose seats are all free, reads the same report: the fill starts on growth's seat.
    answers.push(call(sg, 'GET', SHARED, { key: KEYS.growth }))
    await waitFor('the shared report sent while all\'s call is still held', () => sentAt('dateFrom=2026-04-01'))
    expect(sentAt('dateFrom=2026-03-01')).toBe(true)
  } finally {
    sg.sandbox.setFailure({ kind: 'none' })
    sg.sandbox.releaseHeld()
  }
  expect((await Promise.all(answers)).map((a) => a.status)).toEqual([200, 200, 200])
  // One platform call for the shared report, though both teams asked it, counted for growth,
  // whose seat it was sent on (all's call is its busy one alone).
  expect(sg.callerRequests().filter((r) => r.query?.includes('dateFrom=2026-04-01'))).toHaveLength(1)
  const metrics = (await sg.gw.admin.inject({ method: 'GET', url: '/metrics' })).body
  const teamCalls = (team: string) => Number(new RegExp(`gateway_team_platform_calls_total\\{team="${team}"\\} (\\d+)`).exec(metrics)?.[1] ?? 0)
  expect([teamCalls('all'), teamCalls('growth')]).toEqual([1, 1])
})

it('a read of another team that joins the fill before the router, the fill sent on its seat and charged to it, counts a platform call and no cache hit', async () => {
  const busy = `${REPORT}&dateFrom=2026-05-01&dateTo=2026-05-07`
  const shared = `${REPORT}&dateFrom=2026-06-01&dateTo=2026-06-07`
  const sharedCalls = () => sg.callerRequests().filter((r) => r.query?.includes('dateFrom=2026-06-01')).length
  const usage = async () => {
    const res = await sg.gw.admin.inject({ method: 'GET', url: '/admin/usage?team=growth', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    const rows = res.json<{ usage: { cacheHits: number; platformCalls: number }[] }>().usage
    return { cacheHits: rows.reduce((n, r) => n + r.cacheHits, 0), platformCalls: rows.reduce((n, r) => n + r.platformCalls, 0) }
  }
  // growth's first read of the report goes through the router; its next ones are decided before it.
  expect((await call(sg, 'GET', shared, { key: KEYS.growth })).status).toBe(200)
  await sg.gw.reports.purgeAll()
  sg.sandbox.setFailure({ kind: 'held' })
  const answers: Promise<{ status: number }>[] = []
  let joined: Promise<Response> | undefined
  let before = { cacheHits: 0, platformCalls: 0 }
  try {
    answers.push(call(sg, 'GET', busy, { key: KEYS.all }))
    await waitFor('the busy call at the platform', () => sentAt('dateFrom=2026-05-01'))
    answers.push(call(sg, 'GET', shared, { key: KEYS.all }))
    await waitFor('all\'s read of the shared report queued', () => sg.gw.governors.views().some((g) => g.queued > 0))
    before = await usage()
    // growth joins all's cold fill before the router; the fill is sent on growth's seat, charged to this read.
    joined = fetch(`${sg.url}${shared}`, { headers: { 'x-api-key': KEYS.growth } })
    await waitFor('the shared report sent on growth\'s seat', () => sharedCalls() === 2)
  } finally {
    sg.sandbox.setFailure({ kind: 'none' })
    sg.sandbox.releaseHeld()
  }
  const ofGrowth = await joined!
  expect([(await Promise.all(answers)).map((a) => a.status), ofGrowth.status, ofGrowth.headers.get('x-cache')]).toEqual([[200, 200], 200, 'MISS'])
  await ofGrowth.arrayBuffer()
  // Its answer made the call it was charged: no platform call saved.
  expect(await usage()).toEqual({ cacheHits: before.cacheHits, platformCalls: before.platformCalls + 1 })
})

it('a fill waiting in two teams\' queues takes a place in each: gateway_platform_waiting_calls counts it for both teams, gateway_platform_queued_calls twice, as their help says', async () => {
  const shared = `${REPORT}&dateFrom=2026-07-01&dateTo=2026-07-07`
  const metrics = async () => (await sg.gw.admin.inject({ method: 'GET', url: '/metrics' })).body
  const gauge = (text: string, name: string, labels: string) => Number(new RegExp(`${name}\\{${labels}\\} (\\d+)`).exec(text)?.[1] ?? 0)
  sg.sandbox.setFailure({ kind: 'held' })
  const answers: Promise<{ status: number }>[] = []
  let text = ''
  try {
    // Each team's one seat is taken by a call the platform holds; then both ask the same report.
    answers.push(call(sg, 'GET', `${REPORT}&dateFrom=2026-08-01&dateTo=2026-08-07`, { key: KEYS.all }))
    answers.push(call(sg, 'GET', `${REPORT}&dateFrom=2026-09-01&dateTo=2026-09-07`, { key: KEYS.growth }))
    await waitFor('both teams\' calls at the platform', () => sentAt('dateFrom=2026-08-01') && sentAt('dateFrom=2026-09-01'))
    answers.push(call(sg, 'GET', shared, { key: KEYS.all }))
    answers.push(call(sg, 'GET', shared, { key: KEYS.growth }))
    await waitFor('the shared fill waiting in both queues', async () => {
      text = await metrics()
      return gauge(text, 'gateway_platform_waiting_calls', 'credential="default",team="growth"') === 1
    })
  } finally {
    sg.sandbox.setFailure({ kind: 'none' })
    sg.sandbox.releaseHeld()
  }
  expect((await Promise.all(answers)).map((a) => a.status)).toEqual([200, 200, 200, 200])
  // One call, waiting in both queues.
  expect(sg.callerRequests().filter((r) => r.query?.includes('dateFrom=2026-07-01'))).toHaveLength(1)
  expect([gauge(text, 'gateway_platform_waiting_calls', 'credential="default",team="all"'), gauge(text, 'gateway_platform_waiting_calls', 'credential="default",team="growth"'), gauge(text, 'gateway_platform_queued_calls', 'credential="default"')]).toEqual([1, 1, 2])
  expect(text).toContain('# HELP gateway_platform_waiting_calls Places in the queue of each team on this replica taken by platform calls waiting for a seat, by credential and team: a report fill shared by callers of several teams waits in the queue of each, and counts for each')
  expect(text).toContain('# HELP gateway_platform_queued_calls Places in the queues of a credential on this replica taken by platform calls waiting for a seat: a report fill shared by callers of several teams takes one in the queue of each (the sum of gateway_platform_waiting_calls over teams)')
})

itLoggedNoSecret(sg)
