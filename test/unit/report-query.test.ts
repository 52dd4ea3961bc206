import fc from 'fast-check'
import { describe, it, expect } from 'vitest'
import { BadQueryError } from '../../src/errors.js'
import { shownValue } from '../../src/observe/caller-text.js'
import { reportCacheKey } from '../../src/reports/cache-key.js'
import {
  canonicalGetReport,
  canonicalPostReport,
  epochDay,
  type CanonicalReport,
} from '../../src/reports/report-query.js'

const PATH = '/api/v1/report/campaigns/get'
const OPTS = { maxRangeDays: 400 }
const BASE = 'advertiserId=7&dateFrom=2026-01-01&dateTo=2026-01-30'
const CANON = 'advertiserId=7&dateFrom=2026-01-01&dateTo=2026-01-30'

interface Request {
  method: 'GET' | 'POST'
  query: string
  body?: unknown
}

function run(req: Request): CanonicalReport {
  return req.method === 'GET'
    ? canonicalGetReport(PATH, req.query, OPTS)
    : canonicalPostReport(PATH, req.query, req.body, OPTS)
}

function failure(fn: () => unknown): unknown {
  try {
    fn()
  } catch (err) {
    return err
  }
  throw new Error('expected the request to be rejected')
}

// A POST body with valid dates; `undefined` removes a field.
function post(fields: Record<string, unknown> = {}): Record<string, unknown> {
  return { dateFrom: '2023-05-08', dateTo: '2023-05-12', ...fields }
}

const FLAGS_OFF = '"byCampaign":false,"byDate":false'
const DATES = '"dateFrom":"2023-05-08","dateTo":"2023-05-12"'

