import { describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useSandbox } from '../helpers/fixtures.js'
import { waitFor } from '../helpers/wait.js'

// A purge of one advertiser is final for a POST report named by that advertiser's
// campaigns, whichever team filled it and whichever reads it: a team limited to some
// advertisers knows the owners of the campaigns it names, and its copy is indexed under
// them; an unrestricted team's read looks up no owner, and its copy is reached by the
// purge of any advertiser (its owners are not known).

const ADMIN_TOKEN = 'purge-campaign-admin-token-0123456789'

const sandbox = useSandbox()
const gateways = useGateways()

const gateway = () => gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN }))

const campaignOf = async (gw: TestGateway, advertiserId: number): Promise<number> => {
  const res = await gw.proxy.inject({ method: 'POST', url: '/api/v1/campaign/get', headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json' }, payload: { userId: advertiserId } })
  expect(res.statusCode).toBe(200)
  return (res.json() as { data: { id: number }[] }).data[0]!.id
}
const postReport = async (gw: TestGateway, key: string, campaignId: number) => {
  const res = await gw.proxy.inject({
    method: 'POST',
    url: REPORT_PATH,
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    payload: { campaignIds: [campaignId], dateFrom: '2025-03-01', dateTo: '2025-03-07' },
  })
  expect(res.statusCode, res.body).toBe(200)
  return res.headers['x-cache']
}
const purge = (gw: TestGateway, advertiserId: number) =>
  gw.admin.inject({ method: 'DELETE', url: `/admin/cache?advertiserId=${advertiserId}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })

describe('a purge of one advertiser and a POST report by its campaigns', () => {
  it('an unrestricted team\'s copy filled before the purge is not served to a team limited to that advertiser', async () => {
    const gw = await gateway()
    const campaign = await campaignOf(gw, 101)
    // Filled by `all` (every advertiser): indexed under no advertiser; `writer` (101) reads it.
    expect(await postReport(gw, KEYS.all, campaign)).toBe('MISS')
    expect(await postReport(gw, KEYS.writer, campaign)).toBe('HIT')
    const calls = sandbox.countRequests((r) => r.path === REPORT_PATH)
    expect((await purge(gw, 101)).statusCode).toBe(200)
    expect(await postReport(gw, KEYS.writer, campaign)).toBe('MISS')
    expect(sandbox.countRequests((r) => r.path === REPORT_PATH)).toBe(calls + 1)
    // Its new copy is indexed under 101: the next purge of 101 reaches it for every team.
    expect(await postReport(gw, KEYS.all, campaign)).toBe('HIT')
    expect((await purge(gw, 101)).json()).toMatchObject({ dropped: 1 })
    expect(await postReport(gw, KEYS.all, campaign)).toBe('MISS')
  })

  it('an unrestricted team\'s copy filled before the purge is not served to that team either', async () => {
    const gw = await gateway()
    const campaign = await campaignOf(gw, 101)
    expect(await postReport(gw, KEYS.all, campaign)).toBe('MISS')
    expect(await postReport(gw, KEYS.all, campaign)).toBe('HIT')
    const calls = sandbox.countRequests((r) => r.path === REPORT_PATH)
    expect((await purge(gw, 101)).json()).toMatchObject({ dropped: 1 })
    expect(await postReport(gw, KEYS.all, campaign)).toBe('MISS')
    expect(sandbox.countRequests((r) => r.path === REPORT_PATH)).toBe(calls + 1)
  })

  it('a copy of owners not known is filled again after the purge of any advertiser; one indexed under its owners is not', async () => {
    const gw = await gateway()
    const campaign = await campaignOf(gw, 101)
    expect(await postReport(gw, KEYS.all, campaign)).toBe('MISS')
    expect((await purge(gw, 102)).json()).toMatchObject({ dropped: 1 })
    // Filled again by a team limited to 101: indexed under 101 now.
    expect(await postReport(gw, KEYS.writer, campaign)).toBe('MISS')
    expect((await purge(gw, 102)).json()).toMatchObject({ dropped: 0 })
    expect(await postReport(gw, KEYS.writer, campaign)).toBe('HIT')
    expect(await postReport(gw, KEYS.all, campaign)).toBe('HIT')
  })
})

describe('a purge of one advertiser and a POST report job by its campaigns', () => {
  it('a copy filled before the purge answers no respond-async read of a team limited to it: a job is made', async () => {
    const gw = await gateway()
    const campaign = await campaignOf(gw, 101)
    expect(await postReport(gw, KEYS.all, campaign)).toBe('MISS')
    expect((await purge(gw, 101)).statusCode).toBe(200)
    const res = await gw.proxy.inject({
      method: 'POST',
      url: REPORT_PATH,
      headers: { 'x-api-key': KEYS.writer, 'content-type': 'application/json', prefer: 'respond-async' },
      payload: { campaignIds: [campaign], dateFrom: '2025-03-01', dateTo: '2025-03-07' },
    })
    expect([res.statusCode, res.headers['x-cache']], res.body).toEqual([202, undefined])
  })
})

describe('a purge while a fill of its report is at the platform', () => {
  it('the answer of a call sent before the purge is passed to its caller, not kept: the next read asks the platform', async () => {
    const gw = await gateway()
    const url = `${REPORT_PATH}?advertiserId=101&dateFrom=2025-04-01&dateTo=2025-04-07`
    const read = () => gw.proxy.inject({ method: 'GET', url, headers: { 'x-api-key': KEYS.all } })
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    const calls = sandbox.countRequests((r) => r.path === REPORT_PATH)
    const first = read()
    await waitFor('the fill at the platform', () => sandbox.concurrency().held >= 1)
    expect((await purge(gw, 101)).statusCode).toBe(200)
    sandbox.releaseHeld()
    const answered = await first
    expect([answered.statusCode, answered.headers['x-cache']]).toEqual([200, 'MISS'])
    // The platform may have read its figures before the purge: the copy is not served again.
    const next = await read()
    expect([next.statusCode, next.headers['x-cache']]).toEqual([200, 'MISS'])
    expect(sandbox.countRequests((r) => r.path === REPORT_PATH)).toBe(calls + 2)
  })
})
