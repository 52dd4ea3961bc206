import { createHash } from 'node:crypto'
import { describe, it, expect } from 'vitest'
import { reportCacheKey } from '../../src/reports/cache-key.js'
import { stableStringify } from '../../src/reports/stable-stringify.js'
import { canonicalGetReport, canonicalPostReport, type CanonicalReport } from '../../src/reports/report-query.js'

const OPTS = { maxRangeDays: 400 }
const KEY_OPTS = { prefix: 'rgw:', version: 1 }
const PATH = '/api/v1/report/campaigns/get'
const BASE = 'advertiserId=7&dateFrom=2026-01-01&dateTo=2026-01-30'
const BODY = { dateFrom: '2026-01-01', dateTo: '2026-01-30' }
const ACCOUNT = 'http://platform.test sub:100'

function key(report: CanonicalReport, credential = 'default', account = ACCOUNT): string {
  return reportCacheKey({ credential, account, report }, KEY_OPTS)
}

describe('stableStringify', () => {
  it.each([
    { name: 'string', value: 'a"b\n', want: '"a\\"b\\n"' },
    { name: 'number', value: 1.5, want: '1.5' },
    { name: 'NaN and Infinity as null', value: [Number.NaN, Number.POSITIVE_INFINITY], want: '[null,null]' },
    { name: 'booleans and null', value: [true, false, null], want: '[true,false,null]' },
    { name: 'keys sorted', value: { b: 1, a: 2 }, want: '{"a":2,"b":1}' },
    { name: 'nested keys sorted, arrays kept in order', value: { z: [{ y: 1, x: 2 }, 3, 1], a: { d: null, c: 'c' } }, want: '{"a":{"c":"c","d":null},"z":[{"x":2,"y":1},3,1]}' },
    { name: 'integer-like keys in code-unit order', value: { b: 1, 10: 2, 2: 3 }, want: '{"10":2,"2":3,"b":1}' },
    { name: 'undefined dropped from objects', value: { a: undefined, b: 1 }, want: '{"b":1}' },
    { name: 'undefined is null in arrays', value: [undefined, () => 1], want: '[null,null]' },
    { name: 'toJSON honoured', value: { at: new Date(Date.UTC(2026, 0, 2)) }, want: '{"at":"2026-01-02T00:00:00.000Z"}' },
    { name: 'own __proto__ key kept', value: JSON.parse('{"__proto__":{"x":1},"a":1}') as unknown, want: '{"__proto__":{"x":1},"a":1}' },
    { name: 'lone surrogate escaped', value: '\ud800', want: '"\\ud800"' },
    { name: 'a hole in an array is null, as JSON.stringify has it', value: Object.assign(new Array<unknown>(2), { 1: 1 }), want: '[null,1]' },
    { name: 'toJSON given the member name or the index', value: { d: { toJSON: (k: string) => k }, l: [{ toJSON: (k: string) => k }] }, want: '{"d":"d","l":["0"]}' },
  ])('$name', ({ value, want }) => {
    expect(stableStringify(value)).toBe(want)
  })

  it('does not depend on key insertion order', () => {
    expect(stableStringify({ a: 1, b: { c: 2, d: [3, { e: 4, f: 5 }] } })).toBe(
      stableStringify({ b: { d: [3, { f: 5, e: 4 }], c: 2 }, a: 1 }),
    )
  })

  it('is JSON that parses back to the same value', () => {
    const value = { q: [['a', '1'], ['b', 'x"y']], n: { deep: [1, 'two', null, { k: true }] } }
    expect(JSON.parse(stableStringify(value))).toEqual(value)
  })

  it('refuses what JSON cannot represent', () => {
    expect(() => stableStringify(undefined)).toThrow(TypeError)
    expect(() => stableStringify({ n: 1n })).toThrow(TypeError)
  })
})

