import { createHash } from 'node:crypto'
import { hostname } from 'node:os'
import type { Logger } from 'pino'
import type { Config } from '../../config.js'
import { OverloadedError } from '../../errors.js'
import type { Metrics } from '../../observe/metrics.js'
import type { RedisBreaker } from '../../redis/breaker.js'
import type { RedisBus } from '../../redis/bus.js'
import type { RedisClient } from '../../redis/client.js'
import type { RedisSeal } from '../../redis/seal.js'
import { redisKey } from '../../redis/keys.js'
import { systemClock, type Clock, type Timer } from '../../clock.js'
import { routeTemplate } from '../route-template.js'
import { retryAfterMs } from '../retry-after.js'
import { GATEWAY_TEAM } from '../gateway-team.js'
import type { CredentialSeats, Priority, Seat, SeatOutcome } from './seats.js'
import { credentialGovernor, type CredentialGovernor } from './credential-governor.js'
import { RedisLeaseStore } from './redis-lease-store.js'
import { PAUSE_PROBE_INTERVAL_MS, Pauses, type Pause } from './pauses.js'
import { PauseSharing, type PeerPause } from './pause-sharing.js'

/** A call asking for a seat: whose it is, on which route, what work, and how it waits. */
export interface SeatCall {
  team: string
  /** Path and query: its route is what a 429 pauses. */
  url: string
  /** The work it asks of the platform (reports/work-class.ts); default its route. */
  workClass?: string
  priority?: Priority
  /** Epoch ms: the call is not sent when it cannot end before. */
  deadline: number
  /** Ends the wait (the call's deadline, its callers gone, the shutdown). */
  signal?: AbortSignal
  /** A refresh ahead's urgency now (larger first). */
  urgency?: () => number
  /** The probe call (team GATEWAY_TEAM): its 429 pauses only its route, its answer ends a credential pause. */
  probe?: boolean
  /** The probe call testing a credential pause: through the pause, without a seat (one call every PAUSE_PROBE_INTERVAL_MS). */
  trial?: boolean
}

/** One credential's governor, as the status view and the metrics read it. */
export interface GovernorView {
  credential: string
  /** Whether the limit is learned (platform.adaptive). */
  adaptive: boolean
  limit: number
  /** The learned knee, the limit rule's phase, and the floor of the kind answered most (ms); null when the limit is not learned. */
  knee: number | null
  phase: string | null
  floorMs: number | null
  /** Whether this replica learns the limit for the others (with Redis), else takes theirs. */
  learner: boolean
  inFlight: number
  queued: number
  seatsHeld: number
  /** Until when (epoch ms) the credential is paused; 0: it is not. */
  pausedUntil: number
  seats: CredentialSeats
}

export interface PlatformGovernorsDeps {
  config: Config
  log: Logger
  metrics: Metrics
  redis: RedisClient | null
  breaker: RedisBreaker | null
  bus: RedisBus | null
  /** Seals the pauses and the shared limit written to Redis (GATEWAY_SECRET). */
  seal?: RedisSeal | null
  weightOf?: (team: string) => number | undefined
  limitsOf?: (team: string) => { maxConcurrent: number | null; queue: number | null } | undefined
  clock?: Clock
}

interface Governor extends CredentialGovernor {
  pauses: Pauses
}

/**
 * The governors of every credential (docs/governor.md): each credential's seats (its
 * dispatch), its learned limit, its lease across replicas, and its pauses after a 429
 * (pauses.ts, shared by pause-sharing.ts). One entry point for the rest of the gateway:
 * `seat()` gives a call its seat, and the seat takes back the call's outcome (`end`).
 */
export class PlatformGovernors {
  readonly #d: PlatformGovernorsDeps
  readonly #clock: Clock
  readonly #governors = new Map<string, Governor>()
  readonly #sharing: PauseSharing
  readonly #probing = new Map<string, Timer>()
  #prober: ((credential: string) => Promise<unknown>) | null = null

