import { describe, expect, it } from 'vitest'
import { pageClass, proxiedWorkClass } from '../../src/access/page-class.js'
import { checkTarget, type Pair } from '../../src/access/request-target.js'
import { canonicalGetReport, canonicalPostReport } from '../../src/reports/report-query.js'
import { workClass } from '../../src/reports/work-class.js'

// The page a call asks, read as Laravel's paginate() reads it: a caller's spelling never
// puts a page of many rows in the class of a page of one (the cheap calls that would keep
// the class's estimate short and its costly ones lent: test/slow/work-class-lending.test.ts).

const LIST = '/api/v1/campaign/get'
const query = (text: string): Pair[] => [...new URLSearchParams(text)]
const ofQuery = (text: string): string => pageClass({ query: query(text) })

describe('pageClass', () => {
  it.each([
    ['', ''],
    ['per_page=0', ''],
    ['per_page=1', '|p1'],
    ['per_page=15', '|p4'],
    ['per_page=200', '|p8'],
    ['per_page=500', '|p9'],
    ['page=1', ''],
    ['page=2', '|g1'],
    ['page=9', '|g4'],
    ['per_page=500&page=9', '|p9|g4'],
  ])('%j: %j', (text, klass) => {
    expect(ofQuery(text)).toBe(klass)
  })

  it('reads a size as PHP casts it: a numeric prefix, an exponent, no limit below 0, a list apart', () => {
    expect(ofQuery('per_page=500abc')).toBe(ofQuery('per_page=500'))
    expect(ofQuery('per_page=5e2')).toBe(ofQuery('per_page=500'))
    expect(ofQuery('per_page=%20500')).toBe(ofQuery('per_page=500'))
    expect(ofQuery('per_page=abc')).toBe('')
    expect(ofQuery('per_page=-1')).toBe('|p-')
    expect(ofQuery('per_page=1e400')).toBe('|p64')
    expect(ofQuery('per_page[]=500')).toBe('|px')
  })

  it('reads a page as the paginator does: a plain integer of 1 or more, else page 1', () => {
    for (const page of ['0', '-3', 'abc', '5e2', '01', '2.5']) expect(ofQuery(`page=${page}`)).toBe('')
    expect(ofQuery('page=%208')).toBe('|g3')
  })

  it('reads PHP\'s variable, the last of a name, and a body\'s over the query\'s', () => {
    expect(ofQuery('per.page=500')).toBe('|p9')
    expect(ofQuery('per page=500')).toBe('|p9')
    expect(ofQuery('per_page=1&per_page=500')).toBe('|p9')
    expect(ofQuery('per_page=1&per_page[]=500')).toBe('|px')
    expect(pageClass({ query: query('per_page=1'), json: { per_page: 500 } })).toBe('|p9')
    expect(pageClass({ query: query('per_page=1'), json: { per_page: '500' }, form: query('per_page=2') })).toBe('|p9')
    expect(pageClass({ query: query('per_page=1'), form: query('per_page=500') })).toBe('|p9')
    expect(pageClass({ query: query('per_page=500'), json: { userId: 101 } })).toBe('|p9')
    expect(pageClass({ query: [], json: { per_page: true, page: 3 } })).toBe('|p1|g2')
    expect(pageClass({ query: [], json: { per_page: [500] } })).toBe('|px')
  })

  it('makes a proxied call\'s class its route and its page, from the checked target and body', () => {
    const target = checkTarget(`${LIST}?per_page=300&page=9`, 100)
    expect(proxiedWorkClass(target, null)).toBe(`${LIST}|p9|g4`)
    expect(proxiedWorkClass(checkTarget(`${LIST}`, 100), { kind: 'json', value: { userId: 103, per_page: 1 }, text: '', contentType: 'application/json', values: 3, containers: 1 })).toBe(`${LIST}|p1`)
    expect(proxiedWorkClass(checkTarget('/api/v1/campaign/banner/delete/101001', 100), null)).toBe('/api/v1/campaign/banner/delete/{id}')
  })

  it('tells a report\'s page passed on from a report of no page', () => {
    const opts = { maxRangeDays: 400 }
    const path = '/api/v1/report/campaigns/get'
    const week = 'advertiserId=1&dateFrom=2026-01-01&dateTo=2026-01-07'
    expect(workClass(canonicalGetReport(path, week, opts))).toBe(`${path}|r3||n0`)
    expect(workClass(canonicalGetReport(path, `${week}&per_page=1000`, opts))).toBe(`${path}|r3||n0|p10`)
    expect(workClass(canonicalPostReport(path, 'page=2', { dateFrom: '2026-01-01', dateTo: '2026-01-07', per_page: 1 }, opts))).toBe(`${path}|r3||n0|p1|g1`)
  })
})
