import type { Logger } from 'pino'
import type { Config } from '../../config.js'
import { OverloadedError } from '../../errors.js'
import type { Metrics } from '../../observe/metrics.js'
import type { RedisBreaker } from '../../redis/breaker.js'
import type { RedisBus } from '../../redis/bus.js'
import type { RedisClient } from '../../redis/client.js'
import type { RedisSeal } from '../../redis/seal.js'
import type { Clock, Timer } from '../../clock.js'
import { routeTemplate } from '../route-template.js'
import { retryAfterMs } from './retry-after.js'
import { GATEWAY_TEAM } from '../gateway-team.js'
import { PAUSE_PROBE_INTERVAL_MS, Pauses, type Pause } from './pauses.js'
import { PauseSharing, type PeerPause } from './pause-sharing.js'

/** A call as the pauses see it: whose, on which route, and whether it is the probe call or its trial of a credential pause. */
export interface PausedCall {
  team: string
  url: string
  probe?: boolean
  trial?: boolean
}

/** How a call went through the pauses: the pause it is the trial of (null: none), and whether it is the probe call. */
export interface Passage {
  trial: string | null
  probe: boolean
}

/** What a call's end tells the pauses: the platform's status and its retry-after, or no answer. */
export type PausedOutcome = { kind: 'answer'; status: number; retryAfter?: string } | { kind: 'none' | 'dropped' | 'unsent' }

export interface PlatformPausesDeps {
  config: Config
  log: Logger
  metrics: Metrics
  redis: RedisClient | null
  breaker: RedisBreaker | null
  bus: RedisBus | null
  seal: RedisSeal | null
  clock: Clock
  /** The clock of the pauses' ends stored in Redis: Redis' clock as this replica reads it (default `clock`'s; pause-sharing.ts). */
  sharedNow?: () => number
  /** A credential's pause began, or ended: its governor stops, or starts, calls. */
  onCredentialPaused: (credential: string) => void
  onCredentialResumed: (credential: string) => void
}

/**
 * The platform's 429s, per credential (docs/decisions/pauses.md): a 429 pauses whoever
 * drew it (a team on a route, a team, a route, or the credential), shared with the other
 * replicas (pause-sharing.ts), tested by one trial call every PAUSE_PROBE_INTERVAL_MS
 * while the credential is paused, ended by the first answer that is not a 429.
 */
export class PlatformPauses {
  readonly #d: PlatformPausesDeps
  readonly #pauses = new Map<string, Pauses>()
  readonly #sharing: PauseSharing
  readonly #probing = new Map<string, Timer>()
  #prober: ((credential: string) => Promise<unknown>) | null = null

