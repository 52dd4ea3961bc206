/** A clock that moves only when told: pass `now` to the gateway, `advance` in the test. */
export interface FakeClock {
  now: () => number
  advance(ms: number): void
}

export function fakeClock(start = Date.now()): FakeClock {
  let t = start
  return { now: () => t, advance: (ms) => void (t += ms) }
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
