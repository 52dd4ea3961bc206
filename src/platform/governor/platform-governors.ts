import { createHash } from 'node:crypto'
import { hostname } from 'node:os'
import type { RedisSeal } from '../../redis/seal.js'
import { redisKey } from '../../redis/keys.js'
import { systemClock } from '../../clock.js'
import { routeTemplate } from '../route-template.js'
import { GATEWAY_TEAM } from '../gateway-team.js'
import { PlatformPauses, type PlatformPausesDeps } from '../pauses/platform-pauses.js'
import type { CountShares } from '../pauses/count-shares.js'
import { CountSync } from '../pauses/count-sync.js'
import { CredentialCounts, type CountRefusal, type Sends } from '../pauses/credential-counts.js'
import { retryAfterMs } from '../pauses/retry-after.js'
import { OverloadedError } from '../../errors.js'
import type { Pause } from '../pauses/pauses.js'
import { NoIdleSeatError, type Seat, type SeatOutcome, type SeatRequest } from './seat.js'
import { answerTiming, processLateness } from './answer-timing.js'
import { credentialGovernor, type CredentialGovernor, type CredentialGovernorOptions } from './credential-governor.js'
import { RedisLeaseStore } from './redis-lease-store.js'

/** A seat's request with its path and query (its route is what a 429 pauses; its work by default); `probe`: the probe call (GATEWAY_TEAM: its 429 pauses only its route, its answer ends a credential pause); `trial`: it tests a credential pause, through it, without a seat. */
export interface SeatCall extends Omit<SeatRequest, 'workClass'> { url: string; workClass?: string; probe?: boolean; trial?: boolean }

/**
 * A seat behind the pauses: `pauseMs`, how long a platform 429 with that `retry-after` to its
 * call pauses (ms) were it charged now; the 429 is charged when its seat ends, after its body.
 */
export interface PausedSeat extends Seat { pauseMs(retryAfter: string | undefined): number }

/** One credential's governor, as the status view and the metrics read it (`views()`). */
export type GovernorView = ReturnType<PlatformGovernors['views']>[number]

/** `seal` (GATEWAY_SECRET): the pauses and the shared limit written to Redis. */
export interface PlatformGovernorsDeps extends Pick<PlatformPausesDeps, 'config' | 'log' | 'metrics' | 'redis' | 'breaker' | 'bus' | 'sharedNow'>, Pick<CredentialGovernorOptions, 'weightOf' | 'limitsOf' | 'clock'> {
  seal?: RedisSeal | null
}

/** The governors of every credential (credential-governor.ts), behind the platform's pauses: the gateway's one entry point, `seat()` (docs/governor.md). */
export class PlatformGovernors {
  readonly #governors = new Map<string, CredentialGovernor>()
  readonly #pauses: PlatformPauses
  /** Each credential's counts: the token's and its routes' own limiters'. */
  readonly #counts = new Map<string, CredentialCounts>()
  readonly #clock: NonNullable<PlatformGovernorsDeps['clock']>
  readonly #metrics: PlatformGovernorsDeps['metrics']
  readonly #maxPauseMs: number

