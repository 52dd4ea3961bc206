import { describe, expect, it } from 'vitest'
import { hashApiKey } from '../../src/access/api-keys.js'
import { listen, testConfig } from '../helpers/build-gateway.js'
import { useGateways, useSandbox } from '../helpers/fixtures.js'
import { waitFor } from '../helpers/wait.js'

// Contract, "A failed report read says what it cost": the 502 of a read carries
// `platform-usage` with `fill` the platform-seconds of the read's own failed calls (0 when
// it only waited for another read's call). A read that joined another read's fill on the
// fast path (the entrance before the router) and was charged the fill's call says it, as a
// read the route joined says it.

const KEY = 'rgw_test_joined_failure_key_000000000000000'
const PATH = '/api/v1/report/campaigns/get'
const REPORT = `${PATH}?advertiserId=101&dateFrom=2026-03-01&dateTo=2026-03-10`
const TEAMS = `
teams:
  dashboard:
    keys: ["${hashApiKey(KEY)}"]
    advertisers: ["*"]
    rateLimit: { max: 100, window: 1h }
cache:
  refreshAhead: 0
`

const sandbox = useSandbox()
const gateways = useGateways()

/** The members of a `platform-usage` dictionary, as numbers. */
function usageOf(header: string | null): { fill: number; day: number } {
  expect(header, 'platform-usage').toMatch(/^fill=\d+(\.\d{1,3})?, minute=\d+\.\d{3}(, share=\d+)?, day=\d+\.\d{3}, reset=\d+$/)
  return Object.fromEntries((header as string).split(', ').map((member) => [member.split('=')[0], Number(member.split('=')[1])])) as { fill: number; day: number }
}

describe('a failed fill joined on the fast path', () => {
  it('says on each answer what that read cost: the filler its call, the joined read none, each its own rate-limit count', async () => {
    const config = testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }, TEAMS)
    const team = config.teams.find((t) => t.name === 'dashboard')!
    const gw = await listen(await gateways.build(config))
    const get = () => fetch(`${gw.url}${REPORT}`, { headers: { 'x-api-key': KEY } })
    sandbox.setRouteFailure(PATH, { kind: 'status', status: 500, times: 1 })
    expect((await get()).status).toBe(502)
    sandbox.clearRequests()
    sandbox.setLatency(300)
    sandbox.setRouteFailure(PATH, { kind: 'status', status: 500, times: 1 })
    const a = get()
    await waitFor('the fill at the platform', () => sandbox.concurrency().inFlight > 0)
    const b = get()
    await waitFor('the second read decided and joined', () => gw.rateLimiter.peek(team).remaining === 97)
    const [filler, joined] = await Promise.all([a, b])
    expect([filler.status, joined.status]).toEqual([502, 502])
    expect(sandbox.requests.filter((r) => r.path === PATH)).toHaveLength(1)
    const [own, waited] = [usageOf(filler.headers.get('platform-usage')), usageOf(joined.headers.get('platform-usage'))]
    expect(own.fill).toBeGreaterThan(0)
    expect(waited.fill).toBe(0)
    // One team: one day, which holds the one call.
    expect(waited.day).toBe(own.day)
    expect(own.day).toBeGreaterThanOrEqual(own.fill)
    expect([filler, joined].map((res) => res.headers.get('ratelimit'))).toEqual([expect.stringMatching(/r=98\b/), expect.stringMatching(/r=97\b/)])
    expect(filler.headers.get('x-request-id')).not.toBe(joined.headers.get('x-request-id'))
  })

  it("says the calls it was charged: the fill's first caller left, its later tries were sent for the joined read", async () => {
    const config = testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }, TEAMS)
    const team = config.teams.find((t) => t.name === 'dashboard')!
    const gw = await listen(await gateways.build(config))
    const get = (signal?: AbortSignal) => fetch(`${gw.url}${REPORT}`, { headers: { 'x-api-key': KEY }, ...(signal ? { signal } : {}) })
    // A URL seen before: both reads below are decided before the router, the second joins the first's fill there.
    sandbox.setRouteFailure(PATH, { kind: 'status', status: 500, times: 1 })
    expect((await get()).status).toBe(502)
    sandbox.clearRequests()
    // Every try fails (a 503 is tried again, twice), each held at the platform a while.
    sandbox.setLatency(300)
    sandbox.setRouteFailure(PATH, { kind: 'status', status: 503, times: 3 })
    const first = new AbortController()
    const a = get(first.signal).catch(() => null)
    await waitFor('the first try at the platform', () => sandbox.concurrency().inFlight > 0)
    const b = get()
    await waitFor('the second read decided and joined', () => gw.rateLimiter.peek(team).remaining === 97)
    first.abort()
    await waitFor("the first read's access line", () => gw.logs.records().some((r) => r.msg === 'request' && r.status === 499))
    expect(await a).toBeNull()
    const res = await b
    expect(res.status).toBe(502)
    expect(sandbox.requests.filter((r) => r.path === PATH)).toHaveLength(3)
    const usage = usageOf(res.headers.get('platform-usage'))
    // Its team's day holds the tries charged to it, and its fill says the same of them.
    expect(usage.fill).toBeGreaterThan(0)
    expect(usage.fill).toBeLessThanOrEqual(usage.day)
  })
})
