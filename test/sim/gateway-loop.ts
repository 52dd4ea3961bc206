import { LATE_MEAN_MS, LATE_PROBE_MS, LateWakes, type LoopTime } from '../../src/platform/governor/answer-timing.js'
import type { Timer } from '../../src/clock.js'
import type { Random } from './random.js'
import type { SimClock } from './sim-clock.js'

/** What handling one answer costs the gateway's loop (ms of its work): the seat's end, the caller's answer, the next call sent. */
export const HANDLE_MS = 1

/**
 * One replica's event loop on a machine that starves it of its core (a busy node, a pod
 * at its CPU limit). An answer that comes while the loop idles wakes it only once the
 * process gets a core again, `lateMs(now)` later on average (the machine's load at the
 * time; each wake's wait drawn exponential around it), and every answer come by then is
 * handled in that wake, one after another, HANDLE_MS each, with no idle moment between
 * them: answers that come while the loop works join its bunch. The wait for a core counts
 * as idle time, as `performance.eventLoopUtilization()` counts it (the loop sits in its
 * poll until the process runs). Its timer of LATE_PROBE_MS wakes it as an answer does, and
 * how late it fires past the loop's work is how late the loop's wakes come, as the
 * gateway's own probe measures it (answer-timing.ts).
 */
export class GatewayLoop {
  readonly #clock: SimClock
  readonly #random: Random
  readonly #lateMs: (at: number) => number
  readonly #start: number
  readonly #bunch: (() => number)[] = []
  // A wake is due or under way; the work done before the answer being handled, and when that one began.
  #awake = false
  #activeMs = 0
  #handlingSince: number | null = null
  // The work done before this wake, and whether an answer was read in it.
  #busyFrom = 0
  #readInWake = false
  #unhandled = 0
  readonly #late: LateWakes
  readonly #probe: Timer

  constructor(clock: SimClock, random: Random, lateMs: (at: number) => number) {
    this.#clock = clock
    this.#random = random
    this.#lateMs = lateMs
    this.#start = clock.now()
    this.#late = new LateWakes(this.#start)
    this.#probe = clock.every(() => this.#timerDue(), LATE_PROBE_MS)
  }

  /** An answer came now: `fn` runs when the loop handles it (`costMs` its work). */
  handle(fn: () => void, costMs = HANDLE_MS): void {
    this.#bunch.push(() => {
      fn()
      return costMs
    })
    if (this.#awake) return
    this.#awake = true
    const mean = this.#lateMs(this.#clock.now())
    this.#clock.setTimeout(() => this.#next(), mean > 0 ? -mean * Math.log(1 - this.#random.next()) : 0)
  }

  /** The answer `answer` carries, once the loop handled it. */
  handled<T>(answer: Promise<T>): Promise<T> {
    return answer.then((a) => {
      this.#unhandled++
      return new Promise<T>((resolve) => this.handle(() => {
        this.#unhandled--
        resolve(a)
      }))
    })
  }

  /** Answers come and not handled yet: each holds its seat while the platform's worker is free. */
  get unhandled(): number {
    return this.#unhandled
  }

  /** The loop as an answer handled now reads it: its work in this wake, whether an answer was read in it before, and how late its wakes came, as the gateway's loop-probe reads them. */
  time(): LoopTime {
    const now = this.#clock.now()
    const [busy, readSinceIdle] = [this.#active() - this.#busyFrom, this.#readInWake]
    this.#readInWake = true
    return { busy, readSinceIdle, lateWithin: (ms) => this.#late.within(now, ms) }
  }

  /** How late the loop's wakes came on average over the last LATE_MEAN_MS, as the gateway's probe reads it (answer-timing.ts), without reading an answer. */
  lateMean(): number {
    return this.#late.meanWithin(this.#clock.now(), LATE_MEAN_MS)
  }

  stop(): void {
    this.#clock.clearInterval(this.#probe)
  }

  #active(): number {
    return this.#activeMs + (this.#handlingSince === null ? 0 : this.#clock.now() - this.#handlingSince)
  }

  /** The probe's timer came due: the loop runs it when it wakes, and it records how late, past the loop's work since. */
  #timerDue(): void {
    const [due, active] = [this.#clock.now(), this.#active()]
    this.handle(() => this.#late.record(this.#clock.now(), Math.max(0, this.#clock.now() - due - (this.#active() - active))), 0)
  }

  #next(): void {
    const now = this.#clock.now()
    if (this.#handlingSince !== null) this.#activeMs += now - this.#handlingSince
    else [this.#busyFrom, this.#readInWake] = [this.#activeMs, false]
    const fn = this.#bunch.shift()
    if (fn === undefined) {
      ;[this.#handlingSince, this.#awake] = [null, false]
      return
    }
    this.#handlingSince = now
    this.#clock.setTimeout(() => this.#next(), fn())
  }
}
