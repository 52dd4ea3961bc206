import type { Timer } from '../../src/clock.js'
import type { LoopTime } from '../../src/platform/governor/answer-timing.js'
import type { SimClock } from './sim-clock.js'

/** A replica's machine paused over a span of the run (ms from the start): a VM stopped by its host, live-migrated, a node's CPU frozen. */
export interface PauseShape {
  replica: number
  from: number
  to: number
  /** Whether the replica's monotonic reading (performance.now()) stops with it, as CLOCK_MONOTONIC does where the guest's clock is not the host's, or runs on (a kvmclock read from the host). Its wall clock reads the true time after it either way (NTP, or the host's clock). */
  monotonic: 'stops' | 'runs'
}

/**
 * One replica's process through a pause: none of its code runs in it. Its timers due in the
 * pause fire at its end (an interval once, as a blocked loop's does), a call asked of it or an
 * answer come to it in the pause is taken at its end, and its monotonic reading either stops
 * or runs on. The platform, the callers, the lease store and the other replicas keep the
 * true time; a call in flight at the platform runs on there.
 */
export class ReplicaPause {
  readonly #clock: SimClock
  readonly #from: number
  readonly #to: number
  readonly #stops: boolean
  /** The timer a deferred run waits on, by the handle its owner holds. */
  readonly #deferred = new Map<Timer, Timer>()
  /** The governor's clock on this replica. */
  readonly clock: SimClock
  /**
   * The replica's event loop as its loop-probe reads it (answer-timing.ts), where the monotonic
   * reading runs through the pause: the probe's timer, due every few ms, fires once at the
   * pause's end that much late, before the answers come in the pause are read. Where it stops,
   * the probe reads no lateness (its timer is due on the stopped reading), and none is given.
   */
  readonly loop?: () => LoopTime

  constructor(clock: SimClock, shape: PauseShape, start: number) {
    this.#clock = clock
    this.#from = start + shape.from
    this.#to = start + shape.to
    this.#stops = shape.monotonic === 'stops'
    const armed = (arm: (fn: () => void, ms: number) => Timer, fn: () => void, ms: number): Timer => {
      const handle: Timer = arm(() => {
        if (!this.paused()) return fn()
        if (this.#deferred.has(handle)) return
        this.#deferred.set(handle, clock.setTimeout(() => {
          this.#deferred.delete(handle)
          fn()
        }, this.#to - clock.now()))
      }, ms)
      return handle
    }
    const clear = (timer: Timer | null | undefined): void => {
      if (!timer) return
      clock.clearTimeout(timer)
      clock.clearTimeout(this.#deferred.get(timer))
      this.#deferred.delete(timer)
    }
    this.clock = {
      now: () => clock.now(),
      ...(this.#stops ? { monotonic: () => this.monotonic() } : {}),
      setTimeout: (fn: () => void, ms: number) => armed(clock.setTimeout, fn, ms),
      setInterval: (fn: () => void, ms: number) => armed(clock.setInterval, fn, ms),
      clearTimeout: clear,
      clearInterval: clear,
    } as unknown as SimClock
    if (!this.#stops) this.loop = () => ({ busy: 0, readSinceIdle: false, lateWithin: (ms) => (clock.now() - ms <= this.#to && clock.now() >= this.#to ? this.#to - this.#from : 0) })
  }

  paused(): boolean {
    const now = this.#clock.now()
    return now >= this.#from && now < this.#to
  }

  /** The replica's monotonic reading: the true time, less the pause so far where it stops. */
  monotonic(): number {
    const now = this.#clock.now()
    return this.#stops ? now - Math.max(0, Math.min(now, this.#to) - this.#from) : now
  }

  /** A promise of the pause's end, asked while it lasts. */
  awake(): Promise<void> {
    return this.#clock.sleep(this.#to - this.#clock.now())
  }
}
