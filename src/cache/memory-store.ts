import { TeamPartsLru } from './team-parts-lru.js'
import { entrySize, purgeReaches, type CacheEntry } from './cache-entry.js'
import { ownBytes } from '../observe/own-bytes.js'
import type { CacheStore } from './cache-store.js'
import { systemClock } from '../clock.js'

/**
 * L1: in-process, bounded in bytes, each entry living until its own `errorUntil`.
 *
 * Each team has an even part of the bytes once full (cache/team-parts-lru.ts: room from the
 * team most past its part, never from a team within its part), an entry counting on every
 * team that holds it: the team whose read filled it (`filledBy`; one filled by none counts
 * on a team of its own, '', as a team a reload removed does: neither has a part, so theirs
 * go first, and the parts sum to maxBytes), and each team whose read used it since
 * (`getSync` with a team).
 */
export class MemoryStore implements CacheStore {
  /** The entries, each counting on its team's part (cache/team-parts-lru.ts). */
  readonly #parts: TeamPartsLru<CacheEntry>
  readonly #now: () => number
  readonly #maxBytes: number
  /** false with a size of 0: L1 turned off. */
  readonly enabled: boolean

  /** `teams`: how many are configured; `configured`: whether `team` is one (default: any is). */
  constructor(opts: { maxBytes: number; now?: () => number; teams?: () => number; configured?: (team: string) => boolean }) {
    this.#now = opts.now ?? systemClock.now
    this.#maxBytes = Math.max(opts.maxBytes, 1)
    this.enabled = opts.maxBytes > 0
    // No lru-cache TTL: it reads the clock on every get, and a hit has read it already.
    // An entry past its errorUntil is dropped when it is next read.
    this.#parts = new TeamPartsLru<CacheEntry>({ maxBytes: this.#maxBytes, teams: opts.teams ?? (() => 1), configured: opts.configured ?? (() => true), size: entrySize })
  }

  async get(key: string): Promise<CacheEntry | null> {
    return this.getSync(key)
  }

  /**
   * The hit path reads L1 without a promise, with the clock reading it took already; read for
   * `team` (given), that team holds the copy from now on, as the teams that held it still do
 * (TeamPartsLru `get`).
   */
  getSync(key: string, now: number = this.#now(), team?: string): CacheEntry | null {
    const entry = this.#parts.get(key, team)
    if (entry === undefined) return null
    if (now < entry.errorUntil) return entry
    this.#parts.delete(key)
    return null
  }

  async set(key: string, entry: CacheEntry): Promise<void> {
    if (!this.enabled || entry.errorUntil <= this.#now() || entrySize(entry) > this.#maxBytes) return
    const kept = withOwnBuffers(entry)
    this.#parts.set(key, kept, teamOf(kept))
  }

  async delete(key: string): Promise<void> {
    this.#parts.delete(key)
  }

  async purgeAll(): Promise<number> {
    const n = this.size
    this.#parts.clear()
    return n
  }

  async purgeAdvertiser(advertiserId: number): Promise<number> {
    let n = 0
    for (const key of this.#keysOf(advertiserId)) {
      this.#parts.delete(key)
      n += 1
    }
    return n
  }

  async purgeKey(key: string): Promise<number> {
    return this.#parts.delete(key) ? 1 : 0
  }

  async countKey(key: string): Promise<number> {
    return this.peek(key) === null ? 0 : 1
  }

  /** The entry of `key`, without making it more recently used (an operator's look changes nothing). */
  peek(key: string, now: number = this.#now()): CacheEntry | null {
    const entry = this.#parts.peek(key)
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
    return this.#parts.size
  }

  /** Every entry held, team by team, each team's most recently used first (some may be past their errorUntil). */
  *entries(): IterableIterator<[string, CacheEntry]> {
    yield* this.#parts.entries()
  }

  /** What the entries held weigh, as counted against maxBytes. */
  get bytes(): number {
    return this.#parts.bytes
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
