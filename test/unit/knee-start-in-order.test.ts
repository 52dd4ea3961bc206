import { describe, expect, it } from 'vitest'
import { KneeEstimator } from '../../src/platform/governor/knee-estimator.js'

/**
 * A fresh limit rule of one replica (8 seats, 64 at most) on a platform with no queue up to 64
 * in flight, every call answered `costMs` (give or take 10 ms) after it started, in the order
 * they started: the dashboard-noisy bench's stand-in. Its callers (more than 64) arrive spread
 * out: the first eight calls start `firstGapMs` apart, the first `timedFirst` of their answers
 * timed (the loop idle between them), the rest not; after them a caller takes each seat as it
 * frees and every answer is timed (`timedAfter`) or none. Returns the limit in force each
 * 100 ms over `ms`.
 */
function freshOnAnInOrderPlatform(o: { firstGapMs: number; timedFirst: number; timedAfter: boolean; ms: number; costMs?: number; seed?: number }): number[] {
  const { firstGapMs, timedFirst, timedAfter, ms, costMs = 400 } = o
  let seed = o.seed ?? 11
  const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647
  const rule = new KneeEstimator({ initial: 8, min: 1, max: 64 })
  type Call = { startedAt: number; load: number; window: number; endsAt: number; timed: boolean }
  const inFlight: Call[] = []
  let [started, lastEnd] = [0, 0]
  const start = (at: number) => {
    const load = inFlight.length + 1
    lastEnd = Math.max(lastEnd + 0.5, at + costMs + 10 * random())
    inFlight.push({ startedAt: at, load, window: rule.started('dashboard', load), endsAt: lastEnd, timed: started < 8 ? started < timedFirst : timedAfter })
    started++
  }
  const limits: number[] = []
  for (let now = 0, nextTick = 100, nextFirst = 0; now < ms; ) {
    const end = inFlight[0]?.endsAt ?? Infinity
    const arrival = started < 8 ? nextFirst : Infinity
    now = Math.min(end, arrival, nextTick)
    if (now === arrival) {
      start(now)
      nextFirst += firstGapMs
    } else if (now === end) {
      const c = inFlight.shift()!
      rule.ended({ startedAt: c.startedAt, at: now, team: 'b', kind: 'dashboard', load: c.load, window: c.window, outcome: 'ok', timed: c.timed })
    } else {
      rule.waited()
      rule.tick(now, null)
      limits.push(rule.limit)
      nextTick += 100
    }
    if (started >= 8) while (inFlight.length < rule.limit) start(now)
  }
  return limits
}

describe('KneeEstimator: a fresh start on calls that end in the order they started', () => {
  // The dashboard-noisy bench's first row (decisions/governor-model.md, "The dashboard-noisy
  // bench's first row, traced"): eight calls started over about 200 ms, each answered ~400 ms
  // later in that order, two or three of them timed. Under w = 1 their own times are the gaps
  // between ends (~25 ms) against ~400 ms at w ≥ their load, and w = 1 reads surely.
  for (const [timedFirst, timedAfter] of [[2, true], [3, true], [8, true], [3, false]] as const) {
    it(`reaches the ceiling its callers ask for within a few seconds and keeps it (${timedFirst} of the first eight timed, ${timedAfter ? 'every' : 'no'} answer after)`, () => {
      const limits = freshOnAnInOrderPlatform({ firstGapMs: 25, timedFirst, timedAfter, ms: 60_000 })
      expect(limits.findIndex((l) => l === 64)).toBeGreaterThan(-1)
      expect(limits.findIndex((l) => l === 64) * 100).toBeLessThan(6_000)
      expect(Math.min(...limits.slice(100))).toBeGreaterThanOrEqual(63)
      expect(limits.at(-1)).toBeGreaterThanOrEqual(63)
    })
  }
})
