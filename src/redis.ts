import { Redis, Cluster, ReplyError, type RedisOptions } from 'ioredis'
import type { Logger } from 'pino'
import type { Config } from './config.js'
import type { RedisSeal } from './redis-seal.js'
import { NonceSource, SeenNonces } from './seen-nonces.js'
import { systemClock, type Clock, type Timer } from './clock.js'

export type RedisClient = Redis | Cluster

/**
 * One ioredis connection for commands, standalone, Sentinel or Cluster. Commands fail
 * fast while Redis is unreachable (no offline queue) so that a request never waits on a
 * down Redis longer than the command timeout. Its command timeout waits for replies
 * already received once installIoredisCommandTimeoutPatch has run (createGateway runs it
 * before it makes a client).
 */
export function createRedisClient(cfg: Config['redis'], log: Logger): RedisClient | null {
  if (!cfg.url && !cfg.sentinels && !cfg.cluster) return null
  const fromUrl = cfg.url ? new URL(cfg.url) : null
  const common: RedisOptions = {
    commandTimeout: cfg.commandTimeoutMs,
    connectTimeout: redisConnectTimeoutMs(cfg),
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: reconnectDelay,
    ...(fromUrl?.username ? { username: decodeURIComponent(fromUrl.username) } : {}),
    ...(fromUrl?.password ? { password: decodeURIComponent(fromUrl.password) } : {}),
    ...(fromUrl?.protocol === 'rediss:' ? { tls: {} } : {}),
  }
  let client: RedisClient
  if (cfg.cluster) {
    client = new Cluster(cfg.cluster, { redisOptions: common, enableOfflineQueue: false, clusterRetryStrategy: reconnectDelay })
  } else if (cfg.sentinels) {
    client = new Redis({ ...common, sentinels: cfg.sentinels, name: cfg.sentinelName })
  } else {
    client = new Redis(cfg.url as string, common)
  }
  // ioredis emits every failed reconnect; the breaker logs transitions instead, with
  // the connection's last error as their cause.
  client.on('error', (err: Error) => {
    connectionErrors.set(client, err.message)
    log.debug({ err: { message: err.message } }, 'redis connection error')
  })
  client.on('ready', () => connectionErrors.delete(client))
  return client
}

const connectionErrors = new WeakMap<RedisClient, string>()

// A lost connection is made again after 100, 200, 400 ms, then every RECONNECT_MAX_MS: a
// Redis back after an outage is used again within about that (readiness, single-flight
// across replicas, permits), and a refused connection costs Redis nothing.
export const RECONNECT_MAX_MS = 500

/** The wait before the `times`-th attempt to connect again. */
export function reconnectDelay(times: number): number {
  return Math.min(100 * 2 ** Math.max(0, times - 1), RECONNECT_MAX_MS)
}

/**
 * Where Redis is, for log lines and the start line: host:port, never the URL's
 * user or password.
 */
export function redisAddress(cfg: Pick<Config['redis'], 'url' | 'sentinels' | 'sentinelName' | 'cluster'>): string {
  const nodes = (list: { host: string; port: number }[]) => list.map((n) => `${n.host}:${n.port}`).join(',')
  if (cfg.cluster) return `cluster ${nodes(cfg.cluster)}`
  if (cfg.sentinels) return `sentinel ${cfg.sentinelName} via ${nodes(cfg.sentinels)}`
  if (!cfg.url) return 'none'
  const url = new URL(cfg.url)
  return `${url.hostname}:${url.port || '6379'}`
}

/**
 * Why a command failed: a command refused while disconnected says only that it was
 * refused, so the connection's own last error (ECONNREFUSED, a DNS failure, a wrong
 * password) is the cause then.
 */
export function failureCause(client: RedisClient, err: unknown): string {
  const own = (err as Error).message
  return (client.status !== 'ready' ? connectionErrors.get(client) : undefined) ?? own
}

// While the circuit is open, Redis is tried this often (and at once on a new connection),
// so that its return shows within about this long rather than after a breaker cooldown.
export const RECHECK_MS = 250

