import { describe, expect, it } from 'vitest'
import { fieldSpelling, assertReportRead, namedInCall, placementsOf, scopeRefusal } from '../../src/access/scope.js'
import type { TeamConfig } from '../../src/config.js'
import { parseFormBody, parseJsonBody } from '../../src/access/request-body.js'
import { checkTarget } from '../../src/access/request-target.js'

// The accounts and campaigns a call names, and whether it names its account
// where the platform reads it.

const PLACEMENTS = placementsOf({
  campaignPaths: ['/api/v1/campaign/banner/delete/{id}', '/api/v1/campaign/{id}'],
  accountRoutes: [{ path: '/api/v1/campaign/get', field: 'userId' }, { path: '/api/v1/creative/get', field: 'advertiserId' }],
})
const LIMITS = { jsonDepth: 32, params: 256 }
const json = (v: unknown) => parseJsonBody(Buffer.from(JSON.stringify(v)), LIMITS)

function named(method: string, url: string, body: ReturnType<typeof json> | null = null) {
  return namedInCall(method, checkTarget(url, 256), body, PLACEMENTS)
}

describe('namedInCall', () => {
  it('reads a GET or DELETE account from the query only', () => {
    expect(named('GET', '/api/v1/report/campaigns/get?advertiserId=101')).toMatchObject({ accounts: ['101'], placed: true })
    expect(named('DELETE', '/api/v1/campaign/banner/delete/101001?userId=101')).toEqual({ accounts: ['101'], campaigns: [101001], creativeSets: [], placed: true, placeBy: 'advertiserId or userId in the query', unknownRoute: null, respelled: null })
    expect(named('DELETE', '/api/v1/campaign/banner/delete/101001').placed).toBe(false)
  })

  it('reads the account of a call with a body from the body', () => {
    expect(named('POST', '/api/v1/campaign/get?userId=101', json({})).placed).toBe(false)
    expect(named('POST', '/api/v1/campaign/get?userId=101', json(null)).placed).toBe(false)
    expect(named('POST', '/api/v1/campaign/get?userId=101', null).placed).toBe(false)
    expect(named('POST', '/api/v1/campaign/get', json({ userId: 101 }))).toMatchObject({ accounts: [101], placed: true })
    expect(named('POST', '/api/v1/campaign/get', parseFormBody(Buffer.from('userId=102'), LIMITS))).toMatchObject({ accounts: ['102'], placed: true })
  })

  it('places a body call only by a top-level userId, and a report only by its top-level campaignIds', () => {
    expect(named('POST', '/api/v1/campaign/get', json({ advertiserId: 101 })).placed).toBe(false)
    expect(named('POST', '/api/v1/campaign/get', json({ filter: { userId: 101 } })).placed).toBe(false)
    expect(named('POST', '/api/v1/campaign/get', json([{ userId: 101 }])).placed).toBe(false)
    expect(named('POST', '/api/v1/campaign/get', json({ campaignIds: [101001] })).placed).toBe(false)
    expect(named('POST', '/api/v1/campaign/get', parseFormBody(Buffer.from('userId[]=101'), LIMITS)).placed).toBe(false)
    for (const userId of [[101], ['101'], [], null, true, { a: 101 }]) expect(named('POST', '/api/v1/campaign/get', json({ userId })).placed, JSON.stringify(userId)).toBe(false)
    expect(named('POST', '/api/v1/campaign/get', json({ userId: '101' })).placed).toBe(true)
    expect(named('POST', '/api/v1/report/campaigns/get', json({ campaignIds: [] })).placed).toBe(false)
    expect(named('POST', '/api/v1/report/campaigns/get', json({ advertiserId: 101 })).placed).toBe(false)
    // The report form reads campaigns instead of an account: userId places no report.
    expect(named('POST', '/api/v1/report/campaigns/get', json({ userId: 101 })).placed).toBe(false)
    expect(named('POST', '/api/v1/report/campaigns/get?campaignIds[]=101001', json({ userId: 101 })).placed).toBe(false)
    expect(named('POST', '/api/v1/report/campaigns/get', parseFormBody(Buffer.from('userId=101'), LIMITS)).placed).toBe(false)
  })

  it('places a body-less call only by a plain advertiserId or userId in the query', () => {
    expect(named('GET', '/api/v1/report/campaigns/get?advertiserId[]=101').placed).toBe(false)
    expect(named('GET', '/api/v1/report/campaigns/get?userId=101').placed).toBe(true)
    expect(named('DELETE', '/api/v1/campaign/banner/delete/101001?advertiserId=101').placed).toBe(true)
  })

  it('places a listed route by its own field only, in the query or at the top of the body', () => {
    expect(named('GET', '/api/v1/creative/get?advertiserId=101')).toMatchObject({ placed: true, unknownRoute: null })
    expect(named('GET', '/api/v1/creative/get/?advertiserId=101').placed).toBe(true)
    expect(named('GET', '/api/v1/creative/get?userId=101').placed).toBe(false)
    expect(named('POST', '/api/v1/creative/get', json({ advertiserId: 101 })).placed).toBe(true)
    expect(named('POST', '/api/v1/creative/get', json({ userId: 101 })).placed).toBe(false)
    expect(named('POST', '/api/v1/creative/get', parseFormBody(Buffer.from('advertiserId=101'), LIMITS)).placed).toBe(true)
    expect(named('GET', '/api/v1/campaign/get?advertiserId=101').placed).toBe(false)
  })

  it('knows no placement of a route that is not a report, a campaign path or a listed route', () => {
    expect(named('GET', '/api/v1/audience/get?userId=101')).toMatchObject({ placed: false, unknownRoute: '/api/v1/audience/get' })
    expect(named('POST', '/api/v1/audience/create', json({ userId: 101 }))).toMatchObject({ placed: false, unknownRoute: '/api/v1/audience/create' })
    expect(named('POST', '/api/v1/campaign/get/x', json({ userId: 101 })).unknownRoute).toBe('/api/v1/campaign/get/x')
  })

  it('counts campaign ids in a body as naming their owners', () => {
    const report = named('POST', '/api/v1/report/campaigns/get', json({ campaignIds: [102001, '102002'], dateFrom: '2026-01-01' }))
    expect(report).toEqual({ accounts: [], campaigns: [102001, 102002], creativeSets: [], placed: true, placeBy: "the report's campaigns in campaignIds at the top of the body", unknownRoute: null, respelled: null })
  })

  // A 1 MiB body holds some 150,000 ids in a list: each list is read whole, however long
  // (read as the arguments of one call, a list past some 120,000 ids overflowed the stack: 500).
  it('reads every id of a list as long as a 1 MiB body holds, for campaigns, creative sets and accounts', () => {
    const ids = Array.from({ length: 150_000 }, (_, i) => 101_001 + (i % 3))
    const found = named('POST', '/api/v1/campaign/get', json({ userId: ids, campaignIds: ids, creativeSetIds: ids }))
    expect([found.accounts.length, found.campaigns.length, found.creativeSets.length]).toEqual([150_000, 150_000, 150_000])
    expect(found.campaigns.slice(-3)).toEqual([101_001, 101_002, 101_003])
  })

  it('finds creative set ids wherever Laravel reads them: the body at any depth, a form, the query', () => {
    const create = '/api/v1/campaign/banner/create'
    expect(named('POST', create, json({ userId: 101, creativeSetIds: [1020011, '1010011'] })).creativeSets).toEqual([1020011, 1010011])
    expect(named('POST', `${create}?creativeSetIds[]=7`, json({ userId: 101, a: [{ creativeSetId: 8 }] })).creativeSets.sort()).toEqual([7, 8])
    expect(named('POST', create, parseFormBody(Buffer.from('userId=101&creativeSetIds[0]=9'), LIMITS)).creativeSets).toEqual([9])
    expect(named('POST', create, json({ userId: 101, creativeSetIds: [] })).creativeSets).toEqual([])
    expect(() => named('POST', create, json({ userId: 101, creativeSetIds: { a: 1020011 } }))).toThrow('creative set id: must be a positive integer')
  })

  it('finds accounts and campaign ids at any depth and in bracketed names', () => {
    const call = named('POST', '/api/v1/x/get?campaignIds[]=5&advertiserId[0]=7', json({ a: [{ b: { userId: [1, 2], campaignId: 9 } }] }))
    expect(call.accounts.sort()).toEqual([1, 2, '7'])
    expect(call.campaigns.sort()).toEqual([5, 9])
    // An empty list is kept as the value, which is no account: refused, never skipped.
    expect(named('POST', '/api/v1/campaign/get', json({ userId: [] })).accounts).toEqual([[]])
    expect(named('POST', '/api/v1/campaign/get', json({ userId: [101] })).accounts).toEqual([101])
  })

  it('finds an account under a bracketed key of the query or a form, as under a nested JSON key', () => {
    const form = parseFormBody(Buffer.from('userId=101&filter[userId]=102&a[b][advertiserId][]=103'), LIMITS)
    expect(named('POST', '/api/v1/campaign/get?x[userId]=104', form).accounts).toEqual(['104', '101', '102', '103'])
    expect(named('POST', '/api/v1/campaign/get', form).placed).toBe(true)
    expect(named('GET', '/api/v1/report/campaigns/get?filter[advertiserId]=101').placed).toBe(false)
  })

  it('finds campaigns and creative sets under a bracketed key of the query or a form, as under a nested JSON key', () => {
    const form = parseFormBody(Buffer.from('userId=101&filter[campaignIds][]=102001&a[b][campaignId]=103001&filter[creativeSetIds][0]=1020011'), LIMITS)
    expect(named('POST', '/api/v1/campaign/get?filter[campaignIds]=104001', form)).toMatchObject({ campaigns: [104001, 102001, 103001], creativeSets: [1020011] })
    expect(named('GET', '/api/v1/report/campaigns/get?advertiserId=101&filter[campaignIds][]=102001').campaigns).toEqual([102001])
    expect(() => named('GET', '/api/v1/report/campaigns/get?advertiserId=101&filter[campaignIds]=101001,102001')).toThrow('campaign id: must be a positive integer')
    // An `id` below a key is no route parameter: only `id` itself names the path's campaign.
    expect(named('DELETE', '/api/v1/campaign/banner/delete/101001?userId=101&filter[id]=5').campaigns).toEqual([101001])
  })


  it('names the first key that spells an account, campaign or creative set field otherwise, in the query, a form or JSON at any depth', () => {
    expect(named('GET', '/api/v1/report/campaigns/get?advertiserId=101&user_id=102').respelled).toEqual({ field: 'user_id', reads: 'userId', what: 'the account' })
    expect(named('POST', '/api/v1/campaign/get?filter[Advertiser-Id]=1', json({ userId: 101 })).respelled).toEqual({ field: 'filter[Advertiser-Id]', reads: 'advertiserId', what: 'the account' })
    expect(named('POST', '/api/v1/campaign/get', parseFormBody(Buffer.from('userId=101&user.id=102'), LIMITS)).respelled).toEqual({ field: 'user.id', reads: 'userId', what: 'the account' })
    expect(named('POST', '/api/v1/campaign/get', json({ userId: 101, a: [{ b: { USERID: 102 } }] })).respelled).toEqual({ field: 'USERID', reads: 'userId', what: 'the account' })
    expect(named('POST', '/api/v1/report/campaigns/get', json({ campaignIds: [101001], filter: { campaign_ids: [102001] } })).respelled).toEqual({ field: 'campaign_ids', reads: 'campaignIds', what: 'campaigns' })
    expect(named('GET', '/api/v1/report/campaigns/get?advertiserId=101&filter[Campaign-Id]=1').respelled).toEqual({ field: 'filter[Campaign-Id]', reads: 'campaignId', what: 'campaigns' })
    expect(named('POST', '/api/v1/campaign/banner/create', parseFormBody(Buffer.from('userId=101&creative.set.ids[]=1'), LIMITS)).respelled).toEqual({ field: 'creative.set.ids[]', reads: 'creativeSetIds', what: 'creative sets' })
    expect(named('POST', '/api/v1/campaign/get', json({ userId: 101, filter: { userId: 101 }, 'advertiserId[0]': 101, userIds: 1, campaignIdsHint: 1, creativeSet: 1 })).respelled).toBeNull()
  })
  it('takes the id of a listed campaign path, and refuses other segments starting with a number', () => {
    expect(named('GET', '/api/v1/campaign/101002?userId=101').campaigns).toEqual([101002])
    expect(() => named('GET', '/api/v1/creative/55?userId=101')).toThrow(expect.objectContaining({ code: 'GW_FORBIDDEN' }))
    // A database reads these as the number they start with.
    for (const path of ['/api/v1/campaign/banner/delete/102001abc', '/api/v1/campaign/banner/delete/+102001', '/api/v1/campaign/1.5']) {
      expect(() => named('DELETE', `${path}?userId=101`), path).toThrow(expect.objectContaining({ code: 'GW_FORBIDDEN' }))
    }
    expect(named('POST', '/api/v1/campaign/get', json({ userId: 1 })).campaigns).toEqual([])
  })

  it('counts an input named as a campaign path\'s route parameter (id) as a campaign beside that path only', () => {
    expect(named('DELETE', '/api/v1/campaign/banner/delete/101001?userId=101&id=102001').campaigns).toEqual([101001, 102001])
    // One id: a list is read as 1 by `(int)`, as its first item by where().
    expect(() => named('DELETE', '/api/v1/campaign/banner/delete/101001?userId=101&id[]=101001')).toThrow('id: one campaign id beside the campaign\'s path, not a list (id[])')
    expect(() => named('DELETE', '/api/v1/campaign/banner/delete/101001?userId=101&id=101001&id[x]=101001')).toThrow(expect.objectContaining({ code: 'GW_BAD_REQUEST' }))
    expect(() => named('POST', '/api/v1/campaign/101001', json({ userId: 101, id: [101001] }))).toThrow('not a list ([101001])')
    expect(() => named('POST', '/api/v1/campaign/101001', parseFormBody(Buffer.from('userId=101&id[]=101001'), LIMITS))).toThrow('not a list (id[])')
    expect(named('POST', '/api/v1/campaign/get?id[]=102001', json({ userId: 101 })).campaigns).toEqual([])
    expect(named('POST', '/api/v1/campaign/101001', parseFormBody(Buffer.from('userId=101&id=102001'), LIMITS)).campaigns).toEqual([101001, 102001])
    expect(named('POST', '/api/v1/campaign/101001', json({ userId: 101, nested: { id: 102001 } })).campaigns).toEqual([101001])
    expect(named('POST', '/api/v1/campaign/get?id=102001', json({ userId: 101 })).campaigns).toEqual([])
  })

  it('refuses a campaign id that is not a positive integer', () => {
    expect(() => named('POST', '/api/v1/report/campaigns/get', json({ campaignIds: ['1 OR 1'] }))).toThrow(expect.objectContaining({ code: 'GW_BAD_REQUEST' }))
  })
})

