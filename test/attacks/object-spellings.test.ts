import { describe, expect, it } from 'vitest'
import { KEYS } from '../helpers/sandbox-gateway.js'
import { call, itLoggedNoSecret, newCampaign, REPORT_DATES, useAttackGateway } from './attack-gateway.js'

// A campaign or creative set field in a spelling the platform does not document:
// `campaign_ids`, `CampaignId`, `creative_set_ids`, ... The platform reads `campaignIds`
// (`campaignId`) and `creativeSetIds` (`creativeSetId`); a controller that reads another
// spelling (Laravel's `$request->campaign_ids`, as account-spellings.test.ts has it for
// `user_id`) would report on or attach the campaign or set it names, which the gateway's
// scope check does not look at. The sandbox reads none of them: these tests assert the
// gateway's refusal. The writer team is limited to 101 (campaign 101001, set 1010011);
// 102001 and 1020011 are 102's.

const sg = useAttackGateway()
const FORM = { 'content-type': 'application/x-www-form-urlencoded' }
const POST_REPORT = { dateFrom: '2026-01-01', dateTo: '2026-01-07', byDate: false, byCampaign: true }

describe('a scoped team\'s campaign or creative set field in another spelling is 400, naming the spelling the platform reads', () => {
  it.each([
    ['campaign_ids beside a POST report\'s campaignIds', 'POST', '/api/v1/report/campaigns/get', { json: { ...POST_REPORT, campaignIds: [101001], campaign_ids: [102001] } }, 'campaign_ids', 'campaignIds'],
    ['CampaignIds nested in a POST report', 'POST', '/api/v1/report/campaigns/get', { json: { ...POST_REPORT, campaignIds: [101001], filter: { CampaignIds: [102001] } } }, 'CampaignIds', 'campaignIds'],
    ['campaign_ids[] in a report\'s query', 'GET', `/api/v1/report/campaigns/get?advertiserId=101&campaign_ids[]=102001&${REPORT_DATES}`, {}, 'campaign_ids[]', 'campaignIds'],
    ['filter[campaign-id] in a report\'s query', 'GET', `/api/v1/report/campaigns/get?advertiserId=101&filter[campaign-id]=102001&${REPORT_DATES}`, {}, 'filter[campaign-id]', 'campaignId'],
    // PHP stores `campaign.id` as `campaign_id`.
    ['campaign.id in a form', 'POST', '/api/v1/campaign/get', { body: 'userId=101&campaign.id=102001', headers: FORM }, 'campaign.id', 'campaignId'],
    ['campaign_id in a delete\'s query', 'DELETE', '/api/v1/campaign/banner/delete/101003?userId=101&campaign_id=102001', {}, 'campaign_id', 'campaignId'],
    ['creative_set_ids beside banner/create\'s creativeSetIds', 'POST', '/api/v1/campaign/banner/create', { json: { ...newCampaign(101), creative_set_ids: [1020011] } }, 'creative_set_ids', 'creativeSetIds'],
    ['CREATIVESETID in the query of banner/create', 'POST', '/api/v1/campaign/banner/create?CREATIVESETID=1020011', { json: newCampaign(101) }, 'CREATIVESETID', 'creativeSetId'],
  ])('%s', async (_name, method, target, opts, field, reads) => {
    const res = await call(sg, method, target, { key: KEYS.writer, ...opts })
    expect(res.status).toBe(400)
    expect(res.json.code).toBe('GW_BAD_REQUEST')
    expect(res.json.message).toContain(`${field}: the platform reads`)
    expect(res.json.message).toContain(`from ${reads}; send it so`)
    expect(sg.callerRequests()).toEqual([])
  })

  it('a report asked as a job is refused the same way', async () => {
    const res = await call(sg, 'GET', `/api/v1/report/campaigns/get?advertiserId=101&campaign_ids[]=102001&${REPORT_DATES}`, { key: KEYS.growth, headers: { prefer: 'respond-async' } })
    expect(res.status).toBe(400)
    expect(res.json.message).toContain('campaign_ids[]: the platform reads campaigns from campaignIds; send it so')
    expect(sg.callerRequests()).toEqual([])
  })
})

describe('unchanged', () => {
  it('a team of every account sends other spellings on as they come', async () => {
    const res = await call(sg, 'POST', '/api/v1/report/campaigns/get', { key: KEYS.all, json: { ...POST_REPORT, dateTo: '2026-01-02', campaignIds: [101001], campaign_ids: [102001] } })
    expect(res.status).toBe(200)
    expect(sg.callerRequests().map((r) => JSON.parse(r.body) as unknown)).toEqual([expect.objectContaining({ campaign_ids: [102001] })])
  })

  it('a scoped team\'s own campaign passes under the platform\'s spelling; a field that only contains one\'s name is not one', async () => {
    const own = await call(sg, 'POST', '/api/v1/report/campaigns/get', { key: KEYS.writer, json: { ...POST_REPORT, dateTo: '2026-01-03', campaignIds: [101001] } })
    expect(own.status, JSON.stringify(own.json)).toBe(200)
    const hint = await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.writer, json: { userId: 101, campaignIdsHint: 1, creativeSet: 'x' } })
    expect(hint.status, JSON.stringify(hint.json)).toBe(200)
  })
})

itLoggedNoSecret(sg)
