/**
 * A seeded pseudo-random source (mulberry32): every draw of a simulated scenario comes
 * from one seed, so a run replays exactly. `fork` gives a part its own stream, so that one
 * part drawing more does not move another's draws.
 */
export class Random {
  #state: number

  constructor(seed: number) {
    this.#state = seed >>> 0
  }

  /** A float in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0
    let t = this.#state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }

  /** A float in [lo, hi). */
  uniform(lo: number, hi: number): number {
    return lo + (hi - lo) * this.next()
  }

  /** An integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1))
  }

  /** A float in [lo, hi) whose logarithm is uniform: as likely 4 to 8 as 32 to 64. */
  logUniform(lo: number, hi: number): number {
    return Math.exp(this.uniform(Math.log(lo), Math.log(hi)))
  }

  chance(p: number): boolean {
    return this.next() < p
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)] as T
  }

  /** A log-normal factor of median 1 and log-spread `sigma`. */
  spread(sigma: number): number {
    if (sigma <= 0) return 1
    const u = Math.max(1e-12, this.next())
    const v = this.next()
    return Math.exp(sigma * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v))
  }

  /** An independent stream, drawn from this one. */
  fork(): Random {
    return new Random(Math.floor(this.next() * 4294967296))
  }
}
