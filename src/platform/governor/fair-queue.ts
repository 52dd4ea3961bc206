// The calls of one credential waiting for a seat on one replica, per team: each team's most
// pressing, and who gives up a place in a full queue (docs/governor.md, "State"). Pure.

export type Priority = 'caller' | 'job' | 'ahead' | 'swr' | 'warm'
/** Highest first. */
export const PRIORITIES: readonly Priority[] = ['caller', 'job', 'ahead', 'swr', 'warm']

/** `seq`: order of arrival, smaller first; `urgency`: a refresh ahead's now, larger first. */
export interface Queued {
  readonly team: string
  readonly priority: Priority
  readonly seq: number
  urgency?: () => number
}

const RANKS = Object.fromEntries(PRIORITIES.map((p, i) => [p, i])) as Readonly<Record<Priority, number>>
/** A priority's place in PRIORITIES: smaller is more pressing. */
export const rank = (w: Pick<Queued, 'priority'>): number => RANKS[w.priority]

export class FairQueue<W extends Queued> {
  // Every waiting call per team, in arrival order; a team with none has no entry. `#size` of them in all.
  readonly #byTeam = new Map<string, W[]>()
  #size = 0

  get size(): number { return this.#size }

  /** Waiting calls per team at `priority` (default: callers'; null: every priority). */
  countByTeam(priority: Priority | null = 'caller'): Map<string, number> {
    const counts = new Map<string, number>()
    for (const team of this.#byTeam.keys()) {
      const n = this.count(team, priority)
      if (n > 0) counts.set(team, n)
    }
    return counts
  }

  waitingTeams(): IterableIterator<string> { return this.#byTeam.keys() }
  /** Waiting calls of `team` at `priority` (null: every priority). */
  count(team: string, priority: Priority | null = 'caller'): number {
    const list = this.#byTeam.get(team) ?? []
    return priority === null ? list.length : list.reduce((n, w) => n + (w.priority === priority ? 1 : 0), 0)
  }
  has(waiter: W): boolean { return this.#byTeam.get(waiter.team)?.includes(waiter) ?? false }

  push(waiter: W): void {
    this.#size++
    const list = this.#byTeam.get(waiter.team)
    if (list) list.push(waiter)
    else this.#byTeam.set(waiter.team, [waiter])
  }

  /** Takes `waiter` out; false when it was not queued. */
  remove(waiter: W): boolean {
    const list = this.#byTeam.get(waiter.team)
    const i = list?.indexOf(waiter) ?? -1
    if (list === undefined || i === -1) return false
    list.splice(i, 1)
    this.#size--
    if (list.length === 0) this.#byTeam.delete(waiter.team)
    return true
  }

  /** `team`'s most pressing call (of those `may` allows), or null. */
  pressing(team: string, may?: (w: W) => boolean): W | null {
    let [best, bestRank, bestUrgency]: [W | null, number, number] = [null, Infinity, -Infinity]
    for (const w of this.#byTeam.get(team) ?? []) {
      // A call of a lower priority than the best so far, or of the same one but not a refresh ahead (no urgency to pass it), cannot pass it: `may` is not asked of it.
      const r = rank(w)
      if (r > bestRank || (r === bestRank && w.priority !== 'ahead')) continue
      if (may && !may(w)) continue
      const urgency = w.priority === 'ahead' ? (w.urgency?.() ?? 0) : 0
      if (r < bestRank || urgency > bestUrgency) [best, bestRank, bestUrgency] = [w, r, urgency]
    }
    return best
  }

  /** Room for `incoming` in a queue of at most `limit` places, shared by teams' `weight`: null, the waiter it displaces, or 'refuse'. */
  displaced(incoming: Pick<Queued, 'team' | 'priority'>, limit: number, weight: (team: string) => number): W | 'refuse' | null {
    if (this.size < limit) return null
    const own = this.#lowest(incoming.team)
    if (own !== null && rank(own) > rank(incoming)) return own
    const mine = (this.count(incoming.team, null) + 1) / weight(incoming.team)
    let [victim, most]: [W | null, number] = [null, -1]
    for (const [team, list] of this.#byTeam) {
      const held = list.length / weight(team)
      if (team === incoming.team || held < mine || held <= most) continue
      const newest = this.#lowest(team) as W
      if (rank(newest) > rank(incoming) || held > mine) [victim, most] = [newest, held]
    }
    return victim ?? 'refuse'
  }

  /** The team's newest waiting call of its lowest priority; null when it has none. */
  #lowest(team: string): W | null {
    return (this.#byTeam.get(team) ?? []).reduce<W | null>((found, w) => (found === null || rank(w) >= rank(found) ? w : found), null)
  }

  /** Every waiting call, team by team, each team's in arrival order. */
  all(): W[] { return ([] as W[]).concat(...this.#byTeam.values()) }
  /** Each waiting team's calls in arrival order, team by team: `all` without a copy, for a reader that may stop at one. */
  lists(): IterableIterator<readonly W[]> { return this.#byTeam.values() }
}
