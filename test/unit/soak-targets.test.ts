import { describe, expect, it } from 'vitest'
import { readFileSync } from 'node:fs'
import { allowedErrors, baselineShare, classify, commonestErrors, DOCUMENTED_CODES, documentedCodes, disagreement, liveLeases, recoveryAfter, rssWithin, secondsAfter, seededRandom, sharedLimit, shuffled } from '../../scripts/soak-targets.mjs'
import { encodeRecord } from '../../src/platform/governor/lease-plan.js'
import { RedisSeal } from '../../src/redis/seal.js'

// The chaos soak's verdicts (npm run soak -- --chaos): a soak that judged wrongly would
// pass a gateway that loses answers, or fail CI on noise.

// Per-second counts as answers sent evenly through each second, the errors first.
const answers = (seconds: { n: number; errors: number }[]) =>
  seconds.flatMap(({ n, errors }, i) => Array.from({ length: n }, (_, j) => ({ s: i + j / n, error: j < errors ? '502 GW_UPSTREAM' : null })))

describe('classify: what an answer counts as', () => {
  const READ = [200]
  const LIMITED = [200, 429]
  it.each([
    ['a 200 read', READ, 200, null, false, null],
    ['a lost request', READ, null, null, true, null],
    ['the team over its own limit', LIMITED, 429, 'GW_RATE_LIMITED', false, null],
    ["the platform's 429 passed through", READ, 429, null, true, null],
    ["the platform's 429 passed through to a team that may be answered its own", LIMITED, 429, null, true, null],
    ['a 502 GW_UPSTREAM', READ, 502, 'GW_UPSTREAM', true, null],
    ['a 503 GW_OVERLOADED', READ, 503, 'GW_OVERLOADED', true, null],
    ['a 504 GW_UPSTREAM_TIMEOUT', READ, 504, 'GW_UPSTREAM_TIMEOUT', true, null],
    ['a 503 GW_ANSWER_BUDGET (the answers in flight hold the whole budget)', READ, 503, 'GW_ANSWER_BUDGET', true, null],
    ['a 503 GW_ADMIN_DISABLED (an admin code, not the proxy listener\'s)', READ, 503, 'GW_ADMIN_DISABLED', true, '503 GW_ADMIN_DISABLED'],
    ['a 500 GW_INTERNAL (a fault of the gateway)', READ, 500, 'GW_INTERNAL', true, '500 GW_INTERNAL'],
    ['a 502 without a GW code', READ, 502, null, true, '502 without a GW_* code'],
    ['a 504 with the wrong code', READ, 504, 'GW_UPSTREAM', true, '504 GW_UPSTREAM'],
    ['the 401 a missing key asks for', [401], 401, 'GW_UNAUTHORIZED', false, null],
    ['a 401 without its code', [401], 401, null, true, '401 without a GW_* code'],
    ['a 403 where 200 was expected', READ, 403, 'GW_FORBIDDEN', true, '403 GW_FORBIDDEN where 200 was expected'],
    ['a 200 where 401 was expected', [401], 200, null, true, '200 where 401 was expected'],
  ])('%s', (_what, expect_, status, code, error, undocumented) => {
    expect(classify(expect_, { status, code })).toEqual({ error, undocumented })
  })
})

