import { describe, expect, it } from 'vitest'
import { ByteBudget, MAX_ROOM_RETRY_AFTER_S } from '../../src/platform/client/answer-budget.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'

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

  it('tells a refusal to come back when the room it lacks has come free at the pace room came free of late', async () => {
    const budget = new ByteBudget(100)
    budget.reserve(100)
    // Nothing freed yet: the longest wait.
    expect(budget.retryAfterSec(50)).toBe(MAX_ROOM_RETRY_AFTER_S)
    budget.free(40)
    // A pace is measured over a whole window (2 s).
    await waitFor('a window of pace', () => budget.retryAfterSec(90) < MAX_ROOM_RETRY_AFTER_S, testTimeLeft(), 50)
    // 40 bytes over about 2 s: 30 more bytes take about 1.5 s, told as whole seconds, at least 1.
    const told = budget.retryAfterSec(90)
    expect(told).toBeGreaterThanOrEqual(1)
    expect(told).toBeLessThanOrEqual(3)
    expect(budget.retryAfterSec(10)).toBe(1)
  })
})
