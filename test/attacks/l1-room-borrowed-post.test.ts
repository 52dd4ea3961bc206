import { expect, it } from 'vitest'
import { KEYS, SANDBOX_TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import { ADMIN_TOKEN, call, itLoggedNoSecret, useAttackGateway } from './attack-gateway.js'

// Attack: the borrowed-copy push-out of L1 (test/attacks/l1-room-borrowed.test.ts, fixed in
// session 113 for the GET form) through the report's older POST form. `writer` shares
// advertiser 101 with `growth`: it asks growth's dashboard report (the POST form, campaigns of
// 101) before growth does, so the copy counts on writer. growth's hits of it are POST reads,
// which take the route's ReportCache.read → TieredStore.lookup → MemoryStore.getSync(key) with
// no team: the copy never becomes growth's ("a copy counts ... then on the team whose hit read
// it last"). writer then asks many distinct copies within its own scope, room is made from its
// own least recently used copies, and growth's dashboard goes: without Redis, growth's next
// read is a platform call charged to growth (its seat, its platform-seconds, its wait).
// Contract (Additions): "a copy counts on the team whose read filled it, then on the team whose
// hit read it last ... One team's many distinct reports ... push out its own copies, never
// those of a team within its part (before, any team's: without Redis that team's next read was
// a platform call charged to it)". The POST form is a report read like the GET one (Reports).

const sg = useAttackGateway({ yaml: `${SANDBOX_TEAMS_YAML}cache:\n  l1MaxBytes: 2MiB\n` })
const REPORT = '/api/v1/report/campaigns/get'
const DASHBOARD = { campaignIds: [101001, 101002], dateFrom: '2026-11-01', dateTo: '2026-11-30', byDate: true }
const flood = (n: number): string => `${REPORT}?advertiserId=101&dateFrom=2025-12-01&dateTo=2026-11-30&byDate=1&byCampaign=1&bust=${n}`
const dashboardCalls = (): number => sg.callerRequests().filter((r) => r.method === 'POST' && r.path === REPORT).length
const growthUsage = async (): Promise<{ cacheHits: number; platformCalls: number }> => {
  const res = await sg.gw.admin.inject({ method: 'GET', url: '/admin/usage?team=growth', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  const rows = res.json<{ usage: { cacheHits: number; platformCalls: number }[] }>().usage
  return { cacheHits: rows.reduce((n, r) => n + r.cacheHits, 0), platformCalls: rows.reduce((n, r) => n + r.platformCalls, 0) }
}

it("a team that filled another team's copy first (POST form), then floods its own part, leaves that team's copy in L1: no platform call for it", async () => {
  // The attacker (writer, advertiser 101 only) asks growth's dashboard first: the fill is writer's.
  expect((await call(sg, 'POST', REPORT, { key: KEYS.writer, json: DASHBOARD })).status).toBe(200)
  expect(dashboardCalls()).toBe(1)
  // growth reads its dashboard, as it always does (the POST form): hits on the copy.
  for (let i = 0; i < 3; i++) expect((await call(sg, 'POST', REPORT, { key: KEYS.growth, json: DASHBOARD })).status).toBe(200)
  expect(dashboardCalls()).toBe(1)
  expect(await growthUsage()).toEqual({ cacheHits: 3, platformCalls: 0 })
  // writer asks twenty distinct copies of about 210 KB each: twice the whole L1, all of it
  // within writer's own scope and rate.
  for (let n = 0; n < 20; n++) expect((await call(sg, 'GET', flood(n), { key: KEYS.writer })).status).toBe(200)
  // growth, which holds nothing in L1 but its dashboard (far within its part), reads it again.
  expect((await call(sg, 'POST', REPORT, { key: KEYS.growth, json: DASHBOARD })).status).toBe(200)
  // Expected: still a hit, no platform call for growth. On this code: a second platform call, growth's.
  expect({ dashboardCalls: dashboardCalls(), growth: await growthUsage() }).toEqual({ dashboardCalls: 1, growth: { cacheHits: 4, platformCalls: 0 } })
})

itLoggedNoSecret(sg)
