import type { Clock, Timer } from '../clock.js'

/**
 * A loop that looks for work one pass at a time (the job runner's, the webhook
 * deliverer's): its first pass comes at start, and a poke before start makes none (the
 * start's pass finds what it was for: a job asked while the replica's listeners bind, whose
 * start may yet fail, is claimed only once it has started); a poke while a pass runs makes
 * one more pass right after it; after a pass, the next comes when the pass said (ms from
 * then), or sooner at a poke; none after stop. A pass handles its own failures.
 */
export class PollLoop {
  readonly #clock: Clock
  readonly #pass: () => Promise<number>
  #timer: Timer | null = null
  #polling = false
  #again = false
  #started = false
  #stopped = false

  constructor(clock: Clock, pass: () => Promise<number>) {
    this.#clock = clock
    this.#pass = pass
  }

  /** Whether a pass runs now. */
  get polling(): boolean {
    return this.#polling
  }

  get stopped(): boolean {
    return this.#stopped
  }

  /** The first pass, now. */
  start(): void {
    this.#started = true
    this.poke()
  }

  /** A pass now, or right after the one under way; none before start. */
  poke(): void {
    if (!this.#started || this.#stopped) return
    if (this.#polling) {
      this.#again = true
      return
    }
    this.#polling = true
    this.#clock.clearTimeout(this.#timer)
    void this.#pass().then((nextMs) => {
      this.#polling = false
      if (this.#stopped) return
      if (this.#again) {
        this.#again = false
        this.poke()
        return
      }
      this.#timer = this.#clock.setTimeout(() => this.poke(), Math.max(1, nextMs)).unref()
    })
  }

  /** No pass starts after this; one under way ends. */
  stop(): void {
    this.#stopped = true
    this.#clock.clearTimeout(this.#timer)
  }
}
