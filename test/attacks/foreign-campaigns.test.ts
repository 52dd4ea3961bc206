import { describe, expect, it } from 'vitest'
import { KEYS } from '../helpers/sandbox-gateway.js'
import { call, direct, itLoggedNoSecret, newCampaign, REPORT_DATES, useAttackGateway } from './attack-gateway.js'

// Campaign ids of another advertiser. A campaign id does not
// say whose it is, and the platform reads campaigns by id for any child of the token's
// parent: every id a scoped team names must be one of its advertisers' campaigns.
// The writer team is limited to 101 (and may write); 102 is a sibling under the same parent.

const sg = useAttackGateway()
const DATES = { dateFrom: '2026-01-01', dateTo: '2026-01-07' }

async function exists(id: number): Promise<boolean> {
  const owner = Math.floor(id / 1000)
  const listed = await direct(sg, 'POST', '/api/v1/campaign/get?per_page=500', { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ userId: owner }) })
  sg.sandbox.clearRequests()
  return (listed.json.data as { id: number }[]).some((c) => c.id === id)
}

describe('the platform reads campaigns by id (the sandbox models it)', () => {
  it('a POST report reads campaignIds and ignores advertiserId', async () => {
    const res = await direct(sg, 'POST', '/api/v1/report/campaigns/get', {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ advertiserId: 101, campaignIds: [102001], ...DATES, byCampaign: true }),
    })
    expect(res.status).toBe(200)
    expect((res.json.data as { campaignId: number }[]).map((r) => r.campaignId)).toEqual([102001])
  })
})

