import { expect, it } from 'vitest'
import { KEYS, SANDBOX_TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import { ADMIN_TOKEN, call, itLoggedNoSecret, useAttackGateway } from './attack-gateway.js'

// A team reads another team's report first, then floods its own part of L1 (each team an
// even part of the replica's memory once full). `writer` shares advertiser 101 with `growth`:
// it reads growth's dashboard report before growth does (every morning, say, or right after
// each copy expires), growth's reads are hits, and writer then asks many distinct copies (a
// parameter the platform ignores). Were a copy to count on the team whose read filled it,
// room would be made from writer's part, its least recently used copy first, growth's
// dashboard: without Redis growth's next read would be a platform call charged to growth (its
// seat, its platform-seconds, its rate limit, the answer's wait) though growth is within its
// part. A copy counts on the team that read it last (MemoryStore `getSync` with the team, the
// read decision's hit): growth's hits make it growth's.
// Four teams: each an even part of cache.l1MaxBytes (512 KiB of 2 MiB); a year by date and
// campaign is about 210 KB of L1.

const sg = useAttackGateway({ yaml: `${SANDBOX_TEAMS_YAML}cache:\n  l1MaxBytes: 2MiB\n` })
const REPORT = '/api/v1/report/campaigns/get'
const DASHBOARD = `${REPORT}?advertiserId=101&dateFrom=2026-11-01&dateTo=2026-11-30&byDate=1`
const flood = (n: number): string => `${REPORT}?advertiserId=101&dateFrom=2025-12-01&dateTo=2026-11-30&byDate=1&byCampaign=1&bust=${n}`
const dashboardCalls = (): number => sg.callerRequests().filter((r) => r.query?.includes('dateFrom=2026-11-01') === true).length
const growthUsage = async (): Promise<{ cacheHits: number; platformCalls: number }> => {
  const res = await sg.gw.admin.inject({ method: 'GET', url: '/admin/usage?team=growth', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  const rows = res.json<{ usage: { cacheHits: number; platformCalls: number }[] }>().usage
  return { cacheHits: rows.reduce((n, r) => n + r.cacheHits, 0), platformCalls: rows.reduce((n, r) => n + r.platformCalls, 0) }
}

it("a team that filled another team's copy first, then floods its own part, leaves that team's copy in L1: no platform call for it", async () => {
  // The attacker (writer, advertiser 101 only) reads growth's dashboard first: the fill is writer's.
  expect((await call(sg, 'GET', DASHBOARD, { key: KEYS.writer })).status).toBe(200)
  expect(dashboardCalls()).toBe(1)
  // growth reads its dashboard: a hit on the copy, no call of its own.
  expect((await call(sg, 'GET', DASHBOARD, { key: KEYS.growth })).status).toBe(200)
  expect(dashboardCalls()).toBe(1)
  expect(await growthUsage()).toEqual({ cacheHits: 1, platformCalls: 0 })
  // writer asks twenty distinct copies of about 210 KB each: twice the whole L1, all of it
  // within writer's own scope and rate.
  for (let n = 0; n < 20; n++) expect((await call(sg, 'GET', flood(n), { key: KEYS.writer })).status).toBe(200)
  // growth, which holds nothing in L1 (far within its part), reads its dashboard again.
  const again = await call(sg, 'GET', DASHBOARD, { key: KEYS.growth })
  expect(again.status).toBe(200)
  // Expected: still a hit, no platform call for growth. On this code: a second platform call.
  expect({ dashboardCalls: dashboardCalls(), growth: await growthUsage() }).toEqual({ dashboardCalls: 1, growth: { cacheHits: 2, platformCalls: 0 } })
})

itLoggedNoSecret(sg)