describe('fieldSpelling', () => {
  it('gives the platform\'s spelling of an account, campaign or creative set field spelled otherwise, ignoring case and all but letters and digits', () => {
    const reads = (name: string) => fieldSpelling(name)?.reads
    for (const name of ['user_id', 'UserId', 'userid', 'USER-ID', 'user.id', 'user id', 'userId\u0000', 'user_Id']) expect(reads(name), name).toBe('userId')
    for (const name of ['advertiser_id', 'ADVERTISERID', 'advertiser-id', 'AdvertiserID']) expect(reads(name), name).toBe('advertiserId')
    for (const name of ['campaign_ids', 'CampaignIds', 'campaign-ids']) expect(reads(name), name).toBe('campaignIds')
    for (const name of ['campaign_id', 'CAMPAIGNID', 'campaign.id']) expect(reads(name), name).toBe('campaignId')
    for (const name of ['creative_set_ids', 'CreativeSetIDs']) expect(reads(name), name).toBe('creativeSetIds')
    for (const name of ['creative_set_id', 'creative-set-id']) expect(reads(name), name).toBe('creativeSetId')
    expect(fieldSpelling('user_id')?.what).toBe('the account')
    expect(fieldSpelling('campaign_id')?.what).toBe('campaigns')
    expect(fieldSpelling('creative_set_ids')?.what).toBe('creative sets')
  })

  it('is null for the platform\'s own spelling and for other names', () => {
    for (const name of ['userId', 'advertiserId', 'userIds', 'parentUserId', 'campaignId', 'campaignIds', 'creativeSetIds', 'creativeSetId', 'campaigns', 'creativeSet', 'id', '']) expect(fieldSpelling(name), name).toBeNull()
  })
})

