import { expect, it } from 'vitest'
import { KEYS, REPORT_PATH } from '../helpers/build-gateway.js'
import { POPULAR_AT_MS, usePopularReport } from '../helpers/popular-report.js'
import { waitFor } from '../helpers/wait.js'

// Attack: the refresh-ahead watches' own rule turned on it. Since session 113 "a watch counts on
// the team that asked it last" (so that a team that began another's watch cannot push it out:
// test/slow/watch-room-borrowed.test.ts). But the last asker can be the attacker: `writer`
// (advertiser 101 only, no rate limit) shares advertiser 101 with `growth`; growth fills its
// dashboard and asks it 14 times (popular: a refresh ahead is due before its freshness ends).
// writer asks it once (a HIT: no platform call, one request of a rate limit it has not got),
// which makes the watch writer's, then at once misses 700 long URLs of its own advertiser. Room
// is made from writer's own least recently asked watches, growth's among them: growth's
// popular report is not refreshed ahead, and its first read after the freshness is no HIT.
// Contract (Additions): "The refresh-ahead watches of a replica (16 MiB) give each configured
// team an even part once full: one team's many misses (long URLs included) push out its own
// watches, never the watch of a popular report of a team within its part". Contract,
// Reports: a report expected to be asked at least twice in one freshness "stays a HIT while
// popular".

const FRESH_S = 60
const FLOOD = 700
const LONG = 'x'.repeat(14_000)
const DASHBOARD = `${REPORT_PATH}?advertiserId=101&byDate=1&dateFrom=2026-01-01&dateTo=2026-01-07`

const popularReport = usePopularReport(FRESH_S)

it("a team that asks another team's popular report last, then floods its own watches, leaves that report refreshed ahead", async () => {
  // growth fills its dashboard (the MISS that begins its watch) and makes it popular.
  const { clock, ask, refreshes } = await popularReport({ report: DASHBOARD, filler: KEYS.growth })
  // writer asks it once: a HIT.
  expect(await ask(DASHBOARD, KEYS.writer)).toBe('HIT')
  // writer: misses of distinct long URLs of its own advertiser (a parameter the platform ignores), each watched.
  for (let n = 0; n < FLOOD; n++) expect(await ask(`${REPORT_PATH}?advertiserId=101&dateFrom=2026-02-01&dateTo=2026-02-07&bust=${n}${LONG}`, KEYS.writer)).toBe('MISS')
  // The refresh ahead is due before the freshness ends: its timer runs within this advance (fake clock, synchronous).
  clock.advance(FRESH_S * 1000 - POPULAR_AT_MS - 1)
  const started = await refreshes('started')
  if (started === 1) await waitFor("the refresh ahead of growth's report", async () => (await refreshes('completed')) === 1)
  clock.advance(2)
  // Expected: refreshed ahead, growth's read a HIT. On this code: no refresh ahead started.
  expect({ refreshAheadStarted: started, growthRead: await ask(DASHBOARD, KEYS.growth) }).toEqual({ refreshAheadStarted: 1, growthRead: 'HIT' })
}, 180_000)
