import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { LATE_MEAN_MS, LATE_MEMORY_MS, LATE_SLOT_MS, LateWakes, answerTiming } from '../../src/platform/governor/answer-timing.js'
import { KneeEstimator } from '../../src/platform/governor/knee-estimator.js'

const STOP_WHILE_WAITING = fileURLToPath(new URL('../helpers/stop-while-waiting.mjs', import.meta.url))

/** The order the gateway handles a round's 8 answers in (by call, in the order they started): answers that come together are handled in no known order, here pairs swapped, so that calls read as overtaking lift the in-order guard (knee-estimator.ts) and the timing alone decides. */
const HANDLED = [1, 0, 3, 2, 5, 4, 7, 6]

/**
 * Rounds of 8 calls sent together to a platform of 8 workers or more, each answered 300 ms
 * later; the gateway handles the 8 answers one after another, 2 ms apart (HANDLED). Returns
 * the limit the rule sets, with the later answers of a round marked as `timed` says.
 */
function bunchedRounds(timed: (i: number) => boolean | undefined): number {
  const rule = new KneeEstimator({ initial: 8, min: 2, max: 64 })
  for (let round = 0; round < 6; round++) {
    const t0 = 1_000_000 + round * 1_000
    const windows = Array.from({ length: 8 }, (_, i) => rule.started('team\nweek', i + 1))
    for (const [n, i] of HANDLED.entries()) {
      const flag = timed(n)
      rule.ended({ startedAt: t0, at: t0 + 300 + 2 * n, team: 'team', kind: 'team\nweek', load: i + 1, window: windows[i]!, outcome: 'ok', ...(flag === undefined ? {} : { timed: flag }) })
    }
    rule.tick(t0 + 320, null)
  }
  return rule.limit
}

/** Once the process's event loop has waited for an event (its idle time grown): a sleep's timer may come due while the loop still works. */
async function idled(): Promise<void> {
  const idle = performance.eventLoopUtilization().idle
  while (performance.eventLoopUtilization().idle === idle) await sleep(5)
}

