/**
 * A report call's own work on the gateway takes turns on the event loop: its start (the
 * governor's seat asked, the request sent) and its completion (its body parsed, gzipped
 * and hashed, its copy stored, its callers answered). One piece of work per loop
 * iteration, the teams in turn, each team's in the order it came.
 *
 * Run where it arises, every piece of work that one poll of the loop gives rise to runs
 * back to back before the loop reads another socket: the starts of every miss whose
 * request the poll read, the completions of every answer it read. With a second team's
 * closed loop of misses there are tens of them, and an L1 hit read in the same poll, or
 * arriving then, waits behind all of them. Given a turn each instead, the work runs in
 * the loop's check phase, after the poll that read every socket ready (hits answered
 * there); so whatever else the loop holds, a hit waits behind at most one piece of a
 * report call's work per team with work waiting (docs/decisions/completion-turns.md). No
 * number bounds it: the loop's own iterations do. A start waiting for its turn holds no
 * seat; a completion's seat has ended before it asks (the answer is in), and it holds
 * only its received bytes (in the answers' budget).
 */
export class CallTurns {
  // Per team, the work waiting, oldest first; the map's order is the teams' turn.
  readonly #waiting = new Map<string, Array<() => void>>()
  #scheduled = false

  /**
   * Resolves true when it is `team`'s next piece of work's turn (a loop iteration of its
   * own); false once `gone` aborts before then, its place given up to the others.
   */
  turn(team: string, gone?: AbortSignal): Promise<boolean> {
    if (gone?.aborted === true) return Promise.resolve(false)
    return new Promise((resolve) => {
      const go = () => {
        gone?.removeEventListener('abort', leave)
        resolve(true)
      }
      const leave = () => {
        this.#leave(team, go)
        resolve(false)
      }
      gone?.addEventListener('abort', leave, { once: true })
      const queue = this.#waiting.get(team)
      if (queue === undefined) this.#waiting.set(team, [go])
      else queue.push(go)
      this.#schedule()
    })
  }

  /** How many pieces of work wait for a turn. */
  get waiting(): number {
    let n = 0
    for (const queue of this.#waiting.values()) n += queue.length
    return n
  }

  #leave(team: string, go: () => void): void {
    const queue = this.#waiting.get(team)
    if (queue === undefined) return
    const at = queue.indexOf(go)
    if (at !== -1) queue.splice(at, 1)
    if (queue.length === 0) this.#waiting.delete(team)
  }

  #schedule(): void {
    if (this.#scheduled) return
    this.#scheduled = true
    // An immediate set from within one runs in the next iteration, after its poll.
    setImmediate(this.#next)
  }

  readonly #next = (): void => {
    this.#scheduled = false
    const first = this.#waiting.entries().next()
    if (first.done === true) return
    const [team, queue] = first.value
    this.#waiting.delete(team)
    const go = queue.shift()!
    // The team goes to the back of the teams' turn while it has work left.
    if (queue.length > 0) this.#waiting.set(team, queue)
    if (this.#waiting.size > 0) this.#schedule()
    go()
  }
}
