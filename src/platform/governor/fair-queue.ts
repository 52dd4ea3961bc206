/**
 * The platform calls of one credential waiting for a seat on one replica: pure logic, no
 * timers and no I/O, so that the governor's scheduling is table-tested on its own. Which
 * team's call goes next is the governor's (by seats: call-governor.ts); this queue says
 * which of a team's calls is its most pressing, and who gives up a place when it is full.
 *
 * - **Priorities within a team.** A team's caller's call goes before its report jobs
 *   (asked to run later: jobs/), before its refreshes ahead, before its stale-while-revalidate refreshes, before its warm-ups: background
 *   work of a team uses what its share leaves idle, and holds up its own callers for at
 *   most one platform call. A refresh belongs to the team whose reads made the copy
 *   popular, so another team's flood of misses cannot starve it: it takes its team's share.
 * - **Urgency** among refreshes ahead: the one whose entry is asked most and expires
 *   soonest goes first (`urgency()`, larger first); the others in arrival order.
 * - **Push-out** when the queue is full, by places for weight: a call displaces its own
 *   team's newest call of the lowest priority below its own; else a call of the team
 *   holding the most places relative to its weight, the newest of that team's lowest
 *   priority: one below the newcomer's if that team holds at least as many places as the
 *   newcomer's would, one of the newcomer's own priority only if it holds more; otherwise
 *   the newcomer is refused. A team alone may so fill the whole queue, and a second team's
 *   first calls still find room; a team's flood of misses takes no place of another
 *   team's refreshes once it holds more places than that team.
 */

export type Priority = 'caller' | 'job' | 'ahead' | 'swr' | 'warm'

/** Highest first. */
export const PRIORITIES: readonly Priority[] = ['caller', 'job', 'ahead', 'swr', 'warm']

export interface Queued {
  readonly team: string
  readonly priority: Priority
  /** Order of arrival, smaller first. */
  readonly seq: number
  /** A refresh ahead's urgency now: larger goes first. */
  urgency?: () => number
}

export interface Shares {
  /** The team's weight (at least 1). */
  weight(team: string): number
}

export class FairQueue<W extends Queued> {
  readonly #classes = new Map<Priority, W[]>(PRIORITIES.map((p) => [p, []]))
  // Every waiting call per team, for the governor's choice and push-out.
  readonly #byTeam = new Map<string, W[]>()
  // The keys of #byTeam, in its order: asked for at every dispatch.
  readonly #teams = new Set<string>()
  #size = 0

  get size(): number {
    return this.#size
  }

  /** Waiting callers' calls per team (background calls are the gateway's own). */
  waitingByTeam(): Map<string, number> {
    const out = new Map<string, number>()
    for (const [team, list] of this.#byTeam) {
      const n = list.filter((w) => w.priority === 'caller').length
      if (n > 0) out.set(team, n)
    }
    return out
  }

  /** Waiting calls per team, every priority. */
  countByTeam(): Map<string, number> {
    const out = new Map<string, number>()
    for (const [team, list] of this.#byTeam) out.set(team, list.length)
    return out
  }

  /** The teams with calls waiting (live: it changes as calls come and go). */
  waitingTeams(): ReadonlySet<string> {
    return this.#teams
  }

  /** Waiting calls of `team`, every priority. */
  waitingOf(team: string): number {
    return this.#byTeam.get(team)?.length ?? 0
  }

  /** Waiting calls of `team` at priority `priority`. */
  count(team: string, priority: Priority = 'caller'): number {
    return this.#byTeam.get(team)?.filter((w) => w.priority === priority).length ?? 0
  }

  /** Waiting calls at `priority` or above. */
  countAtOrAbove(priority: Priority): number {
    let n = 0
    for (const p of PRIORITIES) {
      n += this.#of(p).length
      if (p === priority) break
    }
    return n
  }

  has(waiter: W): boolean {
    return this.#of(waiter.priority).includes(waiter)
  }

  push(waiter: W): void {
    this.#of(waiter.priority).push(waiter)
    let list = this.#byTeam.get(waiter.team)
    if (!list) {
      this.#byTeam.set(waiter.team, (list = []))
      this.#teams.add(waiter.team)
    }
    list.push(waiter)
    this.#size += 1
  }

  /** Takes `waiter` out; false when it was not queued. */
  remove(waiter: W): boolean {
    const list = this.#of(waiter.priority)
    const i = list.indexOf(waiter)
    if (i === -1) return false
    list.splice(i, 1)
    const own = this.#byTeam.get(waiter.team) as W[]
    own.splice(own.indexOf(waiter), 1)
    if (own.length === 0) {
      this.#byTeam.delete(waiter.team)
      this.#teams.delete(waiter.team)
    }
    this.#size -= 1
    return true
  }

  /**
   * `team`'s most pressing call (of those `may` allows), or null: the highest priority,
   * then the most urgent refresh ahead, then the earliest.
   */
  pressing(team: string, may?: (w: W) => boolean): W | null {
    let best: W | null = null
    let bestRank = Infinity
    let bestUrgency = -Infinity
    for (const w of this.#byTeam.get(team) ?? []) {
      if (may && !may(w)) continue
      const rank = PRIORITIES.indexOf(w.priority)
      const urgency = w.priority === 'ahead' ? (w.urgency?.() ?? 0) : 0
      if (rank < bestRank || (rank === bestRank && (urgency > bestUrgency || (urgency === bestUrgency && best !== null && w.seq < best.seq)))) {
        best = w
        bestRank = rank
        bestUrgency = urgency
      }
    }
    return best
  }

  /**
   * Room for `incoming` in a queue of at most `limit` places: null when there is room,
   * the waiter it displaces, or 'refuse' when it displaces nobody.
   */
  displaced(incoming: Pick<Queued, 'team' | 'priority'>, limit: number, shares: Pick<Shares, 'weight'>): W | 'refuse' | null {
    if (this.#size < limit) return null
    const rank = PRIORITIES.indexOf(incoming.priority)
    const own = this.#lowest(incoming.team)
    if (own !== null && PRIORITIES.indexOf(own.priority) > rank) return own
    const mine = (this.waitingOf(incoming.team) + 1) / shares.weight(incoming.team)
    let victim: W | null = null
    let most = -1
    for (const team of this.#byTeam.keys()) {
      const held = this.waitingOf(team) / shares.weight(team)
      if (team === incoming.team || held < mine || held <= most) continue
      const newest = this.#lowest(team)
      if (newest === null) continue
      const below = PRIORITIES.indexOf(newest.priority) > rank
      if (below || held > mine) {
        victim = newest
        most = held
      }
    }
    return victim ?? 'refuse'
  }

  /** The team's newest waiting call of its lowest priority; null when it has none. */
  #lowest(team: string): W | null {
    const calls = this.#byTeam.get(team) ?? []
    let found: W | null = null
    let lowest = -1
    for (const w of calls) {
      const rank = PRIORITIES.indexOf(w.priority)
      if (rank > lowest || (rank === lowest && found !== null && w.seq > found.seq)) {
        found = w
        lowest = rank
      }
    }
    return found
  }

  /** Every waiting call (for a pause that outlasts them). */
  all(): W[] {
    return PRIORITIES.flatMap((p) => [...this.#of(p)])
  }

  #of(priority: Priority): W[] {
    return this.#classes.get(priority) as W[]
  }
}
