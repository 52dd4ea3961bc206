import { queryObjects } from 'node:v8'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { steppedTimers } from '../../src/perf/stepped-timers.js'

const timers = steppedTimers()

// Node's own class for the list of timers of one duration, reached through a timer in it.
function timersListClass(): new () => unknown {
  const probe = setTimeout(() => undefined, 987_654_321)
  const list = (probe as unknown as { _idlePrev: { constructor: new () => unknown } })._idlePrev
  clearTimeout(probe)
  return list.constructor
}

describe('steppedTimers', () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  it('fires each wait once, at its time, not a millisecond before, from 1 ms to days', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] })
    for (const ms of [1, 5, 37, 1000, 69_119_000, 5 * 86_400_000]) {
      let fired = 0
      timers.set(() => fired++, ms)
      vi.advanceTimersByTime(ms - 1)
      expect(fired, `${ms} ms`).toBe(0)
      vi.advanceTimersByTime(1)
      expect(fired, `${ms} ms`).toBe(1)
      vi.advanceTimersByTime(10 * ms + 1000)
      expect(fired, `${ms} ms`).toBe(1)
    }
  })

  it('never fires a wait cleared before its time, also once some of its steps have passed', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] })
    let fired = 0
    const handle = timers.set(() => fired++, 69_119_000)
    vi.advanceTimersByTime(60_000_000)
    timers.clear(handle)
    vi.advanceTimersByTime(20_000_000)
    expect(fired).toBe(0)
  })

  it('clears null, the handle of no timer, as clearTimeout does', () => {
    expect(() => timers.clear(null)).not.toThrow()
  })

  it('leaves Node a few dozen timer lists, not one per duration, after a thousand long waits of their own are cleared', () => {
    const TimersList = timersListClass()
    const count = () => queryObjects(TimersList, { format: 'count' })
    const before = count()
    for (let i = 0; i < 1000; i++) timers.clear(timers.set(() => undefined, 3_600_000 + 997 * i))
    expect(count() - before).toBeLessThanOrEqual(31)
    // What a refresh ahead's own timer did: a list per duration, kept for that duration.
    for (let i = 0; i < 1000; i++) clearTimeout(setTimeout(() => undefined, 7_200_000 + 997 * i).unref())
    expect(count() - before).toBeGreaterThanOrEqual(1000)
  })
})
