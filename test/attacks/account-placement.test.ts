import { describe, expect, it } from 'vitest'
import { KEYS, rawHttp, rawRequest } from '../helpers/sandbox-gateway.js'
import { call, direct, itLoggedNoSecret, REPORT_DATES, useAttackGateway } from './attack-gateway.js'

// An account named where the platform does not read it.
// The campaign list reads `userId` from the body only and, without one there, lists the
// token owner's (the parent's) campaigns. The growth team is limited to 101 and 102.

const sg = useAttackGateway()
const PARENT_CAMPAIGN = 100001

async function listDirect(target: string, body?: string, type = 'application/json'): Promise<number[]> {
  const res = await direct(sg, 'POST', target, { headers: { 'content-type': type }, ...(body === undefined ? {} : { body }) })
  sg.sandbox.clearRequests()
  return (res.json.data as { id: number }[]).map((c) => c.id)
}

describe('the platform falls back to the parent account (the sandbox models it)', () => {
  it.each([
    ['{} with the account in the query', '/api/v1/campaign/get?userId=101', '{}'],
    ['null', '/api/v1/campaign/get?userId=101', 'null'],
    ['no body', '/api/v1/campaign/get?userId=101', undefined],
    ['advertiserId instead of userId', '/api/v1/campaign/get', '{"advertiserId":101}'],
    ['userId nested', '/api/v1/campaign/get', '{"filter":{"userId":101}}'],
    ['campaign ids', '/api/v1/campaign/get', '{"campaignIds":[101001]}'],
  ])('%s lists the parent\'s campaigns', async (_name, target, body) => {
    expect(await listDirect(target, body)).toContain(PARENT_CAMPAIGN)
  })
})

