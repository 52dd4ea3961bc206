import { LRUCache } from 'lru-cache'
import { entrySize, purgeReaches, type CacheEntry } from './cache-entry.js'
import { ownBytes } from '../observe/own-bytes.js'
import type { CacheStore } from './cache-store.js'
import { systemClock } from '../clock.js'

/** L1: in-process, bounded in bytes, each entry living until its own `errorUntil`. */
export class MemoryStore implements CacheStore {
  readonly #lru: LRUCache<string, CacheEntry>
  readonly #now: () => number
  /** false with a size of 0: L1 turned off. */
  readonly enabled: boolean

  constructor(opts: { maxBytes: number; now?: () => number }) {
    this.#now = opts.now ?? systemClock.now
    this.enabled = opts.maxBytes > 0
    // No lru-cache TTL: it reads the clock on every get, and a hit has read it already.
    // An entry past its errorUntil is dropped when it is next read.
    this.#lru = new LRUCache<string, CacheEntry>({
      maxSize: Math.max(opts.maxBytes, 1),
      sizeCalculation: entrySize,
    })
  }

  async get(key: string): Promise<CacheEntry | null> {
    return this.getSync(key)
  }

  /** The hit path reads L1 without a promise, with the clock reading it took already. */
  getSync(key: string, now: number = this.#now()): CacheEntry | null {
    const entry = this.#lru.get(key)
    if (entry === undefined) return null
    if (now < entry.errorUntil) return entry
    this.#lru.delete(key)
    return null
  }

  async set(key: string, entry: CacheEntry): Promise<void> {
    if (!this.enabled || entry.errorUntil <= this.#now() || entrySize(entry) > this.#lru.maxSize) return
    this.#lru.set(key, withOwnBuffers(entry))
  }

  async delete(key: string): Promise<void> {
    this.#lru.delete(key)
  }

  async purgeAll(): Promise<number> {
    const n = this.#lru.size
    this.#lru.clear()
    return n
  }

  async purgeAdvertiser(advertiserId: number): Promise<number> {
    let n = 0
    for (const key of this.#keysOf(advertiserId)) {
      this.#lru.delete(key)
      n += 1
    }
    return n
  }

  async purgeKey(key: string): Promise<number> {
    return this.#lru.delete(key) ? 1 : 0
  }

  async countKey(key: string): Promise<number> {
    return this.peek(key) === null ? 0 : 1
  }

  /** The entry of `key`, without making it more recently used (an operator's look changes nothing). */
  peek(key: string, now: number = this.#now()): CacheEntry | null {
    const entry = this.#lru.peek(key)
    return entry !== undefined && now < entry.errorUntil ? entry : null
  }

  async countAll(): Promise<number> {
    return this.#lru.size
  }

  async countAdvertiser(advertiserId: number): Promise<number> {
    return this.#keysOf(advertiserId).length
  }

  #keysOf(advertiserId: number): string[] {
    const keys: string[] = []
    const reached = purgeReaches(advertiserId)
    for (const [key, entry] of this.#lru.entries()) if (entry.advertiserIds.some((id) => reached.includes(id))) keys.push(key)
    return keys
  }

  get size(): number {
    return this.#lru.size
  }

  /** Every entry held, the most recently used first (some may be past their errorUntil). */
  entries(): IterableIterator<[string, CacheEntry]> {
    return this.#lru.entries()
  }

  /** What the entries held weigh, as counted against maxBytes. */
  get bytes(): number {
    return this.#lru.calculatedSize
  }
}

// A body is often a view of a larger buffer: zlib's 64 KiB output chunk, a slab of Node's
// buffer pool, a Redis reply read in one piece. Kept as it came, each entry would hold that
// whole buffer while the budget counts only its bytes: 64 KiB and more per cached report,
// past l1MaxBytes. The copy is made once per entry stored, never on a hit.
function withOwnBuffers(entry: CacheEntry): CacheEntry {
  const gzip = ownBytes(entry.gzip)
  const identity = entry.identity && ownBytes(entry.identity)
  return gzip === entry.gzip && identity === entry.identity ? entry : { ...entry, gzip, identity }
}
