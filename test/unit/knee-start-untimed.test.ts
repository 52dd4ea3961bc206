import { describe, expect, it } from 'vitest'
import { KneeEstimator } from '../../src/platform/governor/knee-estimator.js'

/**
 * The start of the limit rule of one replica whose callers hold every seat of the limit and
 * wait for more, on the scale bench's platform (no queue: 100 ms a call up to `knee` in flight,
 * 24 by default, 40 ms more for each call past them; a call that finds `refuseAbove` in flight
 * answered 429 in 5 ms), every answer `timed` or none (the gateway starved of its core:
 * answer-timing.ts). Returns the highest limit in force over `ms`, and the last.
 */
function startOnCrowdedPlatform(timed: boolean, ms: number, knee = 24, refuseAbove = Infinity): { highest: number; last: number } {
  const [costMs, slopeMs] = [100, 40]
  const rule = new KneeEstimator({ initial: 8, min: 2, max: 64 })
  const inFlight: { startedAt: number; load: number; window: number; endsAt: number }[] = []
  let [highest, nextTick] = [rule.limit, 100]
  for (let now = 0; now < ms; ) {
    while (inFlight.length < rule.limit) {
      const load = inFlight.length + 1
      inFlight.push({ startedAt: now, load, window: rule.started('report', load), endsAt: now + (load > refuseAbove ? 5 : costMs + slopeMs * Math.max(0, load - knee)) })
      inFlight.sort((a, b) => a.endsAt - b.endsAt)
    }
    if (inFlight[0]!.endsAt <= nextTick) {
      const call = inFlight.shift()!
      now = call.endsAt
      const refused = call.load > refuseAbove
      rule.ended({ startedAt: call.startedAt, at: now, team: 't', kind: 'report', load: call.load, window: call.window, outcome: refused ? 'other' : 'ok', timed, ...(refused ? { refused } : {}) })
      rule.tick(now, null)
      continue
    }
    now = nextTick
    nextTick += 100
    rule.waited()
    rule.tick(now, null)
    highest = Math.max(highest, rule.limit)
  }
  return { highest, last: rule.limit }
}

describe('KneeEstimator: the start on answers it cannot time', () => {
  it('doubles while calls wait on answers it learned from', () => {
    expect(startOnCrowdedPlatform(true, 20_000).highest).toBeGreaterThan(8)
  })

  // None timed, the start doubles on the calls that waited while a level's answers a second
  // grow by half on the level before (Little's law: twice the calls in flight give twice the
  // answers a second below the knee): 8 → 16 (its first level) → 32, where 32 calls, each 420 ms,
  // give 76 a second against 16's 160; the start ends there, below the refusal at 48.
  it('does not double past the knee on answers it cannot time: the answers a second stop it', () => {
    const { highest } = startOnCrowdedPlatform(false, 20_000)
    expect(highest).toBeGreaterThan(8)
    expect(highest).toBeLessThanOrEqual(32)
  })

  it('doubles on answers it cannot time where the platform scales (no knee within the ceiling)', () => {
    expect(startOnCrowdedPlatform(false, 20_000, 100).highest).toBe(64)
  })

  // Where the platform scales up to a refusal at 20, read late, the doubling 16 → 32 passes it:
  // its first 429s say the platform took 20 at most, and the start's limit falls there at
  // once and grows no more.
  it('takes the limit of a start on answers it cannot time back to what the platform took at its first 429s, and no higher', () => {
    const { highest, last } = startOnCrowdedPlatform(false, 20_000, 100, 20)
    expect(highest).toBe(32)
    expect(last).toBeLessThanOrEqual(20)
    expect(last).toBeGreaterThan(8)
  })
})
