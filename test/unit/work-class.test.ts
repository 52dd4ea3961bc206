import { describe, expect, it } from 'vitest'
import { canonicalGetReport, canonicalPostReport } from '../../src/reports/report-query.js'
import { workClass } from '../../src/reports/work-class.js'

// The work a report asks of the platform, read from what the platform is sent: a caller
// cannot choose the class its answers are judged in.

const OPTS = { maxRangeDays: 400 }
const PATH = '/api/v1/report/campaigns/get'

describe('workClass', () => {
  it.each([
    ['one day', 'advertiserId=1&dateFrom=2026-01-01&dateTo=2026-01-01', `${PATH}|r1||n0`],
    ['a week', 'advertiserId=1&dateFrom=2026-01-01&dateTo=2026-01-07', `${PATH}|r3||n0`],
    ['30 days', 'advertiserId=1&dateFrom=2026-01-01&dateTo=2026-01-30', `${PATH}|r5||n0`],
    ['a year by date and campaign', 'advertiserId=1&dateFrom=2025-01-01&dateTo=2025-12-31&byDate=1&byCampaign=1', `${PATH}|r9|dc|n0`],
    ['by date only', 'advertiserId=1&dateFrom=2026-01-01&dateTo=2026-01-07&byDate=true', `${PATH}|r3|d|n0`],
  ])('a GET report over %s', (_name, query, klass) => {
    expect(workClass(canonicalGetReport(PATH, query, OPTS))).toBe(klass)
  })

  it('reads a POST form\'s range and splits from its body; a query naming them is refused', () => {
    const body = { campaignIds: [1, 2, 3], dateFrom: '2025-01-01', dateTo: '2025-12-31', byDate: true, byCampaign: false }
    expect(workClass(canonicalPostReport(PATH, '', body, OPTS))).toBe(`${PATH}|r9|d|n2`)
    // A caller naming a one-day range in the query of a year-long form.
    expect(() => canonicalPostReport(PATH, 'dateFrom=2026-01-01&dateTo=2026-01-01&byCampaign=1', body, OPTS)).toThrow('dateFrom: a POST report reads it from its JSON body, not from the query (dateFrom)')
  })

  it('tells forms by how many campaigns they name', () => {
    const form = (ids: number[]) => workClass(canonicalPostReport(PATH, '', { campaignIds: ids, dateFrom: '2026-01-01', dateTo: '2026-01-07' }, OPTS))
    expect(form([1])).toBe(`${PATH}|r3||n1`)
    expect(form(Array.from({ length: 500 }, (_, i) => i + 1))).toBe(`${PATH}|r3||n9`)
  })

  it('names one class for every spelling of the route', () => {
    const a = canonicalGetReport('/api/v1/report/c%61mpaigns/get/', 'advertiserId=1&dateFrom=2026-01-01&dateTo=2026-01-07', OPTS)
    const b = canonicalGetReport(PATH, 'advertiserId=1&dateFrom=2026-01-01&dateTo=2026-01-07', OPTS)
    expect(workClass(a)).toBe(workClass(b))
  })
})
