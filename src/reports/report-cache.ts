import { gunzipSync, createGunzip } from 'node:zlib'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Logger } from 'pino'
import type { Dispatcher } from 'undici'
import type { Config } from '../config.js'
import type { Metrics } from '../metrics.js'
import type { RedisBus } from '../redis.js'
import type { TokenProvider } from '../platform/token-provider.js'
import type { CacheEntry } from '../cache/cache-entry.js'
import type { MemoryStore } from '../cache/memory-store.js'
import type { RedisStore } from '../cache/redis-store.js'
import { SingleFlight, type ReplicaLock } from '../cache/single-flight.js'
import { reportCacheKey } from './cache-key.js'
import { PurgeIncompleteError } from '../errors.js'
import { fetchReport, type FetchResult } from './report-fetcher.js'
import type { CanonicalReport } from './report-query.js'

export type CacheStatus = 'HIT' | 'MISS' | 'STALE' | 'REFRESH' | 'BYPASS'
type Tier = 'l1' | 'l2' | 'platform'

type FillResult = FetchResult & { fromPeer?: boolean; taken?: boolean }

const PURGE_CHANNEL = 'purge'

export interface ReportCacheDeps {
  config: Config
  l1: MemoryStore
  l2: RedisStore | null
  lock: ReplicaLock | null
  bus: RedisBus | null
  metrics: Metrics
  log: Logger
  dispatcher: Dispatcher
  now?: () => number
}

/**
 * The report read path of design.md: L1 → L2 → one coalesced platform call, with
 * stale-while-revalidate and stale-if-error.
 */
export class ReportCache {
  readonly #d: ReportCacheDeps
  readonly #flights = new SingleFlight<FillResult>()
  // A burst of callers for one key makes one L2 read per process, not one each.
  readonly #l2Reads = new SingleFlight<CacheEntry | null>()
  readonly #now: () => number

  constructor(deps: ReportCacheDeps) {
    this.#d = deps
    this.#now = deps.now ?? Date.now
  }

  async start(): Promise<void> {
    await this.#d.lock?.start()
    await this.#d.bus?.subscribe(PURGE_CHANNEL, (message) => void this.#purgeLocal(message))
  }

  /** The cache key of a report read with a credential's token. */
  keyFor(credential: string, report: CanonicalReport): string {
    const { config } = this.#d
    return reportCacheKey({ credential, report }, { prefix: config.redis.keyPrefix, version: config.cache.keyVersion })
  }

  async serve(
    request: FastifyRequest,
    reply: FastifyReply,
    report: CanonicalReport,
    provider: TokenProvider,
    key: string = this.keyFor(provider.name, report),
  ): Promise<FastifyReply> {
    const refresh = wantsRefresh(request)
    let stale: { entry: CacheEntry; tier: Tier } | null = null
    if (!refresh) {
      const found = await this.#lookup(key)
      if (found) {
        const now = this.#now()
        if (now < found.entry.freshUntil) return this.#sendEntry(request, reply, found.entry, 'HIT', found.tier)
        if (now < found.entry.staleUntil) {
          this.#refreshInBackground(key, report, provider, request.id)
          return this.#sendEntry(request, reply, found.entry, 'STALE', found.tier)
        }
        stale = found
      }
    }
    // A refresh must not be answered with the copy it asked to bypass.
    const result = await this.#fill(key, report, provider, request.id, refresh ? this.#now() : 0)
    switch (result.kind) {
      case 'entry':
        return this.#sendEntry(request, reply, result.entry, refresh ? 'REFRESH' : 'MISS', result.fromPeer ? 'l2' : 'platform')
      case 'pass':
        this.#count('BYPASS', 'platform')
        return reply.code(result.status).headers(result.headers).header('x-cache', 'BYPASS').send(result.body)
      case 'oversize':
        return this.#sendOversize(request, reply, result, report, provider)
      case 'failed': {
        stale ??= refresh ? await this.#lookup(key) : null
        if (stale && this.#now() < stale.entry.errorUntil) {
          request.log.warn({ err: result.error }, 'platform failed; serving a stale copy')
          return this.#sendEntry(request, reply, stale.entry, 'STALE', stale.tier)
        }
        if (result.response && result.response.status === 429) {
          return reply.code(429).headers(result.response.headers).header('x-cache', 'BYPASS').send(result.response.body)
        }
        throw result.error
      }
    }
  }