describe('canonical form of valid report requests', () => {
  const cases: Array<Request & { name: string; query: string; wantQuery: string; wantBody: string | null }> = [
    {
      name: 'GET the contract example',
      method: 'GET',
      query: 'dateTo=2026-01-30&byCampaign=true&advertiserId=007&byDate=0&dateFrom=2026-01-01',
      wantQuery: 'advertiserId=7&byCampaign=1&dateFrom=2026-01-01&dateTo=2026-01-30',
      wantBody: null,
    },
    { name: 'GET already canonical', method: 'GET', query: BASE, wantQuery: CANON, wantBody: null },
    { name: 'GET leading ?', method: 'GET', query: `?${BASE}`, wantQuery: CANON, wantBody: null },
    { name: 'GET both flags 1', method: 'GET', query: `${BASE}&byDate=1&byCampaign=1`, wantQuery: `${CANON.replace('&dateFrom', '&byCampaign=1&byDate=1&dateFrom')}`, wantBody: null },
    { name: 'GET byDate=true', method: 'GET', query: `${BASE}&byDate=true`, wantQuery: CANON.replace('&dateFrom', '&byDate=1&dateFrom'), wantBody: null },
    { name: 'GET byDate=false omitted', method: 'GET', query: `${BASE}&byDate=false`, wantQuery: CANON, wantBody: null },
    { name: 'GET byCampaign=0 omitted', method: 'GET', query: `${BASE}&byCampaign=0`, wantQuery: CANON, wantBody: null },
    {
      name: 'GET one-day range',
      method: 'GET',
      query: 'advertiserId=7&dateFrom=2026-03-01&dateTo=2026-03-01',
      wantQuery: 'advertiserId=7&dateFrom=2026-03-01&dateTo=2026-03-01',
      wantBody: null,
    },
    {
      name: 'GET leap day 2024-02-29',
      method: 'GET',
      query: 'advertiserId=7&dateFrom=2024-02-29&dateTo=2024-02-29',
      wantQuery: 'advertiserId=7&dateFrom=2024-02-29&dateTo=2024-02-29',
      wantBody: null,
    },
    {
      name: 'GET range of exactly maxRangeDays (400)',
      method: 'GET',
      query: 'advertiserId=7&dateFrom=2026-01-01&dateTo=2027-02-04',
      wantQuery: 'advertiserId=7&dateFrom=2026-01-01&dateTo=2027-02-04',
      wantBody: null,
    },
    {
      name: 'GET advertiserId = MAX_SAFE_INTEGER',
      method: 'GET',
      query: 'advertiserId=9007199254740991&dateFrom=2026-01-01&dateTo=2026-01-30',
      wantQuery: 'advertiserId=9007199254740991&dateFrom=2026-01-01&dateTo=2026-01-30',
      wantBody: null,
    },
    { name: 'GET unknown param sorted in', method: 'GET', query: `spentBased=USD&${BASE}`, wantQuery: `${CANON}&spentBased=USD`, wantBody: null },
    { name: 'GET unknown param "+" is a space', method: 'GET', query: `${BASE}&note=a+b`, wantQuery: `${CANON}&note=a%20b`, wantBody: null },
    { name: 'GET unknown param %20 is a space', method: 'GET', query: `${BASE}&note=a%20b`, wantQuery: `${CANON}&note=a%20b`, wantBody: null },
    { name: 'GET unknown param keeps encoded & and =', method: 'GET', query: `${BASE}&q=a%26b%3Dc`, wantQuery: `${CANON}&q=a%26b%3Dc`, wantBody: null },
    {
      name: 'GET repeated unknown param keeps its order',
      method: 'GET',
      query: `ids[]=2&${BASE}&ids[]=1`,
      wantQuery: `${CANON}&ids%5B%5D=2&ids%5B%5D=1`,
      wantBody: null,
    },
    { name: 'GET unknown param without =', method: 'GET', query: `${BASE}&flag`, wantQuery: `${CANON}&flag=`, wantBody: null },
    { name: 'GET raw UTF-8 in unknown param', method: 'GET', query: `${BASE}&city=Köln`, wantQuery: CANON.replace('&dateFrom', '&city=K%C3%B6ln&dateFrom'), wantBody: null },
    {
      name: 'POST documented older form',
      method: 'POST',
      query: '',
      body: { campaignIds: [3, 1, 2], dateFrom: '2023-05-08', dateTo: '2023-05-12', byDate: true, byCampaign: false },
      wantQuery: '',
      wantBody: `{"byCampaign":false,"byDate":true,"campaignIds":[1,2,3],${DATES}}`,
    },
    {
      name: 'POST campaignIds numeric strings, de-duplicated, sorted',
      method: 'POST',
      query: '',
      body: post({ campaignIds: ['3', 1, 3, '001', 20] }),
      wantQuery: '',
      wantBody: `{${FLAGS_OFF},"campaignIds":[1,3,20],${DATES}}`,
    },
    { name: 'POST flags absent are explicit false', method: 'POST', query: '', body: post(), wantQuery: '', wantBody: `{${FLAGS_OFF},${DATES}}` },
    { name: 'POST flags as 1 / "true"', method: 'POST', query: '', body: post({ byDate: 1, byCampaign: 'true' }), wantQuery: '', wantBody: `{"byCampaign":true,"byDate":true,${DATES}}` },
    { name: 'POST flags as "1" / true', method: 'POST', query: '', body: post({ byDate: '1', byCampaign: true }), wantQuery: '', wantBody: `{"byCampaign":true,"byDate":true,${DATES}}` },
    { name: 'POST flags as 0 / "false"', method: 'POST', query: '', body: post({ byDate: 0, byCampaign: 'false' }), wantQuery: '', wantBody: `{${FLAGS_OFF},${DATES}}` },
    { name: 'POST flags as "0" / false', method: 'POST', query: '', body: post({ byDate: '0', byCampaign: false }), wantQuery: '', wantBody: `{${FLAGS_OFF},${DATES}}` },
    { name: 'POST advertiserId "007"', method: 'POST', query: '', body: post({ advertiserId: '007' }), wantQuery: '', wantBody: `{"advertiserId":7,${FLAGS_OFF},${DATES}}` },
    {
      name: 'POST other keys pass through, deep-sorted',
      method: 'POST',
      query: '',
      body: post({ zeta: { y: [{ d: 1, c: 'x' }], b: null }, alpha: 'A' }),
      wantQuery: '',
      wantBody: `{"alpha":"A",${FLAGS_OFF},${DATES},"zeta":{"b":null,"y":[{"c":"x","d":1}]}}`,
    },
    {
      name: 'POST query canonicalized generically',
      method: 'POST',
      query: 'per_page=200&page=2&page=1&advertiserId=007',
      body: post(),
      wantQuery: 'advertiserId=7&page=2&page=1&per_page=200',
      wantBody: `{${FLAGS_OFF},${DATES}}`,
    },
    // The platform reads the body's over the query's, or the body's alone: the query copy is read under neither.
    {
      name: 'POST same advertiserId in query and body',
      method: 'POST',
      query: 'advertiserId=7',
      body: post({ advertiserId: 7 }),
      wantQuery: '',
      wantBody: `{"advertiserId":7,${FLAGS_OFF},${DATES}}`,
    },
  ]

  it.each(cases)('$name', ({ wantQuery, wantBody, ...req }) => {
    const report = run(req)
    expect(report.query).toBe(wantQuery)
    expect(report.body).toBe(wantBody)
    expect(report.method).toBe(req.method)
    expect(report.path).toBe(PATH)
  })
})

