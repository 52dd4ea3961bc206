import { expect, it } from 'vitest'
import { KEYS } from '../helpers/sandbox-gateway.js'
import { call, itLoggedNoSecret } from './attack-gateway.js'
import { REPORT, flood, growthUsage, useL1RoomGateway } from './l1-room-gateway.js'

// A team reads another team's report first, then floods its own part of L1 (each team an
// even part of the replica's memory once full). `writer` reads growth's dashboard report before
// growth does (every morning, say, or right after each copy expires), growth's reads are hits,
// and writer then asks many distinct copies (a parameter the platform ignores). Were a copy to
// count on the team whose read filled it, room would be made from writer's part, its least
// recently used copy first, growth's dashboard: without Redis growth's next read would be a
// platform call charged to growth (its seat, its platform-seconds, its rate limit, the answer's
// wait) though growth is within its part. A copy counts on every team that read it (MemoryStore
// `getSync` with the team): growth's hits make growth hold it.

const sg = useL1RoomGateway()
const DASHBOARD = `${REPORT}?advertiserId=101&dateFrom=2026-11-01&dateTo=2026-11-30&byDate=1`
const dashboardCalls = (): number => sg.callerRequests().filter((r) => r.query?.includes('dateFrom=2026-11-01') === true).length

it("a team that filled another team's copy first, then floods its own part, leaves that team's copy in L1: no platform call for it", async () => {
  // The attacker (writer, advertiser 101 only) reads growth's dashboard first: the fill is writer's.
  expect((await call(sg, 'GET', DASHBOARD, { key: KEYS.writer })).status).toBe(200)
  expect(dashboardCalls()).toBe(1)
  // growth reads its dashboard: a hit on the copy, no call of its own.
  expect((await call(sg, 'GET', DASHBOARD, { key: KEYS.growth })).status).toBe(200)
  expect(dashboardCalls()).toBe(1)
  expect(await growthUsage(sg)).toEqual({ cacheHits: 1, platformCalls: 0 })
  expect(await flood(sg)).toEqual(new Set([200]))
  // growth, which holds nothing in L1 (far within its part), reads its dashboard again: still a hit.
  expect((await call(sg, 'GET', DASHBOARD, { key: KEYS.growth })).status).toBe(200)
  expect({ dashboardCalls: dashboardCalls(), growth: await growthUsage(sg) }).toEqual({ dashboardCalls: 1, growth: { cacheHits: 2, platformCalls: 0 } })
})

itLoggedNoSecret(sg)