  constructor(deps: PlatformPausesDeps) {
    this.#d = deps
    const { config, clock } = deps
    this.#sharing = new PauseSharing({
      redis: deps.redis,
      breaker: deps.breaker,
      bus: deps.bus,
      seal: deps.seal,
      keyPrefix: config.redis.keyPrefix,
      maxPauseMs: config.platform.maxPauseMs,
      log: deps.log,
      onUnverified: () => deps.metrics.redisUnverified.inc({ what: 'pause' }),
      clock,
      ...(deps.sharedNow ? { sharedNow: deps.sharedNow } : {}),
    })
    for (const credential of Object.keys(config.credentials)) {
      this.#pauses.set(
        credential,
        new Pauses({
          clock,
          maxPauseMs: config.platform.maxPauseMs,
          onBegan: (pause, source) => this.#began(credential, pause, source),
          onEnded: (pause, source) => this.#ended(credential, pause, source),
        }),
      )
    }
  }

  /** The call that tests a credential pause: the probe call with the credential's token, through the pause. */
  probeWith(prober: (credential: string) => Promise<unknown>): void {
    this.#prober = prober
  }

  /** Until when (epoch ms) the platform paused the whole credential; 0: it did not. */
  credentialUntil(credential: string): number {
    return this.#of(credential).credentialUntil
  }

  /** The pauses under way of `credential`. */
  all(credential: string): Pause[] {
    return this.#of(credential).all()
  }

  /**
   * Whether the platform has paused the credential, or (with `url`) a pause covers a call
   * of `team` on the route of `url` (without `team`: any pause of the route): a cached
   * copy is better than a wait.
   */
  paused(credential: string, url?: string, team?: string): boolean {
    const pauses = this.#of(credential)
    if (pauses.credentialUntil > 0) return true
    if (url === undefined) return false
    const route = routeTemplate(url)
    if (team !== undefined) return pauses.covering(team, route) !== null
    return pauses.all().some((p) => (p.scope.kind === 'route' || p.scope.kind === 'team-route') && p.scope.route === route)
  }

  /** A call about to ask for a seat: refused with GW_OVERLOADED (reason paused) when a pause covers it, but for that pause's trial. */
  enter(credential: string, call: PausedCall): Passage {
    const passage: Passage = { trial: null, probe: call.probe === true }
    if (call.trial) return passage
    const route = routeTemplate(call.url)
    const admission = this.#of(credential).admit(call.team, route)
    if (admission.kind === 'paused') {
      this.#d.metrics.platformRefused.inc({ credential, reason: 'paused' })
      const retryAfterSec = Math.max(1, Math.ceil(admission.waitMs / 1000))
      throw Object.assign(new OverloadedError(`${describe(admission.pause)} of credential ${credential} is paused by the platform for ${retryAfterSec} s`), { retryAfterSec })
    }
    if (admission.kind === 'trial') {
      passage.trial = admission.scope
      this.#d.log.info({ credential, ...fieldsOf(admission.pause), team: call.team, route }, 'platform pause: a trial call goes through')
    }
    return passage
  }

  /** What a call's outcome tells the pauses: a 429 pauses whoever drew it (`own`: a route's own limiter's, that route at most), another answer ends the pause it tests. */
  left(credential: string, call: PausedCall, passage: Passage, outcome: PausedOutcome, own = false): void {
    if (outcome.kind !== 'answer') return
    const pauses = this.#of(credential)
    const route = routeTemplate(call.url)
    if (outcome.status !== 429) {
      pauses.answered(call.team, route, passage)
      return
    }
    const pause = pauses.throttled(call.team, route, retryAfterMs(outcome.retryAfter, this.#d.clock.now()), passage, own)
    if (pause !== null) void this.#sharing.share(credential, pause)
  }

  /** How long (ms) a 429 with `retryAfter` to `call` pauses, charged now (`left`): what its caller is told. */
  drawn(credential: string, call: PausedCall, passage: Passage, retryAfter: string | undefined): number {
    return this.#of(credential).drawn(call.team, routeTemplate(call.url), retryAfterMs(retryAfter, this.#d.clock.now()), passage)
  }

  /** Follows the other replicas' pauses and any pause under way. */
  async start(): Promise<void> {
    await this.#sharing.start([...this.#pauses.keys()], (word) => this.#fromPeer(word))
  }

  /** Ends the pause timers and the probe timers (shutdown). */
  stop(): void {
    for (const pauses of this.#pauses.values()) pauses.clear()
    for (const timer of this.#probing.values()) this.#d.clock.clearInterval(timer)
    this.#probing.clear()
  }

  #of(credential: string): Pauses {
    const pauses = this.#pauses.get(credential)
    if (!pauses) throw new Error(`no pauses for credential ${credential}`)
    return pauses
  }

  #fromPeer(word: PeerPause): void {
    const pauses = this.#pauses.get(word.credential)
    if (!pauses) return
    if ('ended' in word) pauses.endFromPeer(word.ended)
    else pauses.adopt(word.pause)
  }

  #began(credential: string, pause: Pause, source: 'platform' | 'peer'): void {
    const now = this.#d.clock.now()
    this.#d.log.warn({ credential, ...fieldsOf(pause), source, pauseMs: pause.until - now, until: new Date(pause.until).toISOString() }, `platform ${NAMES[pause.scope.kind]} paused: the platform answered 429`)
    if (pause.scope.kind !== 'credential') return
    this.#d.metrics.platformPauses.inc({ credential })
    this.#d.onCredentialPaused(credential)
    this.#probe(credential)
  }

  #ended(credential: string, pause: Pause, source: 'platform' | 'peer' | 'expired'): void {
    this.#d.log.info({ credential, ...fieldsOf(pause), source }, `platform ${NAMES[pause.scope.kind]} resumed`)
    if (source === 'platform') void this.#sharing.shareEnd(credential, pause)
    if (pause.scope.kind !== 'credential') return
    this.#stopProbe(credential)
    this.#d.onCredentialResumed(credential)
  }

  /** Sends the probe call every PAUSE_PROBE_INTERVAL_MS while the credential is paused, unless the probe's own route is paused. */
  #probe(credential: string): void {
    if (this.#probing.has(credential)) return
    const timer = this.#d.clock.setInterval(() => {
      const pauses = this.#of(credential)
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
    this.#d.clock.clearInterval(this.#probing.get(credential))
    this.#probing.delete(credential)
  }
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
