import { CredentialSeats } from '../../src/platform/governor/seats.js'
import { KneeEstimator } from '../../src/platform/governor/knee-estimator.js'
import { WorkEstimates } from '../../src/platform/governor/work-estimates.js'
import type { GovernorFactory, SimOutcome } from './gateway.js'

export const newGovernor: GovernorFactory = ({ clock }) => {
  const work = new WorkEstimates()
  const knee = new KneeEstimator({ initial: 8, min: 2, max: 64 })
  const seats: CredentialSeats = new CredentialSeats({
    credential: 'default',
    maxConcurrent: 64,
    limit: knee.limit,
    queueLimit: 200,
    queueTimeoutMs: 10_000,
    work,
    clock,
    onStarted: (kind, load) => knee.started(kind, load),
    onEnded: (a) => knee.ended(a),
    onWaited: () => knee.waited(),
  })
  let last: unknown = null
  const tick = () => {
    if (seats.waitingAtLimit()) knee.waited()
    if (process.env.DEBUG_SEATS && Math.round(clock.now() / 100) % 20 === 0) console.log('seats', ((clock.now() - 1_800_000_000_000) / 1000).toFixed(1), 'inFlight', seats.inFlight, 'queued', seats.queued, 'cap', seats.capacity, 'atLimit', seats.waitingAtLimit(), JSON.stringify(seats.heldBack()), JSON.stringify([...seats.waiting()]))
    const step = knee.tick(clock.now(), seats.overdueSince())
    if (step) seats.setLimit(step.limit, step.knee)
    if (process.env.DEBUG_KNEE && knee.measured && knee.measured !== last) {
      last = knee.measured
      const m = last
      console.log(`${((clock.now() - 1_800_000_000_000) / 1000).toFixed(1)} ${m.phase}${m.waited ? "*" : ""} load ${m.load.toFixed(1)} q ${m.queued.toFixed(2)}±${m.se.toFixed(2)} d ${m.delay.toFixed(1)} lat ${m.latency.toFixed(0)} → ${step?.move ?? '-'} L ${knee.limit} K ${knee.knee}`)
    }
  }
  const timer = clock.setInterval(tick, 100)
  return {
    async seat(ask) {
      const seat = await seats.ask({ team: ask.team, workClass: ask.workClass, priority: ask.priority, deadline: ask.deadline, signal: ask.signal })
      return {
        end(outcome: SimOutcome) {
          seat.end(outcome.status === null ? { kind: 'none', latencyMs: outcome.latencyMs, timedOut: outcome.timedOut } : { kind: 'answer', status: outcome.status, latencyMs: outcome.latencyMs })
          tick()
        },
      }
    },
    get limit() {
      return seats.limit
    },
    get knee() {
      return knee.knee
    },
    get waiting() {
      return seats.queued
    },
    waitingByTeam: () => seats.waiting(),
    seatSeconds: (team) => seats.seatSeconds(team),
    heldBack: () => seats.heldBack(),
    stop: () => clock.clearInterval(timer),
  }
}
