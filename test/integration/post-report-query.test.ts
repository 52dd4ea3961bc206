import { beforeAll, describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH, testConfig } from '../helpers/build-gateway.js'
import { useGateway, useSandbox } from '../helpers/fixtures.js'

// The POST form of a report reads its dates and flags from its JSON body. The gateway
// always writes them into the body it sends, and the platform (Laravel's
// `$request->input()`: the body first, the query under it) then never reads the query's.
// A caller that put one in the query (a form's action URL, a 307 or 308 that re-sent a
// GET's URL with a POST's body) is told so, rather than answered a report it did not ask.

const sandbox = useSandbox()
let platformToken: string
beforeAll(() => {
  platformToken = sandbox.issueToken()
})
const gw = useGateway(() => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: platformToken }))

const post = (query: string, body: Record<string, unknown>) =>
  gw.proxy.inject({ method: 'POST', url: `${REPORT_PATH}?${query}`, headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json' }, payload: body })

describe('a POST report with its body parameters in the query', () => {
  it('is told that the query does not carry dateFrom, rather than that dateFrom is missing', async () => {
    const res = await post('advertiserId=101&dateFrom=2026-11-02&dateTo=2026-11-08', { campaignIds: [101001] })
    expect(res.statusCode).toBe(400)
    expect(res.json()).toMatchObject({ code: 'GW_BAD_QUERY', message: 'dateFrom: a POST report reads it from its JSON body, not from the query (dateFrom)' })
  })

  it.each([
    ['byDate=1', 'byDate: a POST report reads it from its JSON body, not from the query (byDate)'],
    ['byCampaign=true', 'byCampaign: a POST report reads it from its JSON body, not from the query (byCampaign)'],
    ['byDate[]=1', 'byDate: a POST report reads it from its JSON body, not from the query (byDate[])'],
    ['dateTo=2026-11-09', 'dateTo: a POST report reads it from its JSON body, not from the query (dateTo)'],
  ])('with a whole body and %s in the query is refused, not answered without it: nothing reaches the platform', async (query, message) => {
    sandbox.clearRequests()
    const res = await post(query, { advertiserId: 101, campaignIds: [101001], dateFrom: '2026-11-01', dateTo: '2026-11-07' })
    expect(res.statusCode).toBe(400)
    expect(res.json()).toMatchObject({ code: 'GW_BAD_QUERY', message })
    expect(sandbox.requests.filter((r) => r.path === REPORT_PATH)).toEqual([])
  })

  it('still takes advertiserId and any other parameter in the query', async () => {
    const res = await post('advertiserId=101&currency=USD', { campaignIds: [101001], dateFrom: '2026-11-01', dateTo: '2026-11-07' })
    expect(res.statusCode).toBe(200)
  })
})

// The platform reads a POST report's input as Laravel's `$request->input()` does (query and
// body merged, the body's value winning) or, a controller reading its JSON body alone, the
// body: an advertiserId in the query that the body holds too, the same, is read as the body's
// under either. The gateway sends such a report as the body alone says it, and keeps one copy
// of it; an advertiserId in the query alone stays (a body-only reader reads it otherwise).
describe('a POST report naming its advertiserId in the query and, the same, in its body', () => {
  const body = { advertiserId: 101, campaignIds: [101001], dateFrom: '2026-10-01', dateTo: '2026-10-07' }
  it('is the report its body alone asks: one platform call, sent without the query copy, and one copy in the cache', async () => {
    sandbox.clearRequests()
    const both = await post('advertiserId=101', body)
    expect([both.statusCode, both.headers['x-cache']]).toEqual([200, 'MISS'])
    const bodyOnly = await gw.proxy.inject({ method: 'POST', url: REPORT_PATH, headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json' }, payload: body })
    expect([bodyOnly.statusCode, bodyOnly.headers['x-cache'], bodyOnly.body]).toEqual([200, 'HIT', both.body])
    const again = await post('advertiserId=101', body)
    expect([again.statusCode, again.headers['x-cache']]).toEqual([200, 'HIT'])
    const sent = sandbox.requests.filter((r) => r.path === REPORT_PATH)
    expect(sent.map((r) => [r.query, (JSON.parse(r.body) as { advertiserId?: number }).advertiserId, r.accounts])).toEqual([['', 101, [101]]])
  })

  it('in the query alone is sent on in the query, a report of its own', async () => {
    sandbox.clearRequests()
    const { advertiserId: _named, ...rest } = body
    const res = await post('advertiserId=101', { ...rest, dateTo: '2026-10-06' })
    expect([res.statusCode, res.headers['x-cache']]).toEqual([200, 'MISS'])
    const sent = sandbox.requests.filter((r) => r.path === REPORT_PATH)
    expect(sent.map((r) => [r.query, (JSON.parse(r.body) as { advertiserId?: number }).advertiserId])).toEqual([['advertiserId=101', undefined]])
  })
})

// A report POST reads a JSON object and nothing else: a body of any other type is told
// that, by one message whatever the team, not first told a form would do (the rule of a
// limited team's bodies) and then that the form is no JSON object.
describe('a POST report body that is not JSON', () => {
  const body = { advertiserId: 101, campaignIds: [101001], dateFrom: '2026-11-01', dateTo: '2026-11-07' }
  const send = (key: string, contentType: string, payload: string) =>
    gw.proxy.inject({ method: 'POST', url: REPORT_PATH, headers: { 'x-api-key': key, 'content-type': contentType }, payload })
  const form = 'advertiserId=101&campaignIds[]=101001&dateFrom=2026-11-01&dateTo=2026-11-07'

  // A string body that fetch() labels text/plain (`text/plain;charset=UTF-8`), or one sent
  // without a type, is told what to add, as curl -d's form is.
  const FETCH_STRING = ' (fetch labels a string body text/plain: add content-type: application/json)'
  it.each([
    ['a limited team', 'text/plain', KEYS.growth, JSON.stringify(body), FETCH_STRING],
    ['a limited team', 'application/x-www-form-urlencoded; charset=utf-8', KEYS.growth, form, ''],
    ['a team of every advertiser', 'text/plain', KEYS.all, JSON.stringify(body), FETCH_STRING],
    ['a team of every advertiser', 'text/plain;charset=UTF-8', KEYS.all, JSON.stringify(body), FETCH_STRING],
    ['a team of every advertiser', 'application/x-www-form-urlencoded; charset=utf-8', KEYS.all, form, ''],
  ])('from %s, sent as %s, is told the body must be application/json: nothing reaches the platform', async (_team, contentType, key, payload, hint) => {
    sandbox.clearRequests()
    const res = await send(key, contentType, payload)
    expect(res.statusCode).toBe(400)
    expect(res.json()).toMatchObject({ code: 'GW_BAD_REQUEST', message: `body: must be application/json${hint}` })
    expect(sandbox.requests.filter((r) => r.path === REPORT_PATH)).toEqual([])
  })

  // What `curl -d '{...}'` sends without `-H content-type`: JSON labelled as a form.
  it.each([
    ['a limited team', KEYS.growth],
    ['a team of every advertiser', KEYS.all],
  ])('from %s, sent as curl -d sends it (exactly application/x-www-form-urlencoded), is told how to send JSON: nothing reaches the platform', async (_team, key) => {
    sandbox.clearRequests()
    const res = await send(key, 'application/x-www-form-urlencoded', JSON.stringify(body))
    expect(res.statusCode).toBe(400)
    expect(res.json()).toMatchObject({ code: 'GW_BAD_REQUEST', message: "body: must be application/json (curl -d sends a form: add -H 'content-type: application/json')" })
    expect(sandbox.requests.filter((r) => r.path === REPORT_PATH)).toEqual([])
  })

  it('from a limited team, of a type the platform reads as JSON, is told the body must be application/json, not that a form would do', async () => {
    const res = await send(KEYS.growth, 'application/vnd.api+json', JSON.stringify(body))
    expect(res.statusCode).toBe(400)
    expect(res.json()).toMatchObject({ code: 'GW_BAD_REQUEST', message: 'body: must be application/json (with at most charset=utf-8)' })
  })

  it('as JSON that is no object is told it must be a JSON object', async () => {
    const res = await send(KEYS.growth, 'application/json', JSON.stringify([body]))
    expect(res.statusCode).toBe(400)
    expect(res.json()).toMatchObject({ code: 'GW_BAD_QUERY', message: 'body: must be a JSON object' })
  })
})
