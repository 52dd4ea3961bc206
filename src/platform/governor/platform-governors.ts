import type { Logger } from 'pino'
import type { Config } from '../../config.js'
import { OverloadedError } from '../../errors.js'
import type { Metrics } from '../../observe/metrics.js'
import type { RedisBreaker } from '../../redis/breaker.js'
import type { RedisBus } from '../../redis/bus.js'
import type { RedisClient } from '../../redis/client.js'
import type { RedisSeal } from '../../redis/seal.js'
import { CallGovernor, parseRetryAfter } from './call-governor.js'
import { MemoryPermits, type Permits } from './permits.js'
import { RedisPermits, replicaIdentity } from './redis-permits.js'
import { hostname } from 'node:os'
import { LearnedLimit, type CallSample } from './learned-limit.js'
import { DEFAULT_WINDOW_MS, LimitEstimator } from './limit-estimator.js'
import { ESCALATION_WINDOW_MS, PAUSE_PROBE_INTERVAL_MS, pauseScope, RoutePauses, routeTemplate, type Throttle } from './throttle-pauses.js'
import { GATEWAY_TEAM } from './gateway-team.js'
import { systemClock, type Clock, type Timer } from '../../clock.js'
import { redisKey } from '../../redis/keys.js'

const PAUSE_CHANNEL = 'platform-pause'
const CREDENTIAL = 'credential'

/** A pause or a resume, as the replicas tell each other; `scope` is 'credential' or a route template. */
interface PauseMessage {
  credential: string
  scope: string
  team: string
  /** The pause's length; absent on a resume. */
  ms?: number
}

/** What a platform call tells the governors: whose it was and on which route. */
export interface ObservedCall {
  url: string
  team: string
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
  /** Seals the pauses written to Redis (GATEWAY_SECRET): a pause read there is obeyed only with its seal. */
  seal?: RedisSeal | null
  /** A team's weight as the running teams say (they reload); default 1. */
  weightOf?: (team: string) => number | undefined
  /** A team's own ceilings as the running teams say (null: none). */
  limitsOf?: (team: string) => { maxConcurrent: number | null; queue: number | null } | undefined
  /** The time and timers of the governors, their permits, learned limits and pauses; default systemClock. */
  clock?: Clock
}

/** How long a call took and how busy the credential was when it started. */
export type CallTiming = Pick<CallSample, 'latencyMs' | 'inFlight'>

/**
 * One CallGovernor per credential, and the 429 pauses shared by every replica.
 * A 429 pauses the route it came from (its template) for min(retry-after,
 * platform.maxPause); throttles of two routes or two teams within ESCALATION_WINDOW_MS
 * pause the credential (the probe call's own 429 pauses only its route). A route pause
 * lets one caller's call through every PAUSE_PROBE_INTERVAL_MS as a trial; a credential
 * pause sends the probe call (platform.probe) as often, unless the probe's route is
 * paused; the first answer that is not a 429 ends the pause.
 * The replica that saw the 429 writes the pause to Redis (`pause:<credential>` with the
 * pause as its PX; a route in the hash `route-pauses:<credential>`) and tells the others
 * on the bus, and likewise for a resume; a replica that starts reads the pauses under
 * way. Without Redis a pause stays on the replica that got the 429.
 */
export class PlatformGovernors {
  readonly #d: PlatformGovernorsDeps
  readonly #governors = new Map<string, CallGovernor>()
  readonly #routes = new Map<string, RoutePauses>()
  readonly #recent = new Map<string, Throttle[]>()
  readonly #probing = new Map<string, Timer>()
  #prober: ((credential: string) => Promise<unknown>) | null = null
  readonly #leased: RedisPermits[] = []
  readonly #learned = new Map<string, LearnedLimit>()
  readonly #clock: Clock