/**
 * Redis's state from the first second: a ping when the gateway starts, once
 * the connection is made or has failed, then one every `intervalMs`, so that an outage
 * without traffic, and the end of one, show in the breaker (and so in /readyz, the
 * metric and the log) rather than at the next request. While the circuit is open, a ping
 * every `recheckMs` and one on each new connection are its trials, whatever the cooldown:
 * Redis answering again closes it within about that long.
 */
export class RedisWatch {
  readonly #client: RedisClient
  readonly #breaker: RedisBreaker
  readonly #intervalMs: number
  readonly #recheckMs: number
  readonly #connectTimeoutMs: number
  readonly #probeKey: string
  #timer: Timer | null = null
  #lastPing = 0
  #pinging = false
  /** Pings in a row that failed on a live connection. */
  #slow = 0
  readonly #onReconnect: () => void
  readonly #clock: Clock
  readonly #onReady = (): void => {
    if (this.#breaker.state !== 'closed') void this.#tick()
    this.#onReconnect()
  }

  /** `onReconnect`: each connection made after start (Redis may have restarted empty). */
  constructor(client: RedisClient, breaker: RedisBreaker, opts: { intervalMs: number; connectTimeoutMs: number; keyPrefix: string; recheckMs?: number; onReconnect?: () => void; clock?: Clock }) {
    this.#client = client
    this.#clock = opts.clock ?? systemClock
    this.#onReconnect = opts.onReconnect ?? (() => undefined)
    this.#breaker = breaker
    this.#intervalMs = opts.intervalMs
    this.#recheckMs = Math.min(opts.recheckMs ?? RECHECK_MS, opts.intervalMs)
    this.#connectTimeoutMs = opts.connectTimeoutMs
    this.#probeKey = `${opts.keyPrefix}write-probe`
  }

