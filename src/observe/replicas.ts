import { randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import type { Logger } from 'pino'
import type { RedisBreaker } from '../redis/breaker.js'
import type { RedisBus } from '../redis/bus.js'
import type { RedisClient } from '../redis/client.js'
import type { RedisSeal } from '../redis/seal.js'
import { readBoundedHashes } from '../redis/bounded-hash.js'
import { redisKey } from '../redis/keys.js'
import { systemClock, type Clock, type Timer } from '../clock.js'
import { BUCKET_MS, BUCKETS, emptyHistory, hourOf, type HistoryView } from './history.js'

/** How often a replica announces itself. */
export const ANNOUNCE_MS = 5000
/** A replica whose last announcement is older than this is gone: it stopped announcing itself. */
export const ANNOUNCE_TTL_MS = 15_000
/** How long a gone replica stays listed, with its last hour: the cluster's past does not change when a replica leaves. */
export const GONE_KEEP_MS = 3_600_000
/** The most replicas a cluster view lists (the newest announcements). */
export const MAX_REPLICAS = 64
/**
 * An index entry dated further ahead of the reader's clock than this is no replica's
 * announcement: skipped by the view and trimmed, so entries dated in the future (a Redis
 * writer's, or a replica's whose clock runs far ahead) cannot fill the newest
 * MAX_REPLICAS and push the real replicas out.
 */
export const CLOCK_SKEW_MS = 60_000
/** An announcement larger than this is not one of this gateway's (some hundreds of bytes): it is read no further. */
const MAX_ANNOUNCEMENT_BYTES = 64 * 1024
/** A history larger than this is not one of this gateway's (an hour is some tens of KiB): it is read no further. */
const MAX_HISTORY_BYTES = 1024 * 1024
/** A bucket's record larger than this is not one of this gateway's (some hundreds of bytes; a bucket in which some 80 teams drew 429s or errors still fits): it is not read. */
const MAX_BUCKET_BYTES = 8 * 1024
/** How long the hour a live replica writes when a cluster view asks is kept: the view reads it at once, and the next asks again. */
const HISTORY_KEEP_MS = 60_000
/** How long a cluster view waits for the live replicas to write their hour; one that has not by then is listed with the hour it wrote last (within HISTORY_KEEP_MS), else the one its buckets make. */
export const HISTORY_WAIT_MS = 1000
/** A replica asked again for its hour within this writes it no more: a few consoles open at once cost one write. */
const HISTORY_REWRITE_MS = 1000
// The bus channel of the requests for the replicas' hour, and the start of each asker's own channel of answers.
const HISTORY_ASKED = 'history-asked'
const HISTORY_WRITTEN = 'history-written:'
/** A replica id longer than this is not one (newReplicaId's are at most 70 characters). */
const MAX_ID_CHARS = 128
/** A replica's hash of buckets as this gateway writes it: a field per place in the ring (`0`…`359`). */
const BUCKET_BOUNDS = { maxFields: BUCKETS, maxFieldBytes: String(BUCKETS - 1).length, maxValueBytes: MAX_BUCKET_BYTES }

/** What a replica announces and its last hour: what runs, whether it serves, its calls. */
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

/** What a replica announces every ANNOUNCE_MS: its state without its hour (fetched when a cluster view asks). */
export type Announcement = Omit<ReplicaState, 'history'>

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
  state: () => Announcement
  /** This replica's last hour now. */
  history: () => HistoryView
  /** This replica's bucket number `n` (epoch ms / BUCKET_MS) alone (History.bucket), or null when it saw none. */
  bucket: (n: number) => HistoryView | null
  /** Carries a cluster view's request for the live replicas' hour, and their answers; null: each is listed with the hour its buckets make. */
  bus?: RedisBus | null
  /** An announcement in Redis without this gateway's seal, ignored. */
  onUnverified?: (key: string) => void
  clock?: Clock
  /**
   * Redis' clock as this replica reads it (redis/redis-clock.ts), default `clock`'s time:
   * the announcements' dates (`at`, the index's scores) are on it, and a replica's age is
   * read on it, so a replica whose clock is off is neither listed as gone while it announces
   * nor dropped as dated ahead. Its buckets are numbered on `clock`, as its history is.
   */
  sharedNow?: () => number
  intervalMs?: number
  ttlMs?: number
  /** How long a gone replica stays listed (GONE_KEEP_MS). */
  keepMs?: number
}

