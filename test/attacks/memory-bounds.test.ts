import { describe, expect, it } from 'vitest'
import { entryBytes, keptBytes, LRU_ENTRY_BYTES } from '../../src/perf/kept-bytes.js'
import { KNOWN_URL_BYTES } from '../../src/access/known-urls.js'
import { checkTarget } from '../../src/access/request-target.js'
import { KEYS, TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import { REPORT_DATES, useAttackGateway } from './attack-gateway.js'

// Memory is bounded whatever callers send. The memos of URLs count
// what each entry keeps (URL, decoded and canonical query, the canonical report), and a
// refused call leaves nothing in them.

const sg = useAttackGateway({ yaml: TEAMS_YAML })

const PAD_BYTES = 15 * 1024
// Spaces as `+`: the canonical query spells each `%20`, three times the bytes.
const padding = (i: number) => `${i}${'+'.repeat(PAD_BYTES)}`
const reportUrl = (i: number, advertiser: number) => `/api/v1/report/campaigns/get?advertiserId=${advertiser}&${REPORT_DATES}&pad=${padding(i)}`

describe('keptBytes: what a memo entry keeps', () => {
  it('counts a string at two bytes a character', () => {
    expect(keptBytes('x'.repeat(1000))).toBeGreaterThanOrEqual(2000)
    expect(keptBytes('x'.repeat(2000)) - keptBytes('x'.repeat(1000))).toBe(2000)
  })

  it('counts every string of nested objects and arrays, property names included', () => {
    const inner = 'y'.repeat(500)
    expect(keptBytes({ a: [inner, inner], b: { c: inner } })).toBeGreaterThanOrEqual(3 * 2 * 500)
    expect(keptBytes({ [inner]: 1 })).toBeGreaterThanOrEqual(2 * 500)
  })

  it('counts every slot and header: an object, its names, an array, a nested object, its own properties alone', () => {
    // 24 + (8 + 18 + 20) + (8 + 18 + (24 + 16 + 16)) + (8 + 18 + (24 + 8 + 18 + 18))
    expect(keptBytes({ a: 'xy', b: [1, null], c: { d: 'z' } })).toBe(246)
    const withInherited = Object.assign(Object.create({ inherited: 'x'.repeat(100) }) as Record<string, unknown>, { a: 'xy' })
    expect(keptBytes(withInherited)).toBe(24 + 8 + 18 + 20)
  })

  it('counts a checked target by the URL, its decoded parameters and its canonical query, not by the URL alone', () => {
    const url = reportUrl(1, 101)
    const target = checkTarget(url, 256)
    const strings = url.length + target.path.length + target.search.length + target.params.flat().reduce((n, s) => n + s.length, 0)
    const size = entryBytes({ target }, url)
    expect(size).toBeGreaterThanOrEqual(LRU_ENTRY_BYTES + 2 * strings)
    // The canonical query alone is about three times the URL: the old count (the URL's) was far short.
    expect(target.search.length).toBeGreaterThan(2.5 * PAD_BYTES)
    expect(size).toBeGreaterThan(4 * 2 * url.length)
  })
})

describe('memos under hostile traffic (inject)', () => {
  const inject = (url: string, key: string) => sg.gw.proxy.inject({ method: 'GET', url, headers: { 'x-api-key': key } })

  it('forbidden, invalid and unauthenticated URLs leave nothing in the memos', async () => {
    const before = sg.gw.memoBytes()
    // One refused URL left in a memo changes its bytes: 300 of them (330 calls) show it as
    // surely as thousands.
    for (let i = 0; i < 300; i++) {
      // An advertiser team growth may not read: 403.
      expect((await inject(reportUrl(i, 201), KEYS.growth)).statusCode).toBe(403)
      if (i % 10 === 0) {
        expect((await inject(`${reportUrl(i, 101)}&dateFrom=not-a-date`, KEYS.growth)).statusCode).toBe(400)
        expect((await inject(reportUrl(i, 101), 'rgw_not_a_key_0000000000000000000000')).statusCode).toBe(401)
      }
    }
    expect(sg.gw.memoBytes()).toEqual(before)
    expect(sg.callerRequests()).toEqual([])
  }, 120_000)

  it('admitted unique 15 KB URLs keep the memo by URL under its byte bound, counted by what it keeps', async () => {
    let peak = 0
    // About 280 KB kept per URL (its target and its report's form, measured): 130 URLs are
    // about twice the 16 MiB bound, so every URL kept when the bound is first reached is
    // evicted once, and the bound holds over a whole turnover of what is kept.
    for (let i = 0; i < 130; i++) {
      const res = await inject(reportUrl(10_000 + i, 101), KEYS.growth)
      expect(res.statusCode).toBeLessThan(500)
      peak = Math.max(peak, sg.gw.memoBytes())
    }
    expect(peak).toBeLessThanOrEqual(KNOWN_URL_BYTES)
    // The bound was reached: what is counted is what is kept, not a fraction of it.
    expect(peak).toBeGreaterThan(KNOWN_URL_BYTES * 0.9)
  }, 120_000)
})