describe("another advertiser's campaigns", () => {
  it('a POST report naming its own advertiser and a sibling\'s campaigns is 403; nothing reaches the platform', async () => {
    const res = await call(sg, 'POST', '/api/v1/report/campaigns/get', {
      key: KEYS.writer,
      json: { advertiserId: 101, campaignIds: [102001, 102002], ...DATES, byDate: true, byCampaign: true },
    })
    expect(res.status).toBe(403)
    expect(res.json.code).toBe('GW_FORBIDDEN')
    expect(sg.callerRequests()).toEqual([])
  })

  it('one foreign id among own ones is enough for a 403', async () => {
    const res = await call(sg, 'POST', '/api/v1/report/campaigns/get', { key: KEYS.writer, json: { campaignIds: [101001, 101002, 103001], ...DATES } })
    expect(res.status).toBe(403)
    expect(sg.callerRequests()).toEqual([])
  })

  it('campaign ids in the query, as a string, or as an array of the query are checked too', async () => {
    const targets = [
      `/api/v1/report/campaigns/get?advertiserId=101&campaignIds[]=102001&${REPORT_DATES}`,
      `/api/v1/report/campaigns/get?advertiserId=101&campaignId=102001&${REPORT_DATES}`,
      `/api/v1/report/campaigns/get?advertiserId=101&campaignIds[0]=101001&campaignIds[1]=102001&${REPORT_DATES}`,
    ]
    for (const target of targets) expect((await call(sg, 'GET', target, { key: KEYS.writer })).status, target).toBe(403)
    const asString = await call(sg, 'POST', '/api/v1/report/campaigns/get', { key: KEYS.writer, json: { campaignIds: ['102001'], ...DATES } })
    expect(asString.status).toBe(403)
    const form = await call(sg, 'POST', '/api/v1/campaign/get', {
      key: KEYS.writer,
      body: 'userId=101&campaignIds[]=102001',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    })
    expect(form.status).toBe(403)
    expect(sg.callerRequests()).toEqual([])
  })

  it("a scoped writer cannot delete a sibling's campaign by id, whatever account it names", async () => {
    for (const target of ['/api/v1/campaign/banner/delete/102001?userId=101', '/api/v1/campaign/banner/delete/102001/?userId=101']) {
      const res = await call(sg, 'DELETE', target, { key: KEYS.writer })
      expect(res.status, target).toBe(403)
    }
    expect(sg.callerRequests()).toEqual([])
    expect(await exists(102001)).toBe(true)
  })

  it("a scoped writer cannot delete a sibling's campaign by an input named id beside its own campaign's path", async () => {
    // `$request->id` takes an input named `id` before the route's `{id}` (the sandbox models it).
    expect((await direct(sg, 'DELETE', '/api/v1/campaign/banner/delete/103003?id=103004')).status).toBe(200)
    expect(await exists(103004)).toBe(false)
    expect(await exists(103003)).toBe(true)
    sg.sandbox.clearRequests()
    const json = { 'content-type': 'application/json' }
    const form = { 'content-type': 'application/x-www-form-urlencoded' }
    for (const [target, opts] of [
      ['/api/v1/campaign/banner/delete/101001?userId=101&id=102002', {}],
      ['/api/v1/campaign/banner/delete/101001?userId=101&id[]=102002', {}],
      ['/api/v1/campaign/banner/delete/101001?userId=101&id[0]=102002', {}],
      ['/api/v1/campaign/banner/delete/101001', { headers: json, body: JSON.stringify({ userId: 101, id: 102002 }) }],
      ['/api/v1/campaign/banner/delete/101001', { headers: json, body: JSON.stringify({ userId: 101, id: '102002' }) }],
      ['/api/v1/campaign/banner/delete/101001', { headers: form, body: 'userId=101&id=102002' }],
    ] as const) {
      const res = await call(sg, 'DELETE', target, { key: KEYS.writer, ...opts })
      expect([400, 403], `${target} ${JSON.stringify(opts)}`).toContain(res.status)
    }
    expect(sg.callerRequests()).toEqual([])
    expect(await exists(102002)).toBe(true)
    // Its own campaign's id, or none, beside its path still deletes it.
    expect((await call(sg, 'DELETE', '/api/v1/campaign/banner/delete/101003?userId=101&id=101003', { key: KEYS.writer })).status).toBe(200)
    expect(await exists(101003)).toBe(false)
  })

  it('an input named id beside a campaign path is one id, never a list: 400, nothing reaches the platform', async () => {
    // A controller reads `$request->id` as one id: `(int)` and `$request->integer('id')` read a
    // list as 1, `find()` takes it for many, `where()` for its first item; the sandbox finds none (404).
    expect((await direct(sg, 'DELETE', '/api/v1/campaign/banner/delete/103003?id[]=103003')).status).toBe(404)
    sg.sandbox.clearRequests()
    for (const target of [
      '/api/v1/campaign/banner/delete/101001?userId=101&id[]=101001',
      '/api/v1/campaign/banner/delete/101001?userId=101&id[0]=101001',
      '/api/v1/campaign/banner/delete/101001?userId=101&id=101001&id[]=101001',
    ]) {
      const res = await call(sg, 'DELETE', target, { key: KEYS.writer })
      expect(res.status, target).toBe(400)
      expect(res.json.message, target).toContain('id: one campaign id')
    }
    expect(sg.callerRequests()).toEqual([])
    expect(await exists(101001)).toBe(true)
  })

  it('a path segment the database reads as a number is refused unless the campaign table places it', async () => {
    // MySQL reads `102001abc` and `+102001` as 102001 (the sandbox models it).
    expect((await direct(sg, 'DELETE', '/api/v1/campaign/banner/delete/103002abc')).status).toBe(200)
    expect(await exists(103002)).toBe(false)
    sg.sandbox.clearRequests()
    for (const target of [
      '/api/v1/campaign/banner/delete/102001abc?userId=101',
      '/api/v1/campaign/banner/delete/+102001?userId=101',
      '/api/v1/campaign/banner/delete/102001.0?userId=101',
      '/api/v1/creative/delete/102001?userId=101',
    ]) {
      const res = await call(sg, 'DELETE', target, { key: KEYS.writer })
      expect(res.status, target).toBe(403)
    }
    expect(sg.callerRequests()).toEqual([])
    expect(await exists(102001)).toBe(true)
  })
})

describe('own campaigns keep working', () => {
  it('a POST report on own campaigns is 200 and names them to the platform', async () => {
    const res = await call(sg, 'POST', '/api/v1/report/campaigns/get', { key: KEYS.writer, json: { advertiserId: 101, campaignIds: [101002, 101001], ...DATES, byCampaign: true } })
    expect(res.status).toBe(200)
    const [forwarded] = sg.callerRequests()
    expect(JSON.parse(forwarded?.body ?? '{}')).toMatchObject({ campaignIds: [101001, 101002] })
  })

  it('a campaign created through the gateway can be reported on and deleted at once', async () => {
    const created = await call(sg, 'POST', '/api/v1/campaign/banner/create', { key: KEYS.writer, json: newCampaign(101) })
    expect(created.status).toBe(201)
    const id = (created.json.data as { id: number }).id
    expect((await call(sg, 'POST', '/api/v1/report/campaigns/get', { key: KEYS.writer, json: { campaignIds: [id], ...DATES } })).status).toBe(200)
    expect((await call(sg, 'DELETE', `/api/v1/campaign/banner/delete/${id}?userId=101`, { key: KEYS.writer })).status).toBe(200)
    expect(await exists(id)).toBe(false)
  })

  it('an unrestricted team reads any child campaign by id', async () => {
    const res = await call(sg, 'POST', '/api/v1/report/campaigns/get', { key: KEYS.all, json: { campaignIds: [102001, 103001], ...DATES } })
    expect(res.status).toBe(200)
  })
})

itLoggedNoSecret(sg)