/**
 * The replicas of one deployment, as they announce themselves: each writes its state
 * (sealed when GATEWAY_SECRET is set), some hundreds of bytes, under a key of its own
 * every ANNOUNCE_MS, and its id in a sorted set by time; the cluster view reads the newest
 * MAX_REPLICAS back. With the announcement that follows a bucket's close, the same MULTI
 * writes that bucket (History.bucket, a few hundred bytes, sealed) into the replica's hash
 * of buckets, a field per place in the ring of BUCKETS: Redis holds each replica's hour
 * at a constant cost, two commands every BUCKET_MS. A live replica's exact hour, its
 * current bucket included (some tens of KiB), is written only when a cluster view asks for
 * it (over the bus: each live replica writes its hour and says so to the asker, which
 * reads them all). Every command goes through the breaker: with Redis down, nothing is
 * announced and the view is this replica's alone, saying so; the buckets not written then
 * go with the next announcement Redis takes. An announcement and the buckets are kept
 * GONE_KEEP_MS: a replica that closes writes a last announcement saying it stopped, with
 * its buckets up to its current one; one that stops announcing without a clean stop is
 * gone once its last is ANNOUNCE_TTL_MS old, with its buckets up to the last that closed
 * before it died. Either stays listed for the hour with the hour its buckets make (so does
 * a live replica that does not answer the view's ask), so that the cluster's past does not
 * change when a replica leaves.
 */
export class Replicas {
  readonly id: string
  readonly #o: ReplicasOptions
  readonly #clock: Clock
  readonly #sharedNow: () => number
  readonly #intervalMs: number
  readonly #ttlMs: number
  readonly #keepMs: number
  readonly #key: string
  readonly #historyKey: string
  readonly #bucketsKey: string
  readonly #index: string
  /** The newest bucket written to the hash of buckets. */
  #bucketWritten = Number.NEGATIVE_INFINITY
  /** The next announcement writes every bucket of the hour again: Redis may have lost them (rejoin). */
  #rewriteHour = false
  #timer: Timer | null = null
  #announcing: Promise<boolean> | null = null
  #announced = 0
  /** The requests for the others' hour this replica waits on, by nonce: each answer names its replica. */
  readonly #asks = new Map<string, (id: string) => void>()
  #historyWrittenAt = Number.NEGATIVE_INFINITY

  constructor(opts: ReplicasOptions) {
    this.id = opts.id
    this.#o = opts
    this.#clock = opts.clock ?? systemClock
    this.#sharedNow = opts.sharedNow ?? this.#clock.now
    this.#intervalMs = opts.intervalMs ?? ANNOUNCE_MS
    this.#ttlMs = opts.ttlMs ?? ANNOUNCE_TTL_MS
    this.#keepMs = opts.keepMs ?? GONE_KEEP_MS
    this.#key = redisKey.replica(opts.prefix, opts.id)
    this.#historyKey = redisKey.replicaHistory(opts.prefix, opts.id)
    this.#bucketsKey = redisKey.replicaBuckets(opts.prefix, opts.id)
    this.#index = redisKey.replicas(opts.prefix)
  }