  constructor(deps: PlatformGovernorsDeps) {
    this.#d = deps
    const clock = deps.clock ?? systemClock
    this.#clock = clock
    const { platform } = deps.config
    for (const credential of Object.keys(deps.config.credentials)) {
      const refused = deps.metrics.platformRefused
      const governor: CallGovernor = new CallGovernor({
        credential,
        maxConcurrent: platform.maxConcurrent,
        limit: platform.adaptive ? platform.initialConcurrent : platform.maxConcurrent,
        queueLimit: platform.queue,
        queueTimeoutMs: platform.queueTimeoutMs,
        weightOf: (team) => deps.weightOf?.(team) ?? 1,
        limitsOf: (team) => deps.limitsOf?.(team),
        permits: this.#permits(credential, () => governor.wake()),
        log: deps.log,
        clock,
        onRefused: (reason) => refused.inc({ credential, reason }),
        onPaused: () => {
          deps.metrics.platformPauses.inc({ credential })
          this.#probe(credential)
        },
      })
      this.#governors.set(credential, governor)
      if (platform.adaptive) this.#learned.set(credential, this.#learnedLimit(credential, governor))
      else deps.metrics.platformLimit.set({ credential }, governor.limit)
      this.#routes.set(credential, new RoutePauses({ clock, onExpired: (route, team) => this.#routeResumed(credential, route, team, 'expired') }))
    }
  }

