/** The longest `retry-after` of a refusal for want of room: past it the readers' pace says little. */
export const MAX_ROOM_RETRY_AFTER_S = 60

// The pace at which room comes free is measured over windows of this length; the last
// whole window's pace is the one told, so that one moment's burst or lull is not.
const PACE_WINDOW_MS = 2000

/**
 * Bytes of answers on their way to callers held at once on this replica
 * (platform.bufferTotalBytes): reserved as an answer arrives from the platform, freed as
 * its caller takes it or once it is dropped. One budget for every answer, proxied or a
 * report, whoever reads it.
 */
export class ByteBudget {
  readonly limit: number
  #used = 0
  // Bytes freed in the window under way, when it began, and the last whole window's pace (bytes/s).
  #freed = 0
  #windowStart: number
  #pace = 0
  readonly #now: () => number

  /** `now`: the milliseconds the pace is measured on (performance.now(), a test's own time). */
  constructor(limit: number, now: () => number = () => performance.now()) {
    this.limit = limit
    this.#now = now
    this.#windowStart = now()
  }

  get used(): number {
    return this.#used
  }

  /** Takes `bytes` if they fit; false leaves the budget as it was. */
  reserve(bytes: number): boolean {
    if (this.#used + bytes > this.limit) return false
    this.#used += bytes
    return true
  }

  free(bytes: number): void {
    this.#used -= bytes
    this.#windowEnds()
    this.#freed += bytes
  }

  /**
   * Seconds until `bytes` more would fit, at the pace room came free of late (callers
   * reading, answers dropped): what a refusal tells its caller to wait, 1 to
   * MAX_ROOM_RETRY_AFTER_S.
   */
  retryAfterSec(bytes: number): number {
    this.#windowEnds()
    const short = this.#used + bytes - this.limit
    if (short <= 0) return 1
    if (this.#pace <= 0) return MAX_ROOM_RETRY_AFTER_S
    return Math.min(MAX_ROOM_RETRY_AFTER_S, Math.max(1, Math.ceil(short / this.#pace)))
  }

  #windowEnds(): void {
    const now = this.#now()
    const elapsed = now - this.#windowStart
    if (elapsed < PACE_WINDOW_MS) return
    this.#pace = (this.#freed * 1000) / elapsed
    this.#freed = 0
    this.#windowStart = now
  }
}
