// The seats one replica may fill with calls of a credential across replicas: its lease of the
// limit in force (leased-seats.ts; docs/governor.md, "Across replicas"). Without one, the limit alone.
import type { TeamRecord } from './lease-plan.js'

/** A team on this replica (its record's, with the seat-time its calls here held, those in flight included). */
export type LocalTeam = TeamRecord & { seatMs: number }

/** What this replica's calls of a credential hold and wait for. */
export interface ReplicaDemand {
  /** The limit in force: the teams' shares are of it. */
  limit: number
  inFlight: number
  waiting: number
  teams: LocalTeam[]
}

/** The teams' shares as this replica sees them: each local team's target here, the seats of its lease owed to teams on other replicas, and each team's share across every replica and what it holds on the others. */
export interface LeaseShares {
  targets: ReadonlyMap<string, number>
  lent: number
  shares: ReadonlyMap<string, number>
  heldElsewhere: ReadonlyMap<string, number>
  /** The seat-time (ms) each team's calls held on the other replicas since this one first saw them: it only grows. */
  charged: ReadonlyMap<string, number>
}

export interface SeatLease {
  /** Seats this replica may fill now, given the limit in force. */
  size(limit: number): number
  /** The local teams' targets across replicas, as the last renewal says; null: worked out here alone. */
  shares(): LeaseShares | null
  /** The credential's calls in flight on the other replicas, as last heard. */
  elsewhere(): number
  /** Whether every seat of the credential is leased or in use: a wait for one is a wait for the limit. */
  saturated(): boolean
  /** What this replica holds and wants now (after every start, end and wait). */
  demand(demand: ReplicaDemand): void
  /** `fn` runs when more seats become this replica's. */
  onGrown(fn: () => void): void
  /** A call was answered here; calls waited here at the limit (the replica that learns the limit hears of both). */
  answered(): void
  waited(): void
  /** Seats leased across replicas. */
  readonly held: number
}

