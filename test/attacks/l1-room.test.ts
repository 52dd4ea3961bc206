import { expect, it } from 'vitest'
import { KEYS } from '../helpers/sandbox-gateway.js'
import { ADMIN_TOKEN, call, itLoggedNoSecret } from './attack-gateway.js'
import { REPORT, flood, floodCopy, useL1RoomGateway } from './l1-room-gateway.js'

// One team asks many distinct copies of a large report (a parameter the platform ignores,
// which the gateway keys on as it must: it cannot know the platform ignores it). Without
// Redis the replica's memory (L1) is the only cache: on main every copy pushed out the
// least recently used one, whoever's, so growth's dashboard copy was gone and its next read
// a platform call charged to growth (its seat, its platform-seconds, its rate limit).
// Four teams here: each an even part of cache.l1MaxBytes (512 KiB of 2 MiB); a year by date
// and campaign is about 210 KB of L1.

const sg = useL1RoomGateway()
const DASHBOARD = `${REPORT}?advertiserId=102&dateFrom=2026-11-01&dateTo=2026-11-30&byDate=1`
const dashboardCalls = (): number => sg.callerRequests().filter((r) => r.query?.includes('dateFrom=2026-11-01') === true).length

it("one team's many distinct copies push its own copies out of the replica's memory, never another team's within its part", async () => {
  const first = await call(sg, 'GET', DASHBOARD, { key: KEYS.growth })
  expect(first.status).toBe(200)
  expect(dashboardCalls()).toBe(1)
  // Twenty copies of about 210 KB each: twice the whole L1.
  expect(await flood(sg, KEYS.all)).toEqual(new Set([200]))
  const status = await sg.gw.admin.inject({ method: 'GET', url: '/admin/status', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  expect(status.json<{ cache: { l1: { bytes: number } } }>().cache.l1.bytes).toBeLessThanOrEqual(2 * 1024 * 1024)
  const again = await call(sg, 'GET', DASHBOARD, { key: KEYS.growth })
  expect(again.status).toBe(200)
  // Still one platform call for growth's report: its second read was a hit.
  expect(dashboardCalls()).toBe(1)
  // The flooding team's most recent copy is held; its oldest went first.
  expect((await call(sg, 'GET', floodCopy(19), { key: KEYS.all })).status).toBe(200)
  expect(sg.callerRequests().filter((r) => r.query?.includes('bust=19') === true)).toHaveLength(1)
})

itLoggedNoSecret(sg)
