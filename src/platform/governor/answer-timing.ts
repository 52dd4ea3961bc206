import { performance } from 'node:perf_hooks'

/** At most this share of an answer's latency may be the gateway's own time for it to be timed: as close as the spread of own times the limit rule weighs. */
export const OWN_WORK_SHARE = 0.1
/** The loop's timer that measures how late its wakes come fires this often (ms): as often as Node's own delay monitor samples. */
export const LATE_PROBE_MS = 10
/** How late the wakes came is kept as the most per LATE_SLOT_MS, for LATE_MEMORY_MS: a platform call's budget and its watch. */
export const LATE_SLOT_MS = 100
export const LATE_MEMORY_MS = 60_000

/** The event loop's idle and active milliseconds since the process began (`performance.eventLoopUtilization()`), and how late its wakes came. */
export interface LoopTime {
  idle: number
  active: number
  /** The most a wake of the loop waited for a core within the last `ms` (ms): its timer's lateness past the loop's own work. */
  lateWithin(ms: number): number
}

/**
 * Whether the answer handled now, `latencyMs` after its call started, is timed (docs/governor.md, "The gateway's own time"):
 * the loop idled since the answer before, and its work since then and every wake's wait for a core while the call was in
 * flight are within OWN_WORK_SHARE of the latency (the ends of the calls ahead of it are then known as closely).
 */
export function answerTiming(loop: () => LoopTime = processLoop): (latencyMs: number) => boolean {
  let last = loop()
  return (latencyMs) => {
    const now = loop()
    const own = OWN_WORK_SHARE * latencyMs
    const timed = now.idle > last.idle && now.active - last.active <= own && now.lateWithin(latencyMs) <= own
    last = now
    return timed
  }
}

/** How late a loop's wakes came: the most per LATE_SLOT_MS, over the last LATE_MEMORY_MS. */
export class LateWakes {
  readonly #slots = new Float64Array(LATE_MEMORY_MS / LATE_SLOT_MS)
  #slot: number

  constructor(now: number) {
    this.#slot = Math.floor(now / LATE_SLOT_MS)
  }

  record(now: number, lateMs: number): void {
    this.#advance(now)
    const i = this.#slot % this.#slots.length
    this.#slots[i] = Math.max(this.#slots[i]!, lateMs)
  }

  /** The most recorded from `ms` before `now` (to its slot) to `now`. */
  within(now: number, ms: number): number {
    this.#advance(now)
    const n = this.#slots.length
    const count = Math.min(n, this.#slot - Math.floor((now - ms) / LATE_SLOT_MS) + 1)
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

/**
 * How late this process's loop wakes: a timer every LATE_PROBE_MS, its lateness less the loop's work since it last fired.
 * One per process, started with a reading, stopped once none came for LATE_MEMORY_MS; it never holds the process open.
 */
class LateProbe {
  #due = performance.now() + LATE_PROBE_MS
  #active = performance.eventLoopUtilization().active
  #readAt = performance.now()
  readonly #late = new LateWakes(performance.now())
  readonly #timer = setInterval(() => this.#fired(), LATE_PROBE_MS).unref()

  read(): LateWakes {
    this.#readAt = performance.now()
    return this.#late
  }

  #fired(): void {
    const [now, active] = [performance.now(), performance.eventLoopUtilization().active]
    this.#late.record(now, Math.max(0, now - this.#due - (active - this.#active)))
    ;[this.#due, this.#active] = [now + LATE_PROBE_MS, active]
    if (now - this.#readAt > LATE_MEMORY_MS) {
      clearInterval(this.#timer)
      probe = null
    }
  }
}

let probe: LateProbe | null = null

/** This process's loop: its idle and active time, and how late its wakes came. */
function processLoop(): LoopTime {
  const late = (probe ??= new LateProbe()).read()
  return { ...performance.eventLoopUtilization(), lateWithin: (ms) => late.within(performance.now(), ms) }
}