  /** Who may start a call of `credential`: leases in Redis across replicas, else this replica's own count. */
  #permits(credential: string, wake: () => void): Permits {
    const { config, redis, breaker, bus, log, metrics } = this.#d
    const { platform } = config
    if (!redis || !breaker) return new MemoryPermits(platform.maxConcurrentPerReplica ?? Infinity)
    const permits = new RedisPermits({
      redis,
      breaker,
      bus,
      keys: redisKey.permits(config.redis.keyPrefix, credential),
      credential,
      replica: replicaIdentity(hostname(), config.port),
      perReplica: platform.maxConcurrentPerReplica,
      leaseMs: platform.permitLeaseMs,
      log,
      onLost: (count) => metrics.platformPermitsLost.inc({ credential }, count),
      onFreed: wake,
      clock: this.#clock,
    })
    this.#leased.push(permits)
    return permits
  }

  /** The limit in force of `credential`, learned from its calls and, with Redis, shared by the replicas. */
  #learnedLimit(credential: string, governor: CallGovernor): LearnedLimit {
    const { config, redis, breaker, seal, log, metrics } = this.#d
    const { platform } = config
    return new LearnedLimit({
      credential,
      governor,
      estimator: new LimitEstimator({ initial: platform.initialConcurrent, min: platform.minConcurrent, max: platform.maxConcurrent, windowMs: DEFAULT_WINDOW_MS }),
      windowMs: DEFAULT_WINDOW_MS,
      shared: redis && breaker ? { redis, breaker, key: redisKey.limit(config.redis.keyPrefix, credential), seal: seal ?? null } : null,
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

  /** The call that tests a credential pause: the probe call with the credential's token, through the pause. */
  probeWith(prober: (credential: string) => Promise<unknown>): void {
    this.#prober = prober
  }

  /** The platform has paused the credential, or the route of `url`: a cached copy is better than a wait. */
  paused(credential: string, url?: string): boolean {
    if (this.of(credential).pausedUntil > 0) return true
    return url !== undefined && this.#routesOf(credential).leftOf(routeTemplate(url)) > 0
  }

  /**
   * Whether `call` may go to the platform now: a call on a paused route is refused with
   * GW_OVERLOADED (reason paused), except the route's trial. A credential pause is the
   * governor's (acquire). True when the call is the route's trial.
   */
  admit(credential: string, call: ObservedCall): boolean {
    const route = routeTemplate(call.url)
    const admission = this.#routesOf(credential).admit(route)
    if (admission.kind === 'open') return false
    if (admission.kind === 'trial') {
      this.#d.log.info({ credential, scope: route, team: call.team }, 'platform route paused: a trial call goes through')
      return true
    }
    this.#d.metrics.platformRefused.inc({ credential, reason: 'paused' })
    const retryAfterSec = Math.max(1, Math.ceil(admission.waitMs / 1000))
    throw Object.assign(new OverloadedError(`route ${route} of credential ${credential} is paused by the platform for ${retryAfterSec} s`), { retryAfterSec })
  }

  /** Follows the pauses of the other replicas, and any pause under way. */
  async start(): Promise<void> {
    const { bus, redis, breaker } = this.#d
    for (const permits of this.#leased) await permits.start()
    for (const learned of this.#learned.values()) await learned.start()
    await bus?.subscribe(PAUSE_CHANNEL, (message) => {
      const parsed = parsePauseMessage(message)
      if (parsed) this.#fromPeer(parsed)
    })
    if (!redis || !breaker) return
    for (const governor of this.#governors.values()) {
      const credential = governor.credential
      const key = this.#key(credential)
      const ms = await breaker.run(() => redis.pttl(key), -2)
      const team = ms > 0 ? this.#opened(key, await breaker.run(() => redis.get(key), null)) : null
      if (team !== null) governor.pause(this.#peerLength(ms), 'peer', team)
      const routesKey = this.#routesKey(credential)
      const routes = await breaker.run(() => redis.hgetall(routesKey), {} as Record<string, string>)
      for (const [route, value] of Object.entries(routes)) {
        const pause = parseStoredRoutePause(this.#opened(`${routesKey}#${route}`, value))
        if (pause) this.#routePaused(credential, route, this.#peerLength(pause.until - this.#clock.now()), pause.team, 'peer')
      }
    }
  }

  /** A stored pause's value, or null when it is not sealed by a replica of this gateway. */
  #opened(binding: string, value: string | null): string | null {
    const seal = this.#d.seal
    if (value === null || !seal) return value
    const opened = seal.openText(binding, value)
    if (opened === null) {
      this.#d.metrics.redisUnverified.inc({ what: 'pause' })
      this.#d.log.warn({ key: binding }, "ignoring a platform pause in redis that does not carry this gateway's seal (GATEWAY_SECRET)")
    }
    return opened
  }

  // Without a seal, anyone who may write to Redis may pause every replica: no longer
  // than a 429 of the platform could (platform.maxPause).
  #peerLength(ms: number): number {
    return this.#d.seal ? ms : Math.min(ms, this.#d.config.platform.maxPauseMs)
  }

  /** Ends the probe timers and route pause timers (shutdown). */
  stop(): void {
    for (const learned of this.#learned.values()) learned.stop()
    for (const permits of this.#leased) permits.stop()
    for (const timer of this.#probing.values()) this.#clock.clearInterval(timer)
    this.#probing.clear()
    for (const routes of this.#routes.values()) routes.clear()
  }

  /** The platform answered `call` of `credential` with `status` (its headers came after `timing`). */
  observe(credential: string, call: ObservedCall, status: number, retryAfter: string | undefined, timing?: CallTiming): void {
    // Only answers of the platform's own making teach the limit: a 4xx other than 429 is the call's fault, and often fast.
    if (timing && (status < 400 || status === 429 || status >= 500)) this.#learn(credential, call, timing, status === 429 ? 'throttled' : status >= 500 ? 'failed' : 'ok')
    const governor = this.of(credential)
    const { maxPauseMs } = this.#d.config.platform
    const route = routeTemplate(call.url)
    if (status !== 429) {
      governor.answered()
      this.#routeResumed(credential, route, null, 'platform')
      // The probe call answers: the platform serves the credential again.
      if (call.probe === true && governor.pausedUntil > 0) this.#credentialResumed(credential, 'platform')
      return
    }
    const now = this.#clock.now()
    const throttle = { route, team: call.team, at: now }
    const recent = this.#recentOf(credential, now)
    // The probe is the gateway's own call. While the credential is paused its 429 is that
    // pause's test, which goes on; otherwise it pauses the probe's route only and is no
    // evidence against the credential: a team that makes the probe run cannot pause it.
    const probe = call.probe === true
    const scope = probe ? (governor.pausedUntil > 0 ? 'credential' : 'route') : pauseScope(recent, throttle, ESCALATION_WINDOW_MS)
    if (!probe) recent.push(throttle)
    if (scope === 'credential') {
      this.#credentialPaused(credential, governor.throttled(retryAfter, call.team, maxPauseMs), call.team)
      this.#learned.get(credential)?.overload()
      return
    }
    const ms = this.#routesOf(credential).lengthFor(route, parseRetryAfter(retryAfter, now), maxPauseMs)
    this.#routePaused(credential, route, ms, call.team, 'platform')
    if (ms > 0) void this.#share({ credential, scope: route, team: call.team, ms })
  }

  /** `call` got no answer: a timeout or a connection error. */
  failed(credential: string, call: ObservedCall, timing: CallTiming): void {
    this.#learn(credential, call, timing, 'failed')
  }

  #learn(credential: string, call: ObservedCall, timing: CallTiming, outcome: CallSample['outcome']): void {
    // The probe is the gateway's own call, sent through pauses: it says nothing of load.
    if (call.probe === true) return
    this.#learned.get(credential)?.record({ url: call.url, team: call.team, latencyMs: timing.latencyMs, inFlight: timing.inFlight, outcome })
  }

  /** A read was sent again after a 502/503/504 or a reset. */
  retried(credential: string): void {
    this.#d.metrics.platformRetries.inc({ credential })
  }

  #fromPeer(message: PauseMessage): void {
    const { credential, scope, team } = message
    const governor = this.#governors.get(credential)
    if (!governor) return
    const ms = message.ms === undefined ? undefined : this.#peerLength(message.ms)
    if (scope === CREDENTIAL) {
      if (ms === undefined) governor.resumeNow('peer')
      else governor.pause(ms, 'peer', team)
      return
    }
    if (ms === undefined) {
      this.#routeResumed(credential, scope, null, 'peer')
      return
    }
    // A peer's route throttle counts toward this replica's escalation window too.
    const now = this.#clock.now()
    const recent = this.#recentOf(credential, now)
    if (!recent.some((t) => t.route === scope && t.team === team)) recent.push({ route: scope, team, at: now })
    this.#routePaused(credential, scope, ms, team, 'peer')
  }

  #credentialPaused(credential: string, ms: number, team: string): void {
    if (ms > 0) void this.#share({ credential, scope: CREDENTIAL, team, ms })
  }

  #credentialResumed(credential: string, source: 'platform' | 'peer'): void {
    this.of(credential).resumeNow(source)
    this.#stopProbe(credential)
    if (source === 'platform') void this.#shareResume(credential, CREDENTIAL, GATEWAY_TEAM)
  }

  /** True when a pause of `route` began. */
  #routePaused(credential: string, route: string, ms: number, team: string, source: 'platform' | 'peer'): boolean {
    if (!this.#routesOf(credential).pause(route, ms, team)) return false
    this.#d.log.warn(
      { credential, scope: route, team, source, pauseMs: ms, until: new Date(this.#clock.now() + ms).toISOString() },
      'platform route paused: the platform answered 429',
    )
    return true
  }

  /** `team` is the one whose call began the pause when known (an expiry); else the pause's record says. */
  #routeResumed(credential: string, route: string, expiredTeam: string | null, source: 'platform' | 'peer' | 'expired'): void {
    const team = expiredTeam ?? this.#routesOf(credential).resume(route)
    if (team === null) return
    this.#d.log.info({ credential, scope: route, team, source }, 'platform route resumed')
    if (source === 'platform') void this.#shareResume(credential, route, team)
  }

  /** Sends the probe call every PAUSE_PROBE_INTERVAL_MS while the credential is paused. */
  #probe(credential: string): void {
    if (this.#probing.has(credential)) return
    const timer = this.#clock.setInterval(() => {
      if (this.of(credential).pausedUntil === 0) {
        this.#stopProbe(credential)
        return
      }
      // Not while the probe's own route is paused: that pause ends first.
      const probe = this.#d.config.platform.probe
      if (probe && this.#routesOf(credential).leftOf(routeTemplate(probe.path)) > 0) return
      // Its answer reaches observe() like any call's; a failed probe decides nothing.
      this.#prober?.(credential).catch((err: Error) => this.#d.log.debug({ err: { message: err.message }, credential }, 'the pause probe call failed'))
    }, PAUSE_PROBE_INTERVAL_MS).unref()
    this.#probing.set(credential, timer)
  }

  #stopProbe(credential: string): void {
    this.#clock.clearInterval(this.#probing.get(credential))
    this.#probing.delete(credential)
  }

  #routesOf(credential: string): RoutePauses {
    const routes = this.#routes.get(credential)
    if (!routes) throw new Error(`no governor for credential ${credential}`)
    return routes
  }

  /** The credential's throttles within the escalation window (older ones dropped). */
  #recentOf(credential: string, now: number): Throttle[] {
    const recent = (this.#recent.get(credential) ?? []).filter((t) => now - t.at <= ESCALATION_WINDOW_MS)
    this.#recent.set(credential, recent)
    return recent
  }

  async #share(message: PauseMessage & { ms: number }): Promise<void> {
    const { redis, breaker } = this.#d
    if (!redis || !breaker) return
    const { credential, scope, team, ms } = message
    if (scope === CREDENTIAL) {
      const key = this.#key(credential)
      // The longer of two pauses wins: a key with more time left is not shortened.
      const left = await breaker.run(() => redis.pttl(key), -2)
      if (left >= ms) return
      await breaker.run(() => redis.set(key, this.#sealed(key, team), 'PX', ms), null)
    } else {
      const key = this.#routesKey(credential)
      const until = this.#clock.now() + ms
      await breaker.run(() => redis.hset(key, scope, this.#sealed(`${key}#${scope}`, JSON.stringify({ until, team }))), null)
      // The hash outlives its longest pause only; a past pause in it is skipped at start.
      const left = await breaker.run(() => redis.pttl(key), -2)
      if (left < ms) await breaker.run(() => redis.pexpire(key, ms), null)
    }
    this.#publish(message)
  }

  async #shareResume(credential: string, scope: string, team: string): Promise<void> {
    const { redis, breaker } = this.#d
    if (redis && breaker) {
      if (scope === CREDENTIAL) await breaker.run(() => redis.del(this.#key(credential)), null)
      else await breaker.run(() => redis.hdel(this.#routesKey(credential), scope), null)
    }
    this.#publish({ credential, scope, team })
  }

  #publish(message: PauseMessage): void {
    const { bus, log } = this.#d
    bus?.publish(PAUSE_CHANNEL, JSON.stringify(message)).catch((err: Error) => {
      log.warn({ err: { message: err.message }, credential: message.credential, scope: message.scope }, 'the platform pause could not be sent to the other replicas')
    })
  }

  #sealed(binding: string, value: string): string {
    return this.#d.seal ? this.#d.seal.sealText(binding, value) : value
  }

  #key(credential: string): string {
    return redisKey.pause(this.#d.config.redis.keyPrefix, credential)
  }

  #routesKey(credential: string): string {
    return redisKey.routePauses(this.#d.config.redis.keyPrefix, credential)
  }
}

function parsePauseMessage(message: string): PauseMessage | null {
  try {
    const m = JSON.parse(message) as Partial<Record<keyof PauseMessage, unknown>>
    if (typeof m.credential !== 'string' || typeof m.scope !== 'string' || typeof m.team !== 'string') return null
    if (m.ms !== undefined && !(typeof m.ms === 'number' && Number.isFinite(m.ms))) return null
    return { credential: m.credential, scope: m.scope, team: m.team, ...(m.ms === undefined ? {} : { ms: m.ms }) }
  } catch {
    return null // not a pause message
  }
}

function parseStoredRoutePause(value: string | null): { until: number; team: string } | null {
  if (value === null) return null
  try {
    const { until, team } = JSON.parse(value) as { until?: unknown; team?: unknown }
    return typeof until === 'number' && typeof team === 'string' ? { until, team } : null
  } catch {
    return null
  }
}