  /** Announces now and every interval, until close(); answers the cluster views' requests for this replica's hour once subscribed. */
  async start(): Promise<void> {
    if (this.#timer || !this.#o.redis) return
    void this.announce()
    this.#timer = this.#clock.setInterval(() => void this.announce(), this.#intervalMs).unref()
    const bus = this.#o.bus
    if (!bus) return
    await Promise.all([
      bus.subscribe(HISTORY_ASKED, (message) => void this.#asked(message)),
      bus.subscribe(HISTORY_WRITTEN + this.id, (message) => {
        const [id, nonce] = message.split(' ')
        if (id !== undefined && nonce !== undefined) this.#asks.get(nonce)?.(id)
      }),
    ])
  }

  /**
   * Writes this replica's state as it is now, where it changed between announcements (what
   * its `degraded` names): after the announcement under way, whose state may be older.
   * Only between start() and close(): nothing follows the last announcement, which says it stopped.
   */
  changed(): Promise<boolean> {
    const announce = (): Promise<boolean> => (this.#timer === null ? Promise.resolve(false) : this.announce())
    return this.#announcing ? this.#announcing.then(announce) : announce()
  }

  /**
   * Announces at once with every bucket of the hour this replica holds: Redis answers again
   * and may have restarted empty or been flushed, losing the index, the announcements and
   * the buckets. The cluster views list this replica again without waiting for its next
   * announcement, and the hour its buckets make is whole again; what a replica gone before
   * wrote there is not (docs/contract.md, `GET /admin/cluster`).
   */
  rejoin(): Promise<boolean> {
    this.#rewriteHour = true
    return this.changed()
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
    const { redis, breaker } = this.#o
    if (!redis || !breaker) return false
    const state = this.#o.state()
    const value = this.#sealed(this.#key, JSON.stringify(last ? { ...state, stoppedAt: state.at } : state))
    const now = this.#sharedNow()
    // The index's trim and lifetime once a minute: ids whose announcement is long gone
    // (a replica whose clock runs behind is not dropped early).
    const trim = this.#announced++ % Math.max(1, Math.round(60_000 / this.#intervalMs)) === 0
    // The buckets closed since the last written (the current one too as it stops), within the ring.
    const newest = Math.floor(this.#clock.now() / BUCKET_MS) - (last ? 0 : 1)
    const rewrite = this.#rewriteHour
    this.#rewriteHour = false
    const buckets: string[] = []
    for (let n = Math.max(rewrite ? Number.NEGATIVE_INFINITY : this.#bucketWritten + 1, newest - BUCKETS + 1); n <= newest; n++) {
      const bucket = this.#o.bucket(n)
      const field = String(n % BUCKETS)
      if (bucket) buckets.push(field, this.#sealed(`${this.#bucketsKey}#${field}`, JSON.stringify(bucket)))
    }
    const written = await breaker.write(async () => {
      const batch = redis.multi().set(this.#key, value, 'PX', this.#keepMs).zadd(this.#index, now, this.id)
      if (trim) {
        batch.zremrangebyscore(this.#index, '-inf', now - this.#keepMs - 4 * this.#ttlMs).zremrangebyscore(this.#index, `(${now + CLOCK_SKEW_MS}`, '+inf')
        batch.pexpire(this.#index, this.#keepMs + 4 * this.#ttlMs)
      }
      if (buckets.length > 0) batch.hset(this.#bucketsKey, ...buckets).pexpire(this.#bucketsKey, this.#keepMs)
      const results = await batch.exec()
      return results !== null && results.every(([err]) => !err)
    }, false)
    if (written) this.#bucketWritten = Math.max(this.#bucketWritten, newest)
    else if (rewrite) this.#rewriteHour = true
    return written
  }

  #sealed(key: string, text: string): string {
    return this.#o.seal ? this.#o.seal.sealText(key, text) : text
  }

  /** A cluster view asked (`<asker> <nonce>`): this replica writes its hour (once a second at most) and tells the asker. */
  async #asked(message: string): Promise<void> {
    const [asker, nonce] = message.split(' ')
    const { redis, breaker, bus } = this.#o
    if (asker === undefined || nonce === undefined || asker === this.id || !redis || !breaker || !bus) return
    const now = this.#clock.now()
    if (now - this.#historyWrittenAt >= HISTORY_REWRITE_MS) {
      const value = this.#sealed(this.#historyKey, JSON.stringify(this.#o.history()))
      const written = await breaker.write(async () => (await redis.set(this.#historyKey, value, 'PX', HISTORY_KEEP_MS)) === 'OK', false)
      if (!written) return
      this.#historyWrittenAt = now
    }
    await bus.publish(HISTORY_WRITTEN + asker, `${this.id} ${nonce}`).catch(() => undefined)
  }

  /** Asks the replicas `ids` to write their hour, and waits until each said it did, or HISTORY_WAIT_MS. */
  async #askHistories(ids: string[]): Promise<void> {
    const bus = this.#o.bus
    if (!bus || ids.length === 0) return
    const nonce = randomBytes(6).toString('hex')
    const waiting = new Set(ids)
    await new Promise<void>((resolve) => {
      const done = (): void => {
        this.#clock.clearTimeout(timer)
        this.#asks.delete(nonce)
        resolve()
      }
      const timer = this.#clock.setTimeout(done, HISTORY_WAIT_MS)
      this.#asks.set(nonce, (id) => {
        waiting.delete(id)
        if (waiting.size === 0) done()
      })
      bus.publish(HISTORY_ASKED, `${this.id} ${nonce}`).catch(done)
    })
  }

  /**
   * Every replica of the last GONE_KEEP_MS with its state (this one's taken now), or this
   * replica's alone when Redis cannot say; with `history` (the default), each with its
   * last hour: the live ones write theirs first; a gone one, and a live one that did not,
   * has the hour its buckets make.
   */
  async cluster({ history = true }: { history?: boolean } = {}): Promise<ClusterView> {
    const self = { ...this.#o.state(), history: history ? this.#o.history() : emptyHistory(this.#clock.now()), self: true, gone: null }
    const { redis, breaker } = this.#o
    if (!redis || !breaker) return { redis: 'not configured', complete: false, replicas: [self] }
    const found = await breaker.run(async () => {
      const newest = await redis.zrevrangebyscore(this.#index, this.#sharedNow() + CLOCK_SKEW_MS, '-inf', 'LIMIT', 0, MAX_REPLICAS)
      const ids = newest.filter((id) => id !== this.id && id.length <= MAX_ID_CHARS)
      return ids.length === 0 ? [] : this.#read(ids, (id) => redisKey.replica(this.#o.prefix, id), MAX_ANNOUNCEMENT_BYTES)
    }, null)
    if (found === null) return { redis: 'down', complete: false, replicas: [self] }
    const now = this.#clock.now()
    const sharedNow = this.#sharedNow()
    const listed: { state: Announcement; gone: Gone | null }[] = []
    for (const [id, value] of found) {
      const state = this.#opened(id, value)
      if (state) listed.push({ state, gone: goneOf(state, sharedNow, this.#ttlMs) })
    }
    if (history) await this.#askHistories(listed.filter((r) => r.gone === null).map((r) => r.state.id))
    const hours = history ? await this.#hours(listed, now) : new Map<string, HistoryView>()
    const live: ClusterView['replicas'] = []
    const gone: ClusterView['replicas'] = []
    listed.forEach(({ state, gone: left }) => {
      const hour = hours.get(state.id) ?? emptyHistory(now)
      if (left) gone.push({ ...state, history: hour, ready: false, self: false, gone: left })
      else live.push({ ...state, history: hour, self: false, gone: null })
    })
    live.sort((a, b) => a.id.localeCompare(b.id))
    gone.sort((a, b) => (b.gone?.lastSeen ?? '').localeCompare(a.gone?.lastSeen ?? ''))
    return { redis: 'ok', complete: true, replicas: [self, ...live, ...gone] }
  }

  /** The hour of each of `listed` by id: the one a live replica wrote when asked, else the one its buckets make (none when Redis fails). */
  async #hours(listed: { state: Announcement; gone: Gone | null }[], now: number): Promise<Map<string, HistoryView>> {
    const hours = new Map<string, HistoryView>()
    const breaker = this.#o.breaker
    if (!breaker) return hours
    const live = listed.filter((r) => r.gone === null).map((r) => r.state.id)
    const written = await breaker.run(() => this.#read(live, (id) => redisKey.replicaHistory(this.#o.prefix, id), MAX_HISTORY_BYTES), null)
    for (const [id, value] of written ?? []) {
      const hour = this.#openedHistory(id, value)
      if (hour) hours.set(id, hour)
    }
    const rest = listed.map((r) => r.state.id).filter((id) => !hours.has(id))
    const keys = rest.map((id) => redisKey.replicaBuckets(this.#o.prefix, id))
    const redis = this.#o.redis
    // Every key in one hash slot: one pipeline on a Cluster too.
    const read = redis && keys.length > 0 ? await breaker.run(() => readBoundedHashes(redis, keys, BUCKET_BOUNDS), null) : null
    rest.forEach((id, i) => {
      const key = keys[i]!
      const buckets = (read?.[i] ?? []).map(([field, value]) => this.#openedJson(`${key}#${field}`, value, MAX_BUCKET_BYTES)).filter(isHistory)
      hours.set(id, hourOf(buckets, now))
    })
    return hours
  }

  /** The values of the keys of `ids` (`keyOf`), no more than `maxBytes` of each (every key in one hash slot: one pipeline on a Cluster too). */
  async #read(ids: string[], keyOf: (id: string) => string, maxBytes: number): Promise<(readonly [string, string | null])[]> {
    const redis = this.#o.redis
    if (!redis || ids.length === 0) return []
    const batch = redis.pipeline()
    for (const id of ids) batch.getrange(keyOf(id), 0, maxBytes)
    const results = (await batch.exec()) ?? []
    return ids.map((id, i) => {
      const [err, value] = results[i] ?? [null, null]
      return [id, err || typeof value !== 'string' || value === '' ? null : value] as const
    })
  }

  /** A sealed value of `key` read back, parsed, or null: expired, larger than `maxBytes`, not sealed by this gateway, or not JSON. */
  #openedJson(key: string, value: string | null, maxBytes: number): unknown {
    if (value === null || Buffer.byteLength(value) > maxBytes) return null
    const text = this.#o.seal ? this.#o.seal.openText(key, value) : value
    if (text === null) {
      this.#o.onUnverified?.(key)
      return null
    }
    try {
      return JSON.parse(text) as unknown
    } catch {
      return null // not JSON: not the gateway's
    }
  }

  /** An announcement read back, or null: expired, not sealed by this gateway, or not one. */
  #opened(id: string, value: string | null): Announcement | null {
    const state = this.#openedJson(redisKey.replica(this.#o.prefix, id), value, MAX_ANNOUNCEMENT_BYTES)
    return isAnnouncement(state, id) ? state : null
  }

  /** A replica's hour read back, or null: none written, not sealed by this gateway, or not one. */
  #openedHistory(id: string, value: string | null): HistoryView | null {
    const history = this.#openedJson(redisKey.replicaHistory(this.#o.prefix, id), value, MAX_HISTORY_BYTES)
    return isHistory(history) ? history : null
  }

  /** Stops announcing, with a last announcement saying that this replica stopped, and its buckets up to its current one (listed as gone for GONE_KEEP_MS). */
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

function isAnnouncement(value: unknown, id: string): value is Announcement {
  if (typeof value !== 'object' || value === null) return false
  const v = value as Record<string, unknown>
  return v.id === id && typeof v.version === 'string' && typeof v.ready === 'boolean' && typeof v.inFlight === 'number' && typeof v.uptimeSeconds === 'number' && Array.isArray(v.degraded)
}

function isHistory(value: unknown): value is HistoryView {
  if (typeof value !== 'object' || value === null) return false
  const v = value as Record<string, unknown>
  return typeof v.start === 'number' && Array.isArray(v.requests)
}
