import { describe, expect, it } from 'vitest'
import { ByteBudget, MAX_ROOM_RETRY_AFTER_S } from '../../src/platform/client/answer-budget.js'

describe('ByteBudget', () => {
  it('reserves what fits, refuses what does not without taking any of it, and frees', () => {
    const budget = new ByteBudget(100)
    expect(budget.reserve(60)).toBe(true)
    expect(budget.reserve(41)).toBe(false)
    expect(budget.used).toBe(60)
    expect(budget.reserve(40)).toBe(true)
    expect(budget.used).toBe(100)
    budget.free(60)
    expect(budget.used).toBe(40)
    expect(budget.reserve(0)).toBe(true)
  })

  it('tells a refusal to come back when the room it lacks has come free at the pace room came free of late', () => {
    let now = 0
    const budget = new ByteBudget(100, () => now)
    budget.reserve(100)
    // Nothing freed yet: the longest wait.
    expect(budget.retryAfterSec(50)).toBe(MAX_ROOM_RETRY_AFTER_S)
    budget.free(40)
    // A pace is measured over a whole window (2 s): none yet within the first.
    now = 1999
    expect(budget.retryAfterSec(90)).toBe(MAX_ROOM_RETRY_AFTER_S)
    now = 2000
    // 40 bytes over 2 s, 20 bytes/s: the 50 bytes 90 more lack take 2.5 s, told as whole seconds.
    expect(budget.retryAfterSec(90)).toBe(3)
    expect(budget.retryAfterSec(10)).toBe(1)
  })
})
