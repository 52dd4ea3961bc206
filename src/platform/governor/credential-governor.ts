import type { Config } from '../../config.js'
import { systemClock } from '../../clock.js'
import { CredentialSeats } from './seats.js'
import type { SeatsOptions } from './seat.js'
import { KneeEstimator } from './knee-estimator.js'
import { LearnedLimit, type LearnedLimitOptions } from './learned-limit.js'
import { LeasedSeats, type LeasedSeatsOptions } from './leased-seats.js'
import type { LeaseStore } from './lease-store.js'
import { WorkEstimates } from './work-estimates.js'
import { SteadyClock } from './steady-clock.js'

export interface CredentialGovernorOptions extends Pick<SeatsOptions, 'weightOf' | 'limitsOf' | 'pausedUntil' | 'onRefused' | 'clock' | 'loopLateMs'>,
  Pick<LeasedSeatsOptions, 'replica' | 'run' | 'onLost'>, Pick<LearnedLimitOptions, 'credential' | 'seal' | 'key' | 'log' | 'onMove'> {
  settings: Pick<Config['platform'], 'adaptive' | 'initialConcurrent' | 'minConcurrent' | 'maxConcurrent' | 'maxConcurrentPerReplica' | 'seatLeaseMs' | 'queue' | 'queueTimeoutMs' | 'maxPauseMs' | 'timeoutMs'>
  /** Where the replicas' leases live (Redis); null: this replica alone. */
  store: LeaseStore | null
  /** The limit and knee in force after every move, and the floor of the kind answered most (ms). */
  onLimit?: (limit: number, knee: number, floorMs: number | null) => void
  /** Whether the answer handled now, its latency given, is timed apart from the one before (answer-timing.ts); default: every one is. */
  answerTimed?: (latencyMs: number) => boolean
}

/** One credential's governor: its seats, the limit rule (null: platform.adaptive false), its lease (`leased`: across replicas, null without a store), its work estimates. */
export type CredentialGovernor = ReturnType<typeof credentialGovernor>

/** Puts one credential's governor together, the same for the gateway (over Redis) and the simulator (a store in memory, a simulated clock). */
export function credentialGovernor(o: CredentialGovernorOptions) {
  const { settings, credential, store, replica, run, log } = o
  // Every part reads one clock that a wall clock's step back does not move back (steady-clock.ts).
  const clock = new SteadyClock(o.clock ?? systemClock)
  let learned: LearnedLimit | null = null
  const leased = store && new LeasedSeats({
    store, credential, replica, run, log, clock, onLost: o.onLost,
    perReplica: settings.maxConcurrentPerReplica, unseen: settings.minConcurrent, leaseMs: settings.seatLeaseMs, callsEndMs: 2 * settings.timeoutMs,
    onRenewed: (answer, plan) => learned?.renewed(answer, plan),
  })
  const estimator = settings.adaptive ? new KneeEstimator({ initial: settings.initialConcurrent, min: settings.minConcurrent, max: settings.maxConcurrent }) : null
  const work = new WorkEstimates()
  const seats = new CredentialSeats({
    credential, work, seats: leased, perReplica: settings.maxConcurrentPerReplica, clock, fromWall: (at) => clock.fromWall(at), weightOf: o.weightOf, limitsOf: o.limitsOf, pausedUntil: o.pausedUntil, onRefused: o.onRefused, loopLateMs: o.loopLateMs,
    maxConcurrent: settings.maxConcurrent, limit: estimator?.limit ?? settings.maxConcurrent, queueLimit: settings.queue, queueTimeoutMs: settings.queueTimeoutMs, maxPauseMs: settings.maxPauseMs,
    ...(estimator && {
      rule: estimator,
      onEnded: (answer) => {
        const timed = o.answerTimed?.(answer.at - answer.startedAt)
        estimator.ended({ ...answer, ...(timed === undefined ? {} : { timed }) })
        learned?.tick()
      },
    }),
  })
  if (estimator) learned = new LearnedLimit({
    credential, estimator, seats, lease: leased, seal: o.seal, key: o.key, log, clock, onMove: o.onMove,
    onLimit: (limit, knee) => o.onLimit?.(limit, knee, estimator.floorMs),
  })
  return { seats, estimator, learned, leased, work, clock }
}
