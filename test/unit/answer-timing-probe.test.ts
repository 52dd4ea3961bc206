import { performance } from 'node:perf_hooks'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { LATE_MEMORY_MS, LATE_PROBE_MS, answerTiming } from '../../src/platform/governor/answer-timing.js'

// The process's probe is one per module: this file holds it alone, on a fake clock.
describe('the process loop\'s wake probe', () => {
  afterEach(() => {
    vi.useRealTimers()
    vi.restoreAllMocks()
  })

  it('runs while answers are read, and stops once none came for LATE_MEMORY_MS', () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'] })
    vi.spyOn(performance, 'now').mockImplementation(() => Date.now())
    const timed = answerTiming()
    expect(vi.getTimerCount()).toBe(1)
    vi.advanceTimersByTime(LATE_MEMORY_MS / 2)
    timed(1_000)
    vi.advanceTimersByTime(LATE_MEMORY_MS / 2 + 10 * LATE_PROBE_MS)
    expect(vi.getTimerCount()).toBe(1)
    vi.advanceTimersByTime(LATE_MEMORY_MS / 2)
    expect(vi.getTimerCount()).toBe(0)
    // The next answer starts it again.
    timed(1_000)
    expect(vi.getTimerCount()).toBe(1)
  })
})
