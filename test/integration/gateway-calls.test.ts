import { describe, expect, it } from 'vitest'
import { KEYS, TEAMS_YAML, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useSandbox } from '../helpers/fixtures.js'
import { waitFor } from '../helpers/wait.js'
import { seatsOf } from '../helpers/governors.js'
import type { SandboxRequestRecord } from '../../src/sandbox/sandbox.js'

// The calls the gateway makes on its own behalf (ownership lookups, the
// token probe) count under the team `(gateway)`, in usage and in the governor's seats,
// never under the team whose call caused them. A list loaded again because a team named an
// id it lacks is that team's call (test/attacks/ownership-reloads.test.ts).

const ADMIN_TOKEN = 'gateway-calls-admin-token-000000'
const GATEWAY = '(gateway)'
// Owned by advertiser 101 in the sandbox; a scoped team naming it makes the gateway look up its owner.
const CAMPAIGN = '/api/v1/campaign/101001?userId=101'
const GUARDED = '/api/v1/campaign/guarded'
// No campaign of 101's; naming it reloads the team's lists (at once: refreshMinInterval 0s).
const UNOWNED = '/api/v1/campaign/101999?userId=101'
// The path of the ownership lookups' lists and of the token probe (ownership.listPath, platform.probe).
const LISTS = '/api/v1/campaign/get'

const sandbox = useSandbox()
const gateways = useGateways()

function gateway(yaml = TEAMS_YAML): Promise<TestGateway> {
  return gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN }, yaml))
}
const RELOADING = `ownership:\n  refreshMinInterval: 0s\n${TEAMS_YAML}`

/**
 * Runs `look` while the platform holds the calls to LISTS (the lookups' lists, the probe): it
 * sees their seats taken. Once it ends, whatever happens, the held calls go on and no more are held.
 */
async function holdingLists<T>(look: () => Promise<T>): Promise<T> {
  sandbox.setRouteFailure(LISTS, { kind: 'held' })
  try {
    return await look()
  } finally {
    sandbox.clearRouteFailures()
    sandbox.releaseHeld()
  }
}

function get(gw: TestGateway, url: string, key: string) {
  return gw.proxy.inject({ method: 'GET', url, headers: { 'x-api-key': key } })
}

interface Row { team: string; platformCalls: number; requests: number; platformSeconds: number }