describe("the documented codes: the contract's error table", () => {
  it('holds every code the proxy listener answers with, by status, from docs/contract.md', () => {
    expect(DOCUMENTED_CODES).toEqual(documentedCodes(readFileSync(new URL('../../docs/contract.md', import.meta.url), 'utf8')))
    expect(DOCUMENTED_CODES['503']).toEqual(['GW_OVERLOADED', 'GW_ANSWER_BUDGET', 'GW_BODY_BUDGET', 'GW_JOBS_UNAVAILABLE', 'GW_SHUTTING_DOWN'])
    expect(DOCUMENTED_CODES['502']).toEqual(['GW_PLATFORM_AUTH', 'GW_PLATFORM_REFUSED', 'GW_UPSTREAM'])
    expect(DOCUMENTED_CODES['504']).toEqual(['GW_UPSTREAM_TIMEOUT'])
  })

  it("leaves out 500 (a fault of the gateway), admin rows and a job's failure", () => {
    const table = [
      '## Errors',
      '| status | code | meaning |',
      '|---|---|---|',
      '| 413 | `GW_PAYLOAD_TOO_LARGE` | a body over its limit |',
      "| 413 | `GW_JOB_RESULT_TOO_LARGE` | (a job's failure) its report is larger |",
      '| 500 | `GW_INTERNAL` | a fault of the gateway |',
      '| 503 | `GW_ADMIN_DISABLED` | (admin) no admin token is configured |',
      '',
      '## Admin listener',
    ].join('\n')
    expect(documentedCodes(`intro\n${table}\n`)).toEqual({ 413: ['GW_PAYLOAD_TOO_LARGE'] })
  })
})

describe('allowedErrors and baselineShare', () => {
  it('allows the Poisson quantile whose upper tail is under RECOVERY_ALPHA, at least one', () => {
    expect(allowedErrors(0, 0.01)).toBe(1)
    expect(allowedErrors(100, 0)).toBe(1)
    // Mean 4: P(X > 13) is under 1e-4, P(X > 12) is not.
    expect(allowedErrors(400, 0.01)).toBe(13)
    expect(allowedErrors(300, 0.0062)).toBe(9)
  })

  it('takes the share over the calm ranges only', () => {
    const buckets = [
      { n: 10, errors: 0 },
      { n: 10, errors: 1 },
      { n: 10, errors: 10 },
      { n: 10, errors: 1 },
    ]
    expect(baselineShare(answers(buckets), [[0, 2], [3, 4]])).toEqual({ n: 30, errors: 2, share: 2 / 30, upper: (2 + 3 * Math.sqrt(2) + 3) / 30 })
    expect(baselineShare(answers(buckets), []).share).toBe(0)
  })
})

describe('recoveryAfter: seconds after a fault until errors are back at the baseline', () => {
  const calm = (n = 60) => ({ n, errors: 0 })
  const bad = (errors: number, n = 60) => ({ n, errors })
  it.each([
    ['no error after the end', [calm(), calm(), calm(), calm(), calm(), calm()], 0, 6, 0],
    ['errors for the 3 s after the end', [bad(30), bad(30), bad(30), calm(), calm(), calm(), calm(), calm()], 0, 8, 3],
    ['a fault ending mid-second: seconds counted from its end, the errors before it in that second its own', [calm(), bad(30), bad(30), calm(), calm(), calm()], 1.6, 6, 1],
    ['one stray error is calm', [calm(), calm(), bad(1), calm(), calm(), calm()], 0, 6, 0],
    ['errors that come back later count to their end', [bad(20), calm(), calm(), calm(), calm(), calm(), bad(20), calm(), calm(), calm()], 0, 10, 7],
    ['errors until the observation ends', [bad(20), bad(20), bad(20), bad(20)], 0, 4, 4],
  ])('%s', (_what, seconds, endS, untilS, recovered) => {
    expect(recoveryAfter(answers(seconds), endS, untilS, 0.001, 2)).toBe(recovered)
  })

  it('leaves out the errors sent before the end in the second the fault ended in (the platform back 0.95 s into it)', () => {
    // Every answer failed until the end at 10.95 s; the platform's own weather failed one
    // 4 s and two 5 s after it: calm at the baseline, counted from the end.
    const sent = Array.from({ length: 19 * 60 }, (_, i) => i / 60).map((s) => ({ s, error: s < 10.95 || [15, 16, 16.05].some((e) => Math.abs(s - e) < 1e-9) ? '502 GW_UPSTREAM' : null }))
    expect(recoveryAfter(sent, 10.95, 19, 0.01, 5)).toBe(0)
  })

  it("reads the platform's own failures at the baseline rate as calm (a replica's restart in a chaos soak, seconds after its end)", () => {
    const seconds = [0, 0, 1, 0, 0, 1, 0, 1, 1, 1, 4, 1].map((errors) => bad(errors))
    expect(recoveryAfter(answers(seconds), 0, seconds.length, 0.0062, 5)).toBe(0)
  })
})

