/**
 * The seats one replica may fill with calls of a credential. Alone (no Redis, or
 * platform.maxConcurrentPerReplica as its own cap), they are the limit in force counted
 * here (LocalSeats). Across replicas sharing a Redis, a replica leases its share of the
 * limit, sized by what its teams use and wait for, and renews it as that changes
 * (redis-seats.ts): starting a call costs no Redis command, and the leases of every
 * replica add up to the limit.
 */
import type { TeamDemand } from './seat-shares.js'

/** What this replica's calls of a credential use and wait for. */
export interface ReplicaDemand {
  /** The limit in force. */
  limit: number
  inFlight: number
  waiting: number
  /** Per team: seats used and waited for, weight and ceiling. */
  teams: TeamDemand[]
}

export interface SeatLease {
  /** Seats this replica may fill now, given the limit in force. */
  size(limit: number): number
  /** Each team's share of this replica's seats as the replicas' lease says; null: worked out here. */
  targets(): ReadonlyMap<string, number> | null
  /** The credential's calls in flight on the other replicas, as last heard. */
  elsewhere(): number
  /** Whether the credential's seats are all leased or in use: a wait for one is a wait for the limit. */
  saturated(): boolean
  /** What this replica uses and wants now (after every start, end and wait). */
  demand(demand: ReplicaDemand): void
  /** `fn` runs when more seats become this replica's. */
  onGrown(fn: () => void): void
  /** Seats leased across replicas; null when counted here alone. */
  readonly held: number | null
  start(): Promise<void>
  stop(): void
}

/** The limit in force, counted on this replica (at most `cap`, platform.maxConcurrentPerReplica). */
export class LocalSeats implements SeatLease {
  readonly held = null
  readonly #cap: number

  constructor(cap = Infinity) {
    this.#cap = cap
  }

  size(limit: number): number {
    return Math.min(limit, this.#cap)
  }

  targets(): null {
    return null
  }

  elsewhere(): number {
    return 0
  }

  saturated(): boolean {
    return true
  }

  demand(): void {}

  onGrown(): void {}

  async start(): Promise<void> {}

  stop(): void {}
}
