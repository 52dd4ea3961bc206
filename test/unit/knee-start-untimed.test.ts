import { describe, expect, it } from 'vitest'
import { KneeEstimator } from '../../src/platform/governor/knee-estimator.js'

/**
 * The start of the limit rule of one replica whose callers hold every seat of the limit and
 * wait for more, on the scale bench's platform (no queue: 100 ms a call up to 24 in flight,
 * 40 ms more for each call past them), every answer `timed` or none (the gateway starved of
 * its core: answer-timing.ts). Returns the highest limit in force over `ms`.
 */
function startOnCrowdedPlatform(timed: boolean, ms: number): number {
  const [knee, costMs, slopeMs] = [24, 100, 40]
  const rule = new KneeEstimator({ initial: 8, min: 2, max: 64 })
  const inFlight: { startedAt: number; load: number; window: number; endsAt: number }[] = []
  let [highest, nextTick] = [rule.limit, 100]
  for (let now = 0; now < ms; ) {
    while (inFlight.length < rule.limit) {
      const load = inFlight.length + 1
      inFlight.push({ startedAt: now, load, window: rule.started('report', load), endsAt: now + costMs + slopeMs * Math.max(0, load - knee) })
      inFlight.sort((a, b) => a.endsAt - b.endsAt)
    }
    if (inFlight[0]!.endsAt <= nextTick) {
      const call = inFlight.shift()!
      now = call.endsAt
      rule.ended({ startedAt: call.startedAt, at: now, team: 't', kind: 'report', load: call.load, window: call.window, outcome: 'ok', timed })
      continue
    }
    now = nextTick
    nextTick += 100
    rule.waited()
    rule.tick(now, null)
    highest = Math.max(highest, rule.limit)
  }
  return highest
}

describe('KneeEstimator: the start on answers it cannot time', () => {
  it('doubles while calls wait on answers it learned from', () => {
    expect(startOnCrowdedPlatform(true, 20_000)).toBeGreaterThan(8)
  })

  // A known miss: the start counts an untimed answer as a new call and doubles on calls that
  // waited, none learned from (50 replicas in one process, the scale bench's host: 8 → 16 →
  // 32 → 64, past the platform's refusal at 48). Doubling only on MIN_CALLS answers learned
  // from holds the limit at 8 here, but put seed 1054 on the sweep's list (a start restored
  // after an outage, then starved: docs/decisions/governor-model.md, "Fifty replicas in one
  // process").
  it.fails('does not double on answers it cannot time: none timed, the limit stays where it began (a known miss)', () => {
    expect(startOnCrowdedPlatform(false, 20_000)).toBe(8)
  })
})
