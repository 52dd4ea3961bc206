import { Redis, Cluster, type RedisOptions } from 'ioredis'
import type { Logger } from 'pino'
import type { Config } from '../config.js'
import { SentinelStreams, StandaloneStreams } from './stream-errors.js'
import { explainSentinelError } from './sentinel-errors.js'
import { unreachedMasters } from './cluster-masters.js'
import { hostPort } from '../host-port.js'

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
    Connector: StandaloneStreams,
    ...(fromUrl?.username ? { username: decodeURIComponent(fromUrl.username) } : {}),
    ...(fromUrl?.password ? { password: decodeURIComponent(fromUrl.password) } : {}),
    // A node is checked against the host it is reached by, unless tlsServername names
    // what every node's certificate holds (nodes announced by IP).
    ...(fromUrl?.protocol === 'rediss:' ? { tls: cfg.tlsServername ? { servername: cfg.tlsServername } : {} } : {}),
  }
  let client: RedisClient
  if (cfg.cluster) {
    client = new SlotMovingCluster(cfg.cluster, { redisOptions: common, enableOfflineQueue: false, clusterRetryStrategy: reconnectDelay })
  } else if (cfg.sentinels) {
    // ioredis reaches the master a Sentinel names without TLS unless told: rediss:// holds
    // behind Sentinel too, and the password never crosses the network in clear.
    client = new Redis({
      ...common,
      Connector: SentinelStreams,
      sentinels: cfg.sentinels,
      name: cfg.sentinelName,
      enableTLSForSentinelMode: common.tls !== undefined,
      // The Sentinels themselves: over TLS only when told (many listen in clear beside a
      // TLS master), each checked as a node is; their own password, never the nodes'.
      ...(cfg.sentinelTls ? { sentinelTLS: common.tls } : {}),
      ...(cfg.sentinelPassword ? { sentinelPassword: cfg.sentinelPassword } : {}),
      // The database REDIS_URL names, as a standalone Redis takes it from the URL.
      db: fromUrl ? urlDatabase(fromUrl) : 0,
    })
  } else {
    client = new Redis(cfg.url as string, common)
  }
  // ioredis emits every failed reconnect; the breaker logs transitions instead, with
  // the connection's last error as their cause.
  const sentinels = cfg.sentinels?.map((n) => hostPort(n.host, n.port)).join(',')
  const tls = overTlsAlone(client)
  const explain = (message: string) => (sentinels === undefined ? overTls(message, tls) : explainSentinelError(message, cfg.sentinelName, sentinels))
  const database = clientDatabase(client)
  let missingDatabase = false
  client.on('error', (err: Error) => {
    // Redis refused the SELECT of REDIS_URL's database (none such, or not its ACL user's to
    // select), and ioredis goes on in database 0, another deployment's: the connection is
    // dropped for good (before its first command: the refusal is read before the ready
    // check's answer), and its cause stays this one.
    if (missingDatabase) return
    if (database !== 0 && MISSING_DATABASE.test(err.message)) {
      missingDatabase = true
      connectionErrors.set(client, `REDIS_URL names database ${database}, which Redis refused to select (${err.message}): its commands are not sent to another database in its place; name a database it has (CONFIG GET databases) that its user may select, and restart`)
      client.disconnect()
      return
    }
    const cause = explain(commandFailureInWords(err))
    if (cause !== null) connectionErrors.set(client, cause)
    log.debug({ err: { message: err.message } }, 'redis connection error')
  })
  client.on('ready', () => {
    if (!missingDatabase) connectionErrors.delete(client)
    // Behind Sentinels, the master they named is the host the connection reached.
    const stream = client instanceof Redis && sentinels !== undefined ? client.stream : undefined
    if (stream?.remoteAddress && stream.remotePort !== undefined) sentinelMasters.set(client, hostPort(stream.remoteAddress, stream.remotePort))
  })
  return client
}

const connectionErrors = new WeakMap<RedisClient, string>()
// The master a Sentinel-routed client last reached (host:port), as the Sentinels named it.
const sentinelMasters = new WeakMap<RedisClient, string>()

// Redis' refusal of a SELECT: past its `databases` (7.x; "invalid DB index" before), or of an ACL user without it.
const MISSING_DATABASE = /^ERR (DB index is out of range|invalid DB index)|^NOPERM .*'select' command/

/**
 * Whether Redis answered TRYAGAIN: a Cluster slot that a resharding holds split between
 * two masters, and a command on several of its keys, some moved and some not yet. Redis
 * answers; the command cannot run until the slot's last key has moved.
 */
export function answeredTryAgain(err: unknown): boolean {
  return err instanceof Error && /^TRYAGAIN\b/.test(err.message)
}

/**
 * A Cluster client whose command answered TRYAGAIN fails with it at once. ioredis asks
 * again, on a random node, after MOVED and ASK, until its redirection limit or the
 * command timeout: the slot stays split for the whole resharding of its keys, so the
 * command timed out, and a timeout says Redis does not answer (the breaker opened on it).
 * The TRYAGAIN says Redis answers (the breaker keeps the circuit closed for it), and the
 * caller has its fallback without waiting for the timeout. MOVED and ASK are followed as
 * ioredis follows them. `handleError` is a method ioredis marks `@ignore` (not its public
 * API): test/unit/redis-slot-moving.test.ts fails when an ioredis upgrade renames it or
 * stops calling it (docs/decisions/ioredis-internals.md).
 */
export class SlotMovingCluster extends Cluster {
  override handleError(error: Error, ttl: { value?: unknown }, handlers: { defaults(): void }): void {
    if (answeredTryAgain(error)) handlers.defaults()
    else super.handleError(error, ttl, handlers)
  }
}

