import { expect, it } from 'vitest'
import { KEYS } from '../helpers/build-gateway.js'
import { askShapes, POPULAR_AT_MS, POPULAR_REPORT, usePopularReport } from '../helpers/popular-report.js'
import { UNKNOWN_LEAD_SHARE } from '../../src/reports/refresh-ahead.js'
import { LATENCY_CLASSES } from '../../src/reports/report-cache.js'

// A team teaches another team's work class first, on its own advertiser, then floods the
// class latencies of refresh ahead (LATENCY_CLASSES a replica). A class is a report's shape,
// not its account: `writer` (advertiser 101 only) asks one report of the shape of growth's
// dashboard on 101 before growth's first call of it (after a deploy, say), then 520 report
// shapes of its own (page size × page). Were a class to count on the team whose call first
// taught it, growth's calls of it would stay on writer's part and go with writer's flood, and
// growth's popular report be led by a fifth of its freshness (UNKNOWN_LEAD_SHARE): a platform
// call charged to growth per copy, 12 s of 60 early. Each team keeps its own classes' latencies
// (reports/class-latencies.ts), in its own part, whoever else calls the class.

const FRESH_S = 60

const popularReport = usePopularReport(FRESH_S)

it("a team that taught another team's work class first, then floods its own classes, leaves that team's popular report refreshed ahead as late as before", async () => {
  // writer: one report of growth's shape on its own advertiser, before growth's first call of it.
  const before = async (ask: (url: string, key: string) => Promise<unknown>): Promise<void> => expect(await ask(POPULAR_REPORT.replace('advertiserId=102', 'advertiserId=101'), KEYS.writer)).toBe('MISS')
  const { clock, ask, refreshes } = await popularReport({ before })
  // writer: a shape of its own per page size × page, as latency-room.test.ts's flood.
  await askShapes(ask, KEYS.writer, LATENCY_CLASSES + 8)
  // growth's next ask reads its refresh's start again, with the latency its class has now.
  expect(await ask(POPULAR_REPORT, KEYS.growth)).toBe('HIT')
  // Just past the point a fifth of the freshness before its end: the refresh ahead must not have started yet.
  clock.advance(FRESH_S * 1000 * (1 - UNKNOWN_LEAD_SHARE) - POPULAR_AT_MS + 1)
  expect({ refreshesAheadStartedWithAFifthOfTheFreshnessLeft: await refreshes('started') }).toEqual({ refreshesAheadStartedWithAFifthOfTheFreshnessLeft: 0 })
}, 180_000)
