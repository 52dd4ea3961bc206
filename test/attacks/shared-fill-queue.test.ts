import { expect, it } from 'vitest'
import { KEYS, SANDBOX_TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import { waitFor } from '../helpers/wait.js'
import { call, itLoggedNoSecret, useAttackGateway } from './attack-gateway.js'

// A team that holds its own seats busy asks the reports another team reads first: the
// other team's reads join those fills. A fill waits for a seat of any of its callers'
// teams, so a team's burst holds back no read of another team that shares its report.
// Team `all` is held to one call in flight; growth reads advertiser 101 too.

const sg = useAttackGateway({ yaml: SANDBOX_TEAMS_YAML.replace('    refresh: true\n  growth:', '    refresh: true\n    maxConcurrent: 1\n  growth:') })
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

itLoggedNoSecret(sg)
