import { expect, it } from 'vitest'
import { KEYS, SANDBOX_TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import { waitFor } from '../helpers/wait.js'
import { call, itLoggedNoSecret, useAttackGateway } from './attack-gateway.js'

// A report fill shared by two teams waits in both their queues; when each refuses it, each
// team's caller is answered with its own team's refusal, never the other's (which names
// that team and its ceiling). Team `all` is held to one call in flight and one waiting;
// growth reads advertiser 101 too, and is held to one call in flight.

const sg = useAttackGateway({
  yaml: `${SANDBOX_TEAMS_YAML.replace('    refresh: true\n  growth:', '    refresh: true\n    maxConcurrent: 1\n    queue: 1\n  growth:').replace('    advertisers: [101, 102]\n', '    advertisers: [101, 102]\n    maxConcurrent: 1\n')}platform:\n  queueTimeout: 2s\n`,
})
const REPORT = '/api/v1/report/campaigns/get'
const sentAt = (query: string): boolean => sg.callerRequests().some((r) => r.query?.includes(query) === true)
const queued = () => sg.gw.governors.views().reduce((n, g) => n + g.queued, 0)
const refusedFull = async () => /gateway_platform_refused_total\{[^}]*reason="team_queue_full"[^}]*\} [1-9]/.test((await sg.gw.admin.inject({ method: 'GET', url: '/metrics' })).body)

it('a shared fill refused by both its teams\' queues answers each team\'s caller with its own team\'s refusal', async () => {
  sg.sandbox.setFailure({ kind: 'held' })
  const answers: Promise<{ status: number; json: unknown }>[] = []
  let shared: Promise<{ status: number; json: unknown }>[] = []
  try {
    // Each team's one seat busy at the platform; all's one place in the queue taken.
    answers.push(call(sg, 'GET', `${REPORT}?advertiserId=101&dateFrom=2026-03-01&dateTo=2026-03-07`, { key: KEYS.all }))
    answers.push(call(sg, 'GET', `${REPORT}?advertiserId=102&dateFrom=2026-03-01&dateTo=2026-03-07`, { key: KEYS.growth }))
    await waitFor('both busy calls at the platform', () => sentAt('advertiserId=101&dateFrom=2026-03-01') && sentAt('advertiserId=102&dateFrom=2026-03-01'))
    answers.push(call(sg, 'GET', `${REPORT}?advertiserId=101&dateFrom=2026-03-08&dateTo=2026-03-14`, { key: KEYS.all }))
    await waitFor('all\'s queue full', () => queued() === 1)
    // growth asks the shared report first (its fill waits in growth's queue), then all joins it: all's queue refuses it at once.
    const growth = call(sg, 'GET', `${REPORT}?advertiserId=101&dateFrom=2026-04-01&dateTo=2026-04-07`, { key: KEYS.growth })
    await waitFor('growth\'s read of the shared report queued', () => queued() === 2)
    const all = call(sg, 'GET', `${REPORT}?advertiserId=101&dateFrom=2026-04-01&dateTo=2026-04-07`, { key: KEYS.all })
    shared = [growth, all]
    await waitFor('all\'s place refused', refusedFull)
    // growth's place ends at its queue timeout.
    await Promise.all(shared)
  } finally {
    sg.sandbox.setFailure({ kind: 'none' })
    sg.sandbox.releaseHeld()
  }
  await Promise.all(answers)
  const [growth, all] = await Promise.all(shared)
  expect(growth!.status).toBe(503)
  expect(JSON.stringify(growth!.json)).not.toContain('team all')
  expect(all!.status).toBe(503)
  expect(JSON.stringify(all!.json)).toContain('team all')
  expect(sentAt('dateFrom=2026-04-01')).toBe(false)
})

itLoggedNoSecret(sg)
