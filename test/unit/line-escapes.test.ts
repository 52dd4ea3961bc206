import { describe, expect, it } from 'vitest'
import { crashLine } from '../../src/observe/crash-line.js'
import { escapedLineBreakers } from '../../src/observe/line-escapes.js'

describe('a log line\'s characters that break a line or start an escape sequence', () => {
  it.each([
    ['NEL, a line break to Unicode\'s line splitters', '"a\u0085b"', '"a\\u0085b"'],
    ['CSI, an escape sequence\'s start to a terminal that honours C1', '"\u009b2J"', '"\\u009b2J"'],
    ['the first and the last C1 control', '"\u0080\u009f"', '"\\u0080\\u009f"'],
    ['the line and paragraph separators', '"\u2028\u2029"', '"\\u2028\\u2029"'],
    ['Latin-1 past C1 and other text, as they are', '"\u00a0é€😀"', '"\u00a0é€😀"'],
    ['C0 controls as JSON already escapes them, as they are', '"\\u001b[31m\\n"', '"\\u001b[31m\\n"'],
  ])('%s', (_what, line, written) => {
    expect(escapedLineBreakers(line)).toBe(written)
  })

  it('keeps the value a parser reads back', () => {
    const value = { userAgent: 'x\u0085{"msg":"forged"}\u2028\u009bH' }
    const written = escapedLineBreakers(JSON.stringify(value))
    expect(written).not.toMatch(/[\u0080-\u009f\u2028\u2029]/)
    expect(JSON.parse(written)).toEqual(value)
  })

  it('holds in the line a crash writes before the logger runs', () => {
    const line = crashLine('failed to start', new Error('bad \u0085 value \u2028'), [], 0)
    expect(line).not.toMatch(/[\u0080-\u009f\u2028\u2029]/)
    expect((JSON.parse(line) as { err: { message: string } }).err.message).toBe('bad \u0085 value \u2028')
  })
})
