import { describe, expect, it } from 'vitest'
import { boundedText, shownAccount, shownPath, shownValue } from '../../src/observe/caller-text.js'

describe('caller text within a bound', () => {
  it('is written as it is up to the bound, else its head and how many characters were left out', () => {
    expect(boundedText('abc', 3)).toBe('abc')
    expect(boundedText('abcd', 3)).toBe('abc… (+1 characters)')
  })

  it('names an account as a refusal does: a string in quotes, a number as it is, anything else as JSON, each within 64 characters', () => {
    expect(shownAccount(101)).toBe('101')
    expect(shownAccount('abc')).toBe('"abc"')
    expect(shownAccount('x'.repeat(65))).toBe(`"${'x'.repeat(64)}… (+1 characters)"`)
    expect(shownAccount({ a: 'y'.repeat(100) })).toBe(`${JSON.stringify({ a: 'y'.repeat(100) }).slice(0, 64)}… (+${JSON.stringify({ a: 'y'.repeat(100) }).length - 64} characters)`)
    expect(shownAccount(undefined)).toBe('undefined')
  })

  it('names a value as a refusal echoes it: a string as it is, anything else as JSON, within 64 characters', () => {
    expect(shownValue('2026-02-30')).toBe('2026-02-30')
    expect(shownValue([1, 'a'])).toBe('[1,"a"]')
    expect(shownValue(undefined)).toBe('undefined')
    expect(shownValue('x'.repeat(65))).toBe(`${'x'.repeat(64)}… (+1 characters)`)
  })

  it('names a path within 1,024 characters', () => {
    expect(shownPath('/a')).toBe('/a')
    expect(shownPath(`/${'p'.repeat(2000)}`)).toBe(`/${'p'.repeat(1023)}… (+977 characters)`)
  })

  it('writes anything shaped like a team key or a webhook secret [REDACTED] before the bound, whatever it is, in every spelling', () => {
    const long = `whsec_${'Ab3/'.repeat(30)}`
    expect(shownValue(long)).toBe('[REDACTED]')
    expect(shownValue(`x${long}=`)).toBe('x[REDACTED]')
    expect(shownValue('whsec%5FAb3%2Fcd')).toBe('[REDACTED]')
    expect(shownValue(`rgw_${'k'.repeat(80)}`)).toBe('[REDACTED]')
    expect(shownAccount(`a-whsec_${'q'.repeat(100)}`)).toBe('"a-[REDACTED]"')
    // A secret may hold `/`: the run of the base64 alphabet after `whsec_` goes whole.
    expect(shownPath(`/api/v1/report/${long}/get?x=1`)).toBe('/api/v1/report/[REDACTED]?x=1')
    expect(shownValue('whsec_')).toBe('whsec_')
  })
})
