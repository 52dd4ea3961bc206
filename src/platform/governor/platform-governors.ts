import type { Logger } from 'pino'
import type { Config } from '../../config.js'
import { OverloadedError } from '../../errors.js'
import type { Metrics } from '../../observe/metrics.js'
import type { RedisBreaker } from '../../redis/breaker.js'
import type { RedisBus } from '../../redis/bus.js'
import type { RedisClient } from '../../redis/client.js'
import type { RedisSeal } from '../../redis/seal.js'
import { CallGovernor } from './call-governor.js'
import { LocalSeats, type SeatLease } from './seat-lease.js'
import { RedisSeats, replicaIdentity } from './redis-seats.js'
import { hostname } from 'node:os'
import { LearnedLimit } from './learned-limit.js'
import { DEFAULT_WINDOW_MS, LimitEstimator, type CallOutcome } from './limit-estimator.js'
import { PAUSE_PROBE_INTERVAL_MS, Pauses, type Pause } from './pauses.js'
import { PauseSharing, type PeerPause } from './pause-sharing.js'
import { routeTemplate } from '../route-template.js'
import { GATEWAY_TEAM } from '../gateway-team.js'
import { retryAfterMs } from '../retry-after.js'
import { systemClock, type Clock, type Timer } from '../../clock.js'
import { redisKey } from '../../redis/keys.js'

/** What a platform call tells the governors: whose it was, on which route, and what work it asked for. */
export interface ObservedCall {
  url: string
  team: string
  /** The work it asks of the platform (reports/work-class.ts); default its route. */
  workClass?: string
  /** The probe call (its team is GATEWAY_TEAM): its 429 pauses its route (a credential pause it tests goes on), its answer ends a credential pause. */
  probe?: boolean
}

export interface PlatformGovernorsDeps {
  config: Config
  log: Logger
  metrics: Metrics
  redis: RedisClient | null
  breaker: RedisBreaker | null
  bus: RedisBus | null
  /** Seals the pauses and the shared limit written to Redis (GATEWAY_SECRET): read there, they are obeyed only with their seal. */
  seal?: RedisSeal | null
  /** A team's weight as the running teams say (they reload); default 1. */
  weightOf?: (team: string) => number | undefined
  /** A team's own ceilings as the running teams say (null: none). */
  limitsOf?: (team: string) => { maxConcurrent: number | null; queue: number | null } | undefined
  /** The time and timers of the governors, their seats, learned limits and pauses; default systemClock. */
  clock?: Clock
}

/** How long a call took, how busy the credential and its team were when it started. */
export interface CallTiming {
  latencyMs: number
  inFlight: number
  teamInFlight?: number
}

/** A platform call's place in the pauses: open, or the trial of the pause of `scope`. */
export type PauseTrial = string | null

/**
 * The governors of every credential: one CallGovernor each (the seats: leased across
 * replicas with Redis, redis-seats.ts), its learned limit, and its pauses (pauses.ts,
 * one home for every scope a 429 pauses), shared by the replicas (pause-sharing.ts).
 * A credential pause is tested by the probe call every PAUSE_PROBE_INTERVAL_MS, unless
 * the probe's own route is paused.
 */
export class PlatformGovernors {
  readonly #d: PlatformGovernorsDeps
  readonly #governors = new Map<string, CallGovernor>()
  readonly #pauses = new Map<string, Pauses>()
  readonly #probing = new Map<string, Timer>()
  #prober: ((credential: string) => Promise<unknown>) | null = null
  readonly #seats: SeatLease[] = []
  readonly #learned = new Map<string, LearnedLimit>()
  readonly #sharing: PauseSharing
  readonly #clock: Clock
  #reclaim: ((credential: string, waiting: string, overShare: (team: string) => boolean) => boolean) | null = null