describe('reportCacheKey', () => {
  const report = canonicalGetReport(PATH, BASE, OPTS)

  it('is prefix, version and the base64url sha256 of the stable serialization', () => {
    const material = `{"account":"${ACCOUNT}","credential":"default","keyMaterial":{"body":null,"method":"GET","path":"${PATH}","query":[["advertiserId","7"],["dateFrom","2026-01-01"],["dateTo","2026-01-30"]]},"method":"GET","path":"${PATH}"}`
    const digest = createHash('sha256').update(material).digest('base64url')
    expect(key(report)).toBe(`rgw:report:v1:${digest}`)
    expect(key(report)).toMatch(/^rgw:report:v1:[A-Za-z0-9_-]{43}$/)
  })

  it('hashes the serialization as UTF-8', () => {
    const material = stableStringify({ credential: 'crédit ☃', account: ACCOUNT, method: report.method, path: report.path, keyMaterial: report.keyMaterial })
    expect(key(report, 'crédit ☃')).toBe(`rgw:report:v1:${createHash('sha256').update(material, 'utf8').digest('base64url')}`)
  })

  it('uses the given prefix and version', () => {
    const other = reportCacheKey({ credential: 'default', account: ACCOUNT, report }, { prefix: 'x:', version: 12 })
    expect(other.startsWith('x:report:v12:')).toBe(true)
    expect(other.slice('x:report:v12:'.length)).toBe(key(report).slice('rgw:report:v1:'.length))
  })

  it('does not depend on the key order of keyMaterial', () => {
    const reordered: CanonicalReport = {
      ...report,
      keyMaterial: { query: report.keyMaterial.query, body: null, path: PATH, method: 'GET' },
    }
    expect(key(reordered)).toBe(key(report))
    const post = canonicalPostReport(PATH, '', { ...BODY, extra: { b: 1, a: 2 } }, OPTS)
    const postReordered = canonicalPostReport(PATH, '', { extra: { a: 2, b: 1 }, ...BODY }, OPTS)
    expect(key(postReordered)).toBe(key(post))
  })

  const distinct: Array<[string, () => [string, string]]> = [
    ['an encoded & and = vs two parameters', () => [
      key(canonicalGetReport(PATH, `${BASE}&a=1&b=2`, OPTS)),
      key(canonicalGetReport(PATH, `${BASE}&a=1%26b%3D2`, OPTS)),
    ]],
    ['an empty parameter vs none', () => [
      key(canonicalGetReport(PATH, `${BASE}&a=`, OPTS)),
      key(canonicalGetReport(PATH, BASE, OPTS)),
    ]],
    ['repeated values in another order', () => [
      key(canonicalGetReport(PATH, `${BASE}&x=1&x=2`, OPTS)),
      key(canonicalGetReport(PATH, `${BASE}&x=2&x=1`, OPTS)),
    ]],
    ['another flag', () => [
      key(canonicalGetReport(PATH, `${BASE}&byDate=1`, OPTS)),
      key(canonicalGetReport(PATH, `${BASE}&byCampaign=1`, OPTS)),
    ]],
    ['another advertiser', () => [
      key(canonicalGetReport(PATH, BASE, OPTS)),
      key(canonicalGetReport(PATH, BASE.replace('=7', '=70'), OPTS)),
    ]],
    ['another credential', () => [key(report, 'default'), key(report, 'partner')]],
    ['another path', () => [key(report), key(canonicalGetReport('/api/v1/report/creatives/get', BASE, OPTS))]],
    ['GET vs POST of the same parameters', () => [
      key(canonicalGetReport(PATH, BASE, OPTS)),
      key(canonicalPostReport(PATH, 'advertiserId=7', BODY, OPTS)),
    ]],
    ['a POST query parameter vs the same body field', () => [
      key(canonicalPostReport(PATH, 'x=1', BODY, OPTS)),
      key(canonicalPostReport(PATH, '', { ...BODY, x: '1' }, OPTS)),
    ]],
    ['one credential acting for another account (a token of another customer)', () => [
      key(canonicalGetReport(PATH, BASE, OPTS)),
      key(canonicalGetReport(PATH, BASE, OPTS), 'default', 'http://platform.test sub:200'),
    ]],
    ['credential/path boundary moved', () => [
      reportCacheKey({ credential: 'a', account: ACCOUNT, report: { ...report, path: 'b/c' } }, KEY_OPTS),
      reportCacheKey({ credential: 'ab', account: ACCOUNT, report: { ...report, path: '/c' } }, KEY_OPTS),
    ]],
    ['a number vs the same digits as a string in a body', () => [
      key(canonicalPostReport(PATH, '', { ...BODY, x: 1 }, OPTS)),
      key(canonicalPostReport(PATH, '', { ...BODY, x: '1' }, OPTS)),
    ]],
    ['a lone surrogate vs U+FFFD', () => [
      key({ ...report, keyMaterial: { v: '\ud800' } }),
      key({ ...report, keyMaterial: { v: '\ufffd' } }),
    ]],
  ]

  it.each(distinct)('tells apart %s', (_name, keys) => {
    const [a, b] = keys()
    expect(a).not.toBe(b)
  })
})

describe('the key of the release before (account null)', () => {
  const report = canonicalGetReport(PATH, BASE, OPTS)

  it('is the key a report job asked before the upgrade holds: the hash without an account', () => {
    const before = createHash('sha256').update(stableStringify({ credential: 'default', method: report.method, path: report.path, keyMaterial: report.keyMaterial }), 'utf8').digest('base64url')
    expect(reportCacheKey({ credential: 'default', account: null, report }, KEY_OPTS)).toBe(`rgw:report:v1:${before}`)
  })

  it('is no account\'s key', () => {
    expect(reportCacheKey({ credential: 'default', account: null, report }, KEY_OPTS)).not.toBe(key(report))
  })
})
