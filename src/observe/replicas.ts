import { randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import type { Logger } from 'pino'
import type { RedisBreaker } from '../redis/breaker.js'
import type { RedisClient } from '../redis/client.js'
import type { RedisSeal } from '../redis/seal.js'
import { redisKey } from '../redis/keys.js'
import { systemClock, type Clock, type Timer } from '../clock.js'
import type { HistoryView } from './history.js'

/** How often a replica announces itself. */
export const ANNOUNCE_MS = 5000
/** A replica whose last announcement is older than this is gone: it stopped announcing itself. */
export const ANNOUNCE_TTL_MS = 15_000
/** How long a gone replica stays listed, with its last hour: the cluster's past does not change when a replica leaves. */
export const GONE_KEEP_MS = 3_600_000
/** The most replicas a cluster view lists (the newest announcements). */
export const MAX_REPLICAS = 64
/** An announcement larger than this is not one of this gateway's (an hour of history is some tens of KiB): it is read no further. */
const MAX_ANNOUNCEMENT_BYTES = 1024 * 1024
/** A replica id longer than this is not one (newReplicaId's are at most 70 characters). */
const MAX_ID_CHARS = 128

/** What a replica announces: what runs, whether it serves, its calls, and its last hour. */
export interface ReplicaState {
  id: string
  version: string
  commit: string
  node: string
  startedAt: string
  uptimeSeconds: number
  phase: string
  /** Serving (readiness 200). */
  ready: boolean
  /** The log level in force (LOG_LEVEL, or changed at run time). */
  logLevel: string
  /** Platform calls in flight and waiting on this replica, every credential. */
  inFlight: number
  waiting: number
  /** What this replica serves without (as /readyz names them), and credentials the platform paused (`paused:<credential>`). */
  degraded: string[]
  /** When the state was taken. */
  at: string
  history: HistoryView
  /** Set in a replica's last announcement, as it stops cleanly. */
  stoppedAt?: string
}

/** How a listed replica left: it stopped cleanly, or it stopped announcing itself without a clean stop (crashed, killed, cut off from Redis). */
export interface Gone {
  how: 'stopped' | 'vanished'
  /** Its last announcement. */
  lastSeen: string
}

export interface ClusterView {
  /** Redis as this replica found it while gathering the replicas. */
  redis: 'ok' | 'down' | 'not configured'
  /** Every live replica is listed (true), or this replica only: Redis is not configured or could not be read. */
  complete: boolean
  /** This replica first (`self`), then the live others by id, then those gone within GONE_KEEP_MS, the last seen first. */
  replicas: (ReplicaState & { self: boolean; gone: Gone | null })[]
}

/** A replica's id: its host name (the pod's name in Kubernetes) and a part of its own, as two processes may share a host. */
export function newReplicaId(host: string = hostname()): string {
  const name = host.replace(/[^A-Za-z0-9.-]/g, '-').slice(0, 63) || 'replica'
  return `${name}-${randomBytes(3).toString('hex')}`
}

export interface ReplicasOptions {
  id: string
  redis: RedisClient | null
  breaker: RedisBreaker | null
  /** Seals the announcements (GATEWAY_SECRET): one read back is listed only with its seal. */
  seal: RedisSeal | null
  prefix: string
  log: Logger
  /** This replica's state now. */
  state: () => ReplicaState
  /** An announcement in Redis without this gateway's seal, ignored. */
  onUnverified?: (key: string) => void
  clock?: Clock
  intervalMs?: number
  ttlMs?: number
  /** How long a gone replica stays listed (GONE_KEEP_MS). */
  keepMs?: number
}

/**
 * The replicas of one deployment, as they announce themselves: each writes its state
 * (sealed when GATEWAY_SECRET is set) under a key of its own every ANNOUNCE_MS, and its
 * id in a sorted set by time; the cluster view reads the newest MAX_REPLICAS back. Every
 * command goes through the breaker: with Redis down, nothing is announced and the view is
 * this replica's alone, saying so. An announcement is kept GONE_KEEP_MS: a replica that
 * closes writes a last one saying it stopped, one that stops announcing without a clean
 * stop is gone once its last is ANNOUNCE_TTL_MS old; either stays listed for the hour,
 * with its history, so that the cluster's past does not change when a replica leaves.
 */
export class Replicas {
  readonly id: string
  readonly #o: ReplicasOptions
  readonly #clock: Clock
  readonly #intervalMs: number
  readonly #ttlMs: number
  readonly #keepMs: number
  readonly #key: string
  readonly #index: string
  #timer: Timer | null = null
  #announcing: Promise<boolean> | null = null

  constructor(opts: ReplicasOptions) {
    this.id = opts.id
    this.#o = opts
    this.#clock = opts.clock ?? systemClock
    this.#intervalMs = opts.intervalMs ?? ANNOUNCE_MS
    this.#ttlMs = opts.ttlMs ?? ANNOUNCE_TTL_MS
    this.#keepMs = opts.keepMs ?? GONE_KEEP_MS
    this.#key = redisKey.replica(opts.prefix, opts.id)
    this.#index = redisKey.replicas(opts.prefix)
  }

  /** Announces now and every interval, until close(). */
  start(): void {
    if (this.#timer || !this.#o.redis) return
    void this.announce()
    this.#timer = this.#clock.setInterval(() => void this.announce(), this.#intervalMs).unref()
  }

  /** Writes this replica's state; false when Redis did not take it (not configured, down, refusing writes). */
  announce(): Promise<boolean> {
    // One at a time: a slow Redis does not pile announcements up.
    this.#announcing ??= this.#announce().finally(() => {
      this.#announcing = null
    })
    return this.#announcing
  }

  async #announce(last = false): Promise<boolean> {
    const { redis, breaker, seal } = this.#o
    if (!redis || !breaker) return false
    const state = this.#o.state()
    const text = JSON.stringify(last ? { ...state, stoppedAt: state.at } : state)
    const value = seal ? seal.sealText(this.#key, text) : text
    const now = this.#clock.now()
    return breaker.write(async () => {
      const results = await redis
        .multi()
        .set(this.#key, value, 'PX', this.#keepMs)
        .zadd(this.#index, now, this.id)
        // Ids whose announcement is long gone; a replica whose clock runs behind is not dropped early.
        .zremrangebyscore(this.#index, '-inf', now - this.#keepMs - 4 * this.#ttlMs)
        .pexpire(this.#index, this.#keepMs + 4 * this.#ttlMs)
        .exec()
      return results !== null && results.every(([err]) => !err)
    }, false)
  }

  /** Every replica of the last GONE_KEEP_MS with its state (this one's taken now), or this replica's alone when Redis cannot say. */
  async cluster(): Promise<ClusterView> {
    const self = { ...this.#o.state(), self: true, gone: null }
    const { redis, breaker } = this.#o
    if (!redis || !breaker) return { redis: 'not configured', complete: false, replicas: [self] }
    const found = await breaker.run(async () => {
      const ids = (await redis.zrevrange(this.#index, 0, MAX_REPLICAS - 1)).filter((id) => id !== this.id && id.length <= MAX_ID_CHARS)
      if (ids.length === 0) return []
      // Read no more of each than an announcement can be (every key in one hash slot: one pipeline on a Cluster too).
      const batch = redis.pipeline()
      for (const id of ids) batch.getrange(redisKey.replica(this.#o.prefix, id), 0, MAX_ANNOUNCEMENT_BYTES)
      const results = (await batch.exec()) ?? []
      return ids.map((id, i) => {
        const [err, value] = results[i] ?? [null, null]
        return [id, err || typeof value !== 'string' || value === '' ? null : value] as const
      })
    }, null)
    if (found === null) return { redis: 'down', complete: false, replicas: [self] }
    const now = this.#clock.now()
    const live: ClusterView['replicas'] = []
    const gone: ClusterView['replicas'] = []
    for (const [id, value] of found) {
      const state = this.#opened(id, value)
      if (!state) continue
      const left = goneOf(state, now, this.#ttlMs)
      if (left) gone.push({ ...state, ready: false, self: false, gone: left })
      else live.push({ ...state, self: false, gone: null })
    }
    live.sort((a, b) => a.id.localeCompare(b.id))
    gone.sort((a, b) => (b.gone?.lastSeen ?? '').localeCompare(a.gone?.lastSeen ?? ''))
    return { redis: 'ok', complete: true, replicas: [self, ...live, ...gone] }
  }

  /** An announcement read back, or null: expired, not sealed by this gateway, or not one. */
  #opened(id: string, value: string | null): ReplicaState | null {
    if (value === null || Buffer.byteLength(value) > MAX_ANNOUNCEMENT_BYTES) return null
    const key = redisKey.replica(this.#o.prefix, id)
    const text = this.#o.seal ? this.#o.seal.openText(key, value) : value
    if (text === null) {
      this.#o.onUnverified?.(key)
      return null
    }
    try {
      const state = JSON.parse(text) as unknown
      return isReplicaState(state, id) ? state : null
    } catch {
      return null // not JSON: not an announcement
    }
  }

  /** Stops announcing, with a last announcement saying that this replica stopped (listed as gone for GONE_KEEP_MS). */
  async close(): Promise<void> {
    this.#clock.clearInterval(this.#timer)
    this.#timer = null
    if (!this.#o.redis || !this.#o.breaker) return
    await this.#announcing
    await this.#announce(true)
  }
}

/** How a replica left, from its last announcement: it said it stopped, or it has not announced itself for `ttlMs`; null while it is live. */
export function goneOf(state: Pick<ReplicaState, 'at' | 'stoppedAt'>, now: number, ttlMs: number): Gone | null {
  if (typeof state.stoppedAt === 'string') return { how: 'stopped', lastSeen: state.at }
  const at = Date.parse(state.at)
  return Number.isFinite(at) && now - at <= ttlMs ? null : { how: 'vanished', lastSeen: state.at }
}

function isReplicaState(value: unknown, id: string): value is ReplicaState {
  if (typeof value !== 'object' || value === null) return false
  const v = value as Record<string, unknown>
  const history = v.history as Record<string, unknown> | null | undefined
  return (
    v.id === id &&
    typeof v.version === 'string' &&
    typeof v.ready === 'boolean' &&
    typeof v.inFlight === 'number' &&
    typeof v.uptimeSeconds === 'number' &&
    Array.isArray(v.degraded) &&
    typeof history === 'object' &&
    history !== null &&
    typeof history.start === 'number' &&
    Array.isArray(history.requests)
  )
}
