import { describe, expect, it } from 'vitest'
import { localeOf, localizeRows } from '../../src/sandbox/locale.js'
import type { ReportRow } from '../../src/sandbox/report-data.js'

describe('localeOf (Symfony getPreferredLanguage over en and de)', () => {
  it.each([
    [undefined, 'en'],
    ['', 'en'],
    ['de', 'de'],
    ['de-DE, de;q=0.9, en;q=0.5', 'de'],
    ['en-GB, de;q=0.8', 'en'],
    ['fr, de;q=0.7, en;q=0.6', 'de'],
    ['en;q=0.4, de;q=0.8', 'de'],
    ['de;q=0, en', 'en'],
    ['fr', 'en'],
    [['fr', 'de'], 'de'],
  ] as const)('%j: %s', (header, locale) => {
    expect(localeOf(header)).toBe(locale)
  })
})

describe('localizeRows', () => {
  const row = (position?: string): ReportRow => ({ ...(position === undefined ? {} : { position }), impressions: 1, clicks: 0, ctr: 0, spent: 0, reach: 1, currency: 'USD' })
  it('writes position labels in German and leaves English and rows without one as they are', () => {
    expect(localizeRows([row('Full screen'), row()], 'de').map((r) => r.position)).toEqual(['Vollbild', undefined])
    expect(localizeRows([row('Full screen')], 'en').map((r) => r.position)).toEqual(['Full screen'])
  })
})
