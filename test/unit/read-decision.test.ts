import { describe, expect, it } from 'vitest'
import { Admission } from '../../src/access/admission.js'
import { hashApiKey } from '../../src/access/api-keys.js'
import { KnownUrls } from '../../src/access/known-urls.js'
import { RateLimiter } from '../../src/access/rate-limit.js'
import { TeamDirectory } from '../../src/access/team-auth.js'
import { etagOf, type CacheEntry } from '../../src/cache/cache-entry.js'
import { createMetrics } from '../../src/observe/metrics.js'
import type { FillResult, ReportCache } from '../../src/reports/report-cache.js'
import { ReadDecisions, type GoOn, type ReadDecision } from '../../src/reports/read-decision.js'
import { KEYS, TEAMS_YAML, testConfig } from '../helpers/build-gateway.js'
import { admissionParts } from '../helpers/admission-parts.js'

// The one decision of a GET report read (reports/read-decision.ts), with a real Admission,
// memo and rate limiter; the report cache is a stand-in holding what L1 holds.

const SCOPED = 'rgw_test_scoped_key_5555555555555555555555555'
const YAML = `${TEAMS_YAML.trimEnd()}
  scoped:
    keys: ["${hashApiKey(SCOPED)}"]
    advertisers: [103]
    rateLimit: { max: 2, window: 1m }
`
const URL_101 = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-07'
const NOW = Date.UTC(2026, 0, 10)

function entryFor(key: string): CacheEntry {
  const identity = Buffer.from(`{"report":"${key}"}`)
  return { etag: etagOf(identity), contentType: 'application/json', identity, gzip: identity, fetchedAt: NOW - 1000, freshUntil: NOW + 60_000, staleUntil: NOW + 120_000, errorUntil: NOW + 120_000 } as unknown as CacheEntry
}

function setUp() {
  const config = testConfig({ PLATFORM_BASE_URL: 'http://127.0.0.1:9', PLATFORM_TOKEN: 'platform-token-for-tests' }, YAML)
  const memo = new KnownUrls({ teams: () => 1, configured: () => true })
  const teams = new TeamDirectory(config.teams, () => NOW)
  const rateLimiter = new RateLimiter({ redis: null, breaker: null, prefix: 't:', teams })
  const metrics = createMetrics()
  const admission = new Admission(admissionParts(config, teams, { rateLimiter, metrics }), memo)
  const inMemory = new Map<string, CacheEntry>()
  const flights = new Map<string, Promise<FillResult>>()
  const served: string[] = []
  // The account the credential's token acts for (TokenProvider.account), which a test may change.
  const account = { now: 'sub:100' }
  const reports = {
    accountOf: () => account.now,
    keyFor: (credential: string, report: { path: string; query: string }, of: string) => `${credential}:${of}:${report.path}?${report.query}`,
    freshInMemory: (key: string, now: number) => {
      const entry = inMemory.get(key)
      return entry && now < entry.freshUntil ? entry : null
    },
    countServed: (key: string, _entry: CacheEntry, status: string, tier: string) => served.push(`${status} ${tier} ${key}`),
    coldFlight: (key: string) => flights.get(key) ?? null,
  } as unknown as ReportCache
  const decisions = new ReadDecisions(admission, reports, config.cache.maxRangeDays)
  const decide = (url: string, key: string | null, how: Parameters<ReadDecisions['decide']>[4] = {}, headers: Record<string, string> = {}) =>
    decisions.decide('GET', url, key === null ? headers : { 'x-api-key': key, ...headers }, NOW, how)
  return { decide, memo, rateLimiter, metrics, inMemory, flights, served, config, account }
}

function goOn(decided: ReadDecision): GoOn {
  if ('answer' in decided) throw new Error('answered')
  return decided.goOn
}

function statusOf(refused: unknown): number | undefined {
  return (refused as { statusCode?: number } | undefined)?.statusCode
}

