import { describe, expect, it } from 'vitest'
import { KEYS, rawHttp, rawRequest } from '../helpers/sandbox-gateway.js'
import { call, itLoggedNoSecret, REPORT_DATES, useAttackGateway } from './attack-gateway.js'

// Session 109's black-box round: spellings of a report's path and of an account that a
// router or a decoder other than the gateway's might read as another route or account.
// Each held on main; these keep them held. Team `writer` is limited to advertiser 101,
// `growth` to 101 and 102; a report of 102 is what the writer must never read.

const sg = useAttackGateway()
const OTHER = `advertiserId=102&${REPORT_DATES}`

describe('a report path in a form Laravel\'s router does not read as the report route', () => {
  it.each([
    // U+3002 IDEOGRAPHIC FULL STOP and U+FF0F FULLWIDTH SOLIDUS: a normalizer (NFKC) makes them `.` and `/`.
    ['an ideographic full stop as a segment', `/api/v1/report/campaigns/%E3%80%82/get?${OTHER}`],
    ['a fullwidth solidus between split and get', `/api/v1/report/campaigns%EF%BC%8Fget?${OTHER}`],
    // A `;` path parameter, which servlet containers drop: the platform's router does not.
    ['a ;-parameter after get', `/api/v1/report/campaigns/get;?${OTHER}`],
    ['the route in capitals', `/api/v1/REPORT/campaigns/get?${OTHER}`],
  ])('%s: refused, and the platform reads no account of another team', async (_name, target) => {
    const res = await call(sg, 'GET', target, { key: KEYS.writer })
    expect([400, 403]).toContain(res.status)
    expect(sg.callerRequests()).toEqual([])
  })

  it('a ;-parameter inside the split names no split the platform has: its 404, no account read', async () => {
    const res = await call(sg, 'GET', `/api/v1/report/campaigns;x=1/get?advertiserId=101&${REPORT_DATES}`, { key: KEYS.writer })
    expect(res.status).toBe(404)
    expect(sg.callerRequests().flatMap((r) => r.accounts)).toEqual([])
  })
})

describe('an account spelled as another JSON number', () => {
  it.each([
    ['101.0', '{"userId":101.0}'],
    ['1.01e2', '{"userId":1.01e2}'],
  ])('%s is the account itself, and the platform is sent it as 101', async (_name, body) => {
    const res = await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.writer, body, headers: { 'content-type': 'application/json' } })
    expect(res.status).toBe(200)
    const sent = sg.callerRequests()
    expect(sent.map((r) => JSON.parse(r.body) as unknown)).toEqual([{ userId: 101 }])
    expect(sent.flatMap((r) => r.accounts)).toEqual([101])
  })
})

describe('an empty x-api-key beside authorization: Bearer', () => {
  it('is no key: the bearer key alone is read, on a copy answered from the connection as on a miss Node parses', async () => {
    const target = `/api/v1/report/campaigns/get?${OTHER}`
    const miss = await rawRequest(sg.port, rawHttp('GET', target, { key: null, headers: { 'x-api-key': '', authorization: `Bearer ${KEYS.writer}` } }))
    expect(miss.status).toBe(403)
    const filled = await call(sg, 'GET', target, { key: KEYS.growth })
    expect(filled.status).toBe(200)
    // The copy of 102 is cached now: the plain GET is read on its connection (the socket entrance).
    const hit = await rawRequest(sg.port, rawHttp('GET', target, { key: null, headers: { 'x-api-key': '', authorization: `Bearer ${KEYS.writer}` } }))
    expect(hit.status).toBe(403)
    expect(hit.body).toContain('team writer may not use advertiser 102')
  })
})

itLoggedNoSecret(sg)
