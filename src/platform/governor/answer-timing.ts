import { performance } from 'node:perf_hooks'

/** At most this share of an answer's latency may be the gateway's own time for it to be timed: as close as the spread of own times the limit rule weighs. */
export const OWN_WORK_SHARE = 0.1
/** The loop's timer that measures how late its wakes come fires this often (ms): as often as Node's own delay monitor samples. */
export const LATE_PROBE_MS = 10
/** How late the wakes came is kept as the most per LATE_SLOT_MS, for LATE_MEMORY_MS: a platform call's budget and its watch. */
export const LATE_SLOT_MS = 100
export const LATE_MEMORY_MS = 60_000

/** The event loop's idle and active milliseconds since the process began (`performance.eventLoopUtilization()`), its work since it last idled, and how late its wakes came. */
export interface LoopTime {
  idle: number
  active: number
  /** The loop's work since it last waited for an event (ms), or more: every answer it reads meanwhile may have come as that work began. */
  busy: number
  /** The most a wake of the loop waited for a core within the last `ms` (ms): its timer's lateness past the loop's own work. */
  lateWithin(ms: number): number
}

/** How the gateway read an answer (docs/governor.md, "The gateway's own time"). */
export interface AnswerTiming {
  /** It waited for the gateway's loop no more than OWN_WORK_SHARE of its latency: the loop's work since it last idled, and every wake's wait for a core while its call was in flight, within that share. */
  prompt: boolean
  /** Prompt, and the first answer read since the loop idled after the answer before, with no more than that share of work between: its end, and the gaps to the ends before it, are the platform's (the limit rule's evidence). */
  timed: boolean
}

/**
 * How the answer handled now, `latencyMs` after its call started, was read (docs/governor.md, "The gateway's own time").
 * An answer is read at the latest as the loop's work since it last idled ends: the loop waits for an event only once
 * none is ready, so every answer read since came after that wait began, or while it worked. Answers that come together
 * to a loop that waited are all prompt while the loop's work on those before is within the share; but they are read
 * one after another, their ends apart by the gateway's work, so only the first of them is timed.
 */
export function answerTiming(loop: () => LoopTime = processLoop): (latencyMs: number) => AnswerTiming {
  let last = loop()
  return (latencyMs) => {
    const now = loop()
    const own = OWN_WORK_SHARE * latencyMs
    const prompt = now.busy <= own && now.lateWithin(latencyMs) <= own
    const timed = prompt && now.idle > last.idle && now.active - last.active <= own
    last = now
    return { prompt, timed }
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

/**
 * How late this process's loop wakes: a timer every LATE_PROBE_MS, its lateness less the loop's work since it last fired.
 * One per process, started with a reading, stopped once none came for LATE_MEMORY_MS; it never holds the process open.
 * Its firings and every reading mark the loop's work, so that its work since it last idled is bounded from the latest
 * mark before that idle moment: the loop's idle time grows only while it waits for an event.
 */
class LateProbe {
  #due = performance.now() + LATE_PROBE_MS
  #mark = performance.eventLoopUtilization()
  #firedActive = this.#mark.active
  #busyFrom = this.#mark.active
  #readAt = performance.now()
  readonly #late = new LateWakes(performance.now())
  readonly #timer = setInterval(() => this.#fired(), LATE_PROBE_MS).unref()

  read(): LoopTime {
    this.#readAt = performance.now()
    const { idle, active } = this.#marked()
    return { idle, active, busy: active - this.#busyFrom, lateWithin: (ms) => this.#late.within(performance.now(), ms) }
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

  /** The loop's time now; its work since it last idled starts after the mark before, where it idled since. */
  #marked(): { idle: number; active: number } {
    const now = performance.eventLoopUtilization()
    if (now.idle > this.#mark.idle) this.#busyFrom = this.#mark.active
    this.#mark = now
    return now
  }
}

let probe: LateProbe | null = null

/** This process's loop: its idle and active time, its work since it last idled, and how late its wakes came. */
function processLoop(): LoopTime {
  return (probe ??= new LateProbe()).read()
}
