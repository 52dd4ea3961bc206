import type { Logger } from 'pino'
import { PurgeIncompleteError, PurgeUnrecordedError } from '../errors.js'
import { refusesWrites } from '../redis/breaker.js'
import type { RedisBus } from '../redis/bus.js'
import { inflate, type CacheEntry } from './cache-entry.js'
import type { CacheStore } from './cache-store.js'
import type { MemoryStore } from './memory-store.js'
import { SingleFlight } from './single-flight.js'
import { PurgeLedger, type Purge, type PurgeMark } from './purge-ledger.js'
import { systemClock } from '../clock.js'

export type Tier = 'l1' | 'l2'

// Keys checked in Redis at once when copies kept here are shared again (shareKept).
const SHARE_BATCH = 100

const PURGE_CHANNEL = 'purge'
// A report's cache key is its prefix, its version and a 43-character digest: a longer one in a message is not a key.
const MAX_KEY_CHARS = 512

/** What a TieredStore is built from; it keeps the object as given. */
interface TieredStoreOptions {
  l1: MemoryStore
  l2: CacheStore | null
  bus: RedisBus | null
  log: Logger
  now?: () => number
  /** cache.maxEntryBytes: no body is decompressed past it. */
  maxEntryBytes: number
  /** An entry of L2 refused (its body does not decompress within maxEntryBytes, or it was filled before a purge), read as a miss. */
  onRefused?: (key: string, why: string) => void
  /** The purges heard of; default: this replica's own, kept in memory. */
  purges?: PurgeLedger
}

/**
 * The report cache's two tiers as one store (docs/design.md): L1 in memory in front of L2 in
 * Redis, and purges that reach every replica's L1 through the bus. Without Redis it is
 * L1 alone. A purge is final (purge-ledger.ts): no entry filled before it is stored or
 * served again, whatever L2 holds.
 */
export class TieredStore implements CacheStore {
  readonly #o: TieredStoreOptions
  readonly #now: () => number
  readonly #onRefused: (key: string, why: string) => void
  readonly #purges: PurgeLedger
  // A burst of callers for one key makes one L2 read per process, not one each.
  readonly #l2Reads = new SingleFlight<CacheEntry | null>()

  #sharing = false
  #shareAgain = false

  constructor(opts: TieredStoreOptions) {
    this.#o = opts
    this.#now = opts.now ?? systemClock.now
    this.#onRefused = opts.onRefused ?? (() => undefined)
    this.#purges = opts.purges ?? new PurgeLedger({ keepMs: Number.POSITIVE_INFINITY, now: this.#now })
  }