async function usage(gw: TestGateway, team?: string): Promise<Record<string, Row>> {
  const query = team === undefined ? '' : `?team=${encodeURIComponent(team)}`
  const res = await gw.admin.inject({ method: 'GET', url: `/admin/usage${query}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  expect(res.statusCode).toBe(200)
  const rows = (res.json() as { usage: Row[] }).usage
  return Object.fromEntries(rows.map((r) => [r.team, r]))
}

const requestId = (r: SandboxRequestRecord) => String(r.headers['x-request-id'])
const isLookup = (r: SandboxRequestRecord) => requestId(r).startsWith('ownership-')
const isProbe = (r: SandboxRequestRecord) => requestId(r).startsWith('token-probe-')

describe('the gateway\'s own calls in usage', () => {
  it('ownership lookups count under (gateway), not under the team that named the campaign', async () => {
    const gw = await gateway()
    const res = await get(gw, CAMPAIGN, KEYS.growth)
    expect([200, 404]).toContain(res.statusCode)
    const lookups = sandbox.requests.filter(isLookup).length
    // One list per advertiser of the team (101 and 102).
    expect(lookups).toBe(2)
    const rows = await usage(gw)
    // Its own proxied call only.
    expect(rows.growth).toMatchObject({ requests: 1, platformCalls: 1 })
    // The lookups and the start's token probe; the gateway answers no request of its own.
    expect(rows[GATEWAY]).toMatchObject({ requests: 0, platformCalls: lookups + sandbox.requests.filter(isProbe).length })
    expect(Object.values(rows).reduce((n, r) => n + r.platformCalls, 0)).toBe(sandbox.requests.length)
    // GET /admin/usage?team=(gateway) reads its row alone.
    expect(Object.keys(await usage(gw, GATEWAY))).toEqual([GATEWAY])
  })

  it('the (gateway) row carries every field of a team\'s row, each at zero but its platform calls (their seat-time counts in no day)', async () => {
    const gw = await gateway()
    sandbox.setLatency(30)
    expect([200, 404]).toContain((await get(gw, CAMPAIGN, KEYS.growth)).statusCode)
    const res = await gw.admin.inject({ method: 'GET', url: `/admin/usage?team=${encodeURIComponent(GATEWAY)}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    const [row] = (res.json() as { usage: Record<string, unknown>[] }).usage
    const teamRow = (await usage(gw)).growth as unknown as Record<string, unknown>
    expect(Object.keys(row ?? {}).sort()).toEqual(Object.keys(teamRow).sort())
    // The two lookups held seats 30 ms each at least; their seat-time is no team's, and no (gateway) day's either.
    expect(row).toEqual({ day: expect.any(String), team: GATEWAY, requests: 0, cacheHits: 0, platformCalls: sandbox.requests.filter((r) => isLookup(r) || isProbe(r)).length, bytes: 0, rateLimited: 0, errors: 0, platformCallsSaved: 0, platformSeconds: 0 })
  })

  it('a list loaded again for an id it lacks counts under the team that named the id', async () => {
    const gw = await gateway(RELOADING)
    sandbox.setLatency(30)
    const res = await get(gw, UNOWNED, KEYS.growth)
    expect(res.json()).toMatchObject({ code: 'GW_FORBIDDEN' })
    // Each of the team's two lists loaded, then loaded again.
    expect(sandbox.requests.filter(isLookup).length).toBe(4)
    const rows = await usage(gw)
    expect(rows.growth).toMatchObject({ requests: 1, platformCalls: 2 })
    // Their seat-time counts in the team's day (platformSecondsPerDay), 30 ms each at least.
    expect(rows.growth?.platformSeconds).toBeGreaterThanOrEqual(0.06)
    expect(rows[GATEWAY]).toMatchObject({ platformCalls: 2 + sandbox.requests.filter(isProbe).length })
  })

  it('the probe call after a platform 401 counts under (gateway), not under the team whose call got the 401', async () => {
    const gw = await gateway()
    const atStart = sandbox.requests.filter(isProbe).length
    sandbox.setRouteFailure(GUARDED, { kind: 'status', status: 401 })
    const res = await get(gw, `${GUARDED}?advertiserId=101`, KEYS.all)
    expect(res.json()).toMatchObject({ code: 'GW_PLATFORM_REFUSED' })
    expect(sandbox.requests.filter(isProbe).length).toBe(atStart + 1)
    const rows = await usage(gw)
    expect(rows.all).toMatchObject({ requests: 1, platformCalls: 1 })
    expect(rows[GATEWAY]).toMatchObject({ platformCalls: atStart + 1 })
  })
})

describe('the gateway\'s own calls in the governor', () => {
  it('takes a seat under (gateway) for an ownership lookup and for the probe call', async () => {
    const gw = await gateway()
    const governor = seatsOf(gw)
    const lookedUp = await holdingLists(async () => {
      const answer = get(gw, CAMPAIGN, KEYS.growth)
      await waitFor('the ownership lookups at the platform', () => governor.running(GATEWAY) > 0 && sandbox.concurrency().held > 0)
      expect(governor.running('growth')).toBe(0)
      return { answer }
    })
    await lookedUp.answer
    await waitFor('the seats free', () => governor.inFlight === 0)

    sandbox.setRouteFailure(GUARDED, { kind: 'status', status: 401 })
    const refused = await holdingLists(async () => {
      const answer = get(gw, `${GUARDED}?advertiserId=101`, KEYS.all)
      await waitFor('the probe call at the platform', () => governor.running(GATEWAY) === 1 && sandbox.concurrency().held === 1 && governor.running('all') === 0)
      return { answer }
    })
    expect((await refused.answer).json()).toMatchObject({ code: 'GW_PLATFORM_REFUSED' })
  })

  it('takes the team\'s seat for a list loaded again for an id the team named', async () => {
    const gw = await gateway(RELOADING)
    const governor = seatsOf(gw)
    // The lists' first load.
    expect([200, 404]).toContain((await get(gw, CAMPAIGN, KEYS.growth)).statusCode)
    const reloaded = await holdingLists(async () => {
      const answer = get(gw, UNOWNED, KEYS.growth)
      await waitFor('the reloads at the platform', () => governor.running('growth') > 0 && sandbox.concurrency().held > 0)
      expect(governor.running(GATEWAY)).toBe(0)
      return { answer }
    })
    expect((await reloaded.answer).json()).toMatchObject({ code: 'GW_FORBIDDEN' })
  })
})