  constructor(deps: PlatformGovernorsDeps) {
    this.#d = deps
    const clock = deps.clock ?? systemClock
    this.#clock = clock
    const { platform } = deps.config
    this.#sharing = new PauseSharing({
      redis: deps.redis,
      breaker: deps.breaker,
      bus: deps.bus,
      seal: deps.seal ?? null,
      keyPrefix: deps.config.redis.keyPrefix,
      maxPauseMs: platform.maxPauseMs,
      log: deps.log,
      onUnverified: () => deps.metrics.redisUnverified.inc({ what: 'pause' }),
      clock,
    })
    for (const credential of Object.keys(deps.config.credentials)) {
      const refused = deps.metrics.platformRefused
      const pauses = new Pauses({
        clock,
        maxPauseMs: platform.maxPauseMs,
        onBegan: (pause, source) => this.#began(credential, pause, source),
        onEnded: (pause, source) => this.#ended(credential, pause, source),
      })
      this.#pauses.set(credential, pauses)
      const seats = this.#seatsOf(credential)
      const governor: CallGovernor = new CallGovernor({
        credential,
        maxConcurrent: platform.maxConcurrent,
        limit: platform.adaptive ? platform.initialConcurrent : platform.maxConcurrent,
        queueLimit: platform.queue,
        queueTimeoutMs: platform.queueTimeoutMs,
        weightOf: (team) => deps.weightOf?.(team) ?? 1,
        limitsOf: (team) => deps.limitsOf?.(team),
        pausedUntil: () => pauses.credentialUntil,
        seats,
        log: deps.log,
        clock,
        onRefused: (reason) => refused.inc({ credential, reason }),
        reclaim: (waiting, overShare) => this.#reclaim?.(credential, waiting, overShare) ?? false,
        // A call longer than a window of the learned limit answers too late to say it queued.
        ...(platform.adaptive ? { longCallMs: DEFAULT_WINDOW_MS } : {}),
      })
      this.#governors.set(credential, governor)
      if (platform.adaptive) this.#learned.set(credential, this.#learnedLimit(credential, governor))
      else deps.metrics.platformLimit.set({ credential }, governor.limit)
    }
  }

  /** What takes back a seat held for a caller that stopped reading (answer-buffer.ts), when a team waits for one. */
  reclaimWith(reclaim: (credential: string, waiting: string, overShare: (team: string) => boolean) => boolean): void {
    this.#reclaim = reclaim
  }

  /** The seats of `credential` on this replica: leased in Redis across replicas, else counted here. */
  #seatsOf(credential: string): SeatLease {
    const { config, redis, breaker, bus, log, metrics } = this.#d
    const { platform } = config
    if (!redis || !breaker) return new LocalSeats(platform.maxConcurrentPerReplica ?? Infinity)
    const seats = new RedisSeats({
      redis,
      breaker,
      bus,
      key: redisKey.seats(config.redis.keyPrefix, credential),
      credential,
      replica: replicaIdentity(hostname(), config.port),
      perReplica: platform.maxConcurrentPerReplica,
      unseen: platform.minConcurrent,
      leaseMs: platform.permitLeaseMs,
      log,
      onLost: (count) => metrics.platformPermitsLost.inc({ credential }, count),
      clock: this.#clock,
    })
    this.#seats.push(seats)
    return seats
  }

  /** The limit in force of `credential`, learned from its calls and, with Redis, shared by the replicas. */
  #learnedLimit(credential: string, governor: CallGovernor): LearnedLimit {
    const { config, redis, breaker, bus, seal, log, metrics } = this.#d
    const { platform } = config
    return new LearnedLimit({
      credential,
      governor,
      estimator: new LimitEstimator({ initial: platform.initialConcurrent, min: platform.minConcurrent, max: platform.maxConcurrent, windowMs: DEFAULT_WINDOW_MS }),
      windowMs: DEFAULT_WINDOW_MS,
      shared: redis && breaker ? { redis, breaker, bus, key: redisKey.limit(config.redis.keyPrefix, credential), seal: seal ?? null } : null,
      log,
      onLimit: (limit, floorMs) => {
        metrics.platformLimit.set({ credential }, limit)
        if (floorMs !== null) metrics.platformLatencyFloor.set({ credential }, floorMs / 1000)
      },
      onChange: (direction) => metrics.platformLimitChanges.inc({ credential, direction }),
      clock: this.#clock,
    })
  }

  /** The latency floor the learned limit of `credential` compares answers with (ms), or null. */
  latencyFloorMs(credential: string): number | null {
    return this.#learned.get(credential)?.floorMs ?? null
  }

  /** How long a call like `call` of `credential` takes unloaded (ms), as its learned limit knows; null when unknown. */
  expectedMs(credential: string, call: ObservedCall): number | null {
    return this.#learned.get(credential)?.expectedMs(call) ?? null
  }

  /** Redis answers again: each learned limit's shared record goes back to it if it was lost (learned-limit.ts). */
  redisBack(): void {
    for (const learned of this.#learned.values()) learned.redisBack()
  }

  /** Whether the limit of `credential` is learned (platform.adaptive). */
  get adaptive(): boolean {
    return this.#d.config.platform.adaptive
  }

  all(): CallGovernor[] {
    return [...this.#governors.values()]
  }

  of(credential: string): CallGovernor {
    const governor = this.#governors.get(credential)
    if (!governor) throw new Error(`no governor for credential ${credential}`)
    return governor
  }

  /** The pauses under way of `credential`. */
  pausesOf(credential: string): Pause[] {
    return this.#pausesOf(credential).all()
  }

  /** The call that tests a credential pause: the probe call with the credential's token, through the pause. */
  probeWith(prober: (credential: string) => Promise<unknown>): void {
    this.#prober = prober
  }

  /**
   * Whether the platform has paused the credential, or (with `url`) a pause covers a call
   * of `team` on the route of `url` (without `team`: any pause of the route): a cached
   * copy is better than a wait.
   */
  paused(credential: string, url?: string, team?: string): boolean {
    const pauses = this.#pausesOf(credential)
    if (pauses.credentialUntil > 0) return true
    if (url === undefined) return false
    const route = routeTemplate(url)
    if (team !== undefined) return pauses.covering(team, route) !== null
    return pauses.all().some((p) => (p.scope.kind === 'route' || p.scope.kind === 'team-route') && p.scope.route === route)
  }

  /**
   * Whether `call` may go to the platform now: a call a pause covers is refused with
   * GW_OVERLOADED (reason paused), except that pause's trial. A credential pause is the
   * governor's (acquire). Returns the scope the call is the trial of, or null.
   */
  admit(credential: string, call: ObservedCall): PauseTrial {
    const route = routeTemplate(call.url)
    const admission = this.#pausesOf(credential).admit(call.team, route)
    if (admission.kind === 'open') return null
    if (admission.kind === 'trial') {
      this.#d.log.info({ credential, ...fieldsOf(admission.pause), team: call.team, route }, 'platform pause: a trial call goes through')
      return admission.scope
    }
    this.#d.metrics.platformRefused.inc({ credential, reason: 'paused' })
    const retryAfterSec = Math.max(1, Math.ceil(admission.waitMs / 1000))
    throw Object.assign(new OverloadedError(`${describe(admission.pause)} of credential ${credential} is paused by the platform for ${retryAfterSec} s`), { retryAfterSec })
  }

  /** Leases seats, reads the shared limit, follows the other replicas' pauses and any pause under way. */
  async start(): Promise<void> {
    for (const seats of this.#seats) await seats.start()
    for (const learned of this.#learned.values()) await learned.start()
    await this.#sharing.start([...this.#governors.keys()], (word) => this.#fromPeer(word))
  }

  /** Ends the probe timers, the pause timers and the leases (shutdown). */
  stop(): void {
    for (const learned of this.#learned.values()) learned.stop()
    for (const seats of this.#seats) seats.stop()
    for (const timer of this.#probing.values()) this.#clock.clearInterval(timer)
    this.#probing.clear()
    for (const pauses of this.#pauses.values()) pauses.clear()
  }

  /** The platform answered `call` of `credential` with `status` (its headers came after `timing`); `trial`: what admit() said of it. */
  observe(credential: string, call: ObservedCall, status: number, retryAfter: string | undefined, timing?: CallTiming, trial: PauseTrial = null): void {
    // Only answers of the platform's own making teach the limit: a 4xx other than 429 is the call's fault, and often fast.
    if (timing && (status < 400 || status === 429 || status >= 500)) this.#learn(credential, call, timing, outcomeOf(status))
    const pauses = this.#pausesOf(credential)
    const route = routeTemplate(call.url)
    const how = { trial, probe: call.probe === true }
    if (status !== 429) {
      pauses.answered(call.team, route, how)
      return
    }
    const pause = pauses.throttled(call.team, route, retryAfterMs(retryAfter, this.#clock.now()), how)
    if (pause !== null) void this.#sharing.share(credential, pause)
  }

  /** `call` got no answer: its deadline passed (`timedOut`), or a connection error. */
  failed(credential: string, call: ObservedCall, timing: CallTiming, timedOut: boolean): void {
    this.#learn(credential, call, timing, timedOut ? 'timeout' : 'failed')
  }

  #learn(credential: string, call: ObservedCall, timing: CallTiming, outcome: CallOutcome): void {
    // The probe is the gateway's own call, sent through pauses: it says nothing of load.
    if (call.probe === true) return
    this.#learned.get(credential)?.record({ url: call.url, team: call.team, ...(call.workClass === undefined ? {} : { workClass: call.workClass }), latencyMs: timing.latencyMs, inFlight: timing.inFlight, ...(timing.teamInFlight === undefined ? {} : { teamInFlight: timing.teamInFlight }), outcome })
  }

  /** A read was sent again after a 502/503/504 or a reset. */
  retried(credential: string): void {
    this.#d.metrics.platformRetries.inc({ credential })
  }

  #fromPeer(word: PeerPause): void {
    const pauses = this.#pauses.get(word.credential)
    if (!pauses) return
    if ('ended' in word) pauses.endFromPeer(word.ended)
    else pauses.adopt(word.pause)
  }

  #began(credential: string, pause: Pause, source: 'platform' | 'peer'): void {
    const now = this.#clock.now()
    this.#d.log.warn({ credential, ...fieldsOf(pause), source, pauseMs: pause.until - now, until: new Date(pause.until).toISOString() }, `platform ${NAMES[pause.scope.kind]} paused: the platform answered 429`)
    if (pause.scope.kind !== 'credential') return
    const governor = this.of(credential)
    governor.paused()
    this.#d.metrics.platformPauses.inc({ credential })
    // The platform throttles the credential itself: the limit is cut on every replica.
    if (source === 'platform') this.#learned.get(credential)?.overload()
    this.#probe(credential)
  }

  #ended(credential: string, pause: Pause, source: 'platform' | 'peer' | 'expired'): void {
    this.#d.log.info({ credential, ...fieldsOf(pause), source, queued: this.of(credential).queued }, `platform ${NAMES[pause.scope.kind]} resumed`)
    if (source === 'platform') void this.#sharing.shareEnd(credential, pause)
    if (pause.scope.kind !== 'credential') return
    this.#stopProbe(credential)
    this.of(credential).wake()
  }

  /** Sends the probe call every PAUSE_PROBE_INTERVAL_MS while the credential is paused. */
  #probe(credential: string): void {
    if (this.#probing.has(credential)) return
    const timer = this.#clock.setInterval(() => {
      if (this.#pausesOf(credential).credentialUntil === 0) {
        this.#stopProbe(credential)
        return
      }
      // Not while the probe's own route is paused: that pause ends first.
      const probe = this.#d.config.platform.probe
      if (probe && this.#pausesOf(credential).covering(GATEWAY_TEAM, routeTemplate(probe.path), false) !== null) return
      // Its answer reaches observe() like any call's; a failed probe decides nothing.
      this.#prober?.(credential).catch((err: Error) => this.#d.log.debug({ err: { message: err.message }, credential }, 'the pause probe call failed'))
    }, PAUSE_PROBE_INTERVAL_MS).unref()
    this.#probing.set(credential, timer)
  }

  #stopProbe(credential: string): void {
    this.#clock.clearInterval(this.#probing.get(credential))
    this.#probing.delete(credential)
  }

  #pausesOf(credential: string): Pauses {
    const pauses = this.#pauses.get(credential)
    if (!pauses) throw new Error(`no governor for credential ${credential}`)
    return pauses
  }
}

/** What a status tells the learned limit: a 429, an overload of the platform's front, another server error, or an answer. */
function outcomeOf(status: number): CallOutcome {
  if (status === 429) return 'throttled'
  if (status === 502 || status === 503 || status === 504) return 'failed'
  return status >= 500 ? 'error' : 'ok'
}

/** A scope's kind in log lines: `platform <name> paused`, `platform <name> resumed`. */
const NAMES = { credential: 'credential', team: 'team', route: 'route', 'team-route': 'team route' } as const

/** A pause's fields in log lines: its scope's kind, the team whose call began it (a team's own pause: that team), the route. */
function fieldsOf(pause: Pause): { scope: Pause['scope']['kind']; team: string; route: string } {
  return { scope: pause.scope.kind, team: 'team' in pause.scope ? pause.scope.team : pause.team, route: 'route' in pause.scope ? pause.scope.route : pause.route }
}

/** A pause's scope in words, for messages. */
function describe(pause: Pause): string {
  switch (pause.scope.kind) {
    case 'credential':
      return 'platform credential'
    case 'team':
      return `team ${pause.scope.team}`
    case 'route':
      return `route ${pause.scope.route}`
    case 'team-route':
      return `route ${pause.scope.route} for team ${pause.scope.team}`
  }
}
