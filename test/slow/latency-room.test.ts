import { expect, it } from 'vitest'
import { KEYS } from '../helpers/build-gateway.js'
import { askShapes, POPULAR_AT_MS, POPULAR_REPORT, usePopularReport } from '../helpers/popular-report.js'
import { waitFor } from '../helpers/wait.js'
import { LEAD_MARGIN_MS, UNKNOWN_LEAD_SHARE } from '../../src/reports/refresh-ahead.js'
import { LATENCY_CLASSES } from '../../src/reports/report-cache.js'

// A replica keeps the latency of LATENCY_CLASSES work classes (report-cache.ts), by which a
// popular report's refresh ahead is timed: a class without one is led by a fifth of the
// freshness (UNKNOWN_LEAD_SHARE). One team's misses of that many report shapes (a page size
// and a page, each a class of its own: access/page-class.ts) would push out another team's
// class, least recently taught first, were the classes one LRU of every team's: that team's
// popular report would then be refreshed a fifth of its freshness early, a platform call per
// copy spent on 12 s of its 60. Each configured team has an even part of the classes once
// they are full, a class counting on the team whose call first taught it (the flooding team's
// call of the same class does not make it its own).

const FRESH_S = 60

const popularReport = usePopularReport(FRESH_S)

it("one team's many report shapes leave another team's class latency: its popular report is refreshed ahead as late as before", async () => {
  // growth's miss teaches its report's class (no time on the gateway's clock: a lead of LEAD_MARGIN_MS).
  const { clock, ask, refreshes } = await popularReport()
  // all: a report of growth's shape (its class, another advertiser), then a shape of its own per page size × page (2^i rows, page 2^j), every one a miss answered.
  expect(await ask(POPULAR_REPORT.replace('advertiserId=102', 'advertiserId=101'), KEYS.all)).toBe('MISS')
  await askShapes(ask, KEYS.all, LATENCY_CLASSES + 8)
  // growth's next ask reads its refresh's start again, with the latency its class has now.
  expect(await ask(POPULAR_REPORT, KEYS.growth)).toBe('HIT')
  clock.advance(FRESH_S * 1000 * (1 - UNKNOWN_LEAD_SHARE) - POPULAR_AT_MS + 1)
  expect(await refreshes('started')).toBe(0)
  clock.advance(FRESH_S * 1000 * UNKNOWN_LEAD_SHARE - LEAD_MARGIN_MS)
  expect(await refreshes('started')).toBe(1)
  await waitFor("the refresh ahead of growth's report", async () => (await refreshes('completed')) === 1, 15_000)
  clock.advance(LEAD_MARGIN_MS)
  expect(await ask(POPULAR_REPORT, KEYS.growth)).toBe('HIT')
}, 180_000)
