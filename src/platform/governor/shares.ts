/**
 * The teams' shares of a credential's seats: pure functions, the one place they are
 * computed (the dispatch on a replica and the lease across replicas both call them).
 * docs/governor.md, "The dispatch rule" and "Across replicas".
 */

/** A team as the shares see it: its weight, and what it holds and waits for (on every replica). */
export interface TeamLoad {
  team: string
  /** At least 1. */
  weight: number
  /** Calls in flight. */
  held: number
  /** Calls waiting for a seat. */
  waiting: number
  /** Its ceiling (teams[].maxConcurrent); null: none. */
  cap: number | null
  /** The most seats it held and waited for at once within the linger: what it comes back for. */
  peak: number
}

/**
 * Each active team's share of `seats` (those holding, waiting or lingering): max-min fair
 * by weight over what each wants (the seats it holds and waits for, or its peak within
 * the linger, within its ceiling). A team that wants no more than its nominal share (the
 * seats times its weight over the active teams' weights) gets what it wants; what it
 * leaves goes to the others by weight.
 */
export function fairShares(seats: number, teams: readonly TeamLoad[]): Map<string, number> {
  return waterFill(seats, teams.map((t) => ({ team: t.team, weight: t.weight, want: Math.min(t.cap ?? Infinity, Math.max(t.held + t.waiting, t.peak)) })))
}

/**
 * Max-min fair shares of `seats` by weight over what each team wants: a team that wants
 * less than its weighted part gets what it wants, and the rest goes to the others by
 * weight (water-filling). The shares add up to at most `seats`.
 */
export function waterFill(seats: number, teams: readonly { team: string; weight: number; want: number }[]): Map<string, number> {
  const shares = new Map<string, number>(teams.map((t) => [t.team, 0]))
  let open = teams.filter((t) => t.want > 0)
  let left = Math.max(0, seats)
  while (open.length > 0 && left > 1e-9) {
    const level = left / open.reduce((sum, t) => sum + t.weight, 0)
    const filled = open.filter((t) => t.want - (shares.get(t.team) as number) <= level * t.weight)
    if (filled.length === 0) {
      for (const t of open) shares.set(t.team, (shares.get(t.team) as number) + level * t.weight)
      break
    }
    for (const t of filled) {
      left -= t.want - (shares.get(t.team) as number)
      shares.set(t.team, t.want)
    }
    open = open.filter((t) => !filled.includes(t))
  }
  return shares
}

/**
 * Seats owed to the active teams that do not wait now: of each one's share, as many as it
 * held and waited for at once within the linger, less what it holds. They are lent only
 * to calls expected to end within the lending horizon, so that a team that comes back
 * within the linger finds what it asked before.
 */
export function owedSeats(shares: ReadonlyMap<string, number>, teams: readonly TeamLoad[]): number {
  let owed = 0
  for (const t of teams) if (t.waiting === 0) owed += Math.max(0, Math.min(shares.get(t.team) ?? 0, t.peak) - t.held)
  return owed
}