/** The database a Redis URL names (`/<db>`; none is 0). */
function urlDatabase(url: URL): number {
  return Number(url.pathname.slice(1) || 0)
}

/**
 * The database a client's commands use: a Cluster has database 0 alone. Pub/sub is not
 * per database, so the bus names it in its channels (bus.ts).
 */
export function clientDatabase(client: RedisClient): number {
  return client instanceof Cluster ? 0 : (client.options.db ?? 0)
}

// A lost connection is made again after 100, 200, 400 ms, then every RECONNECT_MAX_MS: a
// Redis back after an outage is used again within about that (readiness, single-flight
// across replicas, seats), and a refused connection costs Redis nothing.
export const RECONNECT_MAX_MS = 500

/** The wait before the `times`-th attempt to connect again. */
export function reconnectDelay(times: number): number {
  return Math.min(100 * 2 ** Math.max(0, times - 1), RECONNECT_MAX_MS)
}

/**
 * What a command's failure says of Redis: a transaction Redis discarded (EXECABORT) is
 * its first queued command's error (OOM, READONLY…), which says why; ioredis lists them in
 * `previousErrors`. Any other failure is itself.
 */
export function transactionFailure(err: unknown): unknown {
  const previous = (err as { previousErrors?: unknown } | null)?.previousErrors
  return Array.isArray(previous) && previous[0] instanceof Error ? previous[0] : err
}

/**
 * Where Redis is, for log lines and the start line: host:port, never the URL's
 * user or password.
 */
export function redisAddress(cfg: Pick<Config['redis'], 'url' | 'sentinels' | 'sentinelName' | 'cluster'>): string {
  const nodes = (list: { host: string; port: number }[]) => list.map((n) => hostPort(n.host, n.port)).join(',')
  if (cfg.cluster) return `cluster ${nodes(cfg.cluster)}`
  if (cfg.sentinels) return `sentinel ${cfg.sentinelName} via ${nodes(cfg.sentinels)}`
  if (!cfg.url) return 'none'
  const url = new URL(cfg.url)
  return `${url.hostname}:${url.port || '6379'}`
}

/**
 * Where a client's Redis is, for log lines: redisAddress, and behind Sentinels the master
 * they named last (the Sentinels answer while the master is gone: the master is where to
 * look), once the client has reached one.
 */
export function clientAddress(client: RedisClient, cfg: Pick<Config['redis'], 'url' | 'sentinels' | 'sentinelName' | 'cluster'>): string {
  const master = sentinelMasters.get(client)
  return master === undefined ? redisAddress(cfg) : `${redisAddress(cfg)} (master ${master} as they named it last)`
}

/**
 * Why a command failed: a command refused while disconnected says only that it was
 * refused, so the connection's own last error (ECONNREFUSED, a DNS failure, a wrong
 * password) is the cause then.
 */
export function failureCause(client: RedisClient, err: unknown): string {
  const own = commandFailureInWords(err)
  const cause = (client.status !== 'ready' ? connectionErrors.get(client) : undefined) ?? own
  const unreached = unreachedMasters(client)
  return unreached.length === 0 ? cause : `${cause} (cluster masters not reached: ${unreached.join(', ')})`
}

/**
 * A command's failure as what happened to its connection. The driver's own words for a
 * command whose connection closed under it (Redis stopped, restarted or failed over) and
 * for one it did not send while reconnecting name options of the driver
 * (`maxRetriesPerRequest`, `enableOfflineQueue`) that no setting of the gateway reaches.
 * A reset (Redis killed with bytes it had not read, or a write after its close) is the
 * connection closing too, abruptly: said so, with the system's word beside it. The
 * driver's `Connection is closed.` is a command on a connection it makes no more (one the
 * gateway dropped: a database Redis refused to select, a replica stopping).
 */
export function commandFailureInWords(err: unknown): string {
  const { name, message } = err instanceof Error ? err : { name: '', message: String(err) }
  if (name === 'MaxRetriesPerRequestError') return 'the connection to Redis closed with the command in flight'
  if (message.includes('enableOfflineQueue')) return 'not connected to Redis (reconnecting)'
  if (message === CONNECTION_ENDED) return 'not connected to Redis (the connection was closed and is not made again)'
  if (RESET.test(message)) return `the connection to Redis closed abruptly (${message})`
  return message
}

/**
 * Whether every connection of `client` is made over TLS to a node (`rediss://`, standalone or
 * Cluster). Behind Sentinels a connect that timed out may be a Sentinel's, in clear: false.
 */
export function overTlsAlone(client: RedisClient): boolean {
  if (client instanceof Cluster) return client.options.redisOptions?.tls !== undefined
  return client.options.tls !== undefined && client.options.sentinels == null
}

/**
 * A connect that timed out over TLS (`rediss://`) says what that may be: a Redis listening
 * in clear on that port reads the TLS handshake as an unfinished command and answers
 * nothing, so the connect times out as for an address nothing answers at.
 */
export function overTls(message: string, tls: boolean): string {
  if (!tls || message !== 'connect ETIMEDOUT') return message
  return `${message} (over TLS, as REDIS_URL's rediss:// says: a Redis that listens in clear on that port never answers the TLS handshake; redis:// reaches it in clear, its tls-port over TLS)`
}

const RESET = /\b(ECONNRESET|EPIPE)\b/
// ioredis's CONNECTION_CLOSED_ERROR_MSG.
const CONNECTION_ENDED = 'Connection is closed.'

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
