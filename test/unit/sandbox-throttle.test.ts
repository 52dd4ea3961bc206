import { describe, expect, it } from 'vitest'
import { ThrottleCounts } from '../../src/sandbox/throttle-counts.js'

const A = '/api/v1/report/campaigns/get'
const B = '/api/v1/report/adPlacementPositions/get'

describe("the sandbox's route throttles", () => {
  it('count each route on its own by default: a call of one leaves the other its whole limit', () => {
    const counts = new ThrottleCounts()
    counts.setRoute(A, { limit: 2, windowMs: 10_000 })
    counts.setRoute(B, { limit: 2, windowMs: 10_000 })
    expect(counts.hit(7, 0, A)).toMatchObject({ limit: 2, remaining: 1 })
    expect(counts.hit(7, 1, A)).toMatchObject({ remaining: 0 })
    expect(counts.hit(7, 2, B)).toMatchObject({ limit: 2, remaining: 1, retryAfterSec: null })
  })

  it('count routes of one limiter as one, as Laravel keys a plain throttle or a named limiter by the user alone: one route\'s calls spend the other\'s, and its refusal says the same reset', () => {
    const counts = new ThrottleCounts()
    counts.setRoute(A, { limit: 2, windowMs: 10_000, limiter: 'reports' })
    counts.setRoute(B, { limit: 2, windowMs: 10_000, limiter: 'reports' })
    expect(counts.hit(7, 0, A)).toMatchObject({ remaining: 1 })
    expect(counts.hit(7, 1, B)).toMatchObject({ remaining: 0 })
    const onA = counts.hit(7, 2_000, A)
    const onB = counts.hit(7, 2_000, B)
    expect(onA).toEqual({ limit: 2, remaining: 0, retryAfterSec: 8 })
    expect(onB).toEqual(onA)
    // Another token user has a count of its own.
    expect(counts.hit(8, 2_000, B)).toMatchObject({ remaining: 1 })
    // Past the window, both routes' calls count anew.
    expect(counts.hit(7, 10_000, B)).toMatchObject({ remaining: 1 })
  })

  it('begins a limiter\'s windows anew on each of its routes when one of them is set again', () => {
    const counts = new ThrottleCounts()
    for (const path of [A, B]) counts.setRoute(path, { limit: 1, windowMs: 10_000, limiter: 'reports' })
    expect(counts.hit(7, 0, A)).toMatchObject({ remaining: 0 })
    expect(counts.hit(7, 1, B)).toMatchObject({ retryAfterSec: 10 })
    counts.setRoute(A, { limit: 1, windowMs: 60_000, limiter: 'reports' })
    expect(counts.hit(7, 2, B)).toMatchObject({ remaining: 0, retryAfterSec: null })
    expect(counts.hit(7, 3, A)).toMatchObject({ retryAfterSec: 60 })
  })
})
