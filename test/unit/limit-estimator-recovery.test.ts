import { describe, expect, it } from 'vitest'
import { LimitEstimator, PROBE_HOLD_WINDOWS } from '../../src/platform/governor/limit-estimator.js'

// The learned limit after a fault: back to what the platform carried within seconds, a
// floor not taken from a burst, a window judged once enough answers came. The windows'
// rules are in limit-estimator.test.ts.

describe('LimitEstimator after a fault', () => {
  /** One window of answers at `latencyMs` from a replica whose callers queue, with as many answers as `perWindow(limit)`. */
  function window(e: LimitEstimator, t: number, latencyMs: number, perWindow: (limit: number) => number): void {
    const limit = e.limit
    const n = perWindow(limit)
    for (let i = 0; i < n; i++) e.record({ at: t + 100 + (i * 800) / n, latencyMs, klass: 'k', route: `r${i % 2}`, team: 'a', inFlight: limit, outcome: 'ok' })
    e.note({ at: t + 500, inFlight: limit, starved: true })
  }

  /** `n` windows from `t` as window() makes them, each closed by a tick; the time after them. */
  function windows(e: LimitEstimator, t: number, n: number, latencyMs: number, perWindow: (limit: number) => number): number {
    for (let w = 0; w < n; w++) {
      window(e, t, latencyMs, perWindow)
      t += 1000
      e.tick(t)
    }
    return t
  }

  /** An estimator that has seen six busy windows at a 100 ms floor. */
  function warmedUp(): { e: LimitEstimator; start: number } {
    const e = new LimitEstimator({ initial: 16, min: 2, max: 64, windowMs: 1000 })
    let t = 1_750_000_000_000
    e.tick(t)
    for (let w = 0; w < 6; w++) {
      window(e, t, 100, () => 40)
      t += 1000
      e.tick(t)
    }
    return { e, start: t }
  }

  it('climbs back to the limit before a fault\'s cuts within a few windows once latency is back at its floor', () => {
    const { e, start } = warmedUp()
    let t = start
    const before = e.limit
    for (let w = 0; w < 3; w++) e.overload(t + w * 1001)
    t += 3003
    expect(e.limit).toBeLessThanOrEqual(Math.max(2, before / 8))
    const seen: number[] = []
    for (let w = 0; w < 5; w++) {
      window(e, t, 100, (limit) => limit * 5)
      t += 1000
      e.tick(t)
      seen.push(e.limit)
    }
    expect(seen.at(-1)).toBeGreaterThanOrEqual(before)
  })

  it('climbs back within a few windows after the platform was ten times slower for a while: to the limit last carried at the floor, past it once probing resumes', () => {
    const { e, start } = warmedUp()
    // The last window at the floor carried `carried` and grew the limit to `before`; the
    // slowdown that follows could be the knee between them, so growth stops at `carried`
    // for PROBE_HOLD_WINDOWS and then probes past it.
    const carried = e.limit
    let t = windows(e, start, 1, 100, () => 40)
    const before = e.limit
    expect(before).toBeGreaterThan(carried)
    t = windows(e, t, 6, 1000, () => 10)
    expect(e.limit).toBeLessThan(carried)
    t = windows(e, t, 5, 100, (limit) => limit * 5)
    expect(e.limit).toBeGreaterThanOrEqual(carried)
    windows(e, t, PROBE_HOLD_WINDOWS, 100, (limit) => limit * 5)
    expect(e.limit).toBeGreaterThanOrEqual(before)
  })

  it('is back within 80 % of its limit 10 s after a 40-s slowdown or a 20-s outage ends: the limit carried is not forgotten during the fault', () => {
    for (const fault of ['slowdown', 'outage'] as const) {
      const { e, start } = warmedUp()
      let t = windows(e, start, 10, 100, (limit) => limit * 5)
      const before = e.limit
      if (fault === 'slowdown') t = windows(e, t, 40, 1000, () => 10)
      else {
        for (let w = 0; w < 20; w++) {
          e.overload(t)
          t += 1000
          e.tick(t)
        }
      }
      expect(e.limit).toBeLessThan(before)
      windows(e, t, 10, 100, (limit) => limit * 5)
      expect(e.limit).toBeGreaterThanOrEqual(0.8 * before)
    }
  })

  it('takes no floor for minutes from a burst of cheap answers just before a bucket\'s edge', () => {
    const e = new LimitEstimator({ initial: 16, min: 2, max: 64, windowMs: 1000 })
    // The last second of a floor bucket: 24 answers at 10 ms.
    let t = (Math.floor(1_750_000_000_000 / 30_000) + 1) * 30_000 - 1000
    e.tick(t)
    for (let i = 0; i < 24; i++) e.record({ at: t + 10 + i, latencyMs: 10, klass: 'k', route: 'r', team: 'a', inFlight: 8, outcome: 'ok' })
    // Then the class's usual traffic: 100 ms, 40 answers a second.
    const floors: (number | null)[] = []
    for (let w = 0; w < 60; w++) {
      for (let i = 0; i < 40; i++) e.record({ at: t + 1000 + i * 20, latencyMs: 100, klass: 'k', route: 'r', team: 'a', inFlight: 8, outcome: 'ok' })
      t += 1000
      e.tick(t)
      floors.push(e.floorMs)
    }
    // Within seconds the usual traffic outweighs the burst, and the floor is its own.
    expect(floors.slice(5).every((f) => f !== null && f > 90)).toBe(true)
  })

  it('judges a window with too few answers (a low limit) once enough have come, rather than never', () => {
    const e = new LimitEstimator({ initial: 2, min: 2, max: 64, windowMs: 1000 })
    let t = 1_750_000_000_000
    e.tick(t)
    // Three answers a window: too few alone, enough over three windows.
    const updates = []
    for (let w = 0; w < 4; w++) {
      window(e, t, 100, () => 3)
      t += 1000
      updates.push(e.tick(t)?.reason)
    }
    expect(updates).toContain('growth')
    expect(e.limit).toBeGreaterThan(2)
  })
})