  async start(): Promise<void> {
    await whenReady(this.#client, this.#connectTimeoutMs)
    await this.#tick()
    this.#client.on('ready', this.#onReady)
    this.#timer = this.#clock.setInterval(() => void this.#tick(), this.#recheckMs)
    this.#timer.unref()
  }

  close(): void {
    if (this.#timer) this.#clock.clearInterval(this.#timer)
    this.#timer = null
    this.#client.off('ready', this.#onReady)
  }

  /** A trial while the circuit is open; otherwise a ping once `intervalMs` has passed since the last. */
  async #tick(): Promise<void> {
    if (this.#pinging) return
    const open = this.#breaker.state !== 'closed'
    if (!open && this.#clock.now() - this.#lastPing < this.#intervalMs) return
    this.#pinging = true
    this.#lastPing = this.#clock.now()
    try {
      await (open ? this.#breaker.trial(() => this.#client.ping()) : this.#ping())
    } finally {
      this.#pinging = false
    }
  }

  async #ping(): Promise<void> {
    // A Redis that refuses writes is tried with one, so that its end shows without traffic.
    if (!this.#breaker.writable) await this.#breaker.write(() => this.#client.set(this.#probeKey, '1', 'PX', this.#intervalMs), null)
    try {
      await this.#client.ping()
      this.#slow = 0
    } catch (err) {
      // One slow answer on a busy machine is not an outage (requests' own commands still
      // open the breaker); a lost connection, or a second timeout in a row, is.
      this.#slow += 1
      if (this.#client.status !== 'ready' || this.#slow >= 2) this.#breaker.fail(err)
    }
  }
}

// A command's timeout is a timer of this process: when the event loop is busy (a fresh
// replica compiling its first request's code, a long GC, a starved CPU) it fires late,
// and before the reply waiting unread on the socket is read. One that fired this far past
// its due time says the loop was late, not Redis: that call gets its fallback and the
// circuit stays as it was. Otherwise a fresh replica on a busy machine opens it on its first
// request and sends every report to the platform for a whole cooldown.
const LATE_TIMEOUT_FACTOR = 1.5

function timedOut(err: unknown): boolean {
  return err instanceof Error && err.message === 'Command timed out'
}

export function redisConnectTimeoutMs(cfg: Pick<Config['redis'], 'commandTimeoutMs'>): number {
  return Math.max(cfg.commandTimeoutMs * 4, 1000)
}

// Commands fail at once while the connection is still being made (no offline queue): a
// replica that served before then would open its breaker on its first requests (a
// Cluster client, which first learns the slots, is ready later than a single
// connection). So start waits for it, a bounded time, and no longer than the first
// failed attempt: a Redis that is down at start only means serving without it.
export async function whenReady(redis: RedisClient, maxWaitMs: number): Promise<void> {
  if (redis.status === 'ready') return
  await new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer)
      for (const event of ['ready', 'error', 'end']) redis.off(event, done)
      resolve()
    }
    const timer = setTimeout(done, maxWaitMs)
    for (const event of ['ready', 'error', 'end']) redis.once(event, done)
  })
}

// ioredis rejects every command still queued when a connection is dropped, some of them
// (a MULTI's own) on promises nobody holds: a closing replica lets its commands finish
// (QUIT is answered after them), for a bounded time, before it drops the connection.
const QUIT_WAIT_MS = 1000

/** Closes a connection after the commands sent on it are answered, or after QUIT_WAIT_MS. */
export async function closeRedis(client: RedisClient): Promise<void> {
  if (client.status !== 'ready') {
    client.disconnect()
    return
  }
  const timer = setTimeout(() => client.disconnect(), QUIT_WAIT_MS)
  try {
    await client.quit()
  } catch {
    client.disconnect()
  } finally {
    clearTimeout(timer)
  }
}

/** Deletes a lock key only while it holds its owner's token (KEYS[1], ARGV[1]): only its owner releases a lock. */
export const RELEASE_IF_OWNER = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`

export type BreakerState = 'closed' | 'open' | 'half-open'

/**
 * A write refused by a Redis that still answers: out of memory under
 * noeviction (OOM), a read-only replica (READONLY), a failed snapshot (MISCONF). Reads
 * go on; it is no outage.
 */
export function refusesWrites(err: unknown): boolean {
  return err instanceof ReplyError && /^(OOM|READONLY|MISCONF)\b/.test((err as Error).message)
}

/**
 * Redis is an accelerator, not a dependency (contract, readiness): after a failure the
 * gateway stops asking Redis for `cooldownMs`, then tries one command again.
 */
export class RedisBreaker {
  #state: BreakerState = 'closed'
  #openedAt = 0
  readonly #cooldownMs: number
  readonly #log: Logger
  readonly #now: () => number
  readonly #onChange: ((state: BreakerState) => void) | undefined
  readonly #address: string
  readonly #cause: (err: unknown) => string
  readonly #onWritable: ((writable: boolean) => void) | undefined
  readonly #onSkippedWrite: (() => void) | undefined
  /** When Redis last refused a write; 0 while it accepts them. */
  #refusedAt = 0
  readonly #lateAfterMs: number

  constructor(opts: {
    cooldownMs: number
    log: Logger
    now?: () => number
    onChange?: (state: BreakerState) => void
    /** Where Redis is (redisAddress), named in every transition's log line. */
    address?: string
    /** Why a command failed (failureCause). */
    cause?: (err: unknown) => string
    /** Redis began (false) or ceased (true) refusing writes. */
    onWritable?: (writable: boolean) => void
    /** A write not sent: Redis refuses writes. */
    onSkippedWrite?: () => void
    /** The client's command timeout (redis.commandTimeout): a timeout that fired well after it says nothing of Redis. */
    commandTimeoutMs?: number
  }) {
    this.#lateAfterMs = (opts.commandTimeoutMs ?? Number.POSITIVE_INFINITY) * LATE_TIMEOUT_FACTOR
    this.#onWritable = opts.onWritable
    this.#onSkippedWrite = opts.onSkippedWrite
    this.#cooldownMs = opts.cooldownMs
    this.#log = opts.log
    this.#now = opts.now ?? systemClock.now
    this.#onChange = opts.onChange
    this.#address = opts.address ?? 'redis'
    this.#cause = opts.cause ?? ((err) => (err as Error).message)
  }

  get state(): BreakerState {
    return this.#state
  }

  /** False while Redis refuses writes (refusesWrites) and answers reads. */
  get writable(): boolean {
    return this.#refusedAt === 0
  }

  /** Runs `fn` unless the circuit is open; a failure opens it. Returns `fallback` then. */
  async run<T, F>(fn: () => Promise<T>, fallback: F): Promise<T | F> {
    if (this.#state === 'open') {
      if (this.#now() - this.#openedAt < this.#cooldownMs) return fallback
      this.#transition('half-open')
    }
    const started = this.#now()
    try {
      const result = await fn()
      if (this.#state !== 'closed') this.#transition('closed')
      return result
    } catch (err) {
      if (refusesWrites(err)) this.#refused(err)
      else if (!(timedOut(err) && this.#now() - started >= this.#lateAfterMs)) this.fail(err)
      return fallback
    }
  }

  /**
   * A command that writes: like run, but not sent while Redis refuses writes, for a
   * cooldown after each refusal; then one is tried again, and its success ends the state.
   */
  async write<T, F>(fn: () => Promise<T>, fallback: F): Promise<T | F> {
    if (this.#refusedAt > 0 && this.#now() - this.#refusedAt < this.#cooldownMs) {
      this.#onSkippedWrite?.()
      return fallback
    }
    let done = false
    const result = await this.run(async () => {
      const r = await fn()
      done = true
      return r
    }, fallback)
    if (done && this.#refusedAt > 0) {
      this.#refusedAt = 0
      this.#log.info({ redis: this.#address }, 'redis accepts writes again')
      this.#onWritable?.(true)
    }
    return result
  }

  #refused(err: unknown): void {
    const first = this.#refusedAt === 0
    this.#refusedAt = this.#now()
    if (!first) return
    this.#log.warn({ redis: this.#address, cause: (err as Error).message }, 'redis refuses writes: reading from it, writing nothing to it')
    this.#onWritable?.(false)
  }

  /**
   * Runs `fn` now, within the cooldown too: the watch's trial of a Redis that may be back.
   * Its success closes the circuit; its failure keeps it open for another cooldown.
   */
  async trial(fn: () => Promise<unknown>): Promise<boolean> {
    try {
      await fn()
      if (this.#state !== 'closed') this.#transition('closed')
      return true
    } catch (err) {
      if (refusesWrites(err)) this.#refused(err)
      else this.fail(err)
      return false
    }
  }

  fail(err: unknown): void {
    this.#openedAt = this.#now()
    if (this.#state === 'open') return
    // A failed probe after a cooldown is the same outage: its line was logged when it began.
    if (this.#state === 'closed') this.#log.warn({ redis: this.#address, cause: this.#cause(err) }, 'redis unavailable: serving without it (circuit open)')
    this.#transition('open')
  }

  #transition(state: BreakerState): void {
    if (state === 'closed') this.#log.info({ redis: this.#address }, 'redis available again (circuit closed)')
    this.#state = state
    this.#onChange?.(state)
  }
}

type Handler = (message: string) => void

// A sealed message older than this (or dated this far ahead) is a replay, not news:
// replicas' clocks agree within seconds, and every message is acted on at once.
export const BUS_MESSAGE_MAX_AGE_MS = 60_000
// The senders (bus instances, by channel) whose nonces a replica remembers over a
// message's lifetime: far more than replicas start in two minutes; past it the one heard
// of longest ago goes, and with it any message sent before its last (seen-nonces.ts).
export const BUS_NONCES_MAX = 10_000

export interface RedisBusOptions {
  /** Seals every message published and opens every one received (GATEWAY_SECRET); null: messages travel as they are. */
  seal?: RedisSeal | null
  /** A message that did not verify, dropped. */
  onUnverified?: (channel: string) => void
}

/**
 * Pub/sub between replicas: token rotation, purges, lock wake-ups. Subscribing needs
 * a connection of its own; it is opened lazily, once. With a seal, a message is heard
 * only when a replica with the same GATEWAY_SECRET published it, on that channel,
 * within BUS_MESSAGE_MAX_AGE_MS, and only once: each carries a nonce, and a nonce heard
 * before is a replay (a captured message published again). A Redis writer's PUBLISH
 * reaches no handler.
 */
export class RedisBus {
  readonly #pub: RedisClient
  readonly #sub: RedisClient
  readonly #prefix: string
  readonly #handlers = new Map<string, Set<Handler>>()
  readonly #log: Logger
  readonly #seal: RedisSeal | null
  readonly #onUnverified: (channel: string) => void
  readonly #nonces = new SeenNonces({ maxAgeMs: BUS_MESSAGE_MAX_AGE_MS, maxEntries: BUS_NONCES_MAX })
  readonly #nonceSource = new NonceSource()

  constructor(client: RedisClient, prefix: string, log: Logger, opts: RedisBusOptions = {}) {
    this.#pub = client
    this.#prefix = prefix
    this.#log = log
    this.#seal = opts.seal ?? null
    this.#onUnverified = opts.onUnverified ?? (() => undefined)
    // The subscriber queues its SUBSCRIBE until connected; commands never wait on it.
    // ioredis's own resubscription after a reconnect is off: its SUBSCRIBE's promise is
    // held by nobody, and a connection dropped again before the answer rejects it
    // (MaxRetriesPerRequestError), which would end the process. (A Cluster's
    // subscriber handles its own.)
    this.#sub =
      client instanceof Cluster ? client.duplicate(undefined, { enableOfflineQueue: true }) : client.duplicate({ enableOfflineQueue: true, autoResubscribe: false })
    this.#sub.on('error', (err: Error) => log.debug({ err: { message: err.message } }, 'redis subscriber error'))
    this.#sub.on('message', (channel: string, wire: string) => {
      const handlers = this.#handlers.get(channel)
      if (!handlers) return
      const message = this.#open(channel, wire)
      if (message === null) {
        this.#onUnverified(channel)
        return
      }
      for (const handler of handlers) handler(message)
    })
    // Every channel, on every (re)connection: also one whose SUBSCRIBE failed (Redis
    // down or slow at start). SUBSCRIBE is idempotent; a failed one is made again on
    // the next connection.
    this.#sub.on('ready', () => {
      if (this.#handlers.size === 0) return
      this.#sub.subscribe(...this.#handlers.keys()).catch((err: Error) => {
        log.debug({ err: { message: err.message } }, 'redis resubscription failed; retried when the subscriber reconnects')
      })
    })
  }

  async subscribe(channel: string, handler: Handler): Promise<void> {
    const full = this.#prefix + channel
    let set = this.#handlers.get(full)
    if (!set) {
      set = new Set()
      this.#handlers.set(full, set)
      // Redis being out must not stop the gateway from starting: it serves without it.
      await this.#sub.subscribe(full).catch((err: Error) => {
        this.#log.warn({ err: { message: err.message }, channel: full }, 'redis subscription deferred until redis is reachable')
      })
    }
    set.add(handler)
  }

  /** Whether what arrives was published by a replica of this gateway (a seal), not by anyone who may write to Redis. */
  get authenticated(): boolean {
    return this.#seal !== null
  }

  // A message's date is read on the system clock, not on the clock the gateway is handed:
  // it travels between processes, which agree on real time only.
  async publish(channel: string, message: string): Promise<void> {
    const full = this.#prefix + channel
    await this.#pub.publish(full, this.#seal ? this.#seal.sealText(full, `${systemClock.now()}.${this.#nonceSource.next()}.${message}`) : message)
  }

  /** `<sent at>.<nonce>.<message>`, sealed: the message, or null when it is not this gateway's, is too old, or was heard before. */
  #open(channel: string, wire: string): string | null {
    if (!this.#seal) return wire
    const dated = this.#seal.openText(channel, wire)
    if (dated === null) return null
    const dot = dated.indexOf('.')
    const second = dot < 0 ? -1 : dated.indexOf('.', dot + 1)
    if (second < 0) return null
    const nonce = dated.slice(dot + 1, second)
    if (!this.#nonces.take(channel, nonce, Number(dated.slice(0, dot)), systemClock.now())) return null
    return dated.slice(second + 1)
  }

  async close(): Promise<void> {
    await closeRedis(this.#sub)
  }
}
