import { describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH, teamsYamlWith } from '../helpers/build-gateway.js'
import { useAttackGateway } from './attack-gateway.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'

// The cost and finality headers (docs/call-cost.md) read by a team that did not pay for a
// copy: every report answer carries them, a 304 and a job's result too, and they tell the
// asking team's own use, never the team whose call filled the copy.

const HEADERS = ['platform-usage', 'report-settled-through', 'report-provisional-days'] as const
const QUERY = 'advertiserId=101&byDate=1&dateFrom=2025-04-01&dateTo=2025-04-30'

function usage(res: Response): Record<string, number> {
  const header = res.headers.get('platform-usage') ?? ''
  return Object.fromEntries(header.split(', ').map((m) => m.split('=')).map(([k, v]) => [k, Number(v)]))
}

describe('cost and finality headers attacked', () => {
  const sg = useAttackGateway({ yaml: teamsYamlWith({ jobs: { perReplica: 1 } }) })
  const get = (path: string, key: string, headers: Record<string, string> = {}) => fetch(`${sg.url}${path}`, { headers: { 'x-api-key': key, ...headers } })

  it('every report answer carries them (MISS, HIT, 304, a job\'s result and its 304), and another team\'s read tells its own use only', async () => {
    const miss = await get(`${REPORT_PATH}?${QUERY}`, KEYS.all)
    expect(miss.headers.get('x-cache')).toBe('MISS')
    const paid = usage(miss)
    expect(paid.fill).toBeGreaterThan(0)
    expect(paid.day).toBeGreaterThan(0)

    // `growth` reads the copy `all` paid for: it costs growth nothing and tells nothing of `all`.
    const hit = await get(`${REPORT_PATH}?${QUERY}`, KEYS.growth)
    expect(hit.headers.get('x-cache')).toBe('HIT')
    const etag = hit.headers.get('etag') as string
    const notModified = await get(`${REPORT_PATH}?${QUERY}`, KEYS.growth, { 'if-none-match': etag })
    expect(notModified.status).toBe(304)
    for (const res of [hit, notModified]) {
      for (const h of HEADERS) expect(res.headers.get(h), h).not.toBeNull()
      expect(usage(res)).toMatchObject({ fill: 0, minute: 0, day: 0, share: 0 })
      expect(res.headers.get('report-settled-through')).toBe(miss.headers.get('report-settled-through'))
      expect(res.headers.get('report-provisional-days')).toBe(miss.headers.get('report-provisional-days'))
    }

    // A job's result read by `growth`: its own fill, its own day.
    const asked = await get(`${REPORT_PATH}?advertiserId=102&dateFrom=2025-05-01&dateTo=2025-05-31`, KEYS.growth, { prefer: 'respond-async' })
    expect(asked.status).toBe(202)
    const { id } = (await asked.json()) as { id: string }
    await waitFor('the job done', async () => ((await (await get(`/api/v1/jobs/${id}`, KEYS.growth)).json()) as { state: string }).state === 'done', testTimeLeft(), 20)
    const result = await get(`/api/v1/jobs/${id}/result`, KEYS.growth)
    expect(result.status).toBe(200)
    const again = await get(`/api/v1/jobs/${id}/result`, KEYS.growth, { 'if-none-match': result.headers.get('etag') as string })
    expect(again.status).toBe(304)
    for (const res of [result, again]) {
      for (const h of HEADERS) expect(res.headers.get(h), h).not.toBeNull()
      expect(usage(res).fill).toBeGreaterThan(0)
      // Its day is its job's call alone: none of `all`'s.
      expect(usage(res).day).toBeLessThanOrEqual((usage(res).fill ?? 0) + 0.002)
    }
  })
})
