import { LRUCache } from 'lru-cache'
import { entrySize, purgeReaches, type CacheEntry } from './cache-entry.js'
import { ownBytes } from '../observe/own-bytes.js'
import type { CacheStore } from './cache-store.js'
import { systemClock } from '../clock.js'

/**
 * L1: in-process, bounded in bytes, each entry living until its own `errorUntil`.
 *
 * Each team has an even part of the bytes (maxBytes / teams), an entry counting on the
 * team whose read filled it (`filledBy`; one filled by none counts on a team of its own,
 * '', as a team a reload removed does: neither has a part, so theirs go first, and the
 * parts sum to maxBytes). Room for a new entry is made from the least recently used
 * entries of the team most past its part, the new entry's team counted with it: one team's many distinct reports push out its own copies, never those of a team
 * within its part. A team alone may use the whole cache while the others leave it room
 * (with one team, this is one LRU); an entry of a team past its part that only the copies
 * of teams within their part would make room for is not kept. Each team's entries are
 * an LRU of their own, so that making room reads no entry it keeps.
 */
export class MemoryStore implements CacheStore {
  /** Each team's entries, in its own order of use. */
  readonly #byTeam = new Map<string, LRUCache<string, CacheEntry>>()
  /** The LRU (its team's) that holds each key. */
  readonly #where = new Map<string, LRUCache<string, CacheEntry>>()
  #bytes = 0
  readonly #now: () => number
  readonly #maxBytes: number
  readonly #teams: () => number
  readonly #configured: (team: string) => boolean
  /** false with a size of 0: L1 turned off. */
  readonly enabled: boolean

  /** `teams`: how many are configured; `configured`: whether `team` is one (default: any is). */
  constructor(opts: { maxBytes: number; now?: () => number; teams?: () => number; configured?: (team: string) => boolean }) {
    this.#now = opts.now ?? systemClock.now
    this.#maxBytes = Math.max(opts.maxBytes, 1)
    this.#teams = opts.teams ?? (() => 1)
    this.#configured = opts.configured ?? (() => true)
    this.enabled = opts.maxBytes > 0
  }

  #lruOf(team: string): LRUCache<string, CacheEntry> {
    let lru = this.#byTeam.get(team)
    if (lru !== undefined) return lru
    // No lru-cache TTL: it reads the clock on every get, and a hit has read it already.
    // An entry past its errorUntil is dropped when it is next read.
    lru = new LRUCache<string, CacheEntry>({
      maxSize: this.#maxBytes,
      sizeCalculation: entrySize,
      // Every way out (evicted, deleted, cleared; an entry replaced is counted again by set) leaves the count.
      dispose: (entry, key, reason) => {
        this.#bytes -= entrySize(entry)
        if (reason !== 'set') this.#where.delete(key)
      },
    })
    this.#byTeam.set(team, lru)
    return lru
  }

  async get(key: string): Promise<CacheEntry | null> {
    return this.getSync(key)
  }

  /** The hit path reads L1 without a promise, with the clock reading it took already. */
  getSync(key: string, now: number = this.#now()): CacheEntry | null {
    const lru = this.#where.get(key)
    if (lru === undefined) return null
    const entry = lru.get(key) as CacheEntry
    if (now < entry.errorUntil) return entry
    lru.delete(key)
    return null
  }

  async set(key: string, entry: CacheEntry): Promise<void> {
    if (!this.enabled || entry.errorUntil <= this.#now() || entrySize(entry) > this.#maxBytes) return
    const kept = withOwnBuffers(entry)
    const team = teamOf(kept)
    const heldBy = this.#where.get(key)
    // The entry held already: only its use is new.
    if (heldBy?.peek(key) === kept) {
      heldBy.set(key, kept)
      return
    }
    // The entry it replaces leaves first, whichever team filled it.
    heldBy?.delete(key)
    const size = entrySize(kept)
    if (!this.#makeRoom(team, size)) return
    const lru = this.#lruOf(team)
    lru.set(key, kept)
    this.#where.set(key, lru)
    this.#bytes += size
  }

  /**
   * Drops the least recently used entries of the team most past its part, again, until
   * `size` bytes of `team` fit; false, dropping nothing, when only entries of teams within
   * their part would make room and `team` is past its part.
   */
  #makeRoom(team: string, size: number): boolean {
    let short = this.#bytes + size - this.#maxBytes
    if (short <= 0) return true
    const even = this.#maxBytes / Math.max(1, this.#teams())
    const part = (t: string): number => (this.#configured(t) ? even : 0)
    // Per team: its LRU, its keys least recently used first, and the bytes planned out of it.
    const plans = [...this.#byTeam].map(([t, lru]) => ({ t, lru, keys: lru.rkeys(), left: lru.size, freed: 0 }))
    const over = (p: (typeof plans)[number]): number => p.lru.calculatedSize - p.freed + (p.t === team ? size : 0) - part(p.t)
    const mine = plans.find((p) => p.t === team)
    const victims: [LRUCache<string, CacheEntry>, string][] = []
    while (short > 0) {
      let most: (typeof plans)[number] | undefined
      for (const p of plans) if (p.left > 0 && (most === undefined || over(p) > over(most))) most = p
      if (most === undefined) return false
      if (over(most) <= 0 && (mine === undefined ? size - part(team) : over(mine)) > 0) return false
      const key = most.keys.next().value as string
      const bytes = entrySize(most.lru.peek(key) as CacheEntry)
      most.left -= 1
      most.freed += bytes
      short -= bytes
      victims.push([most.lru, key])
    }
    for (const [lru, key] of victims) lru.delete(key)
    return true
  }

  async delete(key: string): Promise<void> {
    this.#where.get(key)?.delete(key)
  }

  async purgeAll(): Promise<number> {
    const n = this.size
    for (const lru of this.#byTeam.values()) lru.clear()
    this.#byTeam.clear()
    return n
  }

  async purgeAdvertiser(advertiserId: number): Promise<number> {
    let n = 0
    for (const key of this.#keysOf(advertiserId)) {
      this.#where.get(key)?.delete(key)
      n += 1
    }
    return n
  }

  async purgeKey(key: string): Promise<number> {
    return this.#where.get(key)?.delete(key) === true ? 1 : 0
  }

  async countKey(key: string): Promise<number> {
    return this.peek(key) === null ? 0 : 1
  }

  /** The entry of `key`, without making it more recently used (an operator's look changes nothing). */
  peek(key: string, now: number = this.#now()): CacheEntry | null {
    const entry = this.#where.get(key)?.peek(key)
    return entry !== undefined && now < entry.errorUntil ? entry : null
  }

  async countAll(): Promise<number> {
    return this.size
  }

  async countAdvertiser(advertiserId: number): Promise<number> {
    return this.#keysOf(advertiserId).length
  }

  #keysOf(advertiserId: number): string[] {
    const keys: string[] = []
    const reached = purgeReaches(advertiserId)
    for (const [key, entry] of this.entries()) if (entry.advertiserIds.some((id) => reached.includes(id))) keys.push(key)
    return keys
  }

  get size(): number {
    return this.#where.size
  }

  /** Every entry held, team by team, each team's most recently used first (some may be past their errorUntil). */
  *entries(): IterableIterator<[string, CacheEntry]> {
    for (const lru of this.#byTeam.values()) yield* lru.entries()
  }

  /** What the entries held weigh, as counted against maxBytes. */
  get bytes(): number {
    return this.#bytes
  }
}

/** The team an entry counts on: its filler's, '' (none configured) when no fill said. */
function teamOf(entry: CacheEntry): string {
  return entry.filledBy?.team ?? ''
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
