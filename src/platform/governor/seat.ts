import type { Priority } from './fair-queue.js'
import type { Answer } from './knee-estimator.js'
import type { SeatLease } from './seat-lease.js'
import type { WorkEstimates } from './work-estimates.js'
import type { Clock } from '../../clock.js'

// A call's seat as the rest of the gateway sees it: what it asks with, what it holds, what
// ends it, and what a refusal says.

export type RefusalReason = 'queue_full' | 'team_queue_full' | 'displaced' | 'queue_timeout' | 'paused' | 'deadline'
export type { Priority } from './fair-queue.js'

/** What ended a call: the platform's answer (its status and retry-after, after `latencyMs` to its headers), none (a deadline, a connection error), or the gateway's own stop. */
export type SeatOutcome = { kind: 'answer'; status: number; latencyMs: number; retryAfter?: string } | { kind: 'none'; latencyMs: number; timedOut: boolean } | { kind: 'dropped' }

/**
 * A call's seat: the platform's time. It goes back with the call's outcome (`end`): once
 * the answer is in, the platform is done with the call (an answer is received at the
 * platform's pace; one still being read by its caller holds room in the answers' budget,
 * not a seat); with no answer, the platform works on, and the seat is held until the
 * call's expected end there.
 */
export interface Seat {
  readonly team: string
  /** Calls of the credential in flight once it had its seat, itself included, on every replica. */
  readonly load: number
  end(outcome: SeatOutcome): void
}

export interface SeatRequest {
  team: string
  /** The work the call asks (reports/work-class.ts): how long it holds its seat is estimated by it. */
  workClass: string
  priority?: Priority
  /** Epoch ms: the call is not sent when it cannot end before. */
  deadline: number
  signal?: AbortSignal
  /** A refresh ahead's urgency now (larger first). */
  urgency?: () => number
}

/** A background call (a refresh, a warm-up) got no seat in time, was displaced, or met a pause: dropped, no caller waited for it. */
export class NoIdleSeatError extends Error {
  constructor(credential: string) {
    super(`no platform seat of credential ${credential} for a background call in time`)
  }
}

export interface TeamLimits {
  maxConcurrent: number | null
  queue: number | null
}

/** What one credential's seats are given (seats.ts). */
export interface SeatsOptions {
  credential: string
  /** The ceiling of the limit in force (platform.maxConcurrent). */
  maxConcurrent: number
  /** The limit in force at start. */
  limit: number
  queueLimit: number
  queueTimeoutMs: number
  work: WorkEstimates
  weightOf?: (team: string) => number
  limitsOf?: (team: string) => { maxConcurrent?: number | null; queue?: number | null } | undefined
  /** Until when (epoch ms) the platform pauses the whole credential; 0: it does not. */
  pausedUntil?: () => number
  seats?: SeatLease
  clock?: Clock
  onRefused?: (reason: RefusalReason) => void
  /** Every call's start and end, for the limit rule. */
  onStarted?: (kind: string, load: number) => number
  onEnded?: (answer: Answer) => void
  /** A call waited because every seat of the limit was taken; `longMs`: none waiting is known short beside a short call in flight, the longest expected of them (`Seats.longWaitBesideShort`). */
  onWaited?: (longMs: number | null) => void
}