  async start(): Promise<void> {
    const bus = this.#o.bus
    await bus?.subscribe(PURGE_CHANNEL, (message) => void this.#purgeLocal(message))
    // A purge announced while the subscriber was away (a reconnect) never reaches it:
    // the shared record is read again as it is back.
    bus?.onSubscribed(() => void this.catchUpPurges())
    // So is another replica's new copy (a forced refresh's) announced meanwhile: each copy
    // in memory is compared with Redis' as the subscriber is back.
    bus?.onSubscribed(() => void this.catchUpFills())
    // After subscribing: a purge made meanwhile is heard on the bus or read here.
    await this.#purges.load()
  }

  /** Reads the shared purges again (those announced while this replica did not hear the bus) and drops the copies in memory they reach. */
  async catchUpPurges(): Promise<void> {
    await this.#purges.catchUp()
    for (const [key, entry] of [...this.#o.l1.entries()]) if (this.#purges.refuses(entry, key)) await this.#o.l1.delete(key)
  }

  /** A fresh L1 entry, without a promise (the fast path of hits), as of `now`; read for `team`, it counts on that team (MemoryStore `getSync`). */
  freshInMemory(key: string, now: number, team?: string): CacheEntry | null {
    const entry = this.#o.l1.getSync(key, now, team)
    return entry && now < entry.freshUntil ? entry : null
  }

  async get(key: string): Promise<CacheEntry | null> {
    return (await this.lookup(key))?.entry ?? null
  }

  /** The best copy and where it came from: a fresh L1 one, else L2's if newer, else L1's; read for `team` (given), the L1 copy counts on that team (MemoryStore `getSync`). */
  async lookup(key: string, team?: string): Promise<{ entry: CacheEntry; tier: Tier } | null> {
    const local = this.#o.l1.getSync(key, this.#now(), team)
    if (local && this.#now() < local.freshUntil) return { entry: local, tier: 'l1' }
    // A stale L1 copy may have been refreshed by another replica: take theirs before
    // serving stale and calling the platform again.
    const shared = await this.getShared(key)
    if (shared && this.#now() < shared.errorUntil && (!local || shared.fetchedAt > local.fetchedAt)) {
      await this.keepLocally(key, shared)
      return { entry: shared, tier: 'l2' }
    }
    return local ? { entry: local, tier: 'l1' } : null
  }

  /** L2's copy only (what a waiter on another replica's fill looks for), its plain body decompressed. */
  async getShared(key: string): Promise<CacheEntry | null> {
    const l2 = this.#o.l2
    return l2 ? this.#l2Reads.run(key, async () => this.#decoded(key, this.#unpurged(key, await l2.get(key)))) : null
  }

  /** Whether a purge this replica heard of after `copy`'s fill reaches it (its advertisers', its report's under `key`, or everything's): a purge is final. */
  purged(copy: Pick<CacheEntry, 'fetchedAt' | 'advertiserIds'>, key: string): boolean {
    return this.#purges.refuses(copy, key)
  }

  #unpurged(key: string, entry: CacheEntry | null): CacheEntry | null {
    if (entry === null || !this.#purges.refuses(entry, key)) return entry
    this.#onRefused(key, 'it was filled before the last purge of its advertiser or of every report')
    return null
  }

  // Every entry this store hands out holds its plain body: L2's come decompressed
  // (redis-store.ts, never past cache.maxEntryBytes), a fill's has it; one without is
  // decompressed here, within the same limit.
  #decoded(key: string, entry: CacheEntry | null): CacheEntry | null {
    if (entry === null || entry.identity !== null) return entry
    const identity = inflate(entry.gzip, this.#o.maxEntryBytes)
    if (identity === null) {
      this.#onRefused(key, `its body is no gzip, or longer than cache.maxEntryBytes (${this.#o.maxEntryBytes} bytes)`)
      return null
    }
    entry.identity = identity
    return entry
  }

  async set(key: string, entry: CacheEntry): Promise<void> {
    // A fill asked before a purge made meanwhile (answered before it or after) holds what
    // the purge dropped, or figures the platform read before it (PurgeLedger.refuses).
    if (this.#purges.refuses(entry, key)) return
    await this.keepLocally(key, entry)
    await this.#o.l2?.set(key, entry)
  }

  /**
   * A copy of `key` fetched at `fetchedAt` was stored in L2 (by any replica): an older
   * copy held here is replaced with it, rather than served until it expires. A replica
   * without a copy, or with one as new, reads nothing.
   */
  async takeNewer(key: string, fetchedAt: number): Promise<void> {
    const local = this.#o.l1.peek(key)
    if (!local || local.fetchedAt >= fetchedAt) return
    await this.#newerShared(key, local)
  }

  /**
   * Takes Redis' copy of each copy held in memory that Redis holds newer: the bus
   * announcements of copies stored while this replica's subscriber was away (a forced
   * refresh's new copy among them) never reach it, and its older copy would otherwise be
   * served until its own freshness ends. One copy read at a time; a copy Redis lacks (kept
   * here while Redis was out) stays.
   */
  async catchUpFills(): Promise<void> {
    for (const [key, local] of [...this.#o.l1.entries()]) await this.#newerShared(key, local)
  }

  async #newerShared(key: string, local: CacheEntry): Promise<void> {
    const shared = await this.getShared(key)
    if (shared && shared.fetchedAt > local.fetchedAt) await this.keepLocally(key, shared)
  }

  /** L1 only: an entry another replica stored, or one this replica may not share. */
  async keepLocally(key: string, entry: CacheEntry): Promise<void> {
    if (this.#purges.refuses(entry, key)) return
    // Decompressed once (getShared, or the fill), so that no hit from L1 ever (de)compresses.
    const decoded = this.#decoded(key, entry)
    if (decoded !== null && this.#o.l1.enabled) await this.#o.l1.set(key, decoded)
  }

  /**
   * Stores in L2 the copies this replica keeps that L2 lacks, once Redis is back: those
   * filled while it was out (kept here only), and all it lost by restarting empty. A
   * replica that starts, or drops its L1, then finds them there rather than calling the
   * platform, which may be failing. One run at a time; asked again meanwhile, it runs once
   * more. Resolves to how many copies it stored.
   */
  async shareKept(): Promise<number> {
    const l2 = this.#o.l2
    if (!l2?.missing || !this.#o.l1.enabled) return 0
    if (this.#sharing) {
      this.#shareAgain = true
      return 0
    }
    this.#sharing = true
    let shared = 0
    try {
      do {
        this.#shareAgain = false
        const now = this.#now()
        const kept = [...this.#o.l1.entries()].filter(([key, entry]) => now < entry.errorUntil && !this.#purges.refuses(entry, key))
        for (let i = 0; i < kept.length; i += SHARE_BATCH) {
          const batch = kept.slice(i, i + SHARE_BATCH)
          const missing = await l2.missing(batch.map(([key]) => key))
          // Out again: the next return of Redis runs it again.
          if (missing === null) return shared
          for (const [key, entry] of batch) {
            if (!missing.has(key)) continue
            await l2.set(key, entry)
            shared += 1
          }
        }
      } while (this.#shareAgain)
    } finally {
      this.#sharing = false
    }
    if (shared > 0) this.#o.log.info({ shared }, 'report copies kept by this replica stored in redis again')
    return shared
  }

  async delete(key: string): Promise<void> {
    await Promise.all([this.#o.l1.delete(key), this.#o.l2?.delete(key)])
  }

  async purgeAll(): Promise<number> {
    const purge: Purge = { at: this.#now() }
    this.#purges.note(purge)
    const local = await this.#o.l1.purgeAll()
    return this.#purgeShared(local, (l2, mark) => l2.purgeAll(mark), purge)
  }

  async purgeAdvertiser(advertiserId: number): Promise<number> {
    const purge: Purge = { at: this.#now(), advertiserId }
    this.#purges.note(purge)
    const local = await this.#o.l1.purgeAdvertiser(advertiserId)
    return this.#purgeShared(local, (l2, mark) => l2.purgeAdvertiser(advertiserId, mark), purge)
  }

  /** Drops one report's entry on every replica, as purgeAll does every entry. */
  async purgeKey(key: string): Promise<number> {
    const purge: Purge = { at: this.#now(), report: key }
    this.#purges.note(purge)
    const local = await this.#o.l1.purgeKey(key)
    return this.#purgeShared(local, (l2, mark) => l2.purgeKey(key, mark), purge)
  }

  /** What purgeKey would drop now, counted as countAll counts. */
  countKey(key: string): Promise<number> {
    return (this.#o.l2 ?? this.#o.l1).countKey(key)
  }

  /**
   * What each tier holds of `key`, read without changing anything (no recency, no copy
   * from one tier to the other): a copy a purge reaches is none.
   */
  async inspect(key: string): Promise<{ l1: CacheEntry | null; l2: CacheEntry | null }> {
    const kept = (entry: CacheEntry | null) => (entry === null || this.#purges.refuses(entry, key) ? null : entry)
    return { l1: kept(this.#o.l1.peek(key)), l2: kept((await this.#o.l2?.get(key)) ?? null) }
  }

  /** What purgeAll would drop now (a dry run): L2's entries, or L1's without Redis. Throws when Redis cannot be read. */
  countAll(): Promise<number> {
    return (this.#o.l2 ?? this.#o.l1).countAll()
  }

  /** What purgeAdvertiser would drop now, counted as countAll counts. */
  countAdvertiser(advertiserId: number): Promise<number> {
    return (this.#o.l2 ?? this.#o.l1).countAdvertiser(advertiserId)
  }

  // A purge that cannot reach Redis says so (503) rather than pretending every replica
  // and L2 were purged; the caller can repeat it once Redis is back. Its record is
  // written first: a replica that starts while L2 is being purged still learns of it. A
  // record Redis refuses (out of memory: deletes still go through) is written by the
  // script that drops the first copy, in the room it gives back (RedisStore's mark), or
  // once more after the copies went (a Cluster, whose record sits on another master);
  // a record still missing then is a 503 that says what was dropped.
  async #purgeShared(local: number, purgeL2: (l2: CacheStore, mark?: PurgeMark) => Promise<number>, purge: Purge): Promise<number> {
    const l2 = this.#o.l2
    if (!l2) return local
    let unrecorded: unknown
    let dropped: number
    try {
      const refused = await this.#purges.share(purge).then(
        () => null,
        (err: unknown) => err,
      )
      dropped = await purgeL2(l2, refused === null ? undefined : (this.#purges.mark(purge) ?? undefined))
      const message = purge.advertiserId !== undefined ? { advertiserId: purge.advertiserId, at: purge.at } : purge.report !== undefined ? { report: purge.report, at: purge.at } : { all: true, at: purge.at }
      await this.#o.bus?.publish(PURGE_CHANNEL, JSON.stringify(message))
      if (refused === null || (await this.#purges.recorded(purge))) return dropped
      unrecorded = await this.#purges.share(purge).then(
        () => null,
        (err: unknown) => err,
      )
      if (unrecorded === null) return dropped
      if (!refusesWrites(unrecorded)) throw unrecorded
    } catch (err) {
      throw new PurgeIncompleteError({ cause: err })
    }
    const copies = dropped > 0 ? `its ${dropped} copies in Redis were dropped` : 'Redis held none of its copies (none dropped, no room made)'
    throw new PurgeUnrecordedError(`${copies}, and each replica that heard it dropped its own, but a replica that starts or reconnects before a purge is recorded may serve a copy filled before it; repeat it once Redis has room: a repeat drops what is there again and writes the record`, { cause: unrecorded })
  }

  async #purgeLocal(message: string): Promise<void> {
    try {
      const m = JSON.parse(message) as { all?: boolean; advertiserId?: number; report?: unknown; at?: number }
      // Its time is the purging replica's; a message of a replica that sent none, now.
      const at = typeof m.at === 'number' && Number.isFinite(m.at) ? m.at : this.#now()
      if (m.all) {
        this.#purges.note({ at })
        await this.#o.l1.purgeAll()
      } else if (typeof m.advertiserId === 'number') {
        this.#purges.note({ at, advertiserId: m.advertiserId })
        await this.#o.l1.purgeAdvertiser(m.advertiserId)
      } else if (typeof m.report === 'string' && m.report.length <= MAX_KEY_CHARS) {
        this.#purges.note({ at, report: m.report })
        await this.#o.l1.purgeKey(m.report)
      }
    } catch (err) {
      this.#o.log.warn({ err }, 'ignoring a malformed purge message')
    }
  }
}
