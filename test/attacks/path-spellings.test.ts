import { describe, expect, it } from 'vitest'
import { KEYS, rawHttp, rawRequest } from '../helpers/sandbox-gateway.js'
import { itLoggedNoSecret, REPORT_DATES, useAttackGateway } from './attack-gateway.js'

// One report, one path: a report asked with a trailing slash or a percent-encoded letter
// is the same report (one cache entry, one platform call) and the same route for the
// platform's pauses. Spelled twice, a throttled route counted as two routes, and two
// throttled routes pause the whole credential: one team's spelling stopped every team.

const sg = useAttackGateway()
const REPORT = '/api/v1/report/campaigns/get'
const SPELLINGS = [REPORT, `${REPORT}/`, `${REPORT}//`, '/api/v1/report/campaigns/g%65t', '/api/v1/report/c%61mpaigns/get/', '/api/v1/report/campaigns/%67%65%74']

const get = (target: string, key = KEYS.all) => rawRequest(sg.port, rawHttp('GET', target, { key }))
const post = (target: string, body: unknown) => rawRequest(sg.port, rawHttp('POST', target, { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }))
const reportCalls = () => sg.sandbox.countRequests((r) => r.path.startsWith('/api/v1/report/'))

describe('a report path in any spelling', () => {
  it('is one cache entry and one platform call, or a 404 (a path with //)', async () => {
    const query = `advertiserId=101&byDate=1&${REPORT_DATES}`
    const first = await get(`${REPORT}?${query}`)
    expect(first.status).toBe(200)
    expect(first.headers['x-cache']).toBe('MISS')
    for (const path of SPELLINGS.slice(1)) {
      const res = await get(`${path}?${query}`)
      if (path.includes('//')) {
        expect(res.status, path).toBe(404)
        continue
      }
      expect(res.status, path).toBe(200)
      expect(res.headers['x-cache'], path).toBe('HIT')
      expect(res.body, path).toBe(first.body)
    }
    expect(reportCalls()).toBe(1)
    // The platform was asked the canonical path.
    expect(sg.sandbox.requests.map((r) => r.path)).toEqual([REPORT])
  })

  it('is one cache entry for the POST form too', async () => {
    const body = { campaignIds: [101001], dateFrom: '2026-01-01', dateTo: '2026-01-07', byDate: true }
    const first = await post(REPORT, body)
    expect(first.status).toBe(200)
    expect(first.headers['x-cache']).toBe('MISS')
    const slash = await post(`${REPORT}/`, body)
    expect(slash.status).toBe(200)
    expect(slash.headers['x-cache']).toBe('HIT')
    expect(reportCalls()).toBe(1)
  })

  it('pauses its route, not the credential, when the platform throttles it', async () => {
    const throttled = { kind: 'status' as const, status: 429, headers: { 'retry-after': '30' }, body: { message: 'Too Many Attempts.' } }
    // The platform throttles the route whatever the spelling it is asked in.
    for (const path of [REPORT, `${REPORT}/`]) sg.sandbox.setRouteFailure(path, throttled)
    try {
      // Team growth asks the throttled route in two spellings, each a report not cached yet.
      const a = await get(`${REPORT}?advertiserId=101&byCampaign=1&${REPORT_DATES}`, KEYS.growth)
      const b = await get(`${REPORT}/?advertiserId=102&byCampaign=1&${REPORT_DATES}`, KEYS.growth)
      // The platform's 429 passes through; the second spelling meets the route's pause.
      expect([a.status, b.status]).toEqual([429, 503])
      expect(sg.gw.governors.paused('default', REPORT)).toBe(true)
      // Another team on another route is served: the credential is not paused.
      expect(sg.gw.governors.paused('default')).toBe(false)
      const other = await get(`/api/v1/report/adPlacementPositions/get?advertiserId=101&${REPORT_DATES}`)
      expect(other.status).toBe(200)
      // The throttled route went to the platform once: its second spelling met the pause.
      expect(sg.sandbox.countRequests((r) => r.path.startsWith(REPORT))).toBe(1)
    } finally {
      sg.sandbox.clearRouteFailures()
    }
  })
})

itLoggedNoSecret(sg)
