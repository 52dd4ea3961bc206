import { Readable } from 'node:stream'
import type { Logger } from 'pino'
import type { PlatformClient } from '../platform/platform-client.js'
import type { Config } from '../config.js'
import type { Metrics } from '../metrics.js'
import type { TokenProvider } from '../platform/token-provider.js'
import type { CacheEntry } from '../cache/cache-entry.js'
import { SingleFlight, type ReplicaLock } from '../cache/single-flight.js'
import type { TieredStore, Tier as StoreTier } from '../cache/tiered-store.js'
import { reportCacheKey } from './cache-key.js'
import { fetchReport, type FetchResult } from './report-fetcher.js'
import type { CanonicalReport } from './report-query.js'
import type { TeamUsage } from '../teams/team-usage.js'

export type CacheStatus = 'HIT' | 'MISS' | 'STALE' | 'REFRESH' | 'BYPASS'

/**
 * What a report read answers: an entry, or the platform's answer passed through uncached;
 * `upstreamMs`: how long the platform call it waited for took (the access log), absent
 * when none was made for it.
 */
export type CacheResult = (
  | { kind: 'entry'; entry: CacheEntry; status: 'HIT' | 'MISS' | 'STALE' | 'REFRESH' }
  | { kind: 'pass'; status: number; headers: Record<string, string>; body: Buffer }
  | { kind: 'stream'; headers: Record<string, string>; stream: Readable; gzipped: boolean }
) & { upstreamMs?: number }
type Tier = StoreTier | 'platform'

type FillResult = FetchResult & { fromPeer?: boolean; taken?: boolean; upstreamMs?: number }

/** Whom a read's platform calls count for (usage per team, issue #8). */
export interface CallTally {
  team: { name: string }
  /** Platform calls made for this read; a waiter on another's call makes none. */
  platformCalls: number
}

export interface ReadOptions {
  /** The caller asked for a fresh copy (REFRESH). */
  refresh: boolean
  tally: CallTally
  requestId: string
  /** The caller's team: its place in the credential's queue of platform calls. */
  team: string
  log: Pick<Logger, 'warn'>
}

/** Who a platform call is made for. */
type Origin = Pick<ReadOptions, 'requestId' | 'team' | 'tally'>

export interface ReportCacheDeps {
  config: Config
  store: TieredStore
  lock: ReplicaLock | null
  metrics: Metrics
  log: Logger
  client: PlatformClient
  usage: TeamUsage
  now?: () => number
}

/**
 * The report read path of design.md: L1 → L2 → one coalesced platform call, with
 * stale-while-revalidate and stale-if-error.
 */
export class ReportCache {
  readonly #d: ReportCacheDeps
  readonly #flights = new SingleFlight<FillResult>()
  readonly #now: () => number
  readonly #hitL1: { inc(): void }
  // Labelled metric children are looked up once per label set, not on every request.
  readonly #counters = new Map<string, { inc(): void }>()

  constructor(deps: ReportCacheDeps) {
    this.#d = deps
    this.#now = deps.now ?? Date.now
    this.#hitL1 = deps.metrics.cacheRequests.labels({ result: 'HIT', tier: 'l1' })
  }

  async start(): Promise<void> {
    await this.#d.lock?.start()
    await this.#d.store.start()
  }

  /** The cache key of a report read with a credential's token. */
  keyFor(credential: string, report: CanonicalReport): string {
    const { config } = this.#d
    return reportCacheKey({ credential, report }, { prefix: config.redis.keyPrefix, version: config.cache.keyVersion })
  }

