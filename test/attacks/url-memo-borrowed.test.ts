import { expect, it } from 'vitest'
import { KNOWN_URL_BYTES } from '../../src/access/known-urls.js'
import { KEYS, TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import { REPORT_DATES, itLoggedNoSecret, useAttackGateway } from './attack-gateway.js'

// Attack: the borrowed-entry push-out (fixed for L1 copies, refresh-ahead watches and work-class
// latencies in session 113) on the memo of URLs (access/known-urls.ts). `writer` shares
// advertiser 101 with `growth`: it calls growth's dashboard URL before growth does (every
// morning, say), so the memo entry of that URL counts on writer ("an entry counting on the team
// whose call first kept it"), and growth's hits of it never move it (KnownUrls.get takes no
// team). writer then asks many distinct long URLs within its own scope (a parameter the
// platform ignores): its part is full, room is made from its least recently used entries, and
// growth's dashboard URL, which growth reads, goes.
// Contract (Additions, the memo of URLs): "gives each configured team an even part once full
// ... one team's many misses of long URLs push out its own entries, never another team's
// (before, any team's: that team's hits checked their URLs again)"; known-urls.ts: "never
// another team's popular URLs". Growth is far within its part (one small entry), yet its
// popular URL is pushed out by another team's misses and its hits check the URL again.
// Observed through the memo's bytes: a read of a URL kept for growth changes nothing in the
// memo; a read of a URL no longer kept keeps it again (and makes room for it).

const sg = useAttackGateway({ yaml: TEAMS_YAML })
const REPORT = '/api/v1/report/campaigns/get'
const DASHBOARD = `${REPORT}?advertiserId=101&${REPORT_DATES}&byDate=1`
// Spaces as `+`: the canonical query spells each `%20`; about 280 KB kept per URL.
const flood = (i: number): string => `${REPORT}?advertiserId=101&${REPORT_DATES}&pad=${i}${'+'.repeat(15 * 1024)}`
const inject = (url: string, key: string) => sg.gw.proxy.inject({ method: 'GET', url, headers: { 'x-api-key': key } })

it("a team that called another team's popular URL first, then floods its own part of the URL memo, leaves that URL kept for the other team", async () => {
  // writer (advertiser 101 only) calls growth's dashboard URL first: the memo entry is writer's.
  expect((await inject(DASHBOARD, KEYS.writer)).statusCode).toBe(200)
  // growth reads it: a HIT of the report copy; its call passed, the entry serves growth too.
  expect((await inject(DASHBOARD, KEYS.growth)).statusCode).toBe(200)
  // Control: a read of a URL the memo keeps for growth changes nothing in the memo.
  const kept = sg.gw.memoBytes()
  expect((await inject(DASHBOARD, KEYS.growth)).statusCode).toBe(200)
  expect(sg.gw.memoBytes()).toBe(kept)
  // writer asks 80 distinct long URLs of its own advertiser (about 22 MB kept, past the whole
  // 16 MiB memo), reading nothing of growth's.
  let peak = 0
  for (let i = 0; i < 80; i++) {
    // The platform refuses a target this long (431): the call passed its checks all the same.
    expect((await inject(flood(i), KEYS.writer)).statusCode).toBeLessThan(500)
    peak = Math.max(peak, sg.gw.memoBytes())
  }
  // The memo was full: room had to be made.
  expect(peak).toBeGreaterThan(KNOWN_URL_BYTES * 0.9)
  // growth, which holds one small entry (far within its part of 4 MiB), reads its dashboard.
  const before = sg.gw.memoBytes()
  expect((await inject(DASHBOARD, KEYS.growth)).statusCode).toBe(200)
  // Expected: its URL still kept, nothing changes in the memo. On this code the URL was pushed
  // out with writer's own entries, and growth's read checks and keeps it again (the memo's
  // bytes move by the entry kept and the room made for it).
  expect(sg.gw.memoBytes()).toBe(before)
}, 120_000)

itLoggedNoSecret(sg)