describe('a scoped team must name its account where the platform reads it', () => {
  it.each([
    ['{} with the account in the query', '/api/v1/campaign/get?userId=101', { json: {} }],
    ['null with the account in the query', '/api/v1/campaign/get?userId=101', { json: null }],
    ['no body with the account in the query', '/api/v1/campaign/get?userId=101', {}],
    ['an empty JSON body', '/api/v1/campaign/get?userId=101', { body: '', headers: { 'content-type': 'application/json' } }],
    ['advertiserId in the body (the list reads userId)', '/api/v1/campaign/get', { json: { advertiserId: 101 } }],
    ['userId nested in the body', '/api/v1/campaign/get', { json: { filter: { userId: 101 } } }],
    ['userId in an array of the body', '/api/v1/campaign/get', { json: [{ userId: 101 }] }],
    ['own campaign ids instead of the account', '/api/v1/campaign/get', { json: { campaignIds: [101001] } }],
    ['userId as a form array', '/api/v1/campaign/get', { body: 'userId[]=101', headers: { 'content-type': 'application/x-www-form-urlencoded' } }],
    // PHP keeps the last parameter of a variable: a list after the plain one makes userId a list.
    ['userId, then as a form array', '/api/v1/campaign/get', { body: 'userId=101&userId[]=101', headers: { 'content-type': 'application/x-www-form-urlencoded' } }],
    ['userId, then as a keyed form array', '/api/v1/campaign/get', { body: 'userId=101&userId[a]=101&note=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } }],
    // Blank to Laravel (`filled()`, `?:`): a controller that reads it so lists the parent's.
    ['userId as an empty list', '/api/v1/campaign/get', { json: { userId: [] } }],
    ['userId as an empty list beside a nested own one', '/api/v1/campaign/get', { json: { userId: [], filter: { userId: 101 } } }],
    // A list where PHP reads one id: the integer rule refuses it (422), `(int)` of it is 1 and
    // `$request->integer()` too, a where() takes its first item: no account the call placed.
    ['userId as a JSON list of its own account', '/api/v1/campaign/get', { json: { userId: [101] } }],
    ['userId as a JSON list of its own account, spelt as a string', '/api/v1/campaign/get', { json: { userId: ['101'] } }],
    ['userId as a JSON list of its own accounts', '/api/v1/campaign/get', { json: { userId: [101, 102] } }],
    ['userId as a JSON list, then plain in the query', '/api/v1/campaign/get?userId=101', { json: { userId: [101] } }],
  ])('%s: 403, nothing reaches the platform', async (_name, target, opts) => {
    const res = await call(sg, 'POST', target, { key: KEYS.growth, ...opts })
    expect(res.status).toBe(403)
    expect(res.json.code).toBe('GW_FORBIDDEN')
    expect(sg.callerRequests()).toEqual([])
  })

  it('a GET or DELETE names its account in the query, plainly, and carries no body', async () => {
    expect((await call(sg, 'GET', `/api/v1/report/campaigns/get?${REPORT_DATES}`, { key: KEYS.growth })).status).toBe(400)
    // Laravel reads a GET's JSON body as its input: the account must not hide there.
    const withBody = await rawRequest(sg.port, rawHttp('GET', '/api/v1/creative/get?advertiserId=101', {
      key: KEYS.growth,
      headers: { 'content-type': 'application/json' },
      body: '{"advertiserId":103}',
    }))
    expect(withBody.status).toBe(400)
    expect((await call(sg, 'GET', '/api/v1/creative/get?advertiserId[]=101', { key: KEYS.growth })).status).toBe(403)
    expect((await call(sg, 'DELETE', '/api/v1/campaign/banner/delete/101001', { key: KEYS.writer })).status).toBe(403)
    expect(sg.callerRequests()).toEqual([])
  })

  it('a GET report never forwards a body: the platform reads the account of the query', async () => {
    const res = await rawRequest(sg.port, rawHttp('GET', '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-02-01&dateTo=2026-02-02', {
      key: KEYS.growth,
      headers: { 'content-type': 'application/json' },
      body: '{"advertiserId":103}',
    }))
    expect(res.status).toBe(200)
    expect(sg.callerRequests().map((r) => [r.method, r.headers['content-type'], r.body])).toEqual([['GET', undefined, '']])
  })

  it('an account outside the team is 403 wherever it stands', async () => {
    const attempts: [string, string, Parameters<typeof call>[3]][] = [
      ['POST', '/api/v1/campaign/get', { json: { userId: 103 } }],
      ['POST', '/api/v1/campaign/get?userId=103', { json: { userId: 101 } }],
      ['POST', '/api/v1/campaign/get', { json: { userId: 101, filter: { advertiserId: 103 } } }],
      ['POST', '/api/v1/campaign/get', { json: { userId: '0103' } }],
      ['GET', `/api/v1/report/campaigns/get?advertiserId=103&${REPORT_DATES}`, {}],
      ['GET', `/api/v1/report/campaigns/get?advertiserId=101&userId=103&${REPORT_DATES}`, {}],
    ]
    for (const [method, target, opts] of attempts) {
      const res = await call(sg, method, target, { key: KEYS.growth, ...opts })
      expect(res.status, `${method} ${target}`).toBe(403)
    }
    expect(sg.callerRequests()).toEqual([])
  })
})

describe('naming the account where it is read works', () => {
  it('JSON and form bodies with userId at the top, and a GET report with advertiserId', async () => {
    expect((await call(sg, 'POST', '/api/v1/campaign/get?per_page=50', { key: KEYS.growth, json: { userId: 101 } })).status).toBe(200)
    const form = await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.growth, body: 'userId=102', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
    expect(form.status).toBe(200)
    expect((await call(sg, 'GET', '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-03-01&dateTo=2026-03-02', { key: KEYS.growth })).status).toBe(200)
    const [list, formList, report] = sg.callerRequests()
    expect(list?.body).toBe('{"userId":101}')
    expect(formList?.body).toBe('userId=102')
    expect(report?.query).toContain('advertiserId=101')
  })
})

itLoggedNoSecret(sg)
