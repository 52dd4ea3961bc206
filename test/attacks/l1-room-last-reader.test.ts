import { expect, it } from 'vitest'
import { KEYS } from '../helpers/sandbox-gateway.js'
import { call, itLoggedNoSecret } from './attack-gateway.js'
import { REPORT, flood, growthUsage, useL1RoomGateway } from './l1-room-gateway.js'

// Attack: the last reader's rule turned on it. In session 113 a copy counted on "the team whose
// read filled it, then on the team whose hit read it last" (so that a team that filled another's
// copy first could not push it out: l1-room-borrowed.test.ts). But the last reader can be the
// attacker: growth fills and reads its own dashboard; writer reads it once (a HIT, free: no
// platform call, its rate limit's one request), which made the copy writer's, then at once asks
// many distinct copies within its own scope. Room was made from writer's own least recently used
// copies, growth's dashboard first: growth's next read a platform call charged to growth.
// Contract (Additions): one team's many distinct reports "push out its own copies, never those
// of a team within its part". growth is far within its part (one small copy).

const sg = useL1RoomGateway()
const DASHBOARD = `${REPORT}?advertiserId=101&dateFrom=2026-11-01&dateTo=2026-11-30&byDate=1`
const dashboardCalls = (): number => sg.callerRequests().filter((r) => r.query?.includes('dateFrom=2026-11-01') === true).length

it("a team that reads another team's copy last, then floods its own part, leaves that team's copy in L1: no second platform call for it", async () => {
  // growth fills its dashboard and reads it.
  for (let i = 0; i < 4; i++) expect((await call(sg, 'GET', DASHBOARD, { key: KEYS.growth })).status).toBe(200)
  expect(dashboardCalls()).toBe(1)
  expect(await growthUsage(sg)).toEqual({ cacheHits: 3, platformCalls: 1 })
  // The attacker (writer, advertiser 101 only) reads it once, a HIT, then floods.
  expect((await call(sg, 'GET', DASHBOARD, { key: KEYS.writer })).status).toBe(200)
  expect(await flood(sg)).toEqual(new Set([200]))
  // growth reads its dashboard again: still a hit, no second platform call.
  expect((await call(sg, 'GET', DASHBOARD, { key: KEYS.growth })).status).toBe(200)
  expect({ dashboardCalls: dashboardCalls(), growth: await growthUsage(sg) }).toEqual({ dashboardCalls: 1, growth: { cacheHits: 4, platformCalls: 1 } })
})

itLoggedNoSecret(sg)
