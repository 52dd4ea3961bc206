/** A pending timer of a Clock; unref() lets the process exit while it is pending. */
export interface Timer {
  unref(): Timer
}

/**
 * The gateway's time and timers: one clock, handed to every part that reads the time or
 * waits (tests hand a fake one). The only wall-clock reads of the gateway are here and in
 * the platform stand-in (sandbox/); performance.now() measures durations, but for those a
 * rule weighs against this clock's times (a report class's latency against a copy's freshness:
 * reports/report-cache.ts), measured on it.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number
  /**
   * Milliseconds at `now()`'s rate that no step of `now()` moves (an NTP step, a clock set
   * by hand, a VM resumed and corrected): the system's is performance.now(). A clock
   * without it (a test's, the simulator's) is read by `now()` alone; a clock whose `now()`
   * is not the system's never borrows the system's.
   */
  monotonic?(): number
  setTimeout(fn: () => void, ms: number): Timer
  clearTimeout(timer: Timer | null | undefined): void
  setInterval(fn: () => void, ms: number): Timer
  clearInterval(timer: Timer | null | undefined): void
}

/**
 * One-shot timers, for code that takes them as a dependency rather than a whole Clock
 * (the report cache's refresh ahead: stepped timers in perf/, a fake clock's in tests);
 * `clear` takes null too.
 */
export interface Timers {
  set(fn: () => void, ms: number): unknown
  clear(handle: unknown): void
}

/** The longest wait setTimeout keeps: beyond 2^31 - 1 ms it fires at once. */
export const LONGEST_TIMER_MS = 2 ** 31 - 1

// Each member reads the global when called, not when this module loads: a test that
// fakes the globals (vi.useFakeTimers) fakes this clock too. Members never use `this`,
// so `systemClock.now` may be passed on its own.
export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (timer) => clearTimeout((timer ?? undefined) as NodeJS.Timeout | undefined),
  setInterval: (fn, ms) => setInterval(fn, ms),
  clearInterval: (timer) => clearInterval((timer ?? undefined) as NodeJS.Timeout | undefined),
}
