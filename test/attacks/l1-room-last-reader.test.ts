import { expect, it } from 'vitest'
import { KEYS, SANDBOX_TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import { ADMIN_TOKEN, call, itLoggedNoSecret, useAttackGateway } from './attack-gateway.js'

// Attack: the L1 room's own rule turned on it. Since session 113 a copy "counts on the team
// whose read filled it, then on the team whose hit read it last" (so that a team that filled
// another's copy first cannot push it out: l1-room-borrowed.test.ts). But the last reader can
// be the attacker: `writer` shares advertiser 101 with `growth`; growth fills and reads its own
// dashboard; writer reads it once (a HIT, free: no platform call, its rate limit's one
// request), which makes the copy writer's, then at once asks many distinct copies within its
// own scope. Room is made from writer's own least recently used copies, and growth's dashboard,
// which growth filled and read, is the first to go: growth's next read is a platform call
// charged to growth (its seat, its platform-seconds, its wait). The attacker needs no timing
// beyond reading the report right before each flood.
// Contract (Additions): "One team's many distinct reports (a parameter the platform ignores,
// new date ranges) push out its own copies, never those of a team within its part (before, any
// team's: without Redis that team's next read was a platform call charged to it)". growth is
// far within its part (one small copy).

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

it("a team that reads another team's copy last, then floods its own part, leaves that team's copy in L1: no second platform call for it", async () => {
  // growth fills its dashboard and reads it: the copy is growth's on every count.
  expect((await call(sg, 'GET', DASHBOARD, { key: KEYS.growth })).status).toBe(200)
  for (let i = 0; i < 3; i++) expect((await call(sg, 'GET', DASHBOARD, { key: KEYS.growth })).status).toBe(200)
  expect(dashboardCalls()).toBe(1)
  expect(await growthUsage()).toEqual({ cacheHits: 3, platformCalls: 1 })
  // The attacker (writer, advertiser 101 only) reads it once: a HIT, which makes it writer's.
  expect((await call(sg, 'GET', DASHBOARD, { key: KEYS.writer })).status).toBe(200)
  expect(dashboardCalls()).toBe(1)
  // Then twenty distinct copies of about 210 KB each: twice the whole L1, all within writer's
  // own scope and rate.
  for (let n = 0; n < 20; n++) expect((await call(sg, 'GET', flood(n), { key: KEYS.writer })).status).toBe(200)
  // growth, which holds nothing in L1 but its dashboard (far within its part), reads it again.
  expect((await call(sg, 'GET', DASHBOARD, { key: KEYS.growth })).status).toBe(200)
  // Expected: still a hit, no second platform call for growth. On this code: a second platform call, growth's.
  expect({ dashboardCalls: dashboardCalls(), growth: await growthUsage() }).toEqual({ dashboardCalls: 1, growth: { cacheHits: 4, platformCalls: 1 } })
})

itLoggedNoSecret(sg)
