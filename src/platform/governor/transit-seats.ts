// The seats past the knee across replicas for the seats in transit between them (docs/governor.md, "Across replicas the
// probe seat stays"). Pure: time is passed in.

/** docs/governor.md, "Constants". */
export const TRANSIT_IDLE = 0.02
export const TRANSIT_DUE = 2

/** Per count of seats of the limit in use that the calls in flight left idle (index), the ticks that found it, faded over `fadeMs`. */
export class TransitSeats {
  readonly #ticks: Float64Array
  readonly #fadeMs: number
  #at = -Infinity

  constructor(max: number, fadeMs: number) {
    this.#ticks = new Float64Array(max + 1)
    this.#fadeMs = fadeMs
  }

  /** A tick that found calls waiting with `idle` seats of the limit in use free (between replicas: in transit). */
  count(idle: number, now: number): void {
    const f = Number.isFinite(this.#at) ? Math.exp(-(now - this.#at) / this.#fadeMs) : 0
    this.#at = now
    for (let i = 0; i < this.#ticks.length; i++) this.#ticks[i]! *= f
    this.#ticks[Math.max(0, Math.min(this.#ticks.length - 1, Math.round(idle)))]! += 1
  }

  /** The seats past `knee`: the fewest, one at least (the probe seat), that more seats in transit outnumber in no more than TRANSIT_IDLE of the ticks (a worker idles then), a share of 1 / TRANSIT_IDLE ticks at least; max(2, knee / 10) at most (the calls in flight *no standing queue* allows past W). */
  past(knee: number): number {
    const most = Math.max(2, Math.floor(knee / 10))
    // More seats idle than `most` and one could cover are no transit the seats past K can take up: too few calls in flight (a burst ending, a limit just raised).
    const ticks = this.#ticks.slice(0, most + 2).reduce((sum, n) => sum + n, 0)
    // The ticks that found more seats idle than `past`, a share of 1 / TRANSIT_IDLE ticks at least (fewer cannot show that share).
    let [past, above] = [1, ticks - this.#ticks[0]! - this.#ticks[1]!]
    while (past < most && above > Math.max(1, TRANSIT_IDLE * ticks)) above -= this.#ticks[++past]!
    return past
  }
}
