/**
 * Report calls' completions take turns on the event loop: one per loop iteration, the
 * teams in turn, each team's in the order its answers came in.
 *
 * A report call's completion (its body parsed, gzipped and hashed, its copy stored, its
 * callers answered) is a large part of a miss's CPU. Run where the platform's answer
 * ends, every completion whose answer came in with the same poll of the loop runs back
 * to back before the loop reads another socket: with a second team's closed loop of
 * misses there are tens of them, and an L1 hit arriving then waits behind all of them.
 * Given a turn each instead, a completion runs in the loop's check phase, after the poll
 * that read every socket ready (hits included); so whatever else the loop holds, a hit
 * waits behind at most one completion per team with completions waiting
 * (docs/decisions/completion-turns.md). No number bounds it: the loop's own iterations
 * do. The platform's seat has ended before the turn is asked (the answer is in), so a
 * waiting completion holds no seat, only its received bytes (in the answers' budget).
 */
export class CompletionTurns {
  // Per team, the completions waiting, oldest first; the map's order is the teams' turn.
  readonly #waiting = new Map<string, Array<() => void>>()
  #scheduled = false

  /** Resolves when it is `team`'s next completion's turn (a loop iteration of its own). */
  turn(team: string): Promise<void> {
    return new Promise((resolve) => {
      const queue = this.#waiting.get(team)
      if (queue === undefined) this.#waiting.set(team, [resolve])
      else queue.push(resolve)
      this.#schedule()
    })
  }

  /** How many completions wait for a turn. */
  get waiting(): number {
    let n = 0
    for (const queue of this.#waiting.values()) n += queue.length
    return n
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
    // The team goes to the back of the teams' turn while it has completions left.
    if (queue.length > 0) this.#waiting.set(team, queue)
    if (this.#waiting.size > 0) this.#schedule()
    go()
  }
}
