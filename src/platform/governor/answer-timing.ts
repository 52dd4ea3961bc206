import { performance } from 'node:perf_hooks'

// docs/governor.md, "Constants".
export const OWN_WORK_SHARE = 0.1
export const LATE_PROBE_MS = 10
export const LATE_SLOT_MS = 100
export const LATE_MEMORY_MS = 60_000

/** The event loop as an answer reads it: its work since it last waited for an event (ms, or more), whether it read an answer since, and the most a wake waited for a core within the last `ms` (its timer's lateness past its own work). */
export interface LoopTime { busy: number; readSinceIdle: boolean; lateWithin(ms: number): number }

/** Whether the answer handled now, `latencyMs` after its call started, is timed: the first the loop read since it last waited for an event, its work since then and every wake's wait for a core while the call was in flight within OWN_WORK_SHARE of the latency (docs/governor.md, "The gateway's own time"). */
export function answerTiming(loop: () => LoopTime = processLoop()): (latencyMs: number) => boolean {
  return (latencyMs) => {
    const now = loop()
    const own = OWN_WORK_SHARE * latencyMs
    return !now.readSinceIdle && now.busy <= own && now.lateWithin(latencyMs) <= own
  }
}

/** How late a loop's wakes came: the most per LATE_SLOT_MS, over the last LATE_MEMORY_MS. */
export class LateWakes {
  readonly #slots = new Float64Array(LATE_MEMORY_MS / LATE_SLOT_MS)
  #slot: number
  constructor(now: number) { this.#slot = Math.floor(now / LATE_SLOT_MS) }

  record(now: number, lateMs: number): void {
    this.#advance(now)
    const i = this.#slot % this.#slots.length
    this.#slots[i] = Math.max(this.#slots[i]!, lateMs)
  }

  /** The most recorded from `ms` before `now` (to its slot) to `now`; nothing before the clock's first slot. */
  within(now: number, ms: number): number {
    this.#advance(now)
    const n = this.#slots.length
    const count = Math.min(n, this.#slot + 1, this.#slot - Math.floor((now - ms) / LATE_SLOT_MS) + 1)
    let most = 0
    for (let j = 0; j < count; j++) most = Math.max(most, this.#slots[(this.#slot - j) % n]!)
    return most
  }

  #advance(now: number): void {
    const slot = Math.floor(now / LATE_SLOT_MS)
    for (let j = this.#slot + 1; j <= Math.min(slot, this.#slot + this.#slots.length); j++) this.#slots[j % this.#slots.length] = 0
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

/** This process's loop as answers read it, its probe started. */
function processLoop(): () => LoopTime {
  probe ??= new LateProbe()
  return () => (probe ??= new LateProbe()).read()
}
