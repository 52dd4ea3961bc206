import { pino } from 'pino'
import { CallGovernor } from '../../src/platform/governor/call-governor.js'
import { LimitEstimator, DEFAULT_WINDOW_MS } from '../../src/platform/governor/limit-estimator.js'
import { LearnedLimit } from '../../src/platform/governor/learned-limit.js'
import type { GovernorFactory, SimOutcome } from './gateway.js'

/**
 * The governor as it stood at 4c03196, driven by the simulator: one replica, every
 * setting at its default. It shows which guarantees that code missed.
 */
export const oldGovernor: GovernorFactory = ({ clock }) => {
  // Seats it held for callers that had not read their answers, and took back when another team waited.
  const holders = new Set<{ team: string; release: () => void }>()
  const log = pino({ level: 'silent' })
  const governor = new CallGovernor({
    credential: 'default',
    maxConcurrent: 64,
    limit: 8,
    queueLimit: 200,
    queueTimeoutMs: 10_000,
    log,
    clock,
    longCallMs: DEFAULT_WINDOW_MS,
    reclaim: (waiting, overShare) => {
      for (const held of holders) {
        if (held.team !== waiting && overShare(held.team)) {
          held.release()
          return true
        }
      }
      return false
    },
  })
  const estimator = new LimitEstimator({ initial: 8, min: 2, max: 64, windowMs: DEFAULT_WINDOW_MS })
  const learned = new LearnedLimit({ credential: 'default', governor, estimator, windowMs: DEFAULT_WINDOW_MS, shared: null, log, onLimit: () => undefined, onChange: () => undefined, clock })
  void learned.start()
  return {
    async seat(ask) {
      const url = `/api/v1/report/campaigns/get?kind=${ask.workClass}`
      const call = { url, team: ask.team, workClass: ask.workClass }
      const expectedMs = learned.expectedMs(call)
      const slot = await governor.acquire(ask.team, ask.signal, ask.deadline, { priority: ask.priority, ...(expectedMs === null ? {} : { expectedMs }) })
      return {
        end(outcome: SimOutcome, readMs?: number) {
          const base = { ...call, latencyMs: outcome.latencyMs, inFlight: slot.inFlight, ...(slot.teamInFlight === undefined ? {} : { teamInFlight: slot.teamInFlight }) }
          if (outcome.status === null) learned.record({ ...base, outcome: outcome.timedOut ? 'timeout' : 'failed' })
          else if (outcome.status < 400 || outcome.status === 429 || outcome.status >= 500) {
            const s = outcome.status
            learned.record({ ...base, outcome: s === 429 ? 'throttled' : s === 502 || s === 503 || s === 504 ? 'failed' : s >= 500 ? 'error' : 'ok' })
          }
          if (readMs === undefined) {
            slot.release()
            return
          }
          const held = {
            team: ask.team,
            release: () => {
              if (!holders.delete(held)) return
              clock.clearTimeout(timer)
              slot.release()
            },
          }
          const timer = clock.setTimeout(() => held.release(), readMs)
          holders.add(held)
        },
      }
    },
    get limit() {
      return governor.limit
    },
    get waiting() {
      return governor.queued
    },
    waitingByTeam: () => governor.waiting(),
    seatSeconds: (team) => governor.seatSeconds(team),
    heldBack: () => ({ owed: 0, longOnly: false }),
    stop: () => learned.stop(),
  }
}
