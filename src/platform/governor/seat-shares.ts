/**
 * Shares of the platform's seats between teams: max-min fair by weight over what each
 * team asks for (its calls in flight and waiting, within its ceiling), by water-filling.
 * A team that asks for less than its weighted part gets what it asks; the rest is split
 * between the others by weight. Seats held for as long as calls run are the platform's
 * time: teams that keep their shares of seats get equal seat-seconds by weight, whatever
 * the length of their calls (Kubernetes API Priority and Fairness charges seats ×
 * seconds the same way). Pure: the governor on a replica and the permit script in Redis
 * (redis-seats.ts) compute the same shares, and one table test holds both to it.
 */

export interface TeamDemand {
  team: string
  /** At least 1. */
  weight: number
  /** Seats it would use now: calls in flight and waiting. */
  demand: number
  /** Its ceiling (teams[].maxConcurrent, or a brake); null: none. */
  cap: number | null
  /** Of its demand, the calls in flight (a lease across replicas holds a ceiling by them). */
  held?: number
}

/** Each team's share of `seats` (fractional; they add up to at most `seats`). */
export function seatShares(seats: number, teams: readonly TeamDemand[]): Map<string, number> {
  const shares = new Map<string, number>()
  let open = teams.filter((t) => need(t) > 0)
  for (const t of teams) shares.set(t.team, 0)
  let left = Math.max(0, seats)
  while (open.length > 0 && left > 1e-9) {
    const weights = open.reduce((sum, t) => sum + t.weight, 0)
    const level = left / weights
    const filled = open.filter((t) => need(t) - (shares.get(t.team) as number) <= level * t.weight)
    if (filled.length === 0) {
      for (const t of open) shares.set(t.team, (shares.get(t.team) as number) + level * t.weight)
      return shares
    }
    for (const t of filled) {
      left -= need(t) - (shares.get(t.team) as number)
      shares.set(t.team, need(t))
    }
    open = open.filter((t) => !filled.includes(t))
  }
  return shares
}

function need(t: TeamDemand): number {
  return Math.max(0, t.cap === null ? t.demand : Math.min(t.demand, t.cap))
}
