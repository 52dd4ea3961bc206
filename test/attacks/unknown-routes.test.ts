import { describe, expect, it } from 'vitest'
import { KEYS, TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import { call, direct, itLoggedNoSecret, useAttackGateway } from './attack-gateway.js'

// Routes the gateway has no placement for. A route the platform has and the gateway does
// not know may read its account from `advertiserId`, from `userId`, or from nothing, and
// falls back to the parent account (every child's) when it finds none: a team limited to
// some advertisers may call only the routes whose account field the gateway knows (the
// reports, ownership.campaignPaths, ownership.accountRoutes). Teams: growth (101, 102,
// reads), writer (101, writes), all (every advertiser).

const AUDIENCES = '/api/v1/audience/get'
const sg = useAttackGateway()
/** Told that the audience list reads `advertiserId` (a list of its own replaces the default one). */
const listing = useAttackGateway({
  yaml: `ownership:\n  accountRoutes:\n    - { path: /api/v1/campaign/get, field: userId }\n    - { path: ${AUDIENCES}, field: advertiserId }\n${TEAMS_YAML}`,
})

describe('a route with no known placement', () => {
  const calls: [string, string, string, { key: string; json?: unknown }][] = [
    ['a read naming userId in the query', 'GET', `${AUDIENCES}?userId=101`, { key: KEYS.growth }],
    ['a read naming advertiserId in the query', 'GET', `${AUDIENCES}?advertiserId=101`, { key: KEYS.growth }],
    ['a POST read naming userId in the body', 'POST', AUDIENCES, { key: KEYS.growth, json: { userId: 101 } }],
    ['a write naming userId in the body', 'POST', '/api/v1/audience/create', { key: KEYS.writer, json: { userId: 101, name: 'x' } }],
    ['a DELETE under a listed route\'s path', 'DELETE', '/api/v1/campaign/get/all?userId=101', { key: KEYS.writer }],
  ]
  it.each(calls)('%s, from a scoped team: 403 GW_FORBIDDEN naming the route; nothing reaches the platform', async (_what, method, target, opts) => {
    const res = await call(sg, method, target, opts)
    expect([res.status, res.json.code]).toEqual([403, 'GW_FORBIDDEN'])
    const path = target.split('?')[0] as string
    expect(String(res.json.message)).toContain(path)
    expect(String(res.json.message)).toContain('ownership.accountRoutes')
    expect(sg.callerRequests()).toEqual([])
  })

  it.each([
    ['another shape than {split}/get', '/api/v1/report/creatives/list'],
    ['a path deeper than a split', '/api/v1/report/campaigns/by/get'],
    ['no split', '/api/v1/report/get'],
  ])('a report read at %s, from a scoped team: 403 GW_FORBIDDEN, as a job and as a POST too; nothing reaches the platform', async (_what, path) => {
    const target = `${path}?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-07`
    for (const headers of [{}, { prefer: 'respond-async' }] as Record<string, string>[]) {
      const res = await call(sg, 'GET', target, { key: KEYS.growth, headers })
      expect([res.status, res.json.code]).toEqual([403, 'GW_FORBIDDEN'])
      expect(String(res.json.message)).toContain('/api/v1/report/{split}/get')
    }
    const posted = await call(sg, 'POST', path, { key: KEYS.growth, json: { campaignIds: [101001], dateFrom: '2026-01-01', dateTo: '2026-01-07' } })
    expect([posted.status, posted.json.code]).toEqual([403, 'GW_FORBIDDEN'])
    expect(sg.callerRequests()).toEqual([])
  })

  it('from an unrestricted team: passed on to the platform', async () => {
    const res = await call(sg, 'GET', `${AUDIENCES}?userId=101`, { key: KEYS.all })
    expect(res.status).toBe(404)
    expect(sg.callerRequests().map((r) => r.path)).toEqual([AUDIENCES])
  })
})

describe('a route listed in ownership.accountRoutes', () => {
  it('is placed by its own field: passed on with it, refused with the other', async () => {
    expect((await call(listing, 'GET', `${AUDIENCES}?advertiserId=101`, { key: KEYS.growth })).status).toBe(404)
    expect(listing.callerRequests().map((r) => `${r.path}?${r.query}`)).toEqual([`${AUDIENCES}?advertiserId=101`])
    listing.sandbox.clearRequests()
    const other = await call(listing, 'GET', `${AUDIENCES}?userId=101`, { key: KEYS.growth })
    expect([other.status, other.json.code]).toEqual([403, 'GW_FORBIDDEN'])
    expect(String(other.json.message)).toContain('advertiserId')
    expect(listing.callerRequests()).toEqual([])
  })

  it('spelled with a trailing slash, is the route the platform routes it to: placed by its field, and refused without it', async () => {
    // The platform trims the slash (Laravel's Request::path()): the listed route, whose
    // body without userId lists the token's own account, the parent (100), no team's.
    const parent = await direct(sg, 'POST', '/api/v1/campaign/get/', { body: '{}', headers: { 'content-type': 'application/json' } })
    expect([parent.status, ...new Set((parent.json.data as { userId: number }[]).map((row) => row.userId))]).toEqual([200, 100])
    sg.sandbox.clearRequests()
    const bare = await call(sg, 'POST', '/api/v1/campaign/get/', { key: KEYS.growth, json: {} })
    expect([bare.status, bare.json.code]).toEqual([403, 'GW_FORBIDDEN'])
    expect(sg.callerRequests()).toEqual([])
    const named = await call(sg, 'POST', '/api/v1/campaign/get/', { key: KEYS.growth, json: { userId: 101 } })
    expect(named.status).toBe(200)
    expect(new Set((named.json.data as { userId: number }[]).map((row) => row.userId))).toEqual(new Set([101]))
  })

  it('keeps the other team\'s account out', async () => {
    const res = await call(listing, 'GET', `${AUDIENCES}?advertiserId=103`, { key: KEYS.growth })
    expect([res.status, res.json.code]).toEqual([403, 'GW_FORBIDDEN'])
    expect(listing.callerRequests()).toEqual([])
  })
})

itLoggedNoSecret(sg)
itLoggedNoSecret(listing)
