import { expect, it } from 'vitest'
import { KEYS, REPORT_PATH } from '../helpers/build-gateway.js'
import { POPULAR_AT_MS, POPULAR_REPORT, usePopularReport } from '../helpers/popular-report.js'
import { waitFor } from '../helpers/wait.js'

// A replica watches the reports asked for refresh ahead in 16 MiB (report-cache.ts
// WATCHED_BYTES), a watch as big as its URL. One team's misses with long URLs (14 KB each,
// within the 16 KiB head Node reads), one watch each, would push out another team's watch of
// its popular report, least recently asked first, were the watches one LRU of every team's:
// that report would not be refreshed ahead, and its team's next read after the freshness would be STALE,
// its refresh a platform wait it would not have alone. Each configured team has an even part
// of the watches once they are full, a watch counting on the team whose ask began it.

const FRESH_S = 60
// Misses of URLs of 14 KB: their watches, about 30 KB each, fill the 16 MiB more than once.
const FLOOD = 700
const LONG = 'x'.repeat(14_000)

const popularReport = usePopularReport(FRESH_S)

it("one team's many long misses leave another team's popular report refreshed ahead", async () => {
  const { clock, ask, refreshes } = await popularReport()
  // all: misses of distinct long URLs (a parameter the platform ignores), each watched.
  for (let n = 0; n < FLOOD; n++) expect(await ask(`${REPORT_PATH}?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-07&bust=${n}${LONG}`, KEYS.all)).toBe('MISS')
  clock.advance(FRESH_S * 1000 - POPULAR_AT_MS - 1)
  await waitFor('the refresh ahead of growth\'s report', async () => (await refreshes('completed')) === 1, 15_000)
  clock.advance(2)
  expect(await ask(POPULAR_REPORT, KEYS.growth)).toBe('HIT')
}, 180_000)
