import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { canonicalPath } from '../../src/platform/canonical-path.js'
import { routeTemplate } from '../../src/platform/route-template.js'
import { reportCacheKey } from '../../src/reports/cache-key.js'
import { canonicalGetReport, canonicalPostReport } from '../../src/reports/report-query.js'
import { checkTarget } from '../../src/access/request-target.js'

// One path per report (contract, "Reports"): whatever spelling of a report path a caller
// sends (trailing slashes, repeated slashes, percent-escapes of unreserved characters in
// either case), it is refused 404 (a path with `//` or an escaped `.`, as every such
// /api/v1/ path: they could be decoded into another path on the way) or it is the
// canonical path's report: the same cache key, and the same route for the pauses.
// routeTemplate gives one route for every spelling, refused or not.

const RUNS = Number(process.env.PROPERTY_RUNS ?? 500)
const SEED = process.env.PROPERTY_SEED !== undefined ? Number(process.env.PROPERTY_SEED) : process.env.PROPERTY_RUNS ? Date.now() : 30

const PATHS = ['/api/v1/report/campaigns/get', '/api/v1/report/adPlacementPositions/get', '/api/v1/report/creatives-2/get', '/api/v1/report/a.b_c~d/get']
const QUERY = 'advertiserId=101&byDate=1&dateFrom=2026-01-01&dateTo=2026-01-07'
const KEY_OPTS = { prefix: 'rgw:', version: 1 }
const RANGE = { maxRangeDays: 400 }

const hex = (code: number, upper: boolean) => {
  const h = code.toString(16).padStart(2, '0')
  return `%${upper ? h.toUpperCase() : h}`
}

/** A spelling of `path`: each character after /api/v1/ maybe escaped, each `/` maybe doubled, trailing slashes maybe added. */
const spelling = (path: string) =>
  fc
    .tuple(
      fc.array(fc.tuple(fc.boolean(), fc.boolean(), fc.boolean()), { minLength: path.length, maxLength: path.length }),
      fc.integer({ min: 0, max: 3 }),
    )
    .map(([choices, trailing]) => {
      const fixed = '/api/v1/'
      let out = fixed
      for (let i = fixed.length; i < path.length; i++) {
        const ch = path[i] as string
        const [escape, upper, doubled] = choices[i] as [boolean, boolean, boolean]
        if (ch === '/') out += doubled ? '//' : '/'
        else out += escape ? hex(ch.charCodeAt(0), upper) : ch
      }
      return out + '/'.repeat(trailing)
    })

const spelled = fc.constantFrom(...PATHS).chain((path) => spelling(path).map((s) => ({ path, s })))

function keyOf(path: string, method: 'GET' | 'POST'): string {
  const report = method === 'GET' ? canonicalGetReport(path, QUERY, RANGE) : canonicalPostReport(path, '', { campaignIds: [101001], dateFrom: '2026-01-01', dateTo: '2026-01-07' }, RANGE)
  return reportCacheKey({ credential: 'default', account: 'sub:100', report }, KEY_OPTS)
}

describe('one path per report, over generated spellings', () => {
  it('gives one cache key per report, or a 404', () => {
    fc.assert(
      fc.property(spelled, ({ path, s }) => {
        let target
        try {
          target = checkTarget(`${s}?${QUERY}`, 1000)
        } catch (err) {
          expect((err as { statusCode?: number }).statusCode).toBe(404)
          expect(s).toMatch(/\/\/|%2e/i)
          return
        }
        for (const method of ['GET', 'POST'] as const) expect(keyOf(target.path, method)).toBe(keyOf(path, method))
        expect(canonicalGetReport(target.path, QUERY, RANGE).path).toBe(path)
      }),
      { numRuns: RUNS, seed: SEED },
    )
  })

  it('gives one route template per report, whatever the spelling', () => {
    fc.assert(
      fc.property(spelled, fc.constantFrom('', `?${QUERY}`), ({ path, s }, query) => {
        expect(routeTemplate(`${s}${query}`)).toBe(routeTemplate(path))
      }),
      { numRuns: RUNS, seed: SEED },
    )
  })

  it('keeps numeric segments one route in any spelling', () => {
    expect(routeTemplate('/api/v1/campaign/banner/delete/%31%32/')).toBe('/api/v1/campaign/banner/delete/{id}')
    expect(routeTemplate('/api/v1//campaign/banner/delete/12?x=1')).toBe('/api/v1/campaign/banner/delete/{id}')
  })

  it('is idempotent', () => {
    fc.assert(
      fc.property(spelled, ({ s }) => {
        expect(canonicalPath(canonicalPath(s))).toBe(canonicalPath(s))
      }),
      { numRuns: RUNS, seed: SEED },
    )
  })
})
