import { expect, it } from 'vitest'
import { KEYS, REPORT_PATH } from '../helpers/build-gateway.js'
import { POPULAR_AT_MS, usePopularReport } from '../helpers/popular-report.js'
import { waitFor } from '../helpers/wait.js'

// A team asks another team's popular report first, then floods its own part of the
// refresh-ahead watches (16 MiB, report-cache.ts WATCHED_BYTES, each configured team an even
// part once full). `writer` (advertiser 101 only, no rate limit) shares advertiser 101 with
// `growth`: it reads growth's dashboard report when its copy is new (the MISS that fills it
// and begins its watch); growth then asks it 14 times, all hits, making it popular. writer's
// 700 misses of long URLs fill its own part. Were a watch to count on the team whose ask began
// it, room would be made from writer's least recently asked watches, growth's among them, and
// growth's report not refreshed ahead (its first read after the freshness STALE, a platform
// call on its own path). A watch counts on the team that asked it last (team-parts-lru.ts
// `get` with a team): growth's asks make it growth's.

const FRESH_S = 60
const FLOOD = 700
const LONG = 'x'.repeat(14_000)
const DASHBOARD = `${REPORT_PATH}?advertiserId=101&byDate=1&dateFrom=2026-01-01&dateTo=2026-01-07`

const popularReport = usePopularReport(FRESH_S)

it("a team that asked another team's popular report first, then floods its own watches, leaves that report refreshed ahead", async () => {
  // writer asks growth's dashboard first (the MISS that begins its watch); growth makes it popular.
  const { clock, ask, refreshes } = await popularReport({ report: DASHBOARD, filler: KEYS.writer })
  // writer: misses of distinct long URLs of its own advertiser (a parameter the platform ignores), each watched.
  for (let n = 0; n < FLOOD; n++) expect(await ask(`${REPORT_PATH}?advertiserId=101&dateFrom=2026-02-01&dateTo=2026-02-07&bust=${n}${LONG}`, KEYS.writer)).toBe('MISS')
  // The refresh ahead is due before the freshness ends: its timer runs within this advance (fake clock, synchronous).
  clock.advance(FRESH_S * 1000 - POPULAR_AT_MS - 1)
  const started = await refreshes('started')
  if (started === 1) await waitFor("the refresh ahead of growth's report", async () => (await refreshes('completed')) === 1)
  clock.advance(2)
  expect({ refreshAheadStarted: started, growthRead: await ask(DASHBOARD, KEYS.growth) }).toEqual({ refreshAheadStarted: 1, growthRead: 'HIT' })
}, 180_000)
