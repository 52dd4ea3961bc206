import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { answerTiming } from '../../src/platform/governor/answer-timing.js'
import { KneeEstimator } from '../../src/platform/governor/knee-estimator.js'

/**
 * Rounds of 8 calls sent together to a platform of 8 workers or more, each answered 300 ms
 * later; the gateway handles the 8 answers one after another, 2 ms apart. Returns the
 * limit the rule sets, with the later answers of a round marked as `timed` says.
 */
function bunchedRounds(timed: (i: number) => boolean | undefined): number {
  const rule = new KneeEstimator({ initial: 8, min: 2, max: 64 })
  for (let round = 0; round < 6; round++) {
    const t0 = 1_000_000 + round * 1_000
    const calls = Array.from({ length: 8 }, (_, i) => ({ i, window: rule.started('team\nweek', i + 1) }))
    for (const { i, window } of calls) {
      const flag = timed(i)
      rule.ended({ startedAt: t0, at: t0 + 300 + 2 * i, team: 'team', kind: 'team\nweek', load: i + 1, window, outcome: 'ok', ...(flag === undefined ? {} : { timed: flag }) })
    }
    rule.tick(t0 + 320, null)
  }
  return rule.limit
}

describe('answers the gateway handled back to back', () => {
  it('read as ends 2 ms apart, they make the rule take 8 calls together for one worker', () => {
    expect(bunchedRounds(() => undefined)).toBeLessThan(8)
  })

  it('are ends but not evidence: the rule does not cut the limit on them', () => {
    expect(bunchedRounds((i) => i === 0)).toBeGreaterThanOrEqual(8)
  })

  /** Readings of the loop's time, each `[idle, active]` milliseconds since the start, handed out in turn. */
  const readings = (...times: [number, number][]) => {
    const queue = times.map(([idle, active]) => ({ idle, active }))
    return () => queue.shift() ?? { idle: Number.NaN, active: Number.NaN }
  }

  it('are told apart by the event loop idling between two answers', () => {
    const timed = answerTiming(readings([0, 0], [4, 1], [4, 1.5], [9, 2]))
    expect(timed(400)).toBe(true)
    // No idle between the two: the second waited for the gateway's handling of the first.
    expect(timed(400)).toBe(false)
    expect(timed(400)).toBe(true)
  })

  it('are not timed after the event loop worked longer than a tenth of their latency, though it idled since', () => {
    // A start's first requests, a collection: an answer that came meanwhile waited for the gateway.
    const timed = answerTiming(readings([0, 0], [5, 1], [10, 61], [15, 62], [15, 62.5]))
    timed(400)
    expect(timed(400)).toBe(false)
    expect(timed(400)).toBe(true)
    expect(timed(1_000)).toBe(false)
  })

  it('read the process\'s own loop by default: its work since the last answer counts', async () => {
    const timed = answerTiming()
    timed(400)
    const until = performance.now() + 60
    while (performance.now() < until);
    await sleep(5)
    expect(timed(400)).toBe(false)
  })
})
