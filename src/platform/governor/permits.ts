/**
 * Who may start a platform call of a credential: a permit per call in flight, at most the
 * limit in force in all, and a team's explicit ceiling per team. The memory implementation
 * counts on this replica (one replica, or no Redis); RedisPermits (redis-permits.ts)
 * leases them in Redis, across every replica sharing it, and shares the slots fairly
 * between the teams waiting on every replica.
 */
import type { Priority } from './fair-queue.js'

/** Gives a permit back; calling it again does nothing. */
export type Release = () => void

export interface PermitRequest {
  /** The team whose call it is (a refresh's: the team whose reads made its copy popular). */
  team: string
  priority: Priority
  weight: number
  /** The team's own ceiling (teams[].maxConcurrent); null: none. */
  cap: number | null
  /** The limit in force across every replica. */
  limit: number
}

/**
 * A permit, or why none: the credential's limit is reached, the team's own ceiling is,
 * or (across replicas) a call of a higher priority or a team with a smaller share waits
 * elsewhere for the few permits left.
 */
export type Taken = Granted | { full: 'credential' | 'team' | 'turn' }

export interface Granted {
  release: Release
  /** Calls of the credential in flight once it is granted, itself included: on every replica sharing the permits. */
  inFlight: number
}

export interface Permits {
  /** One permit (at once when counted here: no wait, no turn lost). */
  take(request: PermitRequest): Taken | Promise<Taken>
  /** Permits this replica holds now. */
  readonly held: number
  /** How soon a call refused here should ask again (ms): null when only a release on this replica frees one. */
  readonly retryMs: number | null
}

/** Permits counted on this replica: at most the limit in force (or `cap`, when lower), and a team's ceiling per team. */
export class MemoryPermits implements Permits {
  readonly retryMs = null
  readonly #cap: number
  #held = 0
  readonly #teams = new Map<string, number>()

  /** `cap`: this replica's own cap whatever the limit in force. */
  constructor(cap = Infinity) {
    this.#cap = cap
  }

  get held(): number {
    return this.#held
  }

  take(request: Pick<PermitRequest, 'team' | 'cap' | 'limit'>): Taken & {} {
    if (this.#held >= Math.min(request.limit, this.#cap)) return { full: 'credential' }
    const teamHeld = this.#teams.get(request.team) ?? 0
    if (request.cap !== null && teamHeld >= request.cap) return { full: 'team' }
    return this.grant(request.team)
  }

  /** A permit counted here whatever the caps: one another store has granted. */
  grant(team: string): Granted {
    this.#held += 1
    this.#teams.set(team, (this.#teams.get(team) ?? 0) + 1)
    let released = false
    return {
      inFlight: this.#held,
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
