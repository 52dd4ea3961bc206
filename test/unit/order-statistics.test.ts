import { describe, expect, it } from 'vitest'
import { median, percentile } from '../../src/platform/governor/order-statistics.js'

describe('order statistics', () => {
  it('takes the nearest rank for a percentile, whatever the order of the values', () => {
    expect(percentile([5, 1, 4, 2, 3], 0.5)).toBe(3)
    expect(percentile([5, 1, 4, 2, 3], 0)).toBe(1)
    expect(percentile([5, 1, 4, 2, 3], 1)).toBe(5)
    expect(percentile([10, 20, 30, 40], 0.5)).toBe(20)
  })

  it('takes the middle value, or the mean of the two middle ones', () => {
    expect(median([3, 1, 2])).toBe(2)
    expect(median([4, 1, 3, 2])).toBe(2.5)
    expect(median([7])).toBe(7)
  })
})