describe('secondsAfter: the answers of the seconds after a fault, counted from its end', () => {
  it('puts an answer sent k to k+1 s after the end in second k, and none sent before the end or from the next fault on', () => {
    const sent = [
      { s: 9.9, error: '502 GW_UPSTREAM' },
      { s: 10.2, error: '502 GW_UPSTREAM' },
      { s: 10.6, error: null },
      { s: 11.2, error: '504 GW_UPSTREAM_TIMEOUT' },
      { s: 11.7, error: '504 GW_UPSTREAM_TIMEOUT' },
      { s: 12.0, error: null },
      { s: 12.5, error: '502 GW_UPSTREAM' },
    ]
    expect(secondsAfter(sent, 10.5, 12.5)).toEqual([
      { n: 2, errors: 1, codes: { '504 GW_UPSTREAM_TIMEOUT': 1 } },
      { n: 2, errors: 1, codes: { '504 GW_UPSTREAM_TIMEOUT': 1 } },
    ])
  })
})

describe('commonestErrors: what the errors after a fault said, commonest first', () => {
  it('groups the errors sent from the end up to a time by code and message, numbers read as N, and leaves out calm answers and others', () => {
    const sent = [
      { s: 9.9, error: '502 GW_UPSTREAM', message: 'the platform failed: status 500' },
      { s: 10.6, error: null, message: null },
      { s: 11.2, error: '504 GW_UPSTREAM_TIMEOUT', message: 'not sent to the platform: calls of its kind take about 7.5 s, its deadline leaves 4.9 s' },
      { s: 11.7, error: '504 GW_UPSTREAM_TIMEOUT', message: 'not sent to the platform: calls of its kind take about 7.5 s, its deadline leaves 4.2 s' },
      { s: 12.1, error: '502 GW_UPSTREAM', message: 'the platform failed: status 503' },
      { s: 12.4, error: 'lost (ECONNRESET)', message: null },
      { s: 13.0, error: '502 GW_UPSTREAM', message: 'the platform failed: status 500' },
    ]
    expect(commonestErrors(sent, 10.5, 13, 2)).toEqual([
      '2 × 504 GW_UPSTREAM_TIMEOUT: not sent to the platform: calls of its kind take about N s, its deadline leaves N s',
      '1 × 502 GW_UPSTREAM: the platform failed: status N',
    ])
    expect(commonestErrors(sent, 12.3, 12.5, 3)).toEqual(['1 × lost (ECONNRESET)'])
  })
})

describe('disagreement: Redis against what the replicas say', () => {
  const redis = { live: 3, liveAfter: 3, limit: 8 }
  it.each([
    ['the same seats and limit', redis, [{ seatsHeld: 2, limit: 8 }, { seatsHeld: 1, limit: 8 }], null],
    ['a seat Redis holds that no replica does (a leak)', { ...redis, live: 4, liveAfter: 4 }, [{ seatsHeld: 2, limit: 8 }, { seatsHeld: 1, limit: 8 }], 'seats: Redis 4, replicas 2 + 1'],
    ['another limit on one replica', redis, [{ seatsHeld: 2, limit: 8 }, { seatsHeld: 1, limit: 6 }], 'limit: Redis 8, replicas 8 / 6'],
    ['no limit in Redis', { ...redis, limit: null }, [{ seatsHeld: 2, limit: 8 }, { seatsHeld: 1, limit: 8 }], 'limit: Redis none, replicas 8 / 8'],
    ['seats that changed while read', { ...redis, liveAfter: 2 }, [{ seatsHeld: 2, limit: 8 }, { seatsHeld: 1, limit: 8 }], 'seats changed while read (3 then 2)'],
    ['a replica without seatsHeld (only the deprecated permitsHeld)', redis, [{ permitsHeld: 2, limit: 8 }, { seatsHeld: 1, limit: 8 }], 'a replica names no seatsHeld in /admin/status'],
    ['a replica that did not answer', redis, [null, { seatsHeld: 1, limit: 8 }], 'a replica gave no status'],
  ])('%s', (_what, r, replicas, expected) => {
    expect(disagreement(r, replicas)).toBe(expected)
  })
})