  async purgeAll(): Promise<number> {
    const local = await this.#d.l1.purgeAll()
    return this.#purgeShared(local, async (l2) => l2.purgeAll(), { all: true })
  }

  async purgeAdvertiser(advertiserId: number): Promise<number> {
    const local = await this.#d.l1.purgeAdvertiser(advertiserId)
    return this.#purgeShared(local, async (l2) => l2.purgeAdvertiser(advertiserId), { advertiserId })
  }

  // A purge that cannot reach Redis says so (503) rather than pretending every replica
  // and L2 were purged; the caller can repeat it once Redis is back.
  async #purgeShared(local: number, purgeL2: (l2: RedisStore) => Promise<number>, message: object): Promise<number> {
    const { l2, bus } = this.#d
    if (!l2) return local
    try {
      const dropped = await purgeL2(l2)
      await bus?.publish(PURGE_CHANNEL, JSON.stringify(message))
      return dropped
    } catch (err) {
      throw new PurgeIncompleteError((err as Error).message, { cause: err })
    }
  }

  async #purgeLocal(message: string): Promise<void> {
    try {
      const m = JSON.parse(message) as { all?: boolean; advertiserId?: number }
      if (m.all) await this.#d.l1.purgeAll()
      else if (typeof m.advertiserId === 'number') await this.#d.l1.purgeAdvertiser(m.advertiserId)
    } catch (err) {
      this.#d.log.warn({ err }, 'ignoring a malformed purge message')
    }
  }

  async #lookup(key: string): Promise<{ entry: CacheEntry; tier: Tier } | null> {
    const local = this.#d.l1.getSync(key)
    if (local && this.#now() < local.freshUntil) return { entry: local, tier: 'l1' }
    // A stale L1 copy may have been refreshed by another replica: take theirs before
    // serving stale and calling the platform again.
    const l2 = this.#d.l2
    const shared = l2 ? await this.#l2Reads.run(key, () => l2.get(key)) : null
    if (shared && this.#now() < shared.errorUntil && (!local || shared.fetchedAt > local.fetchedAt)) {
      await this.#fillL1(key, shared)
      return { entry: shared, tier: 'l2' }
    }
    return local ? { entry: local, tier: 'l1' } : null
  }

  async #fillL1(key: string, entry: CacheEntry): Promise<void> {
    // With L1 off (l1MaxBytes: 0) an L2 hit decompresses only for callers without gzip.
    if (!this.#d.l1.enabled) return
    // Decompressed once here, so that no hit from L1 ever (de)compresses.
    entry.identity ??= gunzipSync(entry.gzip)
    await this.#d.l1.set(key, entry)
  }

  #refreshInBackground(key: string, report: CanonicalReport, provider: TokenProvider, requestId: string): void {
    if (this.#flights.has(key)) return
    this.#fill(key, report, provider, requestId, 0).then(
      (result) => {
        // Nobody reads this answer: an unread oversize body would hold its connection open.
        if (result.kind === 'oversize' && !result.taken) {
          result.taken = true
          void result.rest[Symbol.asyncIterator]().return?.()
        }
      },
      (err: unknown) => this.#d.log.warn({ err }, 'background refresh of a report failed'),
    )
  }

  /**
   * One platform call per key in this process, and with Redis one across replicas.
   * A waiter on another replica's fill accepts only an entry fetched at `notBefore` or later.
   */
  #fill(key: string, report: CanonicalReport, provider: TokenProvider, requestId: string, notBefore: number): Promise<FillResult> {
    return this.#flights.run(key, async () => {
      const lock = this.#d.lock
      const outcome = lock ? await lock.acquire(key) : ({ role: 'solo' } as const)
      if (outcome.role === 'waiter') {
        // Background refreshes wait too: a caller may have joined this flight, and the
        // other replica's fill is what this one's L1 needs anyway.
        const l2 = this.#d.l2 as RedisStore
        const found = await (lock as ReplicaLock).waitForFill(key, async () => {
          const e = await l2.get(key)
          return e && this.#now() < e.freshUntil && e.fetchedAt >= notBefore ? e : null
        })
        if (found) {
          await this.#fillL1(key, found)
          return { kind: 'entry', entry: found, fromPeer: true }
        }
        // The leader took too long or failed: go upstream, but leave storing to it.
        return this.#callPlatform(report, provider, requestId)
      }
      let result: FetchResult
      try {
        result = await this.#callPlatform(report, provider, requestId)
        if (result.kind === 'entry') {
          await this.#d.l1.set(key, result.entry)
          if (outcome.role === 'leader') await this.#d.l2?.set(key, result.entry)
        }
      } finally {
        // Callers are answered while the lock is released and waiters are woken.
        if (outcome.role === 'leader') void outcome.release().catch((err: unknown) => this.#d.log.warn({ err }, 'releasing a cache fill lock failed'))
      }
      return result
    })
  }

  async #callPlatform(report: CanonicalReport, provider: TokenProvider, requestId: string): Promise<FetchResult> {
    const { config, metrics } = this.#d
    const end = metrics.upstreamDuration.startTimer()
    const result = await fetchReport(provider.credential.baseUrl ?? (config.platform.baseUrl as string), report, provider, requestId, {
      dispatcher: this.#d.dispatcher,
      timeoutMs: config.platform.timeoutMs,
      maxEntryBytes: config.cache.maxEntryBytes,
      ttl: { ...config.cache.ttl, ...config.cache },
      now: this.#now,
    })
    const outcome = result.kind === 'failed' ? result.error.code : result.kind
    end({ status: outcome })
    metrics.platformCalls.inc({ outcome })
    return result
  }

  #sendEntry(request: FastifyRequest, reply: FastifyReply, entry: CacheEntry, status: CacheStatus, tier: Tier): FastifyReply {
    this.#count(status, tier)
    const now = this.#now()
    reply
      .header('content-type', entry.contentType)
      .header('x-cache', status)
      .header('vary', 'accept-encoding')
      .header('cache-control', `private, max-age=${Math.max(0, Math.floor((entry.freshUntil - now) / 1000))}`)
    if (status === 'HIT' || status === 'STALE') reply.header('age', String(Math.max(0, Math.floor((now - entry.fetchedAt) / 1000))))
    if (acceptsGzip(request.headers['accept-encoding'])) return reply.header('content-encoding', 'gzip').send(entry.gzip)
    return reply.send(entry.identity ?? gunzipSync(entry.gzip))
  }

  async #sendOversize(
    request: FastifyRequest,
    reply: FastifyReply,
    result: Extract<FillResult, { kind: 'oversize' }>,
    report: CanonicalReport,
    provider: TokenProvider,
  ): Promise<FastifyReply> {
    let own: FetchResult = result
    if (result.taken) {
      // Another caller coalesced onto this call holds its stream: make a call of our own.
      own = await this.#callPlatform(report, provider, request.id)
      if (own.kind !== 'oversize') return this.serve(request, reply, report, provider)
    }
    result.taken = true
    const { headers, head, rest } = own as Extract<FillResult, { kind: 'oversize' }>
    this.#count('BYPASS', 'platform')
    const { Readable } = await import('node:stream')
    const stream = Readable.from((async function* () {
      yield* head
      yield* rest
    })())
    const gzipped = headers['content-encoding'] === 'gzip'
    reply.code(200).header('content-type', headers['content-type'] ?? 'application/json').header('x-cache', 'BYPASS')
    if (gzipped && !acceptsGzip(request.headers['accept-encoding'])) return reply.send(stream.pipe(createGunzip()))
    if (gzipped) reply.header('content-encoding', 'gzip')
    return reply.send(stream)
  }

  #count(result: CacheStatus, tier: Tier): void {
    this.#d.metrics.cacheRequests.inc({ result, tier })
  }
}

function wantsRefresh(request: FastifyRequest): boolean {
  const cc = request.headers['cache-control']
  return (typeof cc === 'string' && /(^|,)\s*no-cache\s*(,|$)/i.test(cc)) || request.headers.pragma === 'no-cache'
}

export function acceptsGzip(header: string | string[] | undefined): boolean {
  if (typeof header !== 'string') return false
  for (const part of header.split(',')) {
    const [coding, ...params] = part.trim().split(';')
    if (coding?.trim().toLowerCase() !== 'gzip' && coding?.trim() !== '*') continue
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='))
    return q === undefined || Number(q.slice(2)) > 0
  }
  return false
}
