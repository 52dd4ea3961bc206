import pino from 'pino'
import { loadConfig } from '../../src/config.js'
import { credentialGovernor } from '../../src/platform/governor/credential-governor.js'
import { answerTiming } from '../../src/platform/governor/answer-timing.js'
import { Pauses, scopeKey } from '../../src/platform/pauses/pauses.js'
import { retryAfterMs } from '../../src/platform/pauses/retry-after.js'
import { CountShares } from '../../src/platform/pauses/count-shares.js'
import type { GovernorContext, GovernorFactory, GovernorUnderTest, SimOutcome } from './gateway.js'

/** The settings of config/default.yaml: the governor as a user who sets nothing runs it. */
const defaults = loadConfig({ env: {} }).platform
const silent = pino({ level: 'silent' })

/**
 * One replica's governor as the gateway composes it (credential-governor.ts, behind the
 * platform's pauses as platform-governors.ts puts it): the seats, the learned limit on the
 * clock, with replicas the lease of seats through a store shared by every replica of the
 * run, the pauses of the platform's 429s, each report kind a route, and the platform's
 * count of the credential's calls shared out (count-shares.ts). A credential's
 * pause ends at its time: the simulated gateway has no probe call.
 */
export const newGovernor: GovernorFactory = (ctx) => governor(ctx, defaults)

/** The governor under `changed` settings (a limit held where `adaptive` is false: `maxConcurrent`). */
export function governorWith(changed: Partial<typeof defaults>): GovernorFactory {
  return (ctx) => governor(ctx, { ...defaults, ...changed })
}

function governor({ clock, replica, store, weights, loop, loopLate, pauses: peers }: GovernorContext, settings: typeof defaults): GovernorUnderTest {
  const pauses: Pauses = new Pauses({
    clock,
    maxPauseMs: settings.maxPauseMs,
    onBegan: (pause, source) => {
      if (source === 'platform') for (const peer of peers) if (peer !== pauses) peer.adopt(pause)
      if (pause.scope.kind !== 'credential') return
      g.seats.paused()
      g.learned?.paused()
    },
    onEnded: (pause, source) => {
      if (source === 'platform') for (const peer of peers) if (peer !== pauses) peer.endFromPeer(scopeKey(pause.scope))
      if (pause.scope.kind === 'credential') g.seats.wake()
    },
  })
  peers.add(pauses)
  const counts = new CountShares({ weightOf: (team) => weights.get(team) ?? 1, clock })
  // The loop-probe as the gateway feeds it (platform-governors.ts), where the run gives the replica a loop of its own.
  const g = credentialGovernor({ credential: 'default', settings, store, replica, run: replica, seal: null, key: 'sim', log: silent, weightOf: (team) => weights.get(team) ?? 1, pausedUntil: () => pauses.credentialUntil, clock, ...(loop ? { answerTimed: answerTiming(loop) } : {}), ...(loopLate ? { loopLateMs: loopLate } : {}), ...(process.env.DEBUG_KNEE ? { onMove: (move: string, from: number, to: number) => console.log(replica, ((clock.now() - 1_800_000_000_000) / 1000).toFixed(1), move, from, '→', to, 'knee', g.estimator?.knee, g.estimator?.phase) } : {}) })
  void g.leased?.start()
  g.learned?.start()
  if (process.env.DEBUG_LEASE) clock.setInterval(() => { const t = ((clock.now() - 1_800_000_000_000) / 1000); if (process.env.DEBUG_FROM ? t >= Number(process.env.DEBUG_FROM) && t <= Number(process.env.DEBUG_TO) : Math.abs(t % 2) < 0.05) console.log(replica, t.toFixed(1), 'limit', g.seats.limit, 'cap', g.seats.capacity, 'held', g.leased?.held, 'inFlight', g.seats.inFlight, 'queued', g.seats.queued, 'learner', g.leased?.learner, JSON.stringify(g.seats.heldBack()), JSON.stringify([...g.seats.waiting()]), JSON.stringify(g.leased?.shares() && [...g.leased.shares()!.targets])) }, 100)
  return {
    async seat(ask) {
      if (counts.refusing(ask.team) !== null) throw Object.assign(new Error('counted'), { code: 'counted' })
      const admission = pauses.admit(ask.team, ask.workClass)
      if (admission.kind === 'paused') throw Object.assign(new Error('paused'), { code: 'paused' })
      const trial = admission.kind === 'trial' ? admission.scope : null
      const seat = await g.seats.ask({ team: ask.team, workClass: ask.workClass, priority: ask.priority, deadline: ask.deadline, signal: ask.signal })
      const sent = counts.admit(ask.team)
      if (sent.kind === 'refused') {
        seat.end({ kind: 'unsent' })
        throw Object.assign(new Error('counted'), { code: 'counted' })
      }
      return {
        end(outcome: SimOutcome) {
          seat.end(outcome.status === null ? { kind: 'none', latencyMs: outcome.latencyMs, timedOut: outcome.timedOut } : { kind: 'answer', status: outcome.status, latencyMs: outcome.latencyMs })
          if (outcome.status !== null) counts.told(sent, outcome.status, outcome.count ?? null, retryAfterMs(outcome.retryAfter, clock.now()))
          if (outcome.status === 429) pauses.throttled(ask.team, ask.workClass, retryAfterMs(outcome.retryAfter, clock.now()), { trial })
          else if (outcome.status !== null) pauses.answered(ask.team, ask.workClass, { trial })
        },
      }
    },
    get limit() {
      return g.seats.limit - (g.seats.probeLent ? 1 : 0)
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
      g.leased?.stop()
      pauses.clear()
    },
  }
}