describe('the decision of a report read', () => {
  it('leaves a URL not seen before alone when asked to decide only those seen (the entrance before the router): nothing counted, nothing kept', () => {
    const { decide, memo, rateLimiter, config } = setUp()
    expect(decide(URL_101, KEYS.limited, { seenOnly: true })).toEqual({ goOn: {} })
    expect(memo.get(URL_101)).toBeUndefined()
    expect(rateLimiter.peek(config.teams.find((t) => t.name === 'limited')!).remaining).toBe(3)
  })

  it('admits a first read, keeps its target and form once it passed every check, and goes on to read it', () => {
    const { decide, memo, served } = setUp()
    const first = goOn(decide(URL_101, KEYS.growth))
    expect(first.refused).toBeUndefined()
    expect(first.admitted?.identity.team.name).toBe('growth')
    expect(first.admitted?.form.report.advertiserIds).toEqual([101])
    expect(first.admitted?.scopePending).toBe(false)
    expect(first.rate?.allowed).toBe(true)
    expect(memo.get(URL_101)?.forms.map((f) => f.form)).toEqual([first.admitted?.form])
    // Now seen: the entrance before the router decides it, from the memo.
    const again = goOn(decide(URL_101, KEYS.growth, { seenOnly: true }))
    expect(again.admitted?.form).toBe(first.admitted?.form)
    expect(served).toEqual([])
  })

  it('makes a URL\'s form anew once its credential acts for another account, and keeps that one in place of the first', () => {
    const { decide, memo, account } = setUp()
    const first = goOn(decide(URL_101, KEYS.growth)).admitted?.form
    expect(first?.key).toContain(':sub:100:')
    account.now = 'sub:200'
    const moved = goOn(decide(URL_101, KEYS.growth)).admitted?.form
    expect(moved?.key).toContain(':sub:200:')
    expect(memo.get(URL_101)?.forms.map((f) => f.form)).toEqual([moved])
    expect(goOn(decide(URL_101, KEYS.growth)).admitted?.form).toBe(moved)
  })

  it('reads the memo for a team whose own call of the URL passed only: another team\'s read of it is checked as a URL never seen, so that its time tells nothing of other teams\' reads', () => {
    const { decide, memo } = setUp()
    const growth = goOn(decide(URL_101, KEYS.growth)).admitted!
    const kept = memo.get(URL_101)!
    // Team `all` (every advertiser) reads the same URL: the entrance before the router leaves
    // it alone, nothing counted, as a URL never seen; the route works out its target and form
    // anew, not taken from growth's entry.
    expect(goOn(decide(URL_101, KEYS.all, { seenOnly: true }))).toEqual({})
    const all = goOn(decide(URL_101, KEYS.all)).admitted!
    expect(all.known).not.toBe(kept.known)
    expect(all.form).not.toBe(growth.form)
    expect(all.form).toEqual(growth.form)
    // Once its own call passed, the memo answers it too.
    expect(goOn(decide(URL_101, KEYS.all, { seenOnly: true })).admitted!.known).toBe(memo.get(URL_101)!.known)
    // A scoped team of another advertiser is left to the route as for a URL never seen, and refused there.
    expect(goOn(decide(URL_101, SCOPED, { seenOnly: true }))).toEqual({})
    expect(statusOf(goOn(decide(URL_101, SCOPED)).refused)).toBe(403)
    expect(memo.get(URL_101)!.teams).toEqual(['growth', 'all'])
  })

  it('answers a fresh copy in memory at once, counted as an L1 hit; a forced refresh goes on past it', () => {
    const { decide, inMemory, served } = setUp()
    const key = goOn(decide(URL_101, KEYS.all)).admitted!.form.key
    inMemory.set(key, entryFor(key))
    const hit = decide(URL_101, KEYS.all, { seenOnly: true })
    expect('answer' in hit && hit.answer).toBe(inMemory.get(key))
    expect(served).toEqual([`HIT l1 ${key}`])
    // Team `all` is given refresh: its no-cache forces a refresh, unless it carries a validator.
    const refresh = goOn(decide(URL_101, KEYS.all, { seenOnly: true }, { 'cache-control': 'no-cache' }))
    expect([refresh.admitted?.form.key, refresh.admitted?.refresh]).toEqual([key, true])
    expect(served).toHaveLength(1)
    const poll = decide(URL_101, KEYS.all, { seenOnly: true }, { 'cache-control': 'no-cache', 'if-none-match': '"a"' })
    expect('answer' in poll && poll.answer).toBe(inMemory.get(key))
    // Team `growth` is not: its no-cache is a read like any other (its first of the URL: the route decides it).
    const read = decide(URL_101, KEYS.growth, {}, { 'cache-control': 'no-cache' })
    expect('answer' in read && read.answer).toBe(inMemory.get(key))
    expect(served).toHaveLength(3)
  })

  it('goes on with the cold fill of its report under way, to join it', () => {
    const { decide, flights } = setUp()
    const key = goOn(decide(URL_101, KEYS.all)).admitted!.form.key
    const flight = new Promise<FillResult>(() => undefined)
    flights.set(key, flight)
    expect(goOn(decide(URL_101, KEYS.all)).flight).toBe(flight)
  })

  it('refuses in the contract order: the target (400) before the key (401), the key before the limit', () => {
    const { decide } = setUp()
    expect(statusOf(goOn(decide('/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-02-30&dateTo=2026-03-01', null)).refused)).toBe(401)
    expect(statusOf(goOn(decide('/api/v1/report/campaigns/get?advertiserId=101#x', null)).refused)).toBe(400)
    expect(statusOf(goOn(decide('/api/v1/report/../oauth/token', null)).refused)).toBe(404)
    const unknown = goOn(decide(URL_101, 'rgw_unknown'))
    expect(statusOf(unknown.refused)).toBe(401)
    expect(unknown.rate).toBeUndefined()
  })

  it('counts a read once: a spent limit is a 429 with its decision, and a decision handed over is not counted again', async () => {
    const { decide, metrics } = setUp()
    const rates = [1, 2, 3].map(() => goOn(decide(URL_101, KEYS.limited)).rate)
    expect(rates.map((r) => r?.remaining)).toEqual([2, 1, 0])
    const spent = goOn(decide(URL_101, KEYS.limited))
    expect(statusOf(spent.refused)).toBe(429)
    expect(spent.rate?.allowed).toBe(false)
    // The route, deciding with the refusal handed over, refuses it again without a second count.
    expect(statusOf(goOn(decide(URL_101, KEYS.limited, { counted: spent.rate })).refused)).toBe(429)
    expect(await metrics.rateLimited.get()).toMatchObject({ values: [expect.objectContaining({ value: 1, labels: { team: 'limited' } })] })
  })

  it("refuses a scoped team another advertiser's report after counting it (403 comes after 429), and keeps nothing", () => {
    const { decide, memo } = setUp()
    const refused = goOn(decide(URL_101, SCOPED))
    expect(statusOf(refused.refused)).toBe(403)
    expect(refused.rate?.remaining).toBe(1)
    expect(memo.get(URL_101)).toBeUndefined()
  })

  it('leaves the owners of named campaigns to be looked up: the read goes on with its scope pending, not yet kept', () => {
    const { decide, memo } = setUp()
    const url = '/api/v1/report/campaigns/get?advertiserId=103&campaignId=7&dateFrom=2026-01-01&dateTo=2026-01-07'
    const pending = goOn(decide(url, SCOPED))
    expect(pending.refused).toBeUndefined()
    expect(pending.admitted?.scopePending).toBe(true)
    expect(memo.get(url)).toBeUndefined()
  })
})
