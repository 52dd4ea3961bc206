import type { CacheEntry } from './cache-entry.js'
import type { PurgeMark } from './purge-ledger.js'

/** One tier of the report cache. Entries expire on their own at `errorUntil`. */
export interface CacheStore {
  get(key: string): Promise<CacheEntry | null>
  set(key: string, entry: CacheEntry): Promise<void>
  delete(key: string): Promise<void>
  /**
   * Drops every report entry; resolves to how many were dropped (where known). Each purge
   * given `mark` writes it with the first entry it drops, where one script can (RedisStore:
   * a full Redis lets the record through after a delete); a store that cannot ignores it.
   */
  purgeAll(mark?: PurgeMark): Promise<number>
  purgeAdvertiser(advertiserId: number, mark?: PurgeMark): Promise<number>
  /** How many entries purgeAll would drop now. */
  countAll(): Promise<number>
  /** How many entries purgeAdvertiser would drop now. */
  countAdvertiser(advertiserId: number): Promise<number>
  /** Drops the entry of one key; resolves to how many were dropped (0 or 1). */
  purgeKey(key: string, mark?: PurgeMark): Promise<number>
  /** How many entries purgeKey would drop now (0 or 1). */
  countKey(key: string): Promise<number>
  /** Those of `keys` the store holds no entry for; null when it cannot tell (Redis out). */
  missing?(keys: string[]): Promise<Set<string> | null>
}
