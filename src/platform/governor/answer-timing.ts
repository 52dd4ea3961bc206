import { performance } from 'node:perf_hooks'

// docs/governor.md, "Constants".
const OWN_WORK_SHARE = 0.1
export const LATE_PROBE_MS = 10
export const LATE_SLOT_MS = 100
export const LATE_MEMORY_MS = 60_000
export const LATE_MEAN_MS = 1_000

/** The event loop as an answer reads it: its work since it last waited for an event (ms, or more), whether it read an answer since, and the most a wake waited for a core within the last `ms` (its timer's lateness past its own work). */
export interface LoopTime { busy: number; readSinceIdle: boolean; lateWithin(ms: number): number }

/** Whether the answer handled now, `latencyMs` after its call started, is timed: the first the loop read since it last waited for an event, its work since then and every wake's wait for a core while the call was in flight within OWN_WORK_SHARE of the latency (docs/governor.md, "The gateway's own time"). */
export function answerTiming(loop: () => LoopTime = fromProbe((p) => p.read())): (latencyMs: number) => boolean {
  return (latencyMs) => {
    const now = loop()
    const own = OWN_WORK_SHARE * latencyMs
    return !now.readSinceIdle && now.busy <= own && now.lateWithin(latencyMs) <= own
  }
}

/** How late a loop's wakes came, per LATE_SLOT_MS over the last LATE_MEMORY_MS: the most, and the sum and count of what was recorded. */
export class LateWakes {
  readonly #slots = new Float64Array(LATE_MEMORY_MS / LATE_SLOT_MS)
  readonly #sums = new Float64Array(LATE_MEMORY_MS / LATE_SLOT_MS)
  readonly #counts = new Uint32Array(LATE_MEMORY_MS / LATE_SLOT_MS)
  #slot: number
  constructor(now: number) { this.#slot = Math.floor(now / LATE_SLOT_MS) }

  record(now: number, lateMs: number): void {
    this.#advance(now)
    const i = this.#slot % this.#slots.length
    this.#slots[i] = Math.max(this.#slots[i]!, lateMs)
    this.#sums[i]! += lateMs
    this.#counts[i]! += 1
  }

  /** The most recorded from `ms` before `now` (to its slot) to `now`; nothing before the clock's first slot. */
  within(now: number, ms: number): number {
    let most = 0
    for (const i of this.#recent(now, ms)) most = Math.max(most, this.#slots[i]!)
    return most
  }

  /** The mean of what was recorded from `ms` before `now` (to its slot) to `now`; 0 when nothing was. */
  meanWithin(now: number, ms: number): number {
    let [sum, count] = [0, 0]
    for (const i of this.#recent(now, ms)) [sum, count] = [sum + this.#sums[i]!, count + this.#counts[i]!]
    return count === 0 ? 0 : sum / count
  }

  /** The indexes of the slots from `ms` before `now` to `now`, the clock advanced to `now`. */
  *#recent(now: number, ms: number): IterableIterator<number> {
    this.#advance(now)
    const n = this.#slots.length
    const count = Math.min(n, this.#slot + 1, this.#slot - Math.floor((now - ms) / LATE_SLOT_MS) + 1)
    for (let j = 0; j < count; j++) yield (this.#slot - j) % n
  }

  #advance(now: number): void {
    const slot = Math.floor(now / LATE_SLOT_MS)
    for (let j = this.#slot + 1; j <= Math.min(slot, this.#slot + this.#slots.length); j++) {
      const i = j % this.#slots.length
      ;[this.#slots[i], this.#sums[i], this.#counts[i]] = [0, 0, 0]
    }
    this.#slot = Math.max(this.#slot, slot)
  }
}

// How late this process's loop wakes (a timer every LATE_PROBE_MS, less the loop's work since it last fired), one per process,
// stopped after LATE_MEMORY_MS without an answer. Its firings and each answer's reading mark the loop: idle grows only while it waits.
class LateProbe {
  #due = performance.now() + LATE_PROBE_MS
  #mark = performance.eventLoopUtilization()
  #firedActive = this.#mark.active
  // Where the loop's work since it last idled began: not known until a mark sees it idle.
  #busyFrom = -Infinity
  #readSinceIdle = false
  #readAt = performance.now()
  readonly #late = new LateWakes(performance.now())
  readonly #timer = setInterval(() => this.#fired(), LATE_PROBE_MS).unref()

  /** How late the loop's wakes came on average over the last LATE_MEAN_MS (ms). */
  lateMean(): number { return this.#late.meanWithin(performance.now(), LATE_MEAN_MS) }

  read(): LoopTime {
    this.#readAt = performance.now()
    const { active } = this.#marked()
    const readSinceIdle = this.#readSinceIdle
    this.#readSinceIdle = true
    return { busy: active - this.#busyFrom, readSinceIdle, lateWithin: (ms) => this.#late.within(performance.now(), ms) }
  }

  #fired(): void {
    const [now, { active }] = [performance.now(), this.#marked()]
    this.#late.record(now, Math.max(0, now - this.#due - (active - this.#firedActive)))
    ;[this.#due, this.#firedActive] = [now + LATE_PROBE_MS, active]
    if (now - this.#readAt > LATE_MEMORY_MS) {
      clearInterval(this.#timer)
      probe = null
    }
  }

  /** The loop's time now; where it idled since the last mark, its work since starts after that mark, and no answer was read since. */
  #marked(): { idle: number; active: number } {
    const now = performance.eventLoopUtilization()
    if (now.idle > this.#mark.idle) [this.#busyFrom, this.#readSinceIdle] = [this.#mark.active, false]
    this.#mark = now
    return now
  }
}

let probe: LateProbe | null = null

/** `read` of this process's probe, started now and again whenever it stopped. */
function fromProbe<T>(read: (p: LateProbe) => T): () => T {
  probe ??= new LateProbe()
  return () => read((probe ??= new LateProbe()))
}

/** How late this process's loop wakes now, on average over the last LATE_MEAN_MS (ms): the time an answer waits to be read, no worker's (docs/governor.md, "The dispatch rule" 2). */
export const processLateness = (): (() => number) => fromProbe((p) => p.lateMean())
