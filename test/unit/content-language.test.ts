import { describe, expect, it } from 'vitest'
import { contentLanguage } from '../../src/cache/content-language.js'

describe('contentLanguage', () => {
  it.each(['en', 'de-DE', 'de-DE, en', 'zh-Hant-TW', 'sgn-CH-DE', 'en,fr', 'x-klingon', 'i-default'])('keeps a list of language tags: %s', (value) => {
    expect(contentLanguage(value)).toBe(value)
  })

  it.each([
    ['nothing', undefined],
    ['an empty value', ''],
    ['a number', 42],
    ['a header break', 'en\r\nset-cookie: a=b'],
    ['a subtag longer than 8', 'en-abcdefghi'],
    ['a wildcard', '*'],
    ['a quality, which only accept-language has', 'de;q=0.9'],
    ['an empty member', 'en,,de'],
    ['a list longer than 256 characters', Array.from({ length: 100 }, () => 'en').join(', ')],
  ])('drops %s', (_name, value) => {
    expect(contentLanguage(value)).toBeUndefined()
  })
})
