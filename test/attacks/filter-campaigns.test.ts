import { describe, expect, it } from 'vitest'
import { hashApiKey } from '../../src/access/api-keys.js'
import { KEYS, SANDBOX_TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import { ADMIN_TOKEN, call, direct, itLoggedNoSecret, REPORT_DATES, useAttackGateway } from './attack-gateway.js'

// Campaigns under a bracketed key of the query or a form. A platform built on
// spatie/laravel-query-builder reads `filter[campaignIds]` from Laravel's merged input
// (query and body) and splits a value at commas; the sandbox models one (reportFilter):
// its report reads then report on the filter's campaigns, any the shared token reads,
// whatever advertiser the call names. Two teams, each limited to one advertiser: the
// writer (101) and the rival (102), siblings under one parent.

const RIVAL_KEY = 'rgw_test_rival_key_99999999999999999999999999'
const YAML = `${SANDBOX_TEAMS_YAML.trimEnd()}\n  rival:\n    keys: ["${hashApiKey(RIVAL_KEY)}"]\n    advertisers: [102]\n`
const sg = useAttackGateway({ yaml: YAML, sandbox: { reportFilter: true } })
const REPORT = '/api/v1/report/campaigns/get'
const DATES = { dateFrom: '2026-01-01', dateTo: '2026-01-07', byCampaign: true }

const accountsOf = (rows: unknown): number[] => [...new Set((rows as { campaignId: number }[]).map((r) => Math.floor(r.campaignId / 1000)))].sort()

describe('the platform reads filter[campaignIds] (the sandbox models it)', () => {
  it('in the query of a GET: the filter\'s campaigns, whatever advertiser is named', async () => {
    for (const filter of ['filter[campaignIds][]=102001', 'filter[campaignIds]=102001', 'filter[campaignIds]=101001,102001']) {
      const res = await direct(sg, 'GET', `${REPORT}?advertiserId=101&${filter}&byCampaign=1&${REPORT_DATES}`)
      expect(res.status, filter).toBe(200)
      expect(accountsOf(res.json.data), filter).toContain(102)
    }
  })

  it('in the query of a POST report beside the body\'s campaigns, and in a form', async () => {
    const query = await direct(sg, 'POST', `${REPORT}?filter[campaignIds][]=102001`, { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ campaignIds: [101001], ...DATES }) })
    expect(accountsOf(query.json.data)).toEqual([102])
    const form = await direct(sg, 'POST', REPORT, { headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `filter[campaignIds][]=102001&${REPORT_DATES}&byCampaign=1` })
    expect(accountsOf(form.json.data)).toEqual([102])
  })
})

describe("a scoped team naming another advertiser's campaigns under a bracketed key", () => {
  it.each([
    ['writer', 101, 102001, 'filter[campaignIds][]', KEYS.writer],
    ['writer', 101, 102001, 'filter[campaignIds]', KEYS.writer],
    ['writer', 101, 102001, 'filter[campaignIds][0]', KEYS.writer],
    ['writer', 101, 102001, 'filter[campaignId]', KEYS.writer],
    ['rival', 102, 101001, 'filter[campaignIds][]', RIVAL_KEY],
    ['rival', 102, 101001, 'a[b][campaignIds][]', RIVAL_KEY],
  ])('%s (advertiser %i): campaign %i as %s in a report\'s query is 403, nothing reaches the platform', async (_team, own, foreign, name, key) => {
    const res = await call(sg, 'GET', `${REPORT}?advertiserId=${own}&${name}=${foreign}&byCampaign=1&${REPORT_DATES}`, { key })
    expect(res.status).toBe(403)
    expect(res.json.message).toContain(`campaign ${foreign}`)
    expect(sg.callerRequests()).toEqual([])
  })

  it('beside its own campaigns in a POST report\'s body: 403, nothing reaches the platform', async () => {
    const res = await call(sg, 'POST', `${REPORT}?filter[campaignIds][]=102001`, { key: KEYS.writer, json: { campaignIds: [101001], ...DATES } })
    expect(res.status).toBe(403)
    expect(sg.callerRequests()).toEqual([])
  })

  it('in a form: 403, nothing reaches the platform', async () => {
    const res = await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.writer, body: 'userId=101&filter[campaignIds][]=102001', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
    expect(res.status).toBe(403)
    expect(sg.callerRequests()).toEqual([])
  })

  it('a list in one value is no campaign id: 400, as in a JSON body', async () => {
    const res = await call(sg, 'GET', `${REPORT}?advertiserId=101&filter[campaignIds]=101001,102001&${REPORT_DATES}`, { key: KEYS.writer })
    expect(res.status).toBe(400)
    const json = await call(sg, 'POST', REPORT, { key: KEYS.writer, json: { campaignIds: [101001], filter: { campaignIds: '101001,102001' }, ...DATES } })
    expect(json.status).toBe(400)
    expect(sg.callerRequests()).toEqual([])
  })
})