  constructor(deps: PlatformGovernorsDeps) {
    this.#d = deps
    this.#clock = deps.clock ?? systemClock
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
      clock: this.#clock,
    })
    for (const credential of Object.keys(deps.config.credentials)) this.#governors.set(credential, this.#governor(credential))
  }

  #governor(credential: string): Governor {
    const { config, log, metrics, redis, breaker, bus, seal } = this.#d
    const pauses: Pauses = new Pauses({
      clock: this.#clock,
      maxPauseMs: config.platform.maxPauseMs,
      onBegan: (pause, source) => this.#began(credential, pause, source),
      onEnded: (pause, source) => this.#ended(credential, pause, source),
    })
    const key = redisKey.seats(config.redis.keyPrefix, credential)
    const g = credentialGovernor({
      credential,
      settings: config.platform,
      store: redis && breaker ? new RedisLeaseStore({ redis, breaker, bus, key, credential }) : null,
      replica: replicaIdentity(hostname(), config.port),
      seal: seal ?? null,
      key,
      log,
      weightOf: (team) => this.#d.weightOf?.(team) ?? 1,
      limitsOf: (team) => this.#d.limitsOf?.(team),
      pausedUntil: () => pauses.credentialUntil,
      onRefused: (reason) => metrics.platformRefused.inc({ credential, reason }),
      onLost: (count) => {
        metrics.platformSeatsLost.inc({ credential }, count)
        metrics.platformPermitsLost.inc({ credential }, count)
      },
      onLimit: (limit, knee, floorMs) => {
        metrics.platformLimit.set({ credential }, limit)
        metrics.platformKnee.set({ credential }, knee)
        if (floorMs !== null) metrics.platformLatencyFloor.set({ credential }, floorMs / 1000)
      },
      onMove: (move, from, to) => {
        if (to !== from) metrics.platformLimitChanges.inc({ credential, direction: move === 'fault' ? 'cut' : to > from ? 'up' : 'down' })
      },
      clock: this.#clock,
    })
    if (!g.estimator) metrics.platformLimit.set({ credential }, g.seats.limit)
    return { ...g, pauses }
  }

  /** The call that tests a credential pause: the probe call with the credential's token, through the pause. */
  probeWith(prober: (credential: string) => Promise<unknown>): void {
    this.#prober = prober
  }

  /** Whether the limit is learned (platform.adaptive). */
  get adaptive(): boolean {
    return this.#d.config.platform.adaptive
  }

  /** Every credential's governor, as the status view and the metrics read it. */
  views(): GovernorView[] {
    return [...this.#governors].map(([credential, g]) => ({
      credential,
      adaptive: g.estimator !== null,
      limit: g.seats.limit,
      knee: g.estimator?.knee ?? null,
      phase: g.estimator?.phase ?? null,
      floorMs: g.estimator?.floorMs ?? null,
      learner: g.leased?.learner ?? true,
      inFlight: g.seats.inFlight,
      queued: g.seats.queued,
      seatsHeld: g.seats.seatsHeld,
      pausedUntil: g.seats.pausedUntil,
      seats: g.seats,
    }))
  }

  /** The pauses under way of `credential`. */
  pausesOf(credential: string): Pause[] {
    return this.#of(credential).pauses.all()
  }

  /**
   * Whether the platform has paused the credential, or (with `url`) a pause covers a call
   * of `team` on the route of `url` (without `team`: any pause of the route): a cached
   * copy is better than a wait.
   */
  paused(credential: string, url?: string, team?: string): boolean {
    const { pauses } = this.#of(credential)
    if (pauses.credentialUntil > 0) return true
    if (url === undefined) return false
    const route = routeTemplate(url)
    if (team !== undefined) return pauses.covering(team, route) !== null
    return pauses.all().some((p) => (p.scope.kind === 'route' || p.scope.kind === 'team-route') && p.scope.route === route)
  }

  /**
   * A seat for `call` of `credential`: refused at once with GW_OVERLOADED (reason paused)
   * when a pause covers it (but for that pause's trial), else the seats' (seats.ts). The
   * call testing a credential pause goes without a seat. The seat's `end` tells the limit,
   * the work estimates and the pauses what came of the call.
   */
  async seat(credential: string, call: SeatCall): Promise<Seat> {
    const g = this.#of(credential)
    const route = routeTemplate(call.url)
    const how = { trial: null as string | null, probe: call.probe === true }
    if (call.trial) return { team: call.team, load: g.seats.inFlight, end: (outcome) => this.#ended429(g, credential, call, route, how, outcome) }
    const admission = g.pauses.admit(call.team, route)
    if (admission.kind === 'paused') {
      this.#d.metrics.platformRefused.inc({ credential, reason: 'paused' })
      const retryAfterSec = Math.max(1, Math.ceil(admission.waitMs / 1000))
      throw Object.assign(new OverloadedError(`${describe(admission.pause)} of credential ${credential} is paused by the platform for ${retryAfterSec} s`), { retryAfterSec })
    }
    if (admission.kind === 'trial') {
      how.trial = admission.scope
      this.#d.log.info({ credential, ...fieldsOf(admission.pause), team: call.team, route }, 'platform pause: a trial call goes through')
    }
    const seat = await g.seats.ask({
      team: call.team,
      workClass: call.workClass ?? route,
      ...(call.priority ? { priority: call.priority } : {}),
      deadline: call.deadline,
      ...(call.signal ? { signal: call.signal } : {}),
      ...(call.urgency ? { urgency: call.urgency } : {}),
    })
    return {
      team: seat.team,
      load: seat.load,
      end: (outcome) => {
        seat.end(outcome)
        this.#ended429(g, credential, call, route, how, outcome)
      },
    }
  }

  /** What a call's outcome tells the pauses: a 429 pauses whoever drew it, another answer ends the pause it tests. */
  #ended429(g: Governor, credential: string, call: SeatCall, route: string, how: { trial: string | null; probe: boolean }, outcome: SeatOutcome): void {
    if (outcome.kind !== 'answer') return
    if (outcome.status !== 429) {
      g.pauses.answered(call.team, route, how)
      return
    }
    const pause = g.pauses.throttled(call.team, route, retryAfterMs(outcome.retryAfter, this.#clock.now()), how)
    if (pause !== null) void this.#sharing.share(credential, pause)
  }

  /** Leases seats, follows the other replicas' pauses and any pause under way, and starts learning. */
  async start(): Promise<void> {
    for (const g of this.#governors.values()) {
      await g.lease.start()
      g.learned?.start()
    }
    await this.#sharing.start([...this.#governors.keys()], (word) => this.#fromPeer(word))
  }

  /** Ends the limit rules, the probe timers, the pause timers and the leases (shutdown). */
  stop(): void {
    for (const g of this.#governors.values()) {
      g.learned?.stop()
      g.lease.stop()
      g.pauses.clear()
    }
    for (const timer of this.#probing.values()) this.#clock.clearInterval(timer)
    this.#probing.clear()
  }

  #of(credential: string): Governor {
    const g = this.#governors.get(credential)
    if (!g) throw new Error(`no governor for credential ${credential}`)
    return g
  }

  #fromPeer(word: PeerPause): void {
    const g = this.#governors.get(word.credential)
    if (!g) return
    if ('ended' in word) g.pauses.endFromPeer(word.ended)
    else g.pauses.adopt(word.pause)
  }

  #began(credential: string, pause: Pause, source: 'platform' | 'peer'): void {
    const now = this.#clock.now()
    this.#d.log.warn({ credential, ...fieldsOf(pause), source, pauseMs: pause.until - now, until: new Date(pause.until).toISOString() }, `platform ${NAMES[pause.scope.kind]} paused: the platform answered 429`)
    if (pause.scope.kind !== 'credential') return
    const g = this.#of(credential)
    g.seats.paused()
    this.#d.metrics.platformPauses.inc({ credential })
    // The platform throttles the credential itself: a fault of the limit rule (the replica that learns cuts for all).
    g.learned?.paused()
    this.#probe(credential)
  }

  #ended(credential: string, pause: Pause, source: 'platform' | 'peer' | 'expired'): void {
    const g = this.#of(credential)
    this.#d.log.info({ credential, ...fieldsOf(pause), source, queued: g.seats.queued }, `platform ${NAMES[pause.scope.kind]} resumed`)
    if (source === 'platform') void this.#sharing.shareEnd(credential, pause)
    if (pause.scope.kind !== 'credential') return
    this.#stopProbe(credential)
    g.seats.wake()
  }

  /** Sends the probe call every PAUSE_PROBE_INTERVAL_MS while the credential is paused, unless the probe's own route is paused. */
  #probe(credential: string): void {
    if (this.#probing.has(credential)) return
    const timer = this.#clock.setInterval(() => {
      const { pauses } = this.#of(credential)
      if (pauses.credentialUntil === 0) {
        this.#stopProbe(credential)
        return
      }
      const probe = this.#d.config.platform.probe
      if (probe && pauses.covering(GATEWAY_TEAM, routeTemplate(probe.path), false) !== null) return
      // Its answer reaches the pauses like any call's; a failed probe decides nothing.
      this.#prober?.(credential).catch((err: Error) => this.#d.log.debug({ err: { message: err.message }, credential }, 'the pause probe call failed'))
    }, PAUSE_PROBE_INTERVAL_MS).unref()
    this.#probing.set(credential, timer)
  }

  #stopProbe(credential: string): void {
    this.#clock.clearInterval(this.#probing.get(credential))
    this.#probing.delete(credential)
  }
}

/**
 * A replica's name: its host name (a pod's name) and proxy port, hashed to the characters
 * a lease field may hold; each run adds a random id, so that two processes never share a
 * lease whatever their names.
 */
export function replicaIdentity(host: string, port: number): string {
  return createHash('sha256').update(`${host}\n${port}`).digest('base64url').slice(0, 12)
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
