import { describe, expect, it } from 'vitest'
import { KneeEstimator } from '../../src/platform/governor/knee-estimator.js'
import { endedBefore } from '../../src/platform/governor/knee-verdicts.js'

/**
 * The start of the limit rule of one replica on a platform with workers to spare (no call
 * ever waits there): `callers` callers, each asking a call of 600 ms spread log-normally by
 * σ 0.3 (so that calls overtake one another), thinking 0 to 1 s between calls, and waiting
 * for a seat only past the limit. The gateway's loop is late: an answer is timed with chance
 * `timedShare` (answer-timing.ts), else read as an end. Returns the lowest limit in force
 * once the limit first held every caller, over `ms`.
 */
function lateLoopStart(seed: number, callers: number, timedShare: number, ms: number): number {
  let state = seed
  const random = () => (state = (state * 16807) % 2147483647) / 2147483647
  const spread = () => Math.exp(0.3 * Math.sqrt(-2 * Math.log(Math.max(1e-12, random()))) * Math.cos(2 * Math.PI * random()))
  const rule = new KneeEstimator({ initial: 8, min: 2, max: 64 })
  // Each caller's next ask (Infinity: its call is in flight or waits for a seat), the calls waiting and in flight.
  const asks = Array.from({ length: callers }, () => random() * 200)
  const waiting: number[] = []
  const inFlight: { caller: number; startedAt: number; endsAt: number; load: number; window: number }[] = []
  let [now, nextTick, lowest, held] = [0, 100, Infinity, false]
  while (now < ms) {
    for (let c = 0; c < callers; c++) if (asks[c]! <= now) [asks[c], waiting[waiting.length]] = [Infinity, c]
    while (waiting.length > 0 && inFlight.length < rule.limit) {
      const load = inFlight.length + 1
      inFlight.push({ caller: waiting.shift()!, startedAt: now, endsAt: now + 600 * spread(), load, window: rule.started('report', load) })
    }
    if (waiting.length > 0) rule.waited()
    const next = Math.min(nextTick, ...asks, ...inFlight.map((c) => c.endsAt))
    now = next
    const ending = inFlight.findIndex((c) => c.endsAt === now)
    if (ending >= 0) {
      const [call] = inFlight.splice(ending, 1)
      rule.ended({ startedAt: call!.startedAt, at: now, team: 't', kind: 'report', load: call!.load, window: call!.window, outcome: 'ok', timed: random() < timedShare })
      asks[call!.caller] = now + random() * 1000
      continue
    }
    if (now === nextTick) {
      rule.tick(now, null)
      held ||= rule.limit >= callers
      if (held) lowest = Math.min(lowest, rule.limit)
      nextTick += 100
    }
  }
  return lowest
}

describe('KneeEstimator: the start on a late loop, its limit not in use', () => {
  // Where few answers are timed (here one in seven, at random; on a late loop most often those
  // read alone), the likelihood weighs few own times, and a queue of a few workers fits those
  // of calls that ended after every call ahead of them (the gap since the ends ahead) about as
  // well as none: set aside whole, the untimed answers left the start a sure queue (believed:
  // calls spread by σ 0.3 overtake), and the limit of 16 callers fell to 3 to 10 on 6 of these
  // 20 seeds. An untimed answer still has its place among the ends (the loop reads answers in
  // the order they came), and each that overtook calls ahead of it rules out the guesses under
  // which it could not have ended yet (docs/governor.md, "The gateway's own time").
  it('keeps a limit that holds every caller where few answers are timed', () => {
    const lowest = Array.from({ length: 20 }, (_, i) => lateLoopStart(i + 1, 16, 0.15, 60_000))
    expect(lowest.filter((l) => l < 16), `the lowest limit on seeds 1 to 20: ${lowest.join(', ')}`).toEqual([])
  })

  it('keeps it where every answer is timed', () => {
    const lowest = Array.from({ length: 20 }, (_, i) => lateLoopStart(i + 1, 16, 1, 60_000))
    expect(lowest.filter((l) => l < 16), `the lowest limit on seeds 1 to 20: ${lowest.join(', ')}`).toEqual([])
  })
})

describe('the ends read before an answer', () => {
  it('counts the ends from a place on whose read serial is below the answer\'s', () => {
    expect(endedBefore([3, 5, 9, 4, 12], 1, 9)).toBe(2)
    expect(endedBefore([3, 5, 9, 4, 12], 0, 3)).toBe(0)
    expect(endedBefore([3, 5], 2, 100)).toBe(0)
  })
})