// A GET report's `filter[campaignIds]` names campaigns as a POST report's body does: its
// copy is filed under their owners too (beside its `advertiserId`), so that a purge of
// one of them reaches it, and a read of it names them.
describe("a GET report filtered to another advertiser's campaigns and a purge of their owner", () => {
  const FILTERED = `${REPORT}?advertiserId=101&filter[campaignIds][]=102001&byCampaign=1&dateFrom=2026-01-08&dateTo=2026-01-14`
  const read = async (key: string) => {
    const res = await fetch(`${sg.url}${FILTERED}`, { headers: { 'x-api-key': key } })
    expect(res.status, await res.text()).toBe(200)
    return res.headers.get('x-cache')
  }
  const purge = async (advertiserId: number) => {
    const res = await sg.gw.admin.inject({ method: 'DELETE', url: `/admin/cache?advertiserId=${advertiserId}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(res.statusCode).toBe(200)
    return (res.json() as { dropped: number }).dropped
  }

  it('a copy a team of 101 and 102 filled is dropped by a purge of 102, and its read names 102', async () => {
    expect(await read(KEYS.growth)).toBe('MISS')
    expect(accessLines().at(-1)?.advertiser).toEqual([101, 102])
    expect(await purge(102)).toBe(1)
    expect(await read(KEYS.growth)).toBe('MISS')
  })

  it("an unrestricted team's copy filled before a purge of 102 is not served to a team limited to 101 and 102", async () => {
    await purge(101)
    expect(await read(KEYS.all)).toBe('MISS')
    // Filed under ANY_ADVERTISER (its filler looked no owner up): the purge of 102 reaches it.
    expect(await purge(102)).toBe(1)
    expect(await read(KEYS.growth)).toBe('MISS')
    // Its new copy is filed under 102: the next purge of 102 reaches it for every team.
    expect(await read(KEYS.all)).toBe('HIT')
    expect(await purge(102)).toBe(1)
    expect(await read(KEYS.all)).toBe('MISS')
  })
})

// An unrestricted team's read is looked up nowhere: the owners of the campaigns its query
// names are not known, so its copy is filed under ANY_ADVERTISER as well (as a POST report
// of campaigns no lookup told), which every advertiser's purge reaches.
describe("an unrestricted team's GET report naming campaigns and a purge of their owner", () => {
  const purge = async (advertiserId: number) => {
    const res = await sg.gw.admin.inject({ method: 'DELETE', url: `/admin/cache?advertiserId=${advertiserId}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(res.statusCode).toBe(200)
    return (res.json() as { dropped: number }).dropped
  }
  it.each([
    ['beside another advertiserId', `${REPORT}?advertiserId=101&filter[campaignIds][]=102001&byCampaign=1&dateFrom=2026-02-01&dateTo=2026-02-03`],
    ['beside its own advertiserId', `${REPORT}?advertiserId=102&filter[campaignIds][0]=102001&byCampaign=1&dateFrom=2026-02-04&dateTo=2026-02-06`],
  ])('%s: a purge of 102 drops the copy, the next read is a MISS', async (_case, target) => {
    const read = async () => {
      const res = await fetch(`${sg.url}${target}`, { headers: { 'x-api-key': KEYS.all } })
      expect(res.status, await res.text()).toBe(200)
      return res.headers.get('x-cache')
    }
    expect(await read()).toBe('MISS')
    expect(await read()).toBe('HIT')
    expect(await purge(102)).toBeGreaterThanOrEqual(1)
    expect(await read()).toBe('MISS')
  })
})

// The scope rules (an id path ownership.campaignPaths does not list, a campaign id that is no
// number) are a scoped team's: a team of every advertiser is refused none of them, its call
// is sent on, and its copy of a report whose campaigns they cannot read is filed under
// ANY_ADVERTISER, which every advertiser's purge reaches.
describe("an unrestricted team's calls the scope rules cannot read", () => {
  it('are sent on: an unlisted id path, a campaign list in one value, a null campaign list', async () => {
    sg.sandbox.clearRequests()
    const calls = [
      ['GET', '/api/v1/creative/55', undefined],
      ['GET', '/api/v1/users/2fa', undefined],
      ['GET', `${REPORT}?advertiserId=101&filter[campaignIds]=101001,102001&byCampaign=1&dateFrom=2026-03-01&dateTo=2026-03-03`, undefined],
      ['POST', '/api/v1/campaign/get', { userId: 101, campaignIds: null }],
    ] as const
    for (const [method, target, json] of calls) {
      const res = await call(sg, method, target, { key: KEYS.all, ...(json === undefined ? {} : { json }) })
      expect([target, res.status === 400 || res.status === 403 ? (res.json as { code?: string }).code : 'sent']).toEqual([target, 'sent'])
    }
    expect(sg.callerRequests().map((r) => r.path)).toEqual(['/api/v1/creative/55', '/api/v1/users/2fa', REPORT, '/api/v1/campaign/get'])
    // A team limited to some advertisers is refused each, as before.
    expect((await call(sg, 'GET', '/api/v1/creative/55', { key: KEYS.growth })).status).toBe(403)
    expect((await call(sg, 'GET', `${REPORT}?advertiserId=101&filter[campaignIds]=101001,102001&${REPORT_DATES}`, { key: KEYS.growth })).status).toBe(400)
  })

  it('a report read of campaigns in one value: a purge of any advertiser drops its copy', async () => {
    const target = `${REPORT}?advertiserId=101&filter[campaignIds]=101001,102001&byCampaign=1&dateFrom=2026-03-04&dateTo=2026-03-06`
    const read = async () => (await fetch(`${sg.url}${target}`, { headers: { 'x-api-key': KEYS.all } })).headers.get('x-cache')
    expect([await read(), await read()]).toEqual(['MISS', 'HIT'])
    const purge = await sg.gw.admin.inject({ method: 'DELETE', url: '/admin/cache?advertiserId=102', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(purge.json()).toMatchObject({ dropped: expect.any(Number) })
    expect(await read()).toBe('MISS')
  })
})

const accessLines = (): { advertiser?: unknown; path?: string }[] =>
  sg.gw.logs
    .text()
    .split('\n')
    .filter((line) => line.includes('"path":"/api/v1/report/campaigns/get"'))
    .map((line) => JSON.parse(line) as { advertiser?: unknown })

describe('unchanged', () => {
  it('a scoped team\'s own campaigns under a bracketed key pass', async () => {
    const res = await call(sg, 'GET', `${REPORT}?advertiserId=101&filter[campaignIds][]=101001&byCampaign=1&${REPORT_DATES}`, { key: KEYS.writer })
    expect(res.status).toBe(200)
    expect(accountsOf(res.json.data)).toEqual([101])
  })

  it('a team of every account is forwarded another advertiser\'s campaigns under a bracketed key', async () => {
    const res = await call(sg, 'GET', `${REPORT}?advertiserId=101&filter[campaignIds][]=102001&byCampaign=1&${REPORT_DATES}`, { key: KEYS.all })
    expect(res.status).toBe(200)
    expect(accountsOf(res.json.data)).toEqual([102])
  })
})

itLoggedNoSecret(sg, [RIVAL_KEY])