  /**
   * A report read (design.md, "How a report read flows"): L1, then L2, then one coalesced
   * platform call; what to answer, not the answer itself. Throws the GW_* error to
   * answer when the platform failed and no stale copy may be served.
   */
  async read(report: CanonicalReport, key: string, provider: TokenProvider, opts: ReadOptions): Promise<CacheResult> {
    let stale: { entry: CacheEntry; tier: Tier } | null = null
    if (!opts.refresh) {
      const found = await this.#d.store.lookup(key)
      if (found) {
        const now = this.#now()
        if (now < found.entry.freshUntil) return this.#served(found.entry, 'HIT', found.tier)
        const paused = this.#d.client.paused(provider.name)
        if (now < found.entry.staleUntil) {
          if (!paused) this.#refreshInBackground(key, report, provider, opts)
          return this.#served(found.entry, 'STALE', found.tier)
        }
        // The platform has paused the credential (a 429): its copy now rather than after a wait in the queue.
        if (paused && now < found.entry.errorUntil) return this.#served(found.entry, 'STALE', found.tier)
        stale = found
      }
    }
    // A refresh must not be answered with the copy it asked to bypass.
    const result = await this.#fill(key, report, provider, opts, opts.refresh ? this.#now() : 0)
    const upstream = result.upstreamMs === undefined ? {} : { upstreamMs: result.upstreamMs }
    switch (result.kind) {
      case 'entry':
        return { ...this.#served(result.entry, opts.refresh ? 'REFRESH' : 'MISS', result.fromPeer ? 'l2' : 'platform'), ...upstream }
      case 'pass':
        this.#count('BYPASS', 'platform')
        return { kind: 'pass', status: result.status, headers: result.headers, body: result.body, ...upstream }
      case 'oversize':
        return this.#oversize(result, report, key, provider, opts)
      case 'failed': {
        stale ??= opts.refresh ? await this.#d.store.lookup(key) : null
        if (stale && this.#now() < stale.entry.errorUntil) {
          opts.log.warn({ err: result.error }, 'platform failed; serving a stale copy')
          return { ...this.#served(stale.entry, 'STALE', stale.tier), ...upstream }
        }
        if (result.response && result.response.status === 429) {
          this.#count('BYPASS', 'platform')
          return { kind: 'pass', ...result.response, ...upstream }
        }
        throw result.error
      }
    }
  }

  /** A fresh L1 entry, without a promise: what the fast path of hits serves. */
  freshInMemory(key: string): CacheEntry | null {
    return this.#d.store.freshInMemory(key)
  }

  purgeAll(): Promise<number> {
    return this.#d.store.purgeAll()
  }

  purgeAdvertiser(advertiserId: number): Promise<number> {
    return this.#d.store.purgeAdvertiser(advertiserId)
  }

  /** Counts a hit served outside `read` (the fast path). */
  countHit(): void {
    this.#hitL1.inc()
  }

  #refreshInBackground(key: string, report: CanonicalReport, provider: TokenProvider, origin: Origin): void {
    if (this.#flights.has(key)) return
    this.#fill(key, report, provider, origin, 0).then(
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
  #fill(key: string, report: CanonicalReport, provider: TokenProvider, origin: Origin, notBefore: number): Promise<FillResult> {
    return this.#flights.run(key, async () => {
      const lock = this.#d.lock
      const outcome = lock ? await lock.acquire(key) : ({ role: 'solo' } as const)
      if (outcome.role === 'waiter') {
        // Background refreshes wait too: a caller may have joined this flight, and the
        // other replica's fill is what this one's L1 needs anyway.
        const found = await outcome.wait(async () => {
          const e = await this.#d.store.getShared(key)
          return e && this.#now() < e.freshUntil && e.fetchedAt >= notBefore ? e : null
        })
        if (found) {
          await this.#d.store.keepLocally(key, found)
          return { kind: 'entry', entry: found, fromPeer: true }
        }
        // The leader took too long or failed: go upstream, but leave storing to it.
        return this.#callPlatform(report, provider, origin)
      }
      let result: FillResult
      try {
        result = await this.#callPlatform(report, provider, origin)
        // Only the lock's leader shares its copy: a solo fill (Redis out) keeps it here.
        if (result.kind === 'entry') await (outcome.role === 'leader' ? this.#d.store.set(key, result.entry) : this.#d.store.keepLocally(key, result.entry))
      } finally {
        // Callers are answered while the lock is released and waiters are woken.
        if (outcome.role === 'leader') void outcome.release().catch((err: unknown) => this.#d.log.warn({ err }, 'releasing a cache fill lock failed'))
      }
      return result
    })
  }

  // The call counts for the team whose read started it: a coalesced fill's leader.
  async #callPlatform(report: CanonicalReport, provider: TokenProvider, origin: Origin): Promise<FillResult> {
    const { config, metrics } = this.#d
    origin.tally.platformCalls += 1
    this.#d.usage.platformCall(origin.tally.team.name)
    const end = metrics.upstreamDuration.startTimer()
    const result: FillResult = await fetchReport(this.#d.client, provider, report, origin, {
      maxEntryBytes: config.cache.maxEntryBytes,
      ttl: { ...config.cache.ttl, ...config.cache },
      now: this.#now,
    })
    const outcome = result.kind === 'failed' ? result.error.code : result.kind
    result.upstreamMs = end({ status: outcome }) * 1000
    metrics.platformCalls.inc({ outcome })
    return result
  }

  #served(entry: CacheEntry, status: 'HIT' | 'MISS' | 'STALE' | 'REFRESH', tier: Tier): CacheResult {
    this.#count(status, tier)
    return { kind: 'entry', entry, status }
  }

  async #oversize(
    result: Extract<FillResult, { kind: 'oversize' }>,
    report: CanonicalReport,
    key: string,
    provider: TokenProvider,
    opts: ReadOptions,
  ): Promise<CacheResult> {
    let own: FillResult = result
    if (result.taken) {
      // Another caller coalesced onto this call holds its stream: make a call of our own.
      own = await this.#callPlatform(report, provider, opts)
      if (own.kind !== 'oversize') return this.read(report, key, provider, opts)
    }
    result.taken = true
    const { headers, head, rest } = own as Extract<FillResult, { kind: 'oversize' }>
    this.#count('BYPASS', 'platform')
    const stream = Readable.from((async function* () {
      yield* head
      yield* rest
    })())
    return { kind: 'stream', headers, stream, gzipped: headers['content-encoding'] === 'gzip', ...(own.upstreamMs === undefined ? {} : { upstreamMs: own.upstreamMs }) }
  }

  #count(result: CacheStatus, tier: Tier): void {
    const name = `${result} ${tier}`
    let counter = this.#counters.get(name)
    if (!counter) {
      counter = this.#d.metrics.cacheRequests.labels({ result, tier })
      this.#counters.set(name, counter)
    }
    counter.inc()
  }
}