describe('assertReportRead', () => {
  const team = (advertisers: Set<number> | null): TeamConfig => ({ name: 'growth', keys: [], advertisers, write: false, refresh: false, credential: 'default', rateLimit: null, weight: 1, maxConcurrent: null, queue: null, platformSecondsPerDay: null, webhook: null })
  it('lets a scoped team read a report at /api/v1/report/{split}/get only; a team of every account anywhere', () => {
    expect(() => assertReportRead(team(new Set([101])), '/api/v1/report/adPlacementPositions/get')).not.toThrow()
    for (const path of ['/api/v1/report/creatives/list', '/api/v1/report/get', '/api/v1/report/a/b/get', '/api/v1/report/campaigns/get/x']) {
      expect(() => assertReportRead(team(new Set([101])), path)).toThrow(expect.objectContaining({ code: 'GW_FORBIDDEN' }))
      expect(() => assertReportRead(team(null), path)).not.toThrow()
    }
  })
})

describe('scopeRefusal', () => {
  const team = (advertisers: Set<number> | null): TeamConfig => ({ name: 'growth', keys: [], advertisers, write: false, refresh: false, credential: 'default', rateLimit: null, weight: 1, maxConcurrent: null, queue: null, platformSecondsPerDay: null, webhook: null })

  it('lets a team read a report of its advertisers, or any with every advertiser', () => {
    expect(scopeRefusal(team(new Set([101, 102])), 'growth', 'default', [101, 102])).toBeNull()
    expect(scopeRefusal(team(null), 'growth', 'default', [103])).toBeNull()
  })

  it('says why not in a read\'s words: an advertiser taken away, the team itself, or the credential it was asked through', () => {
    expect(scopeRefusal(team(new Set([101])), 'growth', 'default', [101, 102])).toBe("team growth may not use advertiser 102: a team's keys use only the advertisers its settings list; ask the gateway's operators to add it to team growth's advertisers")
    expect(scopeRefusal(undefined, 'growth', 'default', [101])).toBe('team growth is no longer configured')
    expect(scopeRefusal(team(null), 'growth', 'partner', [101])).toBe('team growth reads through credential default now, not through partner')
  })
})
