import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { LATE_MEMORY_MS, LATE_SLOT_MS, LateWakes, answerTiming } from '../../src/platform/governor/answer-timing.js'
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
   * Readings of the loop's time, each `[idle, active, busy, late]` milliseconds (busy: its work since it last idled;
   * late: how late its wakes came while any call was in flight, 0 unless given), handed out in turn.
   */
  const readings = (...times: ([number, number, number] | [number, number, number, number])[]) => {
    const queue = times.map(([idle, active, busy, late = 0]) => ({ idle, active, busy, lateWithin: () => late }))
    return () => queue.shift() ?? { idle: Number.NaN, active: Number.NaN, busy: Number.NaN, lateWithin: () => Number.NaN }
  }

  it('are told apart by the event loop idling between two answers: read together, each prompt, the first alone timed', () => {
    const timed = answerTiming(readings([0, 0, 0], [4, 1, 0.5], [4, 1.5, 1], [9, 2, 0.2]))
    expect(timed(400)).toEqual({ prompt: true, timed: true })
    // No idle between the two: the second came with the first, its end apart from it by the gateway's handling.
    expect(timed(400)).toEqual({ prompt: true, timed: false })
    expect(timed(400)).toEqual({ prompt: true, timed: true })
  })

  it('that come together to a loop that waited are prompt while its work on those before is within a tenth of their latency', () => {
    // Eight answers of 300 ms that came while the loop waited, read 2 ms apart: 14 ms of work before the last.
    const times: [number, number, number][] = [[0, 0, 0], ...Array.from({ length: 8 }, (_, i): [number, number, number] => [50, 2 * i, 2 * i])]
    const timed = answerTiming(readings(...times))
    const read = Array.from({ length: 8 }, () => timed(300))
    expect(read.every((r) => r.prompt)).toBe(true)
    expect(read.map((r) => r.timed)).toEqual([true, false, false, false, false, false, false, false])
    // Of 100 ms, the sixth waited 10 ms of the loop's work on the five before it: more than a tenth.
    const fast = answerTiming(readings(...times))
    expect(Array.from({ length: 8 }, () => fast(100).prompt)).toEqual([true, true, true, true, true, true, false, false])
  })

  it('are not prompt behind a busy stretch of the loop: work since it last idled longer than a tenth of their latency', () => {
    // A loop that idled at 10 ms and then worked 60 ms before reading three answers of 400 ms: each may have come as that work began.
    const timed = answerTiming(readings([0, 0, 0], [10, 5, 5], [10, 65, 60], [10, 66, 61], [20, 67, 1]))
    expect(timed(400)).toEqual({ prompt: true, timed: true })
    expect(timed(400)).toEqual({ prompt: false, timed: false })
    expect(timed(400)).toEqual({ prompt: false, timed: false })
    expect(timed(400)).toEqual({ prompt: true, timed: true })
  })

  it('are not timed after the event loop worked longer than a tenth of their latency, though it idled since', () => {
    // A start's first requests, a collection: an answer that came meanwhile waited for the gateway.
    const timed = answerTiming(readings([0, 0, 0], [5, 1, 1], [10, 61, 2], [15, 62, 1], [15, 62.5, 1.5]))
    timed(400)
    expect(timed(400)).toEqual({ prompt: true, timed: false })
    expect(timed(400).timed).toBe(true)
    expect(timed(1_000).timed).toBe(false)
  })

  it('are neither where the loop\'s wakes came later than a tenth of their latency while their call was in flight, though it idled between them', () => {
    // A machine that starves the gateway of its core: an answer that came while the loop
    // idled waited for the loop's wake as long as the wake waited for a core.
    const timed = answerTiming(readings([0, 0, 0], [50, 1, 0.5, 120], [100, 2, 0.5, 120], [150, 3, 0.5, 30]))
    expect(timed(400)).toEqual({ prompt: false, timed: false })
    expect(timed(2_000)).toEqual({ prompt: true, timed: true })
    expect(timed(400)).toEqual({ prompt: true, timed: true })
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

  it('read the process\'s own loop by default: its work since the last answer counts', async () => {
    const timed = answerTiming()
    timed(1_000)
    const until = performance.now() + 150
    while (performance.now() < until);
    // Not idled since: the answer may have come as the work began.
    expect(timed(1_000)).toEqual({ prompt: false, timed: false })
    timed(1_000)
    while (performance.now() < until + 150);
    await idled()
    // Idled since, its work before: prompt, but the gap to the answer before was the gateway's.
    expect(timed(1_000)).toEqual({ prompt: true, timed: false })
  })

  it('read the process\'s own loop by default: answers read together after it waited are prompt, the first alone timed', async () => {
    const timed = answerTiming()
    await idled()
    const read = [timed(1_000), timed(1_000), timed(1_000)]
    expect(read).toEqual([{ prompt: true, timed: true }, { prompt: true, timed: false }, { prompt: true, timed: false }])
  })

  it('read how late the process\'s wakes come: a process stopped while its loop idles is late by as long', async () => {
    const timed = answerTiming()
    timed(1_000)
    // Another process stops this one for 200 ms while its loop waits, as a machine that
    // gives it no core does; the loop's timer fires late once it runs again, before the
    // child's exit is handled.
    const child = spawn('sh', ['-c', `kill -STOP ${process.pid}; sleep 0.2; kill -CONT ${process.pid}`])
    await once(child, 'exit')
    expect(timed(1_000).timed).toBe(false)
  })
})
