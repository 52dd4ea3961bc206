// The seats one replica may fill across replicas: its lease of the limit (leased-seats.ts; docs/governor.md, "Across replicas").
import type { TeamRecord } from './lease-plan.js'

/** A team on this replica (its record's, with the seat-time its calls here held, those in flight included). */
export type LocalTeam = TeamRecord & { seatMs: number }

/** What this replica's calls of a credential hold and wait for. */
export interface ReplicaDemand {
  limit: number // the limit in force: the teams' shares are of it
  inFlight: number
  waiting: number
  heldBack?: number // seats free here that the dispatch holds back from the calls waiting (owed: 2.3); none: 0
  teams: LocalTeam[]
}

/** The seats a replica's calls want: in flight, waiting, and the free seats held back from those waiting (they wait past them). */
export const needOf = (d: ReplicaDemand): number => d.inFlight + d.waiting + (d.heldBack ?? 0)

/** The teams' shares as this replica sees them: each local team's target here, the seats of its lease owed to teams on other replicas, each team's share across every replica, what it holds on the others and the seat-time (ms) its calls held there since this one first saw them. */
export interface LeaseShares {
  targets: ReadonlyMap<string, number>
  lent: number
  shares: ReadonlyMap<string, number>
  heldElsewhere: ReadonlyMap<string, number>
  charged: ReadonlyMap<string, number>
}

/**
 * `size`: seats this replica may fill now under the limit; `shares`: as the last renewal says (null: worked out here
 * alone); `elsewhere`: the calls in flight on the other replicas; `saturated`: every seat leased or in use (a wait is a
 * wait for the limit); `demand`: after every start, end and wait; `onGrown`: more seats are this replica's; `answered`,
 * `waited`: heard by the learner (the rate of answers decides which replica learns); `held`: seats leased.
 */
export interface SeatLease {
  size(limit: number): number
  shares(): LeaseShares | null
  elsewhere(): number
  saturated(): boolean
  demand(demand: ReplicaDemand): void
  onGrown(fn: () => void): void
  answered(): void
  waited(): void
  readonly held: number
}

