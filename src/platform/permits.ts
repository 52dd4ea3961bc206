/**
 * Who may start a platform call of a credential (issue 15): a permit per call in flight,
 * at most `limit` in all and a team's cap per team. The memory implementation counts on
 * this replica (one replica, no Redis, or platform.isolation false); RedisPermits
 * (redis-permits.ts) leases them in Redis, across every replica sharing it.
 */

/** Gives a permit back; calling it again does nothing. */
export type Release = () => void

/** A permit, or whose cap is reached: the credential's, or the team's own. */
export type Taken = { release: Release } | { full: 'credential' | 'team' }

export interface Permits {
  /** One permit for a call of `team`, whose own cap is `teamCap` (at once when counted here: no wait, no turn lost). */
  take(team: string, teamCap: number): Taken | Promise<Taken>
  /** Permits this replica holds now. */
  readonly held: number
  /** How soon a call refused here should ask again (ms): null when only a release on this replica frees one. */
  readonly retryMs: number | null
}

/** Permits counted on this replica: at most `limit`, and `teamCap` per team. */
export class MemoryPermits implements Permits {
  readonly retryMs = null
  readonly #limit: number
  #held = 0
  readonly #teams = new Map<string, number>()

  constructor(limit: number) {
    this.#limit = limit
  }

  get held(): number {
    return this.#held
  }

  /** `limit` above the replica's own: to count permits another store already granted. */
  take(team: string, teamCap: number, limit = this.#limit): Taken {
    if (this.#held >= limit) return { full: 'credential' }
    const teamHeld = this.#teams.get(team) ?? 0
    if (teamHeld >= teamCap) return { full: 'team' }
    this.#held += 1
    this.#teams.set(team, teamHeld + 1)
    let released = false
    return {
      release: () => {
        if (released) return
        released = true
        this.#held -= 1
        const left = (this.#teams.get(team) ?? 1) - 1
        if (left > 0) this.#teams.set(team, left)
        else this.#teams.delete(team)
      },
    }
  }
}
