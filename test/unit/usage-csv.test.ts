import { describe, expect, it } from 'vitest'
import { csvCell, usageCsv } from '../../src/http/admin/admin-usage.js'
import type { UsageRow } from '../../src/observe/usage.js'

const row = (team: string, requests = 1): UsageRow => ({ day: '2026-11-24', team, requests, cacheHits: 0, platformCalls: 1, platformCallsSaved: 0, bytes: 10, rateLimited: 0, errors: 0, platformSeconds: 1.25 })

describe('usage as CSV (GET /admin/usage?format=csv)', () => {
  it('is a header row and a row per day and team, CRLF line ends', () => {
    expect(usageCsv([row('growth'), row('(gateway)', 0)])).toBe(
      'day,team,requests,cacheHits,platformCalls,platformCallsSaved,bytes,rateLimited,errors,platformSeconds\r\n' +
        '2026-11-24,growth,1,0,1,0,10,0,0,1.25\r\n' +
        '2026-11-24,(gateway),0,0,1,0,10,0,0,1.25\r\n',
    )
    expect(usageCsv([])).toBe('day,team,requests,cacheHits,platformCalls,platformCallsSaved,bytes,rateLimited,errors,platformSeconds\r\n')
  })

  it('keeps a text a spreadsheet would take for a formula a text: a leading = + - @ tab or CR gets a quote', () => {
    // A team name may start with "-" (letters, digits, _ . -); the others are refused by the config, and kept out all the same.
    expect(usageCsv([row('-ops')]).split('\r\n')[1]).toBe("2026-11-24,'-ops,1,0,1,0,10,0,0,1.25")
    for (const text of ['=1+1', '+1', '-1', '@SUM(A1)', '\tx', '\rx']) expect(csvCell(text), JSON.stringify(text)).toMatch(/^"?'/)
    expect(csvCell('=HYPERLINK("http://x","y")')).toBe('"\'=HYPERLINK(""http://x"",""y"")"')
    expect(csvCell('a-b')).toBe('a-b')
    // Numbers are never prefixed.
    expect(csvCell(0)).toBe('0')
  })

  it('quotes a cell with a quote, a comma or a line break, doubling its quotes (RFC 4180)', () => {
    expect(csvCell('a,b')).toBe('"a,b"')
    expect(csvCell('say "hi"')).toBe('"say ""hi"""')
    expect(csvCell('two\nlines')).toBe('"two\nlines"')
    expect(csvCell('\rx')).toBe('"\'\rx"')
    expect(csvCell('plain.team_1')).toBe('plain.team_1')
  })
})