describe('rejected report requests', () => {
  const cases: Array<Request & { name: string; message: string }> = [
    { name: 'GET advertiserId missing', method: 'GET', query: 'dateFrom=2026-01-01&dateTo=2026-01-30', message: 'advertiserId: required' },
    { name: 'GET advertiserId empty', method: 'GET', query: 'advertiserId=&dateFrom=2026-01-01&dateTo=2026-01-30', message: 'advertiserId: must be a positive integer ()' },
    ...['0', '000', '-1', '1.5', 'abc', '1e3', '0x10', '%207', '7%20', '%D9%A7', '9007199254740992', '99999999999999999999999'].map((value) => ({
      name: `GET advertiserId=${value}`,
      method: 'GET' as const,
      query: `advertiserId=${value}&dateFrom=2026-01-01&dateTo=2026-01-30`,
      message: 'advertiserId: must be a positive integer (',
    })),
    { name: 'GET dateFrom missing', method: 'GET', query: 'advertiserId=7&dateTo=2026-01-30', message: 'dateFrom: required' },
    { name: 'GET dateTo missing', method: 'GET', query: 'advertiserId=7&dateFrom=2026-01-01', message: 'dateTo: required' },
    { name: 'GET dateFrom Feb 30', method: 'GET', query: 'advertiserId=7&dateFrom=2026-02-30&dateTo=2026-03-30', message: 'dateFrom: not a calendar date (2026-02-30)' },
    { name: 'GET dateTo Feb 29 of a non-leap year', method: 'GET', query: 'advertiserId=7&dateFrom=2023-02-01&dateTo=2023-02-29', message: 'dateTo: not a calendar date (2023-02-29)' },
    { name: 'GET Feb 29 of 1900 (not leap)', method: 'GET', query: 'advertiserId=7&dateFrom=1900-02-29&dateTo=1900-03-01', message: 'dateFrom: not a calendar date (1900-02-29)' },
    { name: 'GET month 13', method: 'GET', query: 'advertiserId=7&dateFrom=2026-13-01&dateTo=2026-01-30', message: 'dateFrom: not a calendar date (2026-13-01)' },
    { name: 'GET month 00', method: 'GET', query: 'advertiserId=7&dateFrom=2026-00-10&dateTo=2026-01-30', message: 'dateFrom: not a calendar date' },
    { name: 'GET day 00', method: 'GET', query: 'advertiserId=7&dateFrom=2026-01-00&dateTo=2026-01-30', message: 'dateFrom: not a calendar date' },
    { name: 'GET April 31', method: 'GET', query: 'advertiserId=7&dateFrom=2026-04-01&dateTo=2026-04-31', message: 'dateTo: not a calendar date (2026-04-31)' },
    { name: 'GET date without zero padding', method: 'GET', query: 'advertiserId=7&dateFrom=2026-1-5&dateTo=2026-01-30', message: 'dateFrom: must be YYYY-MM-DD (2026-1-5)' },
    { name: 'GET date without dashes', method: 'GET', query: 'advertiserId=7&dateFrom=20260101&dateTo=2026-01-30', message: 'dateFrom: must be YYYY-MM-DD' },
    { name: 'GET date-time', method: 'GET', query: 'advertiserId=7&dateFrom=2026-01-01T00:00:00Z&dateTo=2026-01-30', message: 'dateFrom: must be YYYY-MM-DD' },
    { name: 'GET empty date', method: 'GET', query: 'advertiserId=7&dateFrom=2026-01-01&dateTo=', message: 'dateTo: must be YYYY-MM-DD ()' },
    { name: 'GET reversed range', method: 'GET', query: 'advertiserId=7&dateFrom=2026-01-31&dateTo=2026-01-30', message: 'dateTo: must not be before dateFrom' },
    { name: 'GET range one day too long', method: 'GET', query: 'advertiserId=7&dateFrom=2026-01-01&dateTo=2027-02-05', message: 'dateTo: range of 401 days exceeds the maximum of 400 days (cache.maxRangeDays): ask it in parts of at most 400 days' },
    ...['yes', 'TRUE', 'True', '', '2', 'on', '%201', '01'].map((value) => ({
      name: `GET byDate=${value}`,
      method: 'GET' as const,
      query: `${BASE}&byDate=${value}`,
      message: 'byDate: must be 1, true, 0 or false (',
    })),
    { name: 'GET byCampaign=no', method: 'GET', query: `${BASE}&byCampaign=no`, message: 'byCampaign: must be 1, true, 0 or false (no)' },
    { name: 'GET byDate twice, different values', method: 'GET', query: `${BASE}&byDate=1&byDate=0`, message: 'byDate: given more than once' },
    { name: 'GET byDate twice, same value', method: 'GET', query: `${BASE}&byDate=1&byDate=1`, message: 'byDate: given more than once' },
    { name: 'GET dateFrom twice', method: 'GET', query: `${BASE}&dateFrom=2026-01-01`, message: 'dateFrom: given more than once' },
    { name: 'GET advertiserId twice', method: 'GET', query: `${BASE}&advertiserId=8`, message: 'advertiserId: given more than once' },
    // PHP reads `name[]`, `name[x]` as `name` (its last spelling wins, a list): the platform would read another value than the one checked.
    { name: 'GET advertiserId[] beside advertiserId', method: 'GET', query: `${BASE}&advertiserId[]=8`, message: 'advertiserId: one value, not a list (advertiserId[])' },
    { name: 'GET dateTo[x] beside dateTo', method: 'GET', query: `${BASE}&dateTo[x]=2027-12-31`, message: 'dateTo: one value, not a list (dateTo[x])' },
    { name: 'GET byDate[] alone', method: 'GET', query: `${BASE}&byDate[]=1`, message: 'byDate: one value, not a list (byDate[])' },
    { name: 'POST advertiserId[] in query', method: 'POST', query: 'advertiserId[]=5', body: post(), message: 'advertiserId: one value, not a list (advertiserId[])' },
    ...[null, [], 'x', 7, true].map((body) => ({
      name: `POST body ${JSON.stringify(body)}`,
      method: 'POST' as const,
      query: '',
      body,
      message: 'body: must be a JSON object',
    })),
    { name: 'POST dateFrom missing', method: 'POST', query: '', body: post({ dateFrom: undefined }), message: 'dateFrom: required' },
    { name: 'POST dateTo a number', method: 'POST', query: '', body: post({ dateTo: 20230512 }), message: 'dateTo: must be YYYY-MM-DD (20230512)' },
    { name: 'POST dateTo non-leap Feb 29', method: 'POST', query: '', body: post({ dateFrom: '2023-02-01', dateTo: '2023-02-29' }), message: 'dateTo: not a calendar date (2023-02-29)' },
    { name: 'POST reversed range', method: 'POST', query: '', body: post({ dateFrom: '2023-05-13' }), message: 'dateTo: must not be before dateFrom' },
    { name: 'POST campaignIds empty', method: 'POST', query: '', body: post({ campaignIds: [] }), message: 'campaignIds: must be a non-empty array of positive integers' },
    { name: 'POST campaignIds a string', method: 'POST', query: '', body: post({ campaignIds: '1,2' }), message: 'campaignIds: must be a non-empty array of positive integers' },
    { name: 'POST campaignIds null', method: 'POST', query: '', body: post({ campaignIds: null }), message: 'campaignIds: must be a non-empty array of positive integers' },
    ...[0, -2, 1.5, 'abc', '1e3', '', null, true, [1], 9007199254740992].map((bad) => ({
      name: `POST campaignIds element ${JSON.stringify(bad)}`,
      method: 'POST' as const,
      query: '',
      body: post({ campaignIds: [1, bad] }),
      message: 'campaignIds: element 1 is not a positive integer (',
    })),
    ...['yes', 'TRUE', 2, null, [], ''].map((value) => ({
      name: `POST byDate ${JSON.stringify(value)}`,
      method: 'POST' as const,
      query: '',
      body: post({ byDate: value }),
      message: 'byDate: must be true, false, 1, 0, "1", "0", "true" or "false" (',
    })),
    { name: 'POST byCampaign "no"', method: 'POST', query: '', body: post({ byCampaign: 'no' }), message: 'byCampaign: must be true' },
    ...[0, -1, 1.5, 'abc', '1e3', null].map((value) => ({
      name: `POST advertiserId ${JSON.stringify(value)}`,
      method: 'POST' as const,
      query: '',
      body: post({ advertiserId: value }),
      message: 'advertiserId: must be a positive integer (',
    })),
    { name: 'POST advertiserId query/body differ', method: 'POST', query: 'advertiserId=5', body: post({ advertiserId: 7 }), message: 'advertiserId: query (5) and body (7) differ' },
    { name: 'POST advertiserId twice in query', method: 'POST', query: 'advertiserId=5&advertiserId=5', body: post(), message: 'advertiserId: given more than once' },
    { name: 'POST bad advertiserId in query', method: 'POST', query: 'advertiserId=abc', body: post(), message: 'advertiserId: must be a positive integer (abc)' },
  ]

  it.each(cases)('$name', ({ message, ...req }) => {
    const err = failure(() => run(req))
    expect(err).toBeInstanceOf(BadQueryError)
    expect(err).toMatchObject({ statusCode: 400, code: 'GW_BAD_QUERY' })
    expect((err as Error).message.startsWith(message), `"${(err as Error).message}" starts with "${message}"`).toBe(true)
  })

  it('bounds the echoed value as every refusal bounds a caller\'s text: its first 64 characters, then how many were left out', () => {
    const err = failure(() => canonicalGetReport(PATH, `advertiserId=${'x'.repeat(10_000)}&${BASE.slice(15)}`, OPTS))
    expect((err as Error).message).toBe(`advertiserId: must be a positive integer (${'x'.repeat(64)}… (+9936 characters))`)
    const body = failure(() => canonicalPostReport(PATH, '', post({ campaignIds: [1, { a: 'y'.repeat(100) }] }), OPTS))
    expect((body as Error).message).toBe(`campaignIds: element 1 is not a positive integer (${shownValue({ a: 'y'.repeat(100) })})`)
    expect(shownValue({ a: 'y'.repeat(100) })).toMatch(/… \(\+44 characters\)$/)
  })

  it('keeps the order of the spellings PHP reads as one variable: the last one the caller wrote is the one the platform reads', () => {
    // PHP files `name`, `name[]`, `name[x]` under `name`, and `a.b`, `a b` under `a_b`; the last spelling wins.
    const head = 'advertiserId=7&dateFrom=2026-01-01&dateTo=2026-01-30'
    const spellings = [
      ['spentBased[]=local&spentBased=USD', `${head}&spentBased%5B%5D=local&spentBased=USD`],
      ['spentBased=USD&spentBased[]=local', `${head}&spentBased=USD&spentBased%5B%5D=local`],
      ['spent_Based=USD&spent.Based=local', `${head}&spent_Based=USD&spent_Based=local`],
      ['z=1&spent.Based=local&spent_Based=USD&a=2', `a=2&${head}&spent_Based=local&spent_Based=USD&z=1`],
    ]
    for (const [spelled, canonical] of spellings) expect(canonicalGetReport(PATH, `${BASE}&${spelled}`, OPTS).query, spelled).toBe(canonical)
    // Two meanings, two reports.
    const keyOf = (extra: string) => reportCacheKey({ credential: 'default', account: 'sub:100', report: canonicalGetReport(PATH, `${BASE}&${extra}`, OPTS) }, { prefix: 'rgw:', version: 1 })
    expect(keyOf('spentBased[]=local&spentBased=USD')).not.toBe(keyOf('spentBased=USD&spentBased[]=local'))
  })

  // PHP files `a.b`, `a b`, ` a_b` and `a[b` under `a_b`: one parameter to the platform, one report (found by a black-box pass, session 132).
  it('names a parameter as PHP files it: the spellings of one name are one report', () => {
    const keyOf = (extra: string) => reportCacheKey({ credential: 'default', account: 'sub:100', report: canonicalGetReport(PATH, `${BASE}&${extra}`, OPTS) }, { prefix: 'rgw:', version: 1 })
    const spellings = ['spent_Based=local', 'spent.Based=local', 'spent%20Based=local', 'spent+Based=local', '%20spent.Based=local', 'spent[Based=local']
    expect(new Set(spellings.map(keyOf)).size).toBe(1)
    expect(canonicalGetReport(PATH, `${BASE}&spent.Based=local`, OPTS).query).toContain('&spent_Based=local')
    // Brackets name an array's key: the key inside is not PHP's variable name, and stays as written.
    expect(canonicalGetReport(PATH, `${BASE}&a.b[c.d]=1`, OPTS).query).toContain('a_b%5Bc.d%5D=1')
    expect(keyOf('a.b[c.d]=1')).not.toBe(keyOf('a.b[c_d]=1'))
  })

  it('passes on names PHP reads as other names than the known parameters', () => {
    // `advertiserId[` is `advertiserId_` to PHP, `advertiserId.` too, `advertiserIds[]` another list.
    for (const extra of ['advertiserId[=8', 'advertiserId.=8', 'advertiserIds[]=8', 'x[advertiserId]=8']) {
      expect(canonicalGetReport(PATH, `${BASE}&${extra}`, OPTS).advertiserId, extra).toBe(7)
    }
  })
})

