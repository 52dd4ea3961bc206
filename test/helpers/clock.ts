import { systemClock, type Clock, type Timer, type Timers } from '../../src/clock.js'

/** A clock that moves only when told: hand it to the code under test, `advance` in the test. */
export interface FakeClock extends Clock {
  /** Moves the clock and runs, in time order, the timers that fall due on the way. */
  advance(ms: number): void
  /** One-shot timers on this clock, for code that takes them as a dependency (the report cache's refresh ahead). */
  timers: Timers
}

interface Due {
  at: number
  fn: () => void
  /** An interval's period; null for a one-shot timer. */
  every: number | null
}

export function fakeClock(start = Date.now()): FakeClock {
  let t = start
  const due = new Map<Timer, Due>()
  const arm = (fn: () => void, ms: number, every: number | null): Timer => {
    const timer: Timer = { unref: () => timer }
    due.set(timer, { at: t + Math.max(0, ms), fn, every })
    return timer
  }
  const clear = (timer: Timer | null | undefined): void => {
    if (timer) due.delete(timer)
  }
  return {
    now: () => t,
    advance(ms) {
      const end = t + ms
      for (;;) {
        let next: [Timer, Due] | null = null
        for (const entry of due) if (entry[1].at <= end && (!next || entry[1].at < next[1].at)) next = entry
        if (!next) break
        const [timer, d] = next
        t = Math.max(t, d.at)
        if (d.every === null) due.delete(timer)
        else d.at = t + Math.max(1, d.every)
        d.fn()
      }
      t = end
    },
    setTimeout: (fn, ms) => arm(fn, ms, null),
    clearTimeout: clear,
    setInterval: (fn, ms) => arm(fn, ms, ms),
    clearInterval: clear,
    timers: {
      set: (fn, ms) => arm(fn, ms, null),
      clear: (handle) => clear(handle as Timer | null),
    },
  }
}

/** The system's timers alone: a clock of a test's own time takes them, never the system's monotonic reading (src/clock.ts). */
const systemTimers = { setTimeout: systemClock.setTimeout, clearTimeout: systemClock.clearTimeout, setInterval: systemClock.setInterval, clearInterval: systemClock.clearInterval }

/** The system's timers with the time read from `now`: a test's own time for code whose waits stay real. */
export function onRealTimers(now: () => number): Clock {
  return { ...systemTimers, now }
}

/**
 * The system's timers with the time read from `clock`, each one-shot timer also armed on
 * `clock`: it runs once, when its real time has passed or when the test's `advance` passes
 * its time on `clock`, whichever comes first (as a timer that came due while the event loop
 * was held runs once, late). For code whose waits stay real (maintenance ticks, leases)
 * and whose timers set for a time on its clock (a job's next try) the test moves to at
 * once. Intervals stay real only: an advance of seconds would run one of 50 ms dozens of
 * times in a row, which no held loop does.
 */
export function wokenBy(clock: FakeClock): Clock {
  const armed = new Map<Timer, { real: NodeJS.Timeout; fake: Timer }>()
  const clear = (timer: Timer | null | undefined): void => {
    const both = timer ? armed.get(timer) : undefined
    if (!timer || !both) return
    armed.delete(timer)
    clearTimeout(both.real)
    clock.clearTimeout(both.fake)
  }
  return {
    ...systemTimers,
    now: clock.now,
    setTimeout(fn, ms) {
      const timer: Timer = {
        unref: () => {
          armed.get(timer)?.real.unref()
          return timer
        },
      }
      const run = (): void => {
        clear(timer)
        fn()
      }
      armed.set(timer, { real: setTimeout(run, ms), fake: clock.setTimeout(run, ms) })
      return timer
    },
    clearTimeout: (timer) => {
      if (timer && armed.has(timer)) clear(timer)
      else systemClock.clearTimeout(timer)
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
