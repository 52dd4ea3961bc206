import type { Logger } from 'pino'
import type { RedisSeal } from './seal.js'
import { NonceSource, SeenNonces } from './seen-nonces.js'
import { systemClock } from '../clock.js'
import { Cluster, type Redis } from 'ioredis'
import { clientDatabase, closeRedis, commandFailureInWords, overTls, overTlsAlone, type RedisClient } from './client.js'

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
  /** How long subscribe waits for a SUBSCRIBE while the subscriber has not connected (default 2 s). */
  startWaitMs?: number
}

const START_WAIT_MS = 2000

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
  readonly #startWaitMs: number
  // The subscriber failed to connect, and has not connected since.
  #unreachable = false
  /** The subscriber's last connection error (ECONNREFUSED, WRONGPASS…), until it is ready: why a SUBSCRIBE failed. */
  #connectionError: string | null = null
  /** A deferred subscription was logged at warn since the subscriber was last connected: the others are at debug. */
  #deferralWarned = false
  readonly #joined = new Set<() => void>()

  constructor(client: RedisClient, prefix: string, log: Logger, opts: RedisBusOptions = {}) {
    this.#pub = client
    // Redis delivers a message to every subscriber of its channel, whatever database each
    // connection selected: a deployment in another database of the same Redis (REDIS_URL's
    // /<db>) hears its own channels only. Database 0's channels are named as they always were.
    const db = clientDatabase(client)
    this.#prefix = db === 0 ? prefix : `${prefix}db${db}:`
    this.#log = log
    this.#seal = opts.seal ?? null
    this.#onUnverified = opts.onUnverified ?? (() => undefined)
    this.#startWaitMs = opts.startWaitMs ?? START_WAIT_MS
    // The subscriber queues its SUBSCRIBE until connected; commands never wait on it.
    // ioredis's own resubscription after a reconnect is off: its SUBSCRIBE's promise is
    // held by nobody, and a connection dropped again before the answer rejects it
    // (MaxRetriesPerRequestError), which would end the process. (A Cluster's
    // subscriber handles its own.)
    this.#sub =
      client instanceof Cluster ? client.duplicate(undefined, { enableOfflineQueue: true }) : client.duplicate({ enableOfflineQueue: true, autoResubscribe: false })
    this.#sub.on('error', (err: Error) => {
      this.#unreachable = true
      this.#connectionError = overTls(err.message, overTlsAlone(this.#sub))
      log.debug({ err: { message: err.message } }, 'redis subscriber error')
    })
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
    if (this.#sub instanceof Cluster) this.#onClusterSubscriberMoved(this.#sub)
    // Every channel, on every (re)connection: also one whose SUBSCRIBE failed (Redis
    // down or slow at start). SUBSCRIBE is idempotent; a failed one is made again on
    // the next connection.
    this.#sub.on('ready', () => {
      this.#unreachable = false
      this.#connectionError = null
      this.#deferralWarned = false
      this.#subscribeAll(this.#sub)
    })
  }

  /** Every channel subscribed on `connection`, then the onSubscribed handlers run: what was published meanwhile is read again. */
  #subscribeAll(connection: { subscribe(...channels: string[]): Promise<unknown> }): void {
    if (this.#handlers.size === 0) return
    connection.subscribe(...this.#handlers.keys()).then(
      () => this.#joined.forEach((fn) => fn()),
      (err: Error) => {
        this.#log.debug({ err: { message: err.message } }, 'redis resubscription failed; retried when the subscriber reconnects')
      },
    )
  }

  /**
   * A Cluster's subscriber is a connection to one node that ioredis replaces by one to
   * another node when that node's connection ends (a node killed, a replica as well as a
   * master), subscribing the channels there itself: the Cluster emits no 'ready' then, and
   * what was published while no node delivered to this replica never reaches it. So each
   * new subscriber connection, once subscribed, runs the onSubscribed handlers, as a
   * reconnection does.
   */
  #onClusterSubscriberMoved(cluster: Cluster): void {
    const subscriber = (cluster as unknown as { subscriber?: { selectSubscriber?: () => void; getInstance?: () => Redis | null } }).subscriber
    const select = subscriber?.selectSubscriber
    if (!subscriber || typeof select !== 'function' || typeof subscriber.getInstance !== 'function') return
    subscriber.selectSubscriber = () => {
      const before = subscriber.getInstance?.() ?? null
      select.call(subscriber)
      const instance = subscriber.getInstance?.() ?? null
      // The first subscriber of a start is the Cluster's own 'ready', handled below.
      if (before === null || instance === null) return
      instance.once('ready', () => this.#subscribeAll(instance))
    }
  }

  /**
   * `fn` runs each time the subscriber's channels are subscribed again on a new
   * connection (a start whose subscriber connected late, a reconnect): what was published
   * while it was away never reaches it, so what the messages carry is to be read again then.
   */
  onSubscribed(fn: () => void): void {
    this.#joined.add(fn)
  }

  async subscribe(channel: string, handler: Handler): Promise<void> {
    const full = this.#prefix + channel
    let set = this.#handlers.get(full)
    if (!set) {
      set = new Set()
      this.#handlers.set(full, set)
      // Redis being out must not stop the gateway from starting: it serves without it.
      // Once the subscriber failed to connect, the channel waits for the next connection
      // (every channel is subscribed on 'ready') rather than for this SUBSCRIBE to fail.
      // A SUBSCRIBE sent before the subscriber's connection first failed may never be
      // answered (a Cluster's subscriber holds it through every failed reconnect): it is
      // waited for at most startWaitMs unless the subscriber is connected.
      const subscribing = this.#sub.subscribe(full).catch((err: Error) => {
        // One warn line an outage: a start subscribes a dozen channels, each deferred alike.
        const level = this.#deferralWarned ? 'debug' : 'warn'
        this.#deferralWarned = true
        const cause = this.#connectionError ?? commandFailureInWords(err)
        this.#log[level]({ cause, channel: full }, 'redis subscription deferred until redis is reachable')
      })
      if (this.#sub.status === 'ready') await subscribing
      else if (!this.#unreachable) await settledWithin(subscribing, this.#startWaitMs)
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

  /**
   * The subscribers of `channel` now, this replica's own included: on a Cluster, those of
   * every node (a subscriber joins any node, and a PUBLISH, forwarded to every node, counts
   * those of the node it was sent to alone). A node that cannot say counts none.
   */
  async subscribers(channel: string): Promise<number> {
    const full = this.#prefix + channel
    const nodes = this.#pub instanceof Cluster ? this.#pub.nodes('all') : [this.#pub]
    const counts = await Promise.all(nodes.map(async (node) => Number(((await node.pubsub('NUMSUB', full).catch(() => [])) as unknown[])[1] ?? 0)))
    return counts.reduce((sum, n) => sum + n, 0)
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

/** Waits for `promise` (which never rejects) or `ms`, whichever comes first. */
async function settledWithin(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  await Promise.race([promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))])
  clearTimeout(timer)
}