describe('one report, several spellings', () => {
  it('gives one canonical GET request', () => {
    const spellings = [
      'advertiserId=7&byDate=1&dateFrom=2026-01-01&dateTo=2026-01-30',
      'dateTo=2026-01-30&dateFrom=2026-01-01&byDate=1&advertiserId=7',
      'advertiserId=7&byDate=true&dateFrom=2026-01-01&dateTo=2026-01-30',
      'advertiserId=7&byDate=1&byCampaign=0&dateFrom=2026-01-01&dateTo=2026-01-30',
      'advertiserId=007&byDate=1&byCampaign=false&dateFrom=2026-01-01&dateTo=2026-01-30',
    ]
    const reports = spellings.map((q) => canonicalGetReport(PATH, q, OPTS))
    const keys = reports.map((report) => reportCacheKey({ credential: 'default', account: 'sub:100', report }, { prefix: 'rgw:', version: 1 }))
    for (const report of reports) expect(report).toEqual(reports[0])
    expect(new Set(keys).size).toBe(1)
    expect(reports[0]).toEqual({
      method: 'GET',
      path: PATH,
      advertiserId: 7,
      campaignIds: [],
      advertiserIds: [7],
      dateFrom: '2026-01-01',
      dateTo: '2026-01-30',
      byDate: true,
      byCampaign: false,
      query: 'advertiserId=7&byDate=1&dateFrom=2026-01-01&dateTo=2026-01-30',
      body: null,
      keyMaterial: {
        method: 'GET',
        path: PATH,
        query: [
          ['advertiserId', '7'],
          ['byDate', '1'],
          ['dateFrom', '2026-01-01'],
          ['dateTo', '2026-01-30'],
        ],
        body: null,
      },
    })
  })

  it('gives one canonical POST request', () => {
    const spellings: unknown[] = [
      { campaignIds: [1, 2], dateFrom: '2023-05-08', dateTo: '2023-05-12', byDate: true, byCampaign: false },
      { byCampaign: false, byDate: true, dateTo: '2023-05-12', dateFrom: '2023-05-08', campaignIds: [2, 1] },
      { campaignIds: ['2', 1, 2], dateFrom: '2023-05-08', dateTo: '2023-05-12', byDate: 'true' },
      { campaignIds: [1, '002'], dateFrom: '2023-05-08', dateTo: '2023-05-12', byDate: 1, byCampaign: '0' },
      { campaignIds: [1, 2], dateFrom: '2023-05-08', dateTo: '2023-05-12', byDate: '1', byCampaign: 'false' },
    ]
    const reports = spellings.map((body) => canonicalPostReport(PATH, '', body, OPTS))
    const keys = reports.map((report) => reportCacheKey({ credential: 'default', account: 'sub:100', report }, { prefix: 'rgw:', version: 1 }))
    for (const report of reports) expect(report).toEqual(reports[0])
    expect(new Set(keys).size).toBe(1)
    expect(reports[0]?.body).toBe(`{"byCampaign":false,"byDate":true,"campaignIds":[1,2],${DATES}}`)
    expect(reports[0]?.advertiserId).toBeNull()
  })
})

