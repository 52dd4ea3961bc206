import type { Clock, Timer } from '../../src/clock.js'

/** A timer set on the clock: it is its own handle. */
class Entry implements Timer {
  constructor(
    public at: number,
    public seq: number,
    readonly fn: () => void,
    readonly every: number | null,
    readonly sync = false,
  ) {}

  /** Its place in the heap; -1 while it is not there (run, or cleared). */
  index = -1

  unref(): Timer {
    return this
  }
}

/**
 * The simulator's clock: timers in a heap, run in time order (ties in the order they were
 * set), with every promise settled between two of them, so that async code on this clock
 * (the governor's waits, a team's `await`) runs exactly as it would in time, and a run is
 * the same every time. Time moves only in `run`. A cleared timer leaves the heap at once:
 * most of a run's timers (a call's deadline, a wait's expiry) are cleared long before due.
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

  /**
   * Every `ms`, `fn`, which starts no async work and settles no promise (a sampler that
   * reads): no promise is pending after it, so the clock goes on without a settling turn.
   */
  every(fn: () => void, ms: number): Timer {
    return this.#arm(fn, ms, Math.max(1, ms), true)
  }

  /** A promise that settles `ms` from now on this clock. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.setTimeout(resolve, ms))
  }

  /** Timers run so far: a run that passes a budget is a loop that does not move time. */
  fired = 0

  /** Runs every timer due up to `until` (epoch ms), settling promises after each; then sets the time to `until`. */
  async run(until: number, budget = 2_000_000): Promise<void> {
    await settle()
    const heap = this.#heap
    for (;;) {
      const top = heap[0]
      if (!top || top.at > until) break
      if (++this.fired > budget) throw new Error(`more than ${budget} timers ran: a loop that does not move time`)
      this.#remove(0)
      this.#t = Math.max(this.#t, top.at)
      if (top.every !== null) {
        top.at = this.#t + top.every
        top.seq = this.#seq++
        this.#push(top)
      }
      top.fn()
      if (top.sync) continue
      // Every so many timers a turn of the event loop, so that the process still reads its I/O (the test runner's) in a long run.
      await (this.fired % TURN_EVERY === 0 ? settle() : drained())
    }
    this.#t = Math.max(this.#t, until)
  }

  #arm(fn: () => void, ms: number, every: number | null, sync = false): Timer {
    const entry = new Entry(this.#t + Math.max(0, ms), this.#seq++, fn, every, sync)
    this.#push(entry)
    return entry
  }

  #clear(timer: Timer | null | undefined): void {
    if (timer instanceof Entry && timer.index !== -1) this.#remove(timer.index)
  }

  #push(entry: Entry): void {
    entry.index = this.#heap.length
    this.#heap.push(entry)
    this.#up(entry.index)
  }

  /** Takes the entry at `i` out of the heap. */
  #remove(i: number): void {
    const heap = this.#heap
    const gone = heap[i] as Entry
    const last = heap.pop() as Entry
    gone.index = -1
    if (last === gone) return
    heap[i] = last
    last.index = i
    this.#down(i)
    this.#up(last.index)
  }

  #up(i: number): void {
    const heap = this.#heap
    const entry = heap[i] as Entry
    while (i > 0) {
      const parent = (i - 1) >> 1
      const p = heap[parent] as Entry
      if (!before(entry, p)) break
      heap[i] = p
      p.index = i
      i = parent
    }
    heap[i] = entry
    entry.index = i
  }

  #down(i: number): void {
    const heap = this.#heap
    const entry = heap[i] as Entry
    const n = heap.length
    for (;;) {
      const l = 2 * i + 1
      if (l >= n) break
      const r = l + 1
      const m = r < n && before(heap[r] as Entry, heap[l] as Entry) ? r : l
      const child = heap[m] as Entry
      if (!before(child, entry)) break
      heap[i] = child
      child.index = i
      i = m
    }
    heap[i] = entry
    entry.index = i
  }
}

function before(a: Entry, b: Entry): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq)
}

/** Every pending promise reaction runs before this settles (a macrotask turn). */
function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve))
}

/**
 * Every pending promise reaction, and every one they queue, runs before this settles,
 * without a turn of the event loop: Node runs a tick queued from a reaction only once the
 * microtask queue is empty, and `run` asks for this from a reaction (its loop goes on
 * after an await). The simulation's code queues no tick and no macrotask of its own (its
 * timers are the clock's), so this settles exactly where settle() would.
 */
function drained(): Promise<void> {
  return new Promise((resolve) => process.nextTick(resolve))
}

/** Timers run between two turns of the event loop. */
const TURN_EVERY = 1024
