import { gunzipSync } from 'node:zlib'
import { LRUCache } from 'lru-cache'
import type { Logger } from 'pino'
import { PurgeIncompleteError } from '../errors.js'
import type { RedisBus } from '../redis.js'
import { ownBytes, type CacheEntry } from './cache-entry.js'
import type { CacheStore } from './cache-store.js'
import type { MemoryStore } from './memory-store.js'
import { SingleFlight } from './single-flight.js'
import { LRU_ENTRY_BYTES, keptBytes } from '../kept-bytes.js'

export type Tier = 'l1' | 'l2'

// With L1 off every hit reads its entry anew from Redis, compressed, and decompressing it
// for a caller without gzip cost a third of such a hit (issue 17: zlib makes a stream for
// each call). The body last decompressed for each key is kept with the exact compressed
// bytes it came from; a read whose bytes are the same (compared in full, so a value
// written into Redis can only ever find its own decompression) takes it from here.
export const DECODED_BODIES_BYTES = 8 * 1024 * 1024

interface Decoded {
  gzip: Buffer
  identity: Buffer
}

const PURGE_CHANNEL = 'purge'
const REFRESHED_CHANNEL = 'refreshed'

/**
 * The report cache's two tiers as one store (design.md): L1 in memory in front of L2 in
 * Redis, and purges that reach every replica's L1 through the bus. Without Redis it is
 * L1 alone.
 */
export class TieredStore implements CacheStore {
  readonly #l1: MemoryStore
  readonly #l2: CacheStore | null
  readonly #bus: RedisBus | null
  readonly #log: Logger
  readonly #now: () => number
  // A burst of callers for one key makes one L2 read per process, not one each.
  readonly #l2Reads = new SingleFlight<CacheEntry | null>()
  readonly #decoded = new LRUCache<string, Decoded>({
    maxSize: DECODED_BODIES_BYTES,
    sizeCalculation: (d, key) => LRU_ENTRY_BYTES + keptBytes(key) + d.gzip.length + d.identity.length,
  })

  constructor(opts: { l1: MemoryStore; l2: CacheStore | null; bus: RedisBus | null; log: Logger; now?: () => number }) {
    this.#l1 = opts.l1
    this.#l2 = opts.l2
    this.#bus = opts.bus
    this.#log = opts.log
    this.#now = opts.now ?? Date.now
  }

  async start(): Promise<void> {
    await this.#bus?.subscribe(PURGE_CHANNEL, (message) => void this.#purgeLocal(message))
    await this.#bus?.subscribe(REFRESHED_CHANNEL, (key) => void this.#takeRefreshed(key))
  }

  /** A fresh L1 entry, without a promise (the fast path of hits), as of `now`. */
  freshInMemory(key: string, now: number): CacheEntry | null {
    const entry = this.#l1.getSync(key, now)
    return entry && now < entry.freshUntil ? entry : null
  }

  async get(key: string): Promise<CacheEntry | null> {
    return (await this.lookup(key))?.entry ?? null
  }

  /** The best copy and where it came from: a fresh L1 one, else L2's if newer, else L1's. */
  async lookup(key: string): Promise<{ entry: CacheEntry; tier: Tier } | null> {
    const local = this.#l1.getSync(key)
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

  /** L2's copy only (what a waiter on another replica's fill looks for). */
  async getShared(key: string): Promise<CacheEntry | null> {
    const l2 = this.#l2
    return l2 ? this.#l2Reads.run(key, () => l2.get(key)) : null
  }

  async set(key: string, entry: CacheEntry): Promise<void> {
    await this.keepLocally(key, entry)
    await this.#l2?.set(key, entry)
  }

  /**
   * A refreshed copy (issue 17): stored in both tiers, and every replica holding the
   * key in its L1 replaces its copy with it, rather than serving the older one until it
   * expires.
   */
  async replace(key: string, entry: CacheEntry): Promise<void> {
    await this.set(key, entry)
    try {
      await this.#bus?.publish(REFRESHED_CHANNEL, key)
    } catch (err) {
      this.#log.warn({ err }, 'announcing a refreshed report failed; other replicas keep their copy until it expires')
    }
  }

  async #takeRefreshed(key: string): Promise<void> {
    const local = this.#l1.getSync(key)
    if (!local) return
    const shared = await this.getShared(key)
    if (shared && shared.fetchedAt > local.fetchedAt) await this.keepLocally(key, shared)
  }

  /** L1 only: an entry another replica stored, or one this replica may not share. */
  async keepLocally(key: string, entry: CacheEntry): Promise<void> {
    // Decompressed once here, so that no hit from L1 ever (de)compresses.
    if (this.#l1.enabled) {
      entry.identity ??= gunzipSync(entry.gzip)
      await this.#l1.set(key, entry)
      return
    }
    const known = this.#decoded.get(key)
    if (entry.identity === null) entry.identity = known?.gzip.equals(entry.gzip) ? known.identity : gunzipSync(entry.gzip)
    // Own bytes: a value read from Redis, or zlib's output, is often a view of a larger buffer it would keep alive.
    if (known?.identity !== entry.identity) this.#decoded.set(key, { gzip: ownBytes(entry.gzip), identity: (entry.identity = ownBytes(entry.identity)) })
  }

  async delete(key: string): Promise<void> {
    await Promise.all([this.#l1.delete(key), this.#l2?.delete(key)])
  }

  async purgeAll(): Promise<number> {
    const local = await this.#l1.purgeAll()
    return this.#purgeShared(local, (l2) => l2.purgeAll(), { all: true })
  }

  async purgeAdvertiser(advertiserId: number): Promise<number> {
    const local = await this.#l1.purgeAdvertiser(advertiserId)
    return this.#purgeShared(local, (l2) => l2.purgeAdvertiser(advertiserId), { advertiserId })
  }

  // A purge that cannot reach Redis says so (503) rather than pretending every replica
  // and L2 were purged; the caller can repeat it once Redis is back.
  async #purgeShared(local: number, purgeL2: (l2: CacheStore) => Promise<number>, message: object): Promise<number> {
    const l2 = this.#l2
    if (!l2) return local
    try {
      const dropped = await purgeL2(l2)
      await this.#bus?.publish(PURGE_CHANNEL, JSON.stringify(message))
      return dropped
    } catch (err) {
      throw new PurgeIncompleteError((err as Error).message, { cause: err })
    }
  }

  async #purgeLocal(message: string): Promise<void> {
    try {
      const m = JSON.parse(message) as { all?: boolean; advertiserId?: number }
      if (m.all) await this.#l1.purgeAll()
      else if (typeof m.advertiserId === 'number') await this.#l1.purgeAdvertiser(m.advertiserId)
    } catch (err) {
      this.#log.warn({ err }, 'ignoring a malformed purge message')
    }
  }
}
