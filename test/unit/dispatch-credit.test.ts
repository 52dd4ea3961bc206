import { describe, expect, it } from 'vitest'
import { LENDING_HORIZON_MS, creditKept, resumedTag } from '../../src/platform/governor/dispatch-order.js'

// A team that starts waiting again (docs/governor.md, "The dispatch rule" 2): its tag moves
// up to the virtual time, less the credit it keeps. On one replica a team still holding a
// seat is busy, its queue empty only between its callers' asks: it keeps at most the charge
// of the call it asks, capped at the lending horizon, over its weight, so a team of short
// calls is not set back behind every team tied at the virtual time each time the others'
// starts move it past its tag. A team holding nothing keeps none: one that was idle comes
// back at the virtual time, with no burst saved. Across replicas a team keeps none.

describe('the credit a team keeps as it starts waiting again', () => {
  it('keeps a busy team at most one call\'s charge behind the virtual time', () => {
    const credit = creditKept(2, 90, 1, true)
    expect(resumedTag(10_000, 10_930, credit)).toBe(10_840)
    expect(resumedTag(10_900, 10_930, credit)).toBe(10_900)
  })

  it('caps the charge at the lending horizon and divides it by the weight', () => {
    expect(creditKept(1, 3_680, 1, true)).toBe(LENDING_HORIZON_MS)
    expect(resumedTag(0, 1_000, creditKept(1, 600, 2, true))).toBe(1_000 - LENDING_HORIZON_MS / 2)
    expect(resumedTag(0, 1_000, creditKept(1, 90, 2, true))).toBe(955)
  })

  it('moves a team holding no seat up to the virtual time', () => {
    expect(resumedTag(10_000, 10_930, creditKept(0, 90, 1, true))).toBe(10_930)
  })

  it('keeps none across replicas', () => {
    expect(resumedTag(10_000, 10_930, creditKept(2, 90, 1, false))).toBe(10_930)
  })

  it('leaves a tag ahead of the virtual time where it is', () => {
    expect(resumedTag(12_000, 10_930, creditKept(3, 90, 1, true))).toBe(12_000)
    expect(resumedTag(12_000, 10_930, creditKept(0, 90, 1, true))).toBe(12_000)
  })
})
