// What a credential's call governor is given (call-governor.ts): its limits and the
// operator's ceilings, its collaborators, and how each call waits.

import type { Logger } from 'pino'
import type { Priority } from './fair-queue.js'
import type { SeatLease } from './seat-lease.js'
import type { Clock } from '../../clock.js'

export type RefusalReason = 'queue_full' | 'team_queue_full' | 'displaced' | 'queue_timeout' | 'paused'

/** A team's own ceilings on its credential (teams[].maxConcurrent, queue); null: none. */
export interface TeamLimits {
  maxConcurrent: number | null
  queue: number | null
}

export interface GovernorOptions {
  credential: string
  /** The ceiling of the limit in force (platform.maxConcurrent). */
  maxConcurrent: number
  /** The limit in force at start; the learned limit moves it (setLimit). Default maxConcurrent. */
  limit?: number
  /** Calls waiting for a seat; one more displaces a call with less claim to its place, or is refused. */
  queueLimit: number
  /** Longest wait for a seat. */
  queueTimeoutMs: number
  /** A team's share of the seats, relative to the others' (default 1). */
  weightOf?: (team: string) => number
  /** A team's own ceilings, as an operator set them; none by default. */
  limitsOf?: (team: string) => { maxConcurrent?: number | null; queue?: number | null } | undefined
  /** Until when (epoch ms) the platform pauses the whole credential; 0: it does not. Default: never. */
  pausedUntil?: () => number
  log: Pick<Logger, 'info' | 'warn'>
  clock?: Clock
  /** A call refused with GW_OVERLOADED. */
  onRefused?: (reason: RefusalReason) => void
  /** The seats this replica may fill: the limit in force alone, or its share leased across replicas. */
  seats?: SeatLease
  /** A team below its share waits with no seat free: a seat held by a caller that stopped reading (answer-buffer.ts) may be taken back from a team over its share. Returns whether one was. */
  reclaim?: (waiting: string, overShare: (team: string) => boolean) => boolean
  /** A team whose calls hold a seat longer than this (ms) makes long calls (long-calls.ts); default: none does. */
  longCallMs?: number
}

/** How a call waits: its priority, for a refresh ahead how urgent it is now, and how long its kind of call takes (ms: its latency floor), when known. */
export interface CallClass {
  priority?: Priority
  urgency?: () => number
  expectedMs?: number
}
