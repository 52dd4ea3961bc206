/** The bounds of status calls held open at once (`?wait`) on a replica: per team, and in all. */
export interface WaitBounds {
  /** Status calls of one team waiting at once (jobs.maxWaitsPerTeam). */
  maxWaitsPerTeam: number
  /** Status calls waiting at once on this replica, every team's (jobs.maxWaits). */
  maxWaits: number
}

/** Why a wait was not taken: the bound that is full, as the refusal names it. */
export type WaitRefusal = 'team' | 'replica'

/**
 * The status calls holding a `?wait` open on this replica. Each reads its job every
 * 250 ms and holds a connection for up to 30 s: their number is bounded per team and in
 * all, whatever the teams' rate limits, so that one team's waits neither starve another
 * team's nor load Redis past a known rate. A wait is taken before it begins and given
 * back once it ends (`release`).
 */
export class JobWaits {
  readonly #bounds: WaitBounds
  readonly #byTeam = new Map<string, number>()
  readonly #changed: (team: string, waiting: number) => void
  #total = 0

  /** `changed`: told each team's count of waits after each change (a gauge). */
  constructor(bounds: WaitBounds, changed: (team: string, waiting: number) => void = () => undefined) {
    this.#bounds = bounds
    this.#changed = changed
  }

  /** A wait of `team`, taken: its release; or the bound that is full. */
  take(team: string): { release: () => void } | { full: WaitRefusal } {
    const held = this.#byTeam.get(team) ?? 0
    if (held >= this.#bounds.maxWaitsPerTeam) return { full: 'team' }
    if (this.#total >= this.#bounds.maxWaits) return { full: 'replica' }
    this.#set(team, held + 1)
    this.#total += 1
    let released = false
    return {
      release: () => {
        if (released) return
        released = true
        this.#total -= 1
        this.#set(team, (this.#byTeam.get(team) ?? 1) - 1)
      },
    }
  }

  /** The waits of `team` held now (every team's without one). */
  waiting(team?: string): number {
    return team === undefined ? this.#total : (this.#byTeam.get(team) ?? 0)
  }

  #set(team: string, waiting: number): void {
    if (waiting === 0) this.#byTeam.delete(team)
    else this.#byTeam.set(team, waiting)
    this.#changed(team, waiting)
  }
}