  constructor(deps: PlatformGovernorsDeps) {
    const { config, log, metrics, redis, breaker, bus, weightOf, limitsOf } = deps
    const [clock, seal] = [deps.clock ?? systemClock, deps.seal ?? null]
    this.#clock = clock
    this.#metrics = metrics
    this.#maxPauseMs = config.platform.maxPauseMs
    this.#pauses = new PlatformPauses({
      ...deps, seal, clock,
      // The platform throttles the credential itself: a fault of the limit rule (the replica that learns cuts for all).
      onCredentialPaused: (credential) => { this.#of(credential).seats.paused(); this.#of(credential).learned?.paused() },
      onCredentialResumed: (credential) => this.#of(credential).seats.wake(),
    })
    // Its host (a pod's name) and proxy port, hashed to a lease field's characters; each run adds a random id.
    const replica = createHash('sha256').update(`${hostname()}\n${config.port}`).digest('base64url').slice(0, 12)
    for (const credential of Object.keys(config.credentials)) {
      const key = redisKey.seats(config.redis.keyPrefix, credential)
      const g = credentialGovernor({
        credential, settings: config.platform, replica, seal, key, log, weightOf, limitsOf, clock,
        store: redis && breaker ? new RedisLeaseStore({ redis, breaker, bus, key, credential }) : null,
        pausedUntil: () => this.#pauses.credentialUntil(credential),
        onRefused: (reason) => metrics.platformRefused.inc({ credential, reason }),
        onLost: (count) => { metrics.platformSeatsLost.inc({ credential }, count); metrics.platformPermitsLost.inc({ credential }, count) },
        onLimit: (limit, knee, floorMs) => {
          metrics.platformLimit.set({ credential }, limit)
          metrics.platformKnee.set({ credential }, knee)
          if (floorMs !== null) metrics.platformLatencyFloor.set({ credential }, floorMs / 1000)
        },
        onMove: (move, from, to) => { if (to !== from) metrics.platformLimitChanges.inc({ credential, direction: move === 'fault' ? 'cut' : to > from ? 'up' : 'down' }) },
        answerTimed: answerTiming(),
        loopLateMs: processLateness(),
      })
      if (!g.estimator) metrics.platformLimit.set({ credential }, g.seats.limit)
      this.#governors.set(credential, g)
      const onUnverified = (where: string) => {
        metrics.redisUnverified.inc({ what: 'count' })
        log.warn({ what: 'count', where }, "ignoring a value in redis that does not carry this gateway's seal (GATEWAY_SECRET)")
      }
      this.#counts.set(credential, new CredentialCounts({
        weightOf: (team) => Math.max(1, weightOf?.(team) ?? 1),
        clock,
        sync: (counts, route) => redis && breaker
          ? new CountSync({ redis, breaker, key: route === null ? redisKey.counts(config.redis.keyPrefix, credential) : redisKey.routeCounts(config.redis.keyPrefix, credential, route), counts, clock, seal, maxPauseMs: this.#maxPauseMs, onUnverified })
          : null,
      }))
    }
  }

  /** How long a call of `workClass` by `team` is expected to hold its seat now (ms), by `team`'s own answers alone (what the team may be told); null: none of them yet. */
  ownExpectedMs(credential: string, team: string, workClass: string): number | null {
    const g = this.#governors.get(credential)
    return g === undefined ? null : g.work.ownMs(team, workClass, g.clock.now())
  }
  /** The call that tests a credential pause: the probe call with the credential's token, through the pause. */
  probeWith(prober: (credential: string) => Promise<unknown>): void { this.#pauses.probeWith(prober) }

  /** Every credential's governor: whether its limit is learned (platform.adaptive; if so its knee, phase and the floor of the kind answered most, ms), whether this replica learns it for the others, its seats. */
  views() {
    return [...this.#governors].map(([credential, { estimator, leased, seats }]) => ({
      credential, adaptive: estimator !== null, limit: seats.limit, knee: estimator?.knee ?? null, phase: estimator?.phase ?? null, floorMs: estimator?.floorMs ?? null,
      learner: leased?.learner ?? true, inFlight: seats.inFlight, queued: seats.queued, seatsHeld: seats.seatsHeld, pausedUntil: seats.pausedUntil > 0 ? this.#pauses.credentialUntil(credential) : 0, seats,
    }))
  }

  /** Keeps by team name only the teams configured now (`configured`, after a reload) and the gateway's own (CredentialSeats.keepTeams). */
  keepTeams(configured: (team: string) => boolean): void {
    for (const g of this.#governors.values()) g.seats.keepTeams((team) => team === GATEWAY_TEAM || configured(team))
  }

  /** What each credential's governor keeps by team name: the teams' accounts, their own estimates (team × work), the teams charged their seat-time elsewhere. */
  teamEntries(): { credential: string; accounts: number; kinds: number; charged: number }[] {
    return [...this.#governors].map(([credential, g]) => ({ credential, accounts: g.seats.teamsKept, kinds: g.work.kinds, charged: g.leased?.chargedTeams ?? 0 }))
  }

  /** The limit in force of `credential`'s calls at once (every replica's), or null: no such credential. */
  limitOf(credential: string): number | null { return this.#governors.get(credential)?.seats.limit ?? null }
  pausesOf(credential: string): Pause[] { return this.#pauses.all(credential) }
  /** Whether the platform has paused the credential, or a call of `team` (any team's) on the route of `url`: a cached copy is better than a wait. */
  paused(credential: string, url?: string, team?: string): boolean { return this.#pauses.paused(credential, url, team) }

  /** The platform's count of `credential`'s calls as this replica shares it out (count-shares.ts), or `route`'s own limiter's; null: no such credential or limiter. */
  /** The own limiters of `credential`'s routes throttled on their own, as this replica shares them out. */
  routeCountsOf(credential: string): ReturnType<CredentialCounts['routeViews']> { return this.#counts.get(credential)?.routeViews() ?? [] }

  countOf(credential: string, route?: string): ReturnType<CountShares['view']> | null {
    const counts = this.#counts.get(credential)
    return (route === undefined ? counts?.token.view() : counts?.routeView(routeTemplate(route))) ?? null
  }

  /**
   * A seat for `call`, behind the pauses and the platform's count (its `end` tells them
   * too); not async: a queued call's wait holds one frame less.
   */
  seat(credential: string, call: SeatCall): Promise<PausedSeat> {
    try {
      const g = this.#of(credential)
      const counts = this.#counts.get(credential) as CredentialCounts
      const route = routeTemplate(call.url)
      // A call the counts refuse now waits for no seat (nor holds a place in the queue), and takes no pause's trial; one let through is asked again with its seat.
      const refused = call.probe || call.trial ? null : counts.refusing(call.team, route)
      if (refused !== null) throw this.#counted(credential, call, refused)
      const passage = this.#pauses.enter(credential, call)
      const pauseMs = (retryAfter: string | undefined) => this.#pauses.drawn(credential, call, passage, retryAfter)
      const ended = (sends: Sends, outcome: SeatOutcome) => {
        if (outcome.kind === 'unsent' && !call.probe && !call.trial) counts.unsent(call.team, route, sends)
        const own = outcome.kind === 'answer' && counts.told(sends, route, outcome.status, outcome.count ?? null, retryAfterMs(outcome.retryAfter, this.#clock.now()))
        this.#pauses.left(credential, call, passage, outcome, own)
      }
      if (call.trial) {
        const sends = counts.pass(route)
        return Promise.resolve({ end: (outcome: SeatOutcome) => ended(sends, outcome), pauseMs })
      }
      return g.seats.ask({ ...call, workClass: call.workClass ?? route }).then((seat) => {
        const sent = call.probe ? { kind: 'sent' as const, ...counts.pass(route) } : counts.admit(call.team, route)
        if (sent.kind === 'refused') {
          seat.end({ kind: 'unsent' })
          throw this.#counted(credential, call, sent)
        }
        return { end: (outcome: SeatOutcome) => { seat.end(outcome); ended(sent, outcome) }, pauseMs }
      })
    } catch (err) {
      return Promise.reject(err as Error)
    }
  }

  /** Leases seats, follows the other replicas' pauses and any pause under way, and starts learning. */
  async start(): Promise<void> {
    for (const g of this.#governors.values()) {
      await g.leased?.start()
      g.learned?.start()
    }
    for (const counts of this.#counts.values()) await counts.start()
    await this.#pauses.start()
  }

  /** Ends the limit rules, the leases and the pauses' timers (shutdown). */
  stop(): void {
    for (const g of this.#governors.values()) {
      g.learned?.stop()
      g.leased?.stop()
    }
    for (const counts of this.#counts.values()) counts.stop()
    this.#pauses.stop()
  }

  /** A call the platform's count or its route's own limiter refuses (credential-counts.ts): counted, and its error; background work (a refresh ahead, a warm-up, a job) gets no seat now, as the seats refuse it. */
  #counted(credential: string, call: SeatCall, refused: CountRefusal): Error {
    this.#metrics.platformRefused.inc({ credential, reason: 'count' })
    if ((call.priority ?? 'caller') !== 'caller') return new NoIdleSeatError(credential)
    const retryAfterSec = Math.ceil(Math.min(refused.waitMs, this.#maxPauseMs) / 1000)
    const where = refused.route === null ? '' : ` on route ${refused.route}`
    return Object.assign(new OverloadedError(`team ${call.team} has used its share of the platform's call count for credential ${credential}${where}; retry in ${retryAfterSec} s`), { retryAfterSec })
  }

  #of(credential: string): CredentialGovernor {
    const g = this.#governors.get(credential)
    if (!g) throw new Error(`no governor for credential ${credential}`)
    return g
  }
}
