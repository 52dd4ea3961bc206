// The chart's patterns for a duration or size at least a floor (scripts/floor-pattern.mjs):
// a whole number with its unit matches exactly when it is no less than the floor.
import { describe, it, expect } from 'vitest'
import { atLeastPattern, wholeAtLeast } from '../../scripts/floor-pattern.mjs'
import { DURATION_UNITS, SIZE_UNITS } from '../../src/config/units.js'

describe('wholeAtLeast', () => {
  it('matches the whole numbers from n up and none below, for every n to 1200', () => {
    const wrong: string[] = []
    for (let n = 1; n <= 1200; n++) {
      const re = new RegExp(`^(${wholeAtLeast(n)})$`)
      for (let m = 0; m <= 13_000; m += m < 1300 ? 1 : 97) if (re.test(String(m)) !== m >= n) wrong.push(`${n}: ${m}`)
    }
    expect(wrong).toEqual([])
  })
})

describe('atLeastPattern', () => {
  it('takes a duration or size written in any unit, with leading zeros, exactly when it reaches the floor', () => {
    const cases: Array<[number, Readonly<Record<string, number>>, string[], string[]]> = [
      [100, DURATION_UNITS, ['100ms', '0100ms', '1s', '1m', '1h', '1d', '250ms', '1000ms'], ['0ms', '99ms', '099ms', '0s', '00s', '0m', '0h', '0d', '100', 'ms', '1 s', '-1s']],
      [60_000, DURATION_UNITS, ['60000ms', '60s', '1m', '61s', '1h'], ['59999ms', '59s', '0m', '0h']],
      [64 * 1024, SIZE_UNITS, ['65536B', '64KiB', '065KiB', '100KiB', '1MiB', '1GiB'], ['65535B', '63KiB', '0MiB', '0GiB', '9999B']],
      [1, SIZE_UNITS, ['1B', '01B', '1KiB'], ['0B', '00B', '0KiB', '0MiB']],
    ]
    for (const [least, units, taken, refused] of cases) {
      const re = new RegExp(atLeastPattern(least, units))
      for (const value of taken) expect(re.test(value), `${least}: ${value}`).toBe(true)
      for (const value of refused) expect(re.test(value), `${least}: ${value}`).toBe(false)
    }
  })
})
