import { describe, expect, it } from 'vitest'
import { KEYS } from '../helpers/sandbox-gateway.js'
import { call, direct, itLoggedNoSecret, useAttackGateway } from './attack-gateway.js'

// A POST report names its account only through the campaigns it reads. The platform's
// report form reads `campaignIds` (the body's over the query's) and no account field; a
// platform that reports on the caller's campaigns when none are named (the sandbox's
// reportAllCampaigns) reports on every child account of the shared token then. The growth
// team is limited to 101 and 102; 103 is a sibling under the same parent.

const sg = useAttackGateway({ sandbox: { reportAllCampaigns: true } })
const REPORT = '/api/v1/report/campaigns/get'
const DATES = { dateFrom: '2026-01-01', dateTo: '2026-01-07', byCampaign: true }
const SIBLING = 103

const accountsOf = (rows: unknown): number[] => [...new Set((rows as { campaignId: number }[]).map((r) => Math.floor(r.campaignId / 1000)))].sort()

describe('a POST report without campaigns (the sandbox models a platform that takes the token\'s)', () => {
  it('reports on every account of the token, whatever account field the body names', async () => {
    for (const named of [{}, { userId: 101 }, { advertiserId: 101 }, { userId: 101, advertiserId: 101 }]) {
      const res = await direct(sg, 'POST', REPORT, { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...named, ...DATES }) })
      expect(res.status).toBe(200)
      expect(accountsOf(res.json.data)).toContain(SIBLING)
    }
  })
})

describe('a scoped team\'s POST report names the campaigns the platform reads', () => {
  it.each([
    ['userId alone', { userId: 101 }],
    ['userId and advertiserId', { userId: 101, advertiserId: 101 }],
    ['userId beside campaignIds that are no list', { userId: 101, campaignIds: {} }],
  ])('%s, no campaignIds: refused, nothing reaches the platform', async (_name, named) => {
    const res = await call(sg, 'POST', REPORT, { key: KEYS.growth, json: { ...named, ...DATES } })
    expect([400, 403]).toContain(res.status)
    expect(JSON.stringify(res.json)).not.toContain(`${SIBLING}001`)
    expect(sg.callerRequests()).toEqual([])
  })

  it('as a job too: 403, and nothing reaches the platform', async () => {
    const res = await call(sg, 'POST', REPORT, { key: KEYS.growth, json: { userId: 101, ...DATES }, headers: { prefer: 'respond-async' } })
    expect(res.status).toBe(403)
    expect(res.json.code).toBe('GW_FORBIDDEN')
    expect(sg.callerRequests()).toEqual([])
  })

  it('its own campaigns in the body are read; in the query alone they place nothing', async () => {
    const inBody = await call(sg, 'POST', REPORT, { key: KEYS.growth, json: { userId: 101, campaignIds: [101001], ...DATES } })
    expect(inBody.status).toBe(200)
    expect(accountsOf(inBody.json.data)).toEqual([101])
    sg.sandbox.clearRequests()
    const inQuery = await call(sg, 'POST', `${REPORT}?campaignIds[]=102001`, { key: KEYS.growth, json: { userId: 101, ...DATES } })
    expect(inQuery.status).toBe(403)
    expect(inQuery.json.message).toContain('campaignIds')
    expect(sg.callerRequests()).toEqual([])
  })
})

itLoggedNoSecret(sg)