describe('advertiserId of a report', () => {
  it.each([
    { name: 'GET from the query', req: { method: 'GET', query: BASE.replace('=7', '=0042') }, want: 42 },
    { name: 'POST from the body', req: { method: 'POST', query: '', body: post({ advertiserId: '0042' }) }, want: 42 },
    { name: 'POST from the query when the body has none', req: { method: 'POST', query: 'advertiserId=42', body: post() }, want: 42 },
    { name: 'POST none', req: { method: 'POST', query: '', body: post() }, want: null },
  ] satisfies Array<{ name: string; req: Request; want: number | null }>)('$name', ({ req, want }) => {
    expect(run(req).advertiserId).toBe(want)
  })
})

describe('epochDay', () => {
  it.each([
    ['1970-01-01', 0],
    ['1970-01-02', 1],
    ['1969-12-31', -1],
    ['2024-02-29', 19782],
    ['0024-02-29', -710703],
    ['2024-02-30', null],
    ['2024-2-29', null],
    ['1900-02-29', null],
    ['2000-02-29', 11016],
    ['0000-01-01', -719528],
    ['9999-12-31', 2932896],
    ['2026-04-31', null],
    ['2026-13-01', null],
    ['2026-00-10', null],
    ['2026-01-00', null],
    ['2026-01-1a', null],
    ['2026/01/10', null],
    ['2026-01-10 ', null],
    ['２０２６-01-10', null],
  ] as const)('%s → %s', (date, want) => {
    expect(epochDay(date)).toBe(want)
  })

  it('agrees with the Date of every spelling YYYY-MM-DD, real date or not', () => {
    // The Date's own reading: a part out of range rolls over, so a date that does not come back unchanged does not exist.
    const byDate = (year: number, month: number, day: number): number | null => {
      const at = new Date(0)
      at.setUTCFullYear(year, month - 1, day)
      return at.getUTCFullYear() === year && at.getUTCMonth() === month - 1 && at.getUTCDate() === day ? at.getTime() / 86_400_000 : null
    }
    const pad = (n: number, width: number) => String(n).padStart(width, '0')
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 9999 }), fc.integer({ min: 0, max: 99 }), fc.integer({ min: 0, max: 99 }), (year, month, day) => {
        expect(epochDay(`${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}`)).toBe(byDate(year, month, day))
      }),
      { numRuns: 20_000 },
    )
    for (const year of [0, 1, 4, 100, 400, 1582, 1900, 1970, 2000, 2024, 2025, 2100, 9999]) {
      for (let month = 1; month <= 12; month++) for (let day = 28; day <= 32; day++) expect(epochDay(`${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}`)).toBe(byDate(year, month, day))
    }
  })
})

