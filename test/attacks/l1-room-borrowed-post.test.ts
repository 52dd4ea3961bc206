import { expect, it } from 'vitest'
import { KEYS } from '../helpers/sandbox-gateway.js'
import { call, itLoggedNoSecret } from './attack-gateway.js'
import { REPORT, flood, growthUsage, useL1RoomGateway } from './l1-room-gateway.js'

// Attack: the borrowed copy (l1-room-borrowed.test.ts) through the report's POST form. writer
// asks growth's dashboard report (the POST form, campaigns of 101) before growth does, so the
// fill is writer's. growth's hits of it were POST reads, which took the route's lookup
// (ReportCache.read → TieredStore.lookup → MemoryStore.getSync) with no team: growth never held
// the copy, and writer's flood pushed it out. Every read passes its team now, POST as GET.
// Contract (Reports): the POST form is a report read like the GET one; (Additions) one team's
// many distinct reports push out its own copies, never those of a team within its part.

const sg = useL1RoomGateway()
const DASHBOARD = { campaignIds: [101001, 101002], dateFrom: '2026-11-01', dateTo: '2026-11-30', byDate: true }
const dashboardCalls = (): number => sg.callerRequests().filter((r) => r.method === 'POST' && r.path === REPORT).length

it("a team that filled another team's copy first (POST form), then floods its own part, leaves that team's copy in L1: no platform call for it", async () => {
  expect((await call(sg, 'POST', REPORT, { key: KEYS.writer, json: DASHBOARD })).status).toBe(200)
  expect(dashboardCalls()).toBe(1)
  for (let i = 0; i < 3; i++) expect((await call(sg, 'POST', REPORT, { key: KEYS.growth, json: DASHBOARD })).status).toBe(200)
  expect(dashboardCalls()).toBe(1)
  expect(await growthUsage(sg)).toEqual({ cacheHits: 3, platformCalls: 0 })
  expect(await flood(sg)).toEqual(new Set([200]))
  // growth, which holds nothing in L1 but its dashboard (far within its part), reads it again: still a hit.
  expect((await call(sg, 'POST', REPORT, { key: KEYS.growth, json: DASHBOARD })).status).toBe(200)
  expect({ dashboardCalls: dashboardCalls(), growth: await growthUsage(sg) }).toEqual({ dashboardCalls: 1, growth: { cacheHits: 4, platformCalls: 0 } })
})

itLoggedNoSecret(sg)