describe('answers the gateway handled back to back', () => {
  it('read as ends 2 ms apart, they make the rule take 8 calls together for one worker', () => {
    expect(bunchedRounds(() => undefined)).toBeLessThan(8)
  })

  it('are ends but not evidence: the rule does not cut the limit on them', () => {
    expect(bunchedRounds((i) => i === 0)).toBeGreaterThanOrEqual(8)
  })

  /**
   * Readings of the loop, each `[busy, read, late]`: its work since it last idled (ms), whether it read an answer
   * since, and how late its wakes came while any call was in flight (ms, 0 unless given), handed out in turn.
   */
  const readings = (...times: ([number, boolean] | [number, boolean, number])[]) => {
    const queue = times.map(([busy, readSinceIdle, late = 0]) => ({ busy, readSinceIdle, lateWithin: () => late }))
    return () => queue.shift() ?? { busy: Number.NaN, readSinceIdle: true, lateWithin: () => Number.NaN }
  }

  it('are told apart by the event loop idling between two answers', () => {
    const timed = answerTiming(readings([0.5, false], [1, true], [0.2, false]))
    expect(timed(400)).toBe(true)
    // No idle between the two: the second came with the first, its end apart from it by the gateway's handling.
    expect(timed(400)).toBe(false)
    expect(timed(400)).toBe(true)
  })

  it('that come together to a loop that waited: the first is timed, those read after it are ends', () => {
    // Eight answers of 300 ms that came while the loop waited, read 2 ms apart.
    const timed = answerTiming(readings(...Array.from({ length: 8 }, (_, i): [number, boolean] => [2 * i, i > 0])))
    expect(Array.from({ length: 8 }, () => timed(300))).toEqual([true, false, false, false, false, false, false, false])
  })

  it('are not timed behind a busy stretch of the loop: its work since it last idled longer than a tenth of their latency', () => {
    // A start's first requests, a collection: an answer that came meanwhile waited for the gateway, though none was read before it.
    const timed = answerTiming(readings([60, false], [2, false], [61, false]))
    expect(timed(400)).toBe(false)
    expect(timed(400)).toBe(true)
    expect(timed(1_000)).toBe(true)
  })

  it('are not timed where the loop\'s wakes came later than a tenth of their latency while their call was in flight, though it idled between them', () => {
    // A machine that starves the gateway of its core: an answer that came while the loop
    // idled waited for the loop's wake as long as the wake waited for a core.
    const timed = answerTiming(readings([0.5, false, 120], [0.5, false, 120], [0.5, false, 30]))
    expect(timed(400)).toBe(false)
    expect(timed(2_000)).toBe(true)
    expect(timed(400)).toBe(true)
  })


  it('take the loop as late as its latest wake while their call was in flight', () => {
    const late = new LateWakes(0)
    late.record(1_000, 80)
    late.record(3_000, 5)
    // A call of 2.5 s answered at 3.2 s was in flight at the late wake; one of 1 s was not.
    expect(late.within(3_200, 2_500)).toBe(80)
    expect(late.within(3_200, 1_000)).toBe(5)
    // Kept LATE_MEMORY_MS, to the slot.
    expect(late.within(1_000 + LATE_MEMORY_MS - LATE_SLOT_MS, Infinity)).toBe(80)
    expect(late.within(1_000 + LATE_MEMORY_MS, Infinity)).toBe(5)
    expect(late.within(3_000 + LATE_MEMORY_MS, Infinity)).toBe(0)
    // A process's clock starts at 0: a call longer than the process has run reaches back to its first slot.
    const young = new LateWakes(0)
    young.record(50, 7)
    expect(young.within(80, 1_000)).toBe(7)
  })

  it('give how late the wakes came on average over the last LATE_MEAN_MS, to the slot, for a seat\'s charge', () => {
    const late = new LateWakes(0)
    expect(late.meanWithin(100, LATE_MEAN_MS)).toBe(0)
    late.record(200, 60)
    late.record(250, 0)
    expect(late.meanWithin(300, LATE_MEAN_MS)).toBe(30)
    late.record(1_150, 90)
    expect(late.meanWithin(1_200, LATE_MEAN_MS)).toBe(50)
    // The wakes of 0.2 s's slot fall out as the clock passes 1.3 s; none within the second after 2.15 s.
    expect(late.meanWithin(1_300, LATE_MEAN_MS)).toBe(90)
    expect(late.meanWithin(2_200, LATE_MEAN_MS)).toBe(0)
  })

  it('read the process\'s own loop by default: its work since it last idled counts', async () => {
    const timed = answerTiming()
    await idled()
    const until = performance.now() + 150
    while (performance.now() < until);
    // Not idled since the work began: the answer may have come as it began.
    expect(timed(1_000)).toBe(false)
    await idled()
    expect(timed(1_000)).toBe(true)
  })

  it('read the process\'s own loop by default: of answers read together after it waited, the first alone is timed', async () => {
    const timed = answerTiming()
    await idled()
    // Calls of LATE_MEMORY_MS: a tenth of it (6 s) bounds the loop's work and its wakes' lateness, past what a busy machine
    // adds to this process; whether an answer was read since the loop waited alone tells the three apart.
    expect([timed(LATE_MEMORY_MS), timed(LATE_MEMORY_MS), timed(LATE_MEMORY_MS)]).toEqual([true, false, false])
  })

  it('read how late the process\'s wakes come: a process stopped while its loop idles is late by as long', async () => {
    const timed = answerTiming()
    await idled()
    // Another process stops this one for 200 ms while its loop waits for an event, as a
    // machine that gives an idle loop no core does (a stop that finds the loop at work is
    // its work, which the answer's busy time counts); the wait ends interrupted, and the
    // loop's timers run, late, before the child's exit is read.
    const child = spawn(process.execPath, [STOP_WHILE_WAITING, String(process.pid), '200'])
    const [code] = await once(child, 'exit')
    expect(code).toBe(0)
    expect(timed(1_000)).toBe(false)
  })
})
