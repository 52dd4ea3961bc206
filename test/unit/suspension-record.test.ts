import { describe, expect, it } from 'vitest'
import { keepLift, keepSuspension, parseRecord, recordEnded } from '../../src/access/suspension-record.js'

// A team's record in the shared hash: a suspension's end (> 0) or a lift's moment, negated.
const PERIOD = 3_600_000
const T = 1_800_000_000_000

describe('a team suspension record', () => {
  it('reads a number the gateway writes, and nothing else', () => {
    expect(parseRecord(String(T))).toBe(T)
    expect(parseRecord(String(-T))).toBe(-T)
    for (const value of [null, '', '0', 'x', 'Infinity', 'NaN']) expect(parseRecord(value)).toBeNull()
  })

  it('keeps a suspension over nothing and an earlier end, leaves a later end, and yields to a lift made after it began', () => {
    expect(keepSuspension(null, T, PERIOD)).toBe('write')
    expect(keepSuspension(T - 1, T, PERIOD)).toBe('write')
    expect(keepSuspension(T, T, PERIOD)).toBe('held')
    expect(keepSuspension(T + 1, T, PERIOD)).toBe('held')
    // It began at T - PERIOD: a lift then or after ends it, one before does not.
    expect(keepSuspension(-(T - PERIOD), T, PERIOD)).toBe('lifted')
    expect(keepSuspension(-(T - PERIOD + 1), T, PERIOD)).toBe('lifted')
    expect(keepSuspension(-(T - PERIOD - 1), T, PERIOD)).toBe('write')
  })

  it('keeps a lift over nothing, an earlier lift and a suspension that began before it, and yields to a later lift or a suspension begun after it', () => {
    expect(keepLift(null, T, PERIOD)).toBe('write')
    expect(keepLift(-(T - 1), T, PERIOD)).toBe('write')
    expect(keepLift(-T, T, PERIOD)).toBe('held')
    expect(keepLift(-(T + 1), T, PERIOD)).toBe('held')
    expect(keepLift(T + PERIOD, T, PERIOD)).toBe('write')
    expect(keepLift(T + PERIOD + 1, T, PERIOD)).toBe('suspended')
  })

  it('agrees with itself: a suspension a lift yields to is one that yields to the lift', () => {
    for (const began of [T - 2, T - 1, T, T + 1, T + 2]) {
      const until = began + PERIOD
      const lifted = keepSuspension(-T, until, PERIOD) === 'lifted'
      expect(keepLift(until, T, PERIOD) === 'suspended').toBe(!lifted)
    }
  })

  it('ends a suspension at its end and a lift a period after it was made', () => {
    expect(recordEnded(T, T - 1, PERIOD)).toBe(false)
    expect(recordEnded(T, T, PERIOD)).toBe(true)
    expect(recordEnded(-T, T + PERIOD - 1, PERIOD)).toBe(false)
    expect(recordEnded(-T, T + PERIOD, PERIOD)).toBe(true)
  })
})
