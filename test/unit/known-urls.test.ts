import { describe, expect, it } from 'vitest'
import { KNOWN_URL_BYTES, KnownUrls, type KnownTarget } from '../../src/access/known-urls.js'

// The memo of URLs (access/known-urls.ts) keeps a checked target and a report's form off the
// hit path. A call passes its scope check before its URL is kept, and a URL of a parameter the
// platform ignores is a miss of its own: one team's misses of 14 KB URLs, about 45 KB kept
// each, would push out another team's popular URLs were the memo one LRU of every team's,
// and every hit of that team would then check its URL again. Each configured team has an even
// part once the memo is full, an entry counting on the team whose call first kept it.

const TEAMS = ['dash', 'flood']
const target = (): KnownTarget => ({ target: { path: '/api/v1/report/campaigns/get' } as unknown as KnownTarget['target'] })
const LONG = 'x'.repeat(14_000)

describe('KnownUrls', () => {
  it("one team's many long URLs leave another team's URLs kept", () => {
    const memo = new KnownUrls<string>({ teams: () => TEAMS.length, configured: (t) => TEAMS.includes(t) })
    const popular = '/api/v1/report/campaigns/get?advertiserId=102&dateFrom=2026-01-01&dateTo=2026-01-07'
    memo.keep(popular, target, 'dash', { credential: 'default', form: 'form' })
    // The flooding team's call of the same URL does not make it its own.
    memo.keep(popular, target, 'flood')
    for (let n = 0; n < 2_000; n++) memo.keep(`/api/v1/report/campaigns/get?advertiserId=101&bust=${n}${LONG}`, target, 'flood')
    expect(memo.bytes).toBeLessThanOrEqual(KNOWN_URL_BYTES)
    expect(memo.get(popular)?.teams).toEqual(['dash', 'flood'])
    expect(memo.get(`/api/v1/report/campaigns/get?advertiserId=101&bust=0${LONG}`)).toBeUndefined()
  })

  it('is one LRU with one team', () => {
    const memo = new KnownUrls<string>({ teams: () => 1, configured: () => true })
    memo.keep('/first', target, 'dash')
    for (let n = 0; n < 2_000; n++) memo.keep(`/api/v1/report/campaigns/get?advertiserId=101&bust=${n}${LONG}`, target, 'dash')
    expect(memo.get('/first')).toBeUndefined()
  })
})
