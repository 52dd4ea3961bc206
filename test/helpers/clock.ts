/** A clock that moves only when told: pass `now` to the gateway, `advance` in the test. */
export interface FakeClock {
  now: () => number
  advance(ms: number): void
}

export function fakeClock(start = Date.now()): FakeClock {
  let t = start
  return { now: () => t, advance: (ms) => void (t += ms) }
}
