import type { Clock, Timer } from '../../src/clock.js'

/** A timer set on the clock: it is its own handle. */
class Entry implements Timer {
  constructor(
    public at: number,
    public seq: number,
    readonly fn: () => void,
    readonly every: number | null,
  ) {}

  live = true

  unref(): Timer {
    return this
  }
}

/**
 * The simulator's clock: timers in a heap, run in time order (ties in the order they were
 * set), with every promise settled between two of them, so that async code on this clock
 * (the governor's waits, a team's `await`) runs exactly as it would in time, and a run is
 * the same every time. Time moves only in `run`.
 */
export class SimClock implements Clock {
  #t: number
  #seq = 0
  readonly #heap: Entry[] = []

  constructor(start = 1_800_000_000_000) {
    this.#t = start
  }

  now = (): number => this.#t

  setTimeout = (fn: () => void, ms: number): Timer => this.#arm(fn, ms, null)
  setInterval = (fn: () => void, ms: number): Timer => this.#arm(fn, ms, Math.max(1, ms))
  clearTimeout = (timer: Timer | null | undefined): void => this.#clear(timer)
  clearInterval = (timer: Timer | null | undefined): void => this.#clear(timer)

  /** A promise that settles `ms` from now on this clock. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.setTimeout(resolve, ms))
  }

  /** Timers run so far: a run that passes a budget is a loop that does not move time. */
  fired = 0

  /** Runs every timer due up to `until` (epoch ms), settling promises after each; then sets the time to `until`. */
  async run(until: number, budget = 2_000_000): Promise<void> {
    await settle()
    for (;;) {
      if (++this.fired > budget) throw new Error(`more than ${budget} timers ran: a loop that does not move time`)
      const top = this.#heap[0]
      if (!top || top.at > until) break
      this.#pop()
      if (!top.live) continue
      this.#t = Math.max(this.#t, top.at)
      if (top.every !== null) {
        top.at = this.#t + top.every
        top.seq = this.#seq++
        this.#push(top)
      } else {
        top.live = false
      }
      top.fn()
      await settle()
    }
    this.#t = Math.max(this.#t, until)
  }

  #arm(fn: () => void, ms: number, every: number | null): Timer {
    const entry = new Entry(this.#t + Math.max(0, ms), this.#seq++, fn, every)
    this.#push(entry)
    return entry
  }

  #clear(timer: Timer | null | undefined): void {
    if (timer instanceof Entry) timer.live = false
  }

  #push(entry: Entry): void {
    const heap = this.#heap
    heap.push(entry)
    let i = heap.length - 1
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (!before(heap[i] as Entry, heap[parent] as Entry)) break
      ;[heap[i], heap[parent]] = [heap[parent] as Entry, heap[i] as Entry]
      i = parent
    }
  }

  #pop(): void {
    const heap = this.#heap
    const last = heap.pop() as Entry
    if (heap.length === 0) return
    heap[0] = last
    let i = 0
    for (;;) {
      const l = 2 * i + 1
      const r = l + 1
      let m = i
      if (l < heap.length && before(heap[l] as Entry, heap[m] as Entry)) m = l
      if (r < heap.length && before(heap[r] as Entry, heap[m] as Entry)) m = r
      if (m === i) break
      ;[heap[i], heap[m]] = [heap[m] as Entry, heap[i] as Entry]
      i = m
    }
  }
}

function before(a: Entry, b: Entry): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq)
}

/** Every pending promise reaction runs before this settles (a macrotask turn). */
function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve))
}
