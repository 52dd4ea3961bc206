import type { Clock } from '../../clock.js'

/**
 * The governor's clock (docs/governor.md, "The clock"): the wall clock at its start, then
 * the wall clock's monotonic reading (performance.now() for the system's), which no step of
 * the wall clock moves, back or ahead (a clock set by hand, an NTP step, a VM resumed and
 * corrected). The limit rule orders and times calls by it: a step back read every call
 * after it at the moment of the last before it, a step ahead read the calls across it as
 * that much longer, and either ran the limit past the platform's workers. It runs at the
 * wall clock's rate, as the monotonic reading does (NTP slews both alike): a rate apart
 * from the lease store's moves the replica's offset to the store (leased-seats.ts) again
 * and again, and the learner on another replica reads each moved record's calls as new
 * ones. A wall clock without a monotonic reading (a test's, the simulator's) is read as
 * its own. A time from the rest of the gateway (a call's deadline, a pause's end: the wall
 * clock's) is read on it by `fromWall`. Its timers are the wall clock's, which wait by the
 * monotonic clock.
 */
export class SteadyClock implements Clock {
  readonly #wall: Clock
  readonly #monotonic: () => number
  /** The wall clock's time less the monotonic reading, at the start. */
  readonly #origin: number

  constructor(wall: Clock) {
    this.#wall = wall
    this.#monotonic = wall.monotonic ? () => wall.monotonic!() : () => wall.now()
    this.#origin = wall.monotonic ? wall.now() - wall.monotonic() : 0
  }

  now(): number { return this.#origin + this.#monotonic() }

  /** A wall clock time (epoch ms) on this clock; 0 (none) stays 0. */
  fromWall(at: number): number {
    return at === 0 ? 0 : at + (this.now() - this.#wall.now())
  }

  setTimeout(fn: () => void, ms: number): ReturnType<Clock['setTimeout']> { return this.#wall.setTimeout(fn, ms) }
  clearTimeout(timer: Parameters<Clock['clearTimeout']>[0]): void { this.#wall.clearTimeout(timer) }
  setInterval(fn: () => void, ms: number): ReturnType<Clock['setInterval']> { return this.#wall.setInterval(fn, ms) }
  clearInterval(timer: Parameters<Clock['clearInterval']>[0]): void { this.#wall.clearInterval(timer) }
}
