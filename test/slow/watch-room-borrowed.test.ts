import { expect, it } from 'vitest'
import { KEYS, REPORT_PATH } from '../helpers/build-gateway.js'
import { POPULAR_AT_MS, usePopularReport } from '../helpers/popular-report.js'
import { waitFor } from '../helpers/wait.js'

// A team asks another team's popular report, first or last, then floods its own part of the
// refresh-ahead watches (16 MiB, report-cache.ts WATCHED_BYTES, each configured team an even
// part once full). `writer` (advertiser 101 only, no rate limit) shares advertiser 101 with
// `growth`, which asks its dashboard report 14 times in a freshness (popular: a refresh ahead is
// due before it expires); writer's 700 misses of long URLs fill its own part. Were a watch to
// count on one team, the first asker's (before session 113) or the last asker's (session 113),
// writer would make it its own by asking first or last, room would be made from writer's least
// recently asked watches, growth's among them, and growth's report not refreshed ahead (its
// first read after the freshness STALE, a platform call on its own path). A watch counts on
// every team that asked it (team-parts-lru.ts): writer lets go of it, growth still holds it.
// Contract (Additions): "never the watch of a popular report of a team within its part"; Reports:
// a popular report "stays a HIT while popular".

const FRESH_S = 60
const FLOOD = 700
const LONG = 'x'.repeat(14_000)
const DASHBOARD = `${REPORT_PATH}?advertiserId=101&byDate=1&dateFrom=2026-01-01&dateTo=2026-01-07`

const popularReport = usePopularReport(FRESH_S)

/** writer floods its own watches; then, past the freshness, whether growth's report was refreshed ahead and how growth's read is answered. */
async function afterFlood({ clock, ask, refreshes }: Awaited<ReturnType<typeof popularReport>>) {
  // writer: misses of distinct long URLs of its own advertiser (a parameter the platform ignores), each watched.
  for (let n = 0; n < FLOOD; n++) expect(await ask(`${REPORT_PATH}?advertiserId=101&dateFrom=2026-02-01&dateTo=2026-02-07&bust=${n}${LONG}`, KEYS.writer)).toBe('MISS')
  // The refresh ahead is due before the freshness ends: its timer runs within this advance (fake clock, synchronous).
  clock.advance(FRESH_S * 1000 - POPULAR_AT_MS - 1)
  const started = await refreshes('started')
  if (started === 1) await waitFor("the refresh ahead of growth's report", async () => (await refreshes('completed')) === 1)
  clock.advance(2)
  return { refreshAheadStarted: started, growthRead: await ask(DASHBOARD, KEYS.growth) }
}

it("a team that asked another team's popular report first, then floods its own watches, leaves that report refreshed ahead", async () => {
  // writer asks growth's dashboard first (the MISS that begins its watch); growth makes it popular.
  const popular = await popularReport({ report: DASHBOARD, filler: KEYS.writer })
  expect(await afterFlood(popular)).toEqual({ refreshAheadStarted: 1, growthRead: 'HIT' })
}, 180_000)

it("a team that asks another team's popular report last, then floods its own watches, leaves that report refreshed ahead", async () => {
  // growth fills its dashboard and makes it popular; writer asks it once after (a HIT).
  const popular = await popularReport({ report: DASHBOARD, filler: KEYS.growth })
  expect(await popular.ask(DASHBOARD, KEYS.writer)).toBe('HIT')
  expect(await afterFlood(popular)).toEqual({ refreshAheadStarted: 1, growthRead: 'HIT' })
}, 180_000)
