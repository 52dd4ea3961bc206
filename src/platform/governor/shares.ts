// The teams' shares of a credential's seats, the one place they are computed (the dispatch
// here and the lease across replicas): docs/governor.md, "Words" (share, owed seats).

/** A team as the shares see it (on every replica): its weight (at least 1), calls held and waiting, its ceiling (teams[].maxConcurrent; null: none), its peak. */
export type TeamLoad = { team: string; weight: number; held: number; waiting: number; cap: number | null; peak: number }

/** Each active team's share of `seats`: max-min fair by weight over what it wants (held and waiting, or its peak), within its ceiling (water-filling); they add up to at most `seats`. */
export function fairShares(seats: number, loads: readonly TeamLoad[]): Map<string, number> {
  // Loops, not array methods: the dispatch works the shares out at every call it starts.
  const shares = new Map<string, number>()
  let open: { team: string; weight: number; want: number }[] = []
  for (const t of loads) {
    const want = Math.min(t.cap ?? Infinity, Math.max(t.held + t.waiting, t.peak))
    shares.set(t.team, 0)
    if (want > 0) open.push({ team: t.team, weight: t.weight, want })
  }
  let left = Math.max(0, seats)
  while (open.length > 0 && left > 1e-9) {
    let weights = 0
    for (const t of open) weights += t.weight
    const level = left / weights
    const filled: typeof open = []
    const rest: typeof open = []
    for (const t of open) (t.want - (shares.get(t.team) as number) <= level * t.weight ? filled : rest).push(t)
    if (filled.length === 0) {
      for (const t of open) shares.set(t.team, (shares.get(t.team) as number) + level * t.weight)
      break
    }
    for (const t of filled) {
      left -= t.want - (shares.get(t.team) as number)
      shares.set(t.team, t.want)
    }
    open = rest
  }
  return shares
}

/** Seats owed to the active teams that wait for nothing: min(share, peak) − held, at least 0, each; `whole`: of the shares' whole seats (one replica, "Words"). */
export function owedSeats(shares: ReadonlyMap<string, number>, teams: readonly TeamLoad[], whole = false): number {
  const part = (team: string) => (whole ? Math.floor((shares.get(team) ?? 0) + 1e-9) : (shares.get(team) ?? 0))
  return teams.reduce((owed, t) => owed + (t.waiting === 0 ? Math.max(0, Math.min(part(t.team), t.peak) - t.held) : 0), 0)
}
