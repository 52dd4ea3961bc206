import { describe, expect, it } from 'vitest'
import { canonicalGetReport } from '../../src/reports/report-query.js'
import { describeFailure, describeTally, outcomeOf, planWarm, retryDelayMs, UsageError, warmOptions } from '../../src/cli/warm-plan.js'

const ENV = { WARM_API_KEY: 'rgw_k', WARM_URL: 'http://gw:8080/' }
const ARGS = ['--advertisers', '101,102', '--from', '2026-11-01', '--to', '2026-11-21']

describe('warmOptions', () => {
  it('reads the command line of the CronJob, the key and URL from the environment, with defaults', () => {
    expect(warmOptions(ARGS, ENV)).toEqual({
      baseUrl: 'http://gw:8080',
      apiKey: 'rgw_k',
      advertisers: [101, 102],
      splits: ['campaigns'],
      from: '2026-11-01',
      to: '2026-11-21',
      byDate: false,
      byCampaign: false,
      concurrency: 4,
      timeoutMs: 120_000,
      jobs: false,
    })
    const all = warmOptions([...ARGS, '--splits', 'campaigns,creatives', '--by-date', '--by-campaign', '--url', 'https://x', '--concurrency', '2', '--timeout', '30', '--jobs'], ENV)
    expect(all).toMatchObject({ baseUrl: 'https://x', splits: ['campaigns', 'creatives'], byDate: true, byCampaign: true, concurrency: 2, timeoutMs: 30_000, jobs: true })
  })

  it.each([
    [['--from', '2026-11-01', '--to', '2026-11-21'], ENV, /--advertisers/],
    [['--advertisers', '101,x', '--from', '2026-11-01', '--to', '2026-11-21'], ENV, /x is not a positive integer/],
    [['--advertisers', '0', '--from', '2026-11-01', '--to', '2026-11-21'], ENV, /0 is not a positive integer/],
    [['--advertisers', '101', '--from', '2026-02-30', '--to', '2026-11-21'], ENV, /--from: a calendar date/],
    [['--advertisers', '101', '--from', '2026-11-21', '--to', '2026-11-01'], ENV, /--to: 2026-11-01 is before --from/],
    [[...ARGS, '--splits', 'a/b'], ENV, /--splits: a\/b/],
    [[...ARGS, '--concurrency', '0'], ENV, /--concurrency: a whole number from 1 to 32/],
    [[...ARGS, '--concurrency', '100'], ENV, /--concurrency/],
    [[...ARGS, '--bogus'], ENV, /bogus/],
    [ARGS, { WARM_API_KEY: 'k' }, /--url or WARM_URL/],
    [[...ARGS, '--url', 'ftp://x'], ENV, /http or https/],
    // fetch refuses a URL holding credentials: every report of the run failed with a TypeError.
    [[...ARGS, '--url', 'https://ops:pw-secret@gw'], ENV, /--url: a URL without a user or password \(the value is not shown\)/],
    [ARGS, { WARM_URL: 'http://gw' }, /WARM_API_KEY/],
  ])('refuses %j', (argv, env, message) => {
    expect(() => warmOptions(argv, env)).toThrow(UsageError)
    expect(() => warmOptions(argv, env)).toThrow(message)
  })
})

describe('planWarm', () => {
  const opts = { advertisers: [101, 102], splits: ['campaigns', 'creatives'], from: '2026-11-01', to: '2026-11-21', byDate: true, byCampaign: true }

  it('asks one report per advertiser and split', () => {
    expect(planWarm(opts).map((r) => r.path)).toEqual([
      '/api/v1/report/campaigns/get?advertiserId=101&byCampaign=1&byDate=1&dateFrom=2026-11-01&dateTo=2026-11-21',
      '/api/v1/report/creatives/get?advertiserId=101&byCampaign=1&byDate=1&dateFrom=2026-11-01&dateTo=2026-11-21',
      '/api/v1/report/campaigns/get?advertiserId=102&byCampaign=1&byDate=1&dateFrom=2026-11-01&dateTo=2026-11-21',
      '/api/v1/report/creatives/get?advertiserId=102&byCampaign=1&byDate=1&dateFrom=2026-11-01&dateTo=2026-11-21',
    ])
    expect(planWarm({ ...opts, byDate: false, byCampaign: false, splits: ['campaigns'], advertisers: [7] }).map((r) => r.path)).toEqual([
      '/api/v1/report/campaigns/get?advertiserId=7&dateFrom=2026-11-01&dateTo=2026-11-21',
    ])
  })

  it("asks in the gateway's canonical spelling, so the entry filled is the one every spelling hits", () => {
    for (const request of planWarm(opts)) {
      const [path, query] = request.path.split('?') as [string, string]
      expect(canonicalGetReport(path, query, { maxRangeDays: 400 }).query).toBe(query)
    }
  })
})

describe('outcomes', () => {
  it('reads x-cache: HIT is already fresh, MISS and REFRESH warmed, STALE stale, BYPASS or none not cacheable, any other status failed', () => {
    expect(outcomeOf({ status: 200, xCache: 'HIT' })).toBe('fresh')
    expect(outcomeOf({ status: 200, xCache: 'MISS' })).toBe('warmed')
    expect(outcomeOf({ status: 200, xCache: 'REFRESH' })).toBe('warmed')
    expect(outcomeOf({ status: 200, xCache: 'STALE' })).toBe('stale')
    expect(outcomeOf({ status: 200, xCache: 'BYPASS' })).toBe('uncacheable')
    expect(outcomeOf({ status: 200, xCache: null })).toBe('uncacheable')
    for (const status of [400, 403, 429, 502, 504]) expect(outcomeOf({ status, xCache: null })).toBe('failed')
  })

  it('tries a 429 or 503 again after its retry-after, a bounded number of times', () => {
    expect(retryDelayMs(429, '3', 1, 3)).toBe(3000)
    expect(retryDelayMs(503, null, 1, 3)).toBe(1000)
    expect(retryDelayMs(429, '0', 2, 3)).toBe(1000)
    expect(retryDelayMs(429, '3', 3, 3)).toBeNull()
    expect(retryDelayMs(429, '600', 1, 3)).toBeNull()
    expect(retryDelayMs(502, '1', 1, 3)).toBeNull()
  })

  it('describes failures and the tally', () => {
    const request = { advertiserId: 9, split: 'campaigns', path: '/api/v1/report/campaigns/get?advertiserId=9' }
    expect(describeFailure(request, { status: 403, xCache: null, error: { code: 'GW_FORBIDDEN', message: 'no' } })).toBe('failed: GET /api/v1/report/campaigns/get?advertiserId=9: 403 GW_FORBIDDEN: no')
    expect(describeFailure(request, { status: 422, xCache: null, error: { message: 'bad date' } })).toBe('failed: GET /api/v1/report/campaigns/get?advertiserId=9: 422 bad date')
    expect(describeFailure(request, { network: 'ECONNREFUSED' })).toBe('failed: GET /api/v1/report/campaigns/get?advertiserId=9: ECONNREFUSED')
    expect(describeTally({ warmed: 1, fresh: 2, stale: 0, uncacheable: 0, failed: 3 })).toBe('1 warmed, 2 already fresh, 0 stale, 0 not cacheable, 3 failed')
  })
})