// A report's dates and switches in another spelling (`bydate`, `ByDate`, `date_from`) are
// names the platform does not read (PHP's and Laravel's names are case-sensitive): sent on,
// it answered the report without them (totals for `bydate=1`, not rows by date), with no word.
describe('a report field in another spelling', () => {
  it.each([
    ['GET', 'bydate=1', 'bydate', 'byDate'],
    ['GET', 'ByDate=1', 'ByDate', 'byDate'],
    ['GET', 'by_date=1', 'by_date', 'byDate'],
    ['GET', 'by.date=1', 'by.date', 'byDate'],
    ['GET', 'BYCAMPAIGN=1', 'BYCAMPAIGN', 'byCampaign'],
    ['GET', 'datefrom=2025-01-01', 'datefrom', 'dateFrom'],
    ['GET', 'DateTo=2026-01-31', 'DateTo', 'dateTo'],
    ['GET', 'date-to[]=2026-01-31', 'date-to[]', 'dateTo'],
  ])('%s ?%s is 400 naming the spelling the platform reads', (_method, extra, field, reads) => {
    expect(failure(() => run({ method: 'GET', query: `${BASE}&${extra}` }))).toMatchObject({ code: 'GW_BAD_QUERY', message: `${field}: the platform reads ${reads}; send it so` })
  })

  it.each([
    ['in its query', 'bydate=1', post(), 'bydate', 'byDate'],
    ['in its body', '', post({ bydate: true }), 'bydate', 'byDate'],
    ['in its body', '', post({ DateFrom: '2023-05-01' }), 'DateFrom', 'dateFrom'],
    ['in its body', '', post({ by_campaign: 1 }), 'by_campaign', 'byCampaign'],
  ])('POST %s: %s is 400 naming the spelling the platform reads', (_where, query, body, field, reads) => {
    expect(failure(() => run({ method: 'POST', query, body }))).toMatchObject({ code: 'GW_BAD_QUERY', message: `${field}: the platform reads ${reads}; send it so` })
  })

  it('other names pass on as before: one that only contains a field\'s name is not one', () => {
    expect(run({ method: 'GET', query: `${BASE}&byDates=1&date=2026-01-01&spentBased=USD` }).query).toBe(`advertiserId=7&byDates=1&date=2026-01-01&dateFrom=2026-01-01&dateTo=2026-01-30&spentBased=USD`)
    expect(run({ method: 'POST', query: '', body: post({ byDates: true }) }).body).toContain('"byDates":true')
  })
})
