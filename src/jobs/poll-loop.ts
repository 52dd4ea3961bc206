import type { Clock, Timer } from '../clock.js'

/**
 * A loop that looks for work one pass at a time (the job runner's, the webhook
 * deliverer's): a poke while a pass runs makes one more pass right after it; after a pass,
 * the next comes when the pass said (ms from then), or sooner at a poke; none after stop.
 * A pass handles its own failures.
 */
export class PollLoop {
  readonly #clock: Clock
  readonly #pass: () => Promise<number>
  #timer: Timer | null = null
  #polling = false
  #again = false
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

  /** A pass now, or right after the one under way. */
  poke(): void {
    if (this.#stopped) return
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
