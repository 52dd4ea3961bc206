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
 * - **Push-out** when the queue is full: a call displaces the newest background call,
 *   else the newest call of the team holding the most places relative to its weight, if
 *   that team holds more than the newcomer would; otherwise the newcomer is refused. A
 *   team alone may so fill the whole queue, and a second team's first calls still find
 *   room.
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

  /** The teams with calls waiting. */
  waitingTeams(): ReadonlySet<string> {
    return new Set(this.#byTeam.keys())
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
    if (!list) this.#byTeam.set(waiter.team, (list = []))
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
    if (own.length === 0) this.#byTeam.delete(waiter.team)
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
    // The newest call of the lowest priority below the newcomer's.
    for (let p = PRIORITIES.length - 1; p > rank; p--) {
      const list = this.#of(PRIORITIES[p] as Priority)
      if (list.length > 0) return list[list.length - 1] as W
    }
    if (incoming.priority !== 'caller') return 'refuse'
    let fullest: string | null = null
    let most = -1
    for (const team of this.#byTeam.keys()) {
      const share = this.count(team) / shares.weight(team)
      if (share > most) {
        most = share
        fullest = team
      }
    }
    const mine = (this.count(incoming.team) + 1) / shares.weight(incoming.team)
    if (fullest === null || fullest === incoming.team || most <= mine) return 'refuse'
    return (this.#byTeam.get(fullest) as W[]).findLast((w) => w.priority === 'caller') as W
  }

  /** Every waiting call (for a pause that outlasts them). */
  all(): W[] {
    return PRIORITIES.flatMap((p) => [...this.#of(p)])
  }

  #of(priority: Priority): W[] {
    return this.#classes.get(priority) as W[]
  }
}
