import type { PlatformCount } from '../pauses/count-shares.js'
import type { Priority } from './fair-queue.js'
import type { Answer } from './answer-timeline.js'
import type { LeasedSeats } from './leased-seats.js'
import type { WorkEstimates } from './work-estimates.js'
import type { Clock } from '../../clock.js'

// A call's seat as the rest of the gateway sees it: what it asks with, what it holds, what
// ends it and what that teaches, and what a refusal says (docs/governor.md, "Words").

export type RefusalReason = 'queue_full' | 'team_queue_full' | 'displaced' | 'queue_timeout' | 'paused' | 'count' | 'deadline'
export type { Priority } from './fair-queue.js'

/** What ended a call: the platform's answer (after `latencyMs` to its headers), none (a deadline, a connection error), the gateway's own stop of a call sent (`dropped`), or a call never sent (`unsent`: refused between its seat and its sending, nothing reached the platform). */
export type SeatOutcome = { kind: 'answer'; status: number; latencyMs: number; retryAfter?: string; count?: PlatformCount | null } | { kind: 'none'; latencyMs: number; timedOut: boolean } | { kind: 'dropped' } | { kind: 'unsent' }

/** A call's seat: the platform's time, given back with the call's outcome (dispatch rule 4). */
export interface Seat { end(outcome: SeatOutcome): void }

/** `workClass`: the work it asks (reports/work-class.ts), its seat-time estimated by it; `deadline` (epoch ms): not sent when it cannot end before; `signal` ends the wait; `urgency`: a refresh ahead's now (larger first). */
export interface SeatRequest {
  team: string
  workClass: string
  priority?: Priority
  deadline: number
  signal?: AbortSignal
  urgency?: () => number
}

/** A background call (a refresh, a warm-up, a job) got no seat in time, was displaced, or met a pause: no caller waited for it. */
export class NoIdleSeatError extends Error {
  constructor(credential: string) { super(`no platform seat of credential ${credential} for a background call in time`) }
}

/** The seats one replica may fill across replicas (leased-seats.ts): `size`, seats it may fill now under the limit; `shares`, as the last renewal says (null: worked out here alone); `elsewhere`, the other replicas' calls in flight; `saturated`, every seat leased or in use (a wait is a wait for the limit); `demand`, after every start, end and wait; `onGrown`, more seats are this replica's; `answered`, `waited`, heard by the learner; `held`, seats leased; `keepCharges`, the teams whose seat-time elsewhere is charged. */
export type SeatLease = Pick<LeasedSeats, 'size' | 'shares' | 'ceilingHere' | 'elsewhere' | 'saturated' | 'demand' | 'onGrown' | 'answered' | 'waited' | 'held' | 'keepCharges'>

/** A team's own ceilings (teams[].maxConcurrent, teams[].queue); null: none. */
export type TeamLimits = { maxConcurrent: number | null; queue: number | null }

/** What one credential's seats are given (seats.ts): `maxConcurrent`, the limit's ceiling; `pausedUntil` (epoch ms on the wall clock; 0: no credential pause); `seats`: its lease across replicas (none: counted here alone, at most `perReplica`); `rule`, the limit rule (KneeEstimator; none: a fixed limit), told each call's start (its serial back), a wait at the limit and a team `keepTeams` no longer keeps (its kinds go), and asked whether a call met a fault; `onEnded`, told each call's end; `loopLateMs`, how late the loop wakes. */
export interface SeatsOptions {
  credential: string
  maxConcurrent: number
  limit: number
  queueLimit: number
  queueTimeoutMs: number
  /** platform.maxPause: the longest retry-after a refusal tells. */
  maxPauseMs: number
  work: WorkEstimates
  weightOf?: (team: string) => number | undefined
  limitsOf?: (team: string) => Partial<TeamLimits> | undefined
  pausedUntil?: () => number
  seats?: SeatLease | null
  perReplica?: number | null
  clock?: Clock
  /** A wall clock time (a call's deadline, the pause's end) on `clock` (SteadyClock.fromWall); none: `clock` is the wall clock. */
  fromWall?: (at: number) => number
  onRefused?: (reason: RefusalReason) => void
  rule?: { started(kind: string, load: number): number; waited(longMs: number | null, newcomer: boolean, heldBack: number, longBesideOthers: boolean): void; metFault(startedAt: number, at: number): boolean; lostAfter(overdue: number): number; forget(team: string): void }
  onEnded?: (answer: Answer) => void
  /** How late the gateway's loop wakes now (ms, answer-timing.ts): the part of a seat's time its answer waits to be read, not charged to its team's tag; none: 0. */
  loopLateMs?: () => number
}

/** What the outcome of a call sent at `sentAt` teaches its kind's estimate (nothing when it met a fault), and tells the limit rule ("Faults"). */
export function learnFrom(work: WorkEstimates, team: string, workClass: string, outcome: SeatOutcome, now: number, sentAt: number, metFault = false): Answer['outcome'] {
  if (outcome.kind === 'dropped' || outcome.kind === 'unsent') return 'other'
  if (outcome.kind === 'none') {
    if (!outcome.timedOut) return 'overload'
    if (!metFault) work.cut(team, workClass, outcome.latencyMs, now, sentAt)
    return 'other'
  }
  const { status, latencyMs } = outcome
  if (status === 502 || status === 503 || status === 504) return 'overload'
  if (status >= 400 && status < 500) return 'other'
  if (!metFault) work.answered(team, workClass, latencyMs, sentAt)
  return 'ok'
}

/** Why a call that cannot end before its deadline is not sent: what the team's own calls of its kind take (`ownMs`: WorkEstimates.ownMs) and the time its deadline leaves; on other teams' answers alone, neither (the time left would tell what their calls take). */
export function tooLate(ownMs: number | null, leftMs: number): string {
  if (ownMs === null) return 'calls of its kind take longer than its deadline leaves'
  return `calls of its kind take about ${Math.round(ownMs / 100) / 10} s at the platform and its deadline leaves ${Math.max(0, Math.round(leftMs / 100) / 10)} s`
}

/** A call ahead of a newcomer: its kind's expected seat-time (ms; null: a kind never answered) and what it has run (ms; 0 while it waits). */
export type CallAhead = { ms: number | null; ranMs: number }

/** A refusal's retry-after (s), docs/governor.md, "A refusal's retry-after": what the calls `ahead` still need over the `seats` serving them, at most `maxMs`. */
export function comeBackSec(ahead: readonly CallAhead[], seats: number, maxMs: number): number {
  let [sum, known] = [0, 0]
  for (const call of ahead) if (call.ms !== null) [sum, known] = [sum + call.ms, known + 1]
  if (known === 0) return 1
  const leftMs = ahead.reduce((ms, call) => ms + Math.max(0, (call.ms ?? sum / known) - call.ranMs), 0)
  return Math.max(1, Math.ceil(Math.min(maxMs, leftMs / Math.max(1, seats)) / 1000))
}