describe("what Redis holds: a credential's seats hash (redis-lease-store.ts)", () => {
  const record = (lease: number, inFlight: number) => encodeRecord({ lease, inFlight, need: inFlight, answered: 12.5, waited: false, teams: [{ team: 'growth', weight: 1, cap: null, held: inFlight, waiting: 0, lingering: true, peak: inFlight }] })
  const now = 1_800_000_000_000

  it('liveLeases: the leases of the records that have not lapsed, the limit field aside', () => {
    // As the lease script writes a run's field: its expiry, then the record with its grant.
    const hash = { 'a~1': `${now + 1000}|${record(3, 2)}`, 'b~2': `${now + 5}|${record(2, 2)}`, 'c~3': `${now - 1}|${record(4, 4)}`, limit: `tag.${JSON.stringify({ limit: 8, knee: 7, at: now })}` }
    expect(liveLeases(hash, now)).toBe(5)
    expect(liveLeases({}, now)).toBe(0)
  })

  it('sharedLimit: the limit of the learner\'s sealed record, null without one or when it is no record', () => {
    const sealed = new RedisSeal('soak-targets-test-secret-0000000000').sealText('rgw:seats:{default}', JSON.stringify({ limit: 12, knee: 11, at: now }))
    expect(sharedLimit(sealed)).toBe(12)
    expect(sharedLimit(JSON.stringify({ limit: 6, knee: 6, at: now }))).toBe(6)
    expect(sharedLimit(null)).toBeNull()
    expect(sharedLimit('tag.not json')).toBeNull()
    expect(sharedLimit('tag.{"knee":3}')).toBeNull()
  })
})

describe('rssWithin, seededRandom, shuffled', () => {
  it('allows RSS up to 20 % above the first minute, and any fall', () => {
    expect(rssWithin({ rss: 100 }, { rss: 120 })).toBe(true)
    expect(rssWithin({ rss: 100 }, { rss: 121 })).toBe(false)
    expect(rssWithin({ rss: 100 }, { rss: 60 })).toBe(true)
  })

  it('sets aside what V8\'s new space grew between the samples, and counts nothing for a new space V8 shrank', () => {
    const MB = 1e6
    // A 3-minute soak: the young generation grown from 4 to 32 MiB, the heap after GC 28.9 -> 32.2 MB.
    expect(rssWithin({ rss: 108.1 * MB, newSpace: 4 * MB }, { rss: 139.0 * MB, newSpace: 32 * MB })).toBe(true)
    // Another: new space shrunk from 32 to 1 MiB, RSS as it was.
    expect(rssWithin({ rss: 133.9 * MB, newSpace: 32 * MB }, { rss: 136.3 * MB, newSpace: 1 * MB })).toBe(true)
    // A leak beside a young generation that grew is still one.
    expect(rssWithin({ rss: 100 * MB, newSpace: 4 * MB }, { rss: 160 * MB, newSpace: 32 * MB })).toBe(false)
    expect(rssWithin({ rss: 100 * MB, newSpace: 32 * MB }, { rss: 125 * MB, newSpace: 1 * MB })).toBe(false)
  })

  it('draws the same order from the same seed, every item once', () => {
    const faults = ['a', 'b', 'c', 'd', 'e', 'f']
    const one = shuffled(faults, seededRandom(7))
    expect(shuffled(faults, seededRandom(7))).toEqual(one)
    expect([...one].sort()).toEqual(faults)
  })
})
