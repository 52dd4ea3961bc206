import type { Clock } from '../../clock.js'

/**
 * The governor's clock (docs/governor.md, "The clock"): the wall clock, plus every step
 * back the wall clock took (a clock set by hand, a VM resumed and corrected). It never
 * runs back: the limit rule orders calls by their times, and a step back read every call
 * after it at the moment of the last before it, the limit run to twice the platform's
 * workers. It runs at the wall clock's rate, not back to it: a rate apart from the lease
 * store's moves the replica's offset to the store (leased-seats.ts) again and again, and
 * the learner on another replica reads each moved record's calls as new ones. A time from
 * the rest of the gateway (a call's deadline, a pause's end: the wall clock's) is read on
 * it by `fromWall`. Its timers are the wall clock's, which wait by the monotonic clock.
 */
export class SteadyClock implements Clock {
  readonly #wall: Clock
  #behind = 0
  #last = -Infinity

  constructor(wall: Clock) { this.#wall = wall }

  now(): number {
    const wall = this.#wall.now()
    // A step back: this clock stands still across it, and is that much past the wall clock since.
    if (wall + this.#behind < this.#last) this.#behind = this.#last - wall
    this.#last = wall + this.#behind
    return this.#last
  }

  /** A wall clock time (epoch ms) on this clock; 0 (none) stays 0. */
  fromWall(at: number): number {
    if (at === 0) return 0
    this.now()
    return at + this.#behind
  }

  setTimeout(fn: () => void, ms: number): ReturnType<Clock['setTimeout']> { return this.#wall.setTimeout(fn, ms) }
  clearTimeout(timer: Parameters<Clock['clearTimeout']>[0]): void { this.#wall.clearTimeout(timer) }
  setInterval(fn: () => void, ms: number): ReturnType<Clock['setInterval']> { return this.#wall.setInterval(fn, ms) }
  clearInterval(timer: Parameters<Clock['clearInterval']>[0]): void { this.#wall.clearInterval(timer) }
}
