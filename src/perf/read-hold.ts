/**
 * Callers' bytes held back, for at most one loop iteration, while a platform call is due
 * to be written (a call more than one caller waits on: compose/platform-parts.ts).
 *
 * The HTTP client (undici 7) writes a call on a kept-alive connection used before only
 * after an immediate of its own (its check of the idle socket, GHSA-35p6-xmwp-9g52). A
 * call handed to it in the loop's check phase (a report call's start takes its turn
 * there: reports/call-turns.ts) is so written after the next poll, and in a stampede that
 * poll reads the other callers of the same report: each is parsed, routed and joined to
 * the fill (about 19 µs each, 4 ms for 200) before the one call they all wait for leaves
 * (docs/benchmarks.md, "Where a stampede waiter's time goes"). While a hold is on, the
 * socket entrance (http/socket-entrance.ts) keeps the requests it would hand to Node's
 * parser, and the bytes of the connections Node reads, as they come, and hands them on
 * once the hold ends: at the first check phase after the call was handed over, after the
 * client's own immediate (immediates run in the order they were set). So nothing is held
 * past one loop iteration, whatever the calls: a hold asked while one is on ends with it.
 * Hits answered at the entrance are never held. The decision and its measure:
 * docs/decisions/read-hold.md.
 */
export class ReadHold {
  #ending: NodeJS.Immediate | null = null
  readonly #held: Array<() => void> = []

  /** Whether bytes read now are held. */
  get on(): boolean {
    return this.#ending !== null
  }

  /** A call was handed to the HTTP client: bytes read from now on are held until the next check phase. */
  hold(): void {
    if (this.#ending === null) this.#ending = setImmediate(this.#end)
  }

  /** Runs `work` when the hold ends, after the work held before it; `work` throws nothing (it would cut off the work after it). Only while `on`. */
  defer(work: () => void): void {
    this.#held.push(work)
  }

  readonly #end = (): void => {
    this.#ending = null
    // What was held until now; a hold a piece of it asks (a call it sends) holds what is
    // read after it, until that hold's own end.
    const held = this.#held.splice(0)
    for (const work of held) work()
  }
}
