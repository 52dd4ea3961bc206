import type { Timers } from '../platform/call-governor.js'

// Node keeps its timers in one list per duration, and the list of an unref'd timer that
// was cleared until that duration has passed (lib/timers.js, unenroll). A refresh ahead
// waits hours, for a duration of its own, and is mostly cleared before it fires (its watch
// fell out): each left a list behind for hours, one per report asked twice (issue 16).
// Waits made of steps whose durations are powers of two share at most 31 lists.
const LONGEST_STEP_EXPONENT = 30

/** Unref'd timers for long waits that are mostly cleared before they fire; each fires on time. */
export const steppedTimers: Timers = {
  set(fn, ms) {
    const due = Date.now() + ms
    const handle: { timeout?: NodeJS.Timeout } = {}
    const wait = (left: number) => {
      const step = left > 1 ? 2 ** Math.min(LONGEST_STEP_EXPONENT, Math.floor(Math.log2(left))) : left
      handle.timeout = setTimeout(() => {
        const rest = due - Date.now()
        if (rest > 0) wait(rest)
        else fn()
      }, step).unref()
    }
    wait(ms)
    return handle
  },
  // A watch without a refresh scheduled clears null.
  clear: (handle) => clearTimeout((handle as { timeout?: NodeJS.Timeout } | null)?.timeout),
}
