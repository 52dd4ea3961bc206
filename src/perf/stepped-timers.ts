import { systemClock, type Clock, type Timer, type Timers } from '../clock.js'

// Node keeps its timers in one list per duration, and the list of an unref'd timer that
// was cleared until that duration has passed (lib/timers.js, unenroll). A refresh ahead
// waits hours, for a duration of its own, and is mostly cleared before it fires (its watch
// fell out): each would leave a list behind for hours, one per report asked twice.
// Waits made of steps whose durations are powers of two share at most 31 lists.
const LONGEST_STEP_EXPONENT = 30

/** Unref'd timers on `clock` for long waits that are mostly cleared before they fire; each fires on time. */
export function steppedTimers(clock: Clock = systemClock): Timers {
  return {
    set(fn, ms) {
      const due = clock.now() + ms
      const handle: { timeout?: Timer } = {}
      const wait = (left: number) => {
        const step = left > 1 ? 2 ** Math.min(LONGEST_STEP_EXPONENT, Math.floor(Math.log2(left))) : left
        handle.timeout = clock.setTimeout(() => {
          const rest = due - clock.now()
          if (rest > 0) wait(rest)
          else fn()
        }, step).unref()
      }
      wait(ms)
      return handle
    },
    // A watch without a refresh scheduled clears null.
    clear: (handle) => clock.clearTimeout((handle as { timeout?: Timer } | null)?.timeout),
  }
}
