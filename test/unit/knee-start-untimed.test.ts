import { describe, expect, it } from 'vitest'
import { KneeEstimator } from '../../src/platform/governor/knee-estimator.js'

/**
 * The start of the limit rule of one replica whose callers hold every seat of the limit and
 * wait for more, on the scale bench's platform (no queue: 100 ms a call up to 24 in flight,
 * 40 ms more for each call past them), every answer `timed` or none (the gateway starved of
 * its core: answer-timing.ts). Returns the highest limit in force over `ms`.
 */
function startOnCrowdedPlatform(timed: boolean, ms: number): number {
  return crowdedStart(() => timed, ms, null).highest
}

/**
 * As startOnCrowdedPlatform, the answers timed while `timed(now)`, and the platform paused (a fault) once the limit
 * reaches `pauseAt` (null: never). Returns the highest limit over `ms`, and the highest after the pause.
 */
function crowdedStart(timed: (now: number) => boolean, ms: number, pauseAt: number | null): { highest: number; afterPause: number } {
  const [knee, costMs, slopeMs] = [24, 100, 40]
  const rule = new KneeEstimator({ initial: 8, min: 2, max: 64 })
  const inFlight: { startedAt: number; load: number; window: number; endsAt: number }[] = []
  let [highest, afterPause, nextTick, paused] = [rule.limit, 0, 100, false]
  for (let now = 0; now < ms; ) {
    if (!paused && pauseAt !== null && rule.limit >= pauseAt) {
      paused = true
      rule.pause(now)
    }

    while (inFlight.length < rule.limit) {
      const load = inFlight.length + 1
      inFlight.push({ startedAt: now, load, window: rule.started('report', load), endsAt: now + costMs + slopeMs * Math.max(0, load - knee) })
      inFlight.sort((a, b) => a.endsAt - b.endsAt)
    }
    if (inFlight[0]!.endsAt <= nextTick) {
      const call = inFlight.shift()!
      now = call.endsAt
      rule.ended({ startedAt: call.startedAt, at: now, team: 't', kind: 'report', load: call.load, window: call.window, outcome: 'ok', timed: timed(now) })
      continue
    }
    now = nextTick
    nextTick += 100
    rule.waited()
    rule.tick(now, null)
    highest = Math.max(highest, rule.limit)
    if (paused) afterPause = Math.max(afterPause, rule.limit)
  }
  return { highest, afterPause }
}

describe('KneeEstimator: the start on answers it cannot time', () => {
  it('doubles while calls wait on answers it learned from', () => {
    expect(startOnCrowdedPlatform(true, 20_000)).toBeGreaterThan(8)
  })

  // 50 replicas in one process (the scale bench's host): no answer timed, and the start
  // doubled 8 → 16 → 32 → 64 on the calls that waited, past the platform's refusal at 48.
  it('does not double on answers it cannot time: none timed, the limit stays where it began', () => {
    expect(startOnCrowdedPlatform(false, 20_000)).toBe(8)
  })

  it('back in the start after a fault, doubles on any answers up to the limit the fault cut, and no further', () => {
    // The start at 16 paused (a fault), its answers untimed from then on (a starvation after an outage, seed 1054):
    // restored to its knee, it doubles back to 16 on the calls that waited, not past it.
    const { afterPause } = crowdedStart((now) => now < 1_500, 20_000, 16)
    expect(afterPause).toBe(16)
  })
})
