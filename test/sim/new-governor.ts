import pino from 'pino'
import { loadConfig } from '../../src/config.js'
import { credentialGovernor } from '../../src/platform/governor/credential-governor.js'
import { answerTiming } from '../../src/platform/governor/answer-timing.js'
import type { GovernorContext, GovernorFactory, GovernorUnderTest, SimOutcome } from './gateway.js'

/** The settings of config/default.yaml: the governor as a user who sets nothing runs it. */
const defaults = loadConfig({ env: {} }).platform
const silent = pino({ level: 'silent' })

/**
 * One replica's governor as the gateway composes it (credential-governor.ts): the seats,
 * the learned limit on the clock, and with replicas the lease of seats through a store
 * shared by every replica of the run.
 */
export const newGovernor: GovernorFactory = (ctx) => governor(ctx, defaults)

/** The governor under `changed` settings (a limit held where `adaptive` is false: `maxConcurrent`). */
export function governorWith(changed: Partial<typeof defaults>): GovernorFactory {
  return (ctx) => governor(ctx, { ...defaults, ...changed })
}

function governor({ clock, replica, store, weights, loop }: GovernorContext, settings: typeof defaults): GovernorUnderTest {
  // The loop-probe as the gateway feeds it (platform-governors.ts), where the run gives the replica a loop of its own.
  const g = credentialGovernor({ credential: 'default', settings, store, replica, run: replica, seal: null, key: 'sim', log: silent, weightOf: (team) => weights.get(team) ?? 1, clock, ...(loop ? { answerTimed: answerTiming(loop) } : {}), ...(process.env.DEBUG_KNEE ? { onMove: (move: string, from: number, to: number) => console.log(replica, ((clock.now() - 1_800_000_000_000) / 1000).toFixed(1), move, from, '→', to, 'knee', g.estimator?.knee, g.estimator?.phase) } : {}) })
  void g.lease.start()
  g.learned?.start()
  if (process.env.DEBUG_LEASE) clock.setInterval(() => { const t = ((clock.now() - 1_800_000_000_000) / 1000); if (process.env.DEBUG_FROM ? t >= Number(process.env.DEBUG_FROM) && t <= Number(process.env.DEBUG_TO) : Math.abs(t % 2) < 0.05) console.log(replica, t.toFixed(1), 'limit', g.seats.limit, 'cap', g.seats.capacity, 'held', g.leased?.held, 'inFlight', g.seats.inFlight, 'queued', g.seats.queued, 'learner', g.leased?.learner, JSON.stringify(g.seats.heldBack()), JSON.stringify([...g.seats.waiting()]), JSON.stringify(g.leased?.shares() && [...g.leased.shares()!.targets])) }, 100)
  return {
    async seat(ask) {
      const seat = await g.seats.ask({ team: ask.team, workClass: ask.workClass, priority: ask.priority, deadline: ask.deadline, signal: ask.signal })
      return {
        end(outcome: SimOutcome) {
          seat.end(outcome.status === null ? { kind: 'none', latencyMs: outcome.latencyMs, timedOut: outcome.timedOut } : { kind: 'answer', status: outcome.status, latencyMs: outcome.latencyMs })
        },
      }
    },
    get limit() {
      return g.seats.limit
    },
    get inFlight() {
      return g.seats.inFlight
    },
    get waiting() {
      return g.seats.queued
    },
    waitingByTeam: () => g.seats.waiting(),
    seatSeconds: (team) => g.seats.seatSeconds(team),
    heldBack: () => g.seats.heldBack(),
    stop: () => {
      g.learned?.stop()
      g.lease.stop()
    },
  }
}
