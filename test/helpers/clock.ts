/** A clock that moves only when told: pass `now` to the gateway, `advance` in the test. */
export interface FakeClock {
  now: () => number
  /** Moves the clock and runs, in time order, the timers that fall due on the way. */
  advance(ms: number): void
  /** setTimeout and clearTimeout on this clock, for code that takes its timers as a dependency. */
  timers: { set(fn: () => void, ms: number): unknown; clear(handle: unknown): void }
}

export function fakeClock(start = Date.now()): FakeClock {
  let t = start
  let seq = 0
  const due = new Map<number, { at: number; fn: () => void }>()
  return {
    now: () => t,
    advance(ms) {
      const end = t + ms
      for (;;) {
        let next: [number, { at: number; fn: () => void }] | null = null
        for (const entry of due) if (entry[1].at <= end && (!next || entry[1].at < next[1].at)) next = entry
        if (!next) break
        due.delete(next[0])
        t = Math.max(t, next[1].at)
        next[1].fn()
      }
      t = end
    },
    timers: {
      set(fn, ms) {
        seq += 1
        due.set(seq, { at: t + Math.max(0, ms), fn })
        return seq
      },
      clear(handle) {
        due.delete(handle as number)
      },
    },
  }
}

/**
 * Real time moved on by `offset` ms: for code that runs on real timers (maintenance
 * ticks) and must still see another date.
 */
export interface ShiftedClock {
  now: () => number
  offset: number
}

export function shiftedClock(): ShiftedClock {
  const clock: ShiftedClock = { offset: 0, now: () => Date.now() + clock.offset }
  return clock
}
