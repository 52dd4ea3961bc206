import type { RedisClient } from '../redis/client.js'
import type { RedisSeal } from '../redis/seal.js'
import { redisScript, type ScriptStep } from '../redis/script.js'

// A record (a job, a delivery) holds at most a canonical report, as big as the URL or form
// it came from (limits.reportBody at most), and the status and headers of a platform
// answer a job kept (job.ts, PlatformAnswer: its body is kept beside the record, as a
// report result is; a record that holds the body itself holds 64 KiB of it in base64, 88
// KiB at most): anything longer in Redis is not this gateway's, and is not opened.
const MAX_RECORD_BYTES = 1024 * 1024

/**
 * Replaces a record only if it is still the sealed text its caller read, and moves it in
 * the due set (A[5] '': out of it) and its index (a team's set) in the same step. A Lua
 * function of 3 keys and 6 arguments (`SealedRecords.swapStep`), so that one script may
 * swap a record and do more in the same step (redis-job-store.ts: a job's end and its delivery).
 */
export const SWAP_RECORD_LUA = `local function swapRecord(K, A)
  if redis.call('GET', K[1]) ~= A[1] then return 0 end
  if A[4] == '' then redis.call('SET', K[1], A[2]) else redis.call('SET', K[1], A[2], 'PX', A[4]) end
  if A[5] == '' then redis.call('ZREM', K[2], A[3]) else redis.call('ZADD', K[2], A[5], A[3]) end
  redis.call('ZADD', K[3], A[6], A[3])
  return 1
end`

const SWAP = redisScript<number>('gatewayRecordSwap', `${SWAP_RECORD_LUA}\nreturn swapRecord(KEYS, ARGV)`, 3)

/** What a store of sealed records in Redis is given (the jobs', the outbox's). */
export interface SharedStoreOptions {
  redis: RedisClient
  seal: RedisSeal
  prefix: string
  /** A value without this gateway's seal, or larger than it writes: read as absent, and said. */
  onUnverified: (key: string) => void
}

export interface SealedRecordsOptions<T> extends Omit<SharedStoreOptions, 'prefix'> {
  /** The key of record `id`. */
  keyOf(id: string): string
  /** The record a sealed text holds; null when it lacks what this version reads. */
  parse(text: string): T | null
}

/** Where a swap files a record: the set of due records (by when a runner may claim it; null: not due) and its index. */
export interface Filing {
  due: string
  dueAt: number | null
  index: string
  indexScore: number
  /** The record's expiry from now; null: none, its store drops it itself (redis-job-store.ts). */
  ttlMs: number | null
}

/**
 * Records shared by the replicas and changed by compare-and-swap (the jobs, the webhook
 * outbox): each a sealed record bound to its key (the seal says a replica of this gateway
 * wrote it there), read bounded, swapped only if it is still the sealed text its caller
 * read, in one script, so that of two replicas racing to claim or end one, one wins.
 */
export class SealedRecords<T extends { id: string }> {
  readonly #o: SealedRecordsOptions<T>

  constructor(o: SealedRecordsOptions<T>) {
    this.#o = o
  }

  sealed(record: T): string {
    return this.#o.seal.sealText(this.#o.keyOf(record.id), JSON.stringify(record))
  }

  async get(id: string): Promise<T | null> {
    const key = this.#o.keyOf(id)
    return this.#open(key, await this.#o.redis.get(key))
  }

  async many(ids: string[]): Promise<T[]> {
    if (ids.length === 0) return []
    const keys = ids.map((id) => this.#o.keyOf(id))
    const values = await this.#o.redis.mget(...keys)
    const records: T[] = []
    values.forEach((v, i) => {
      const record = v === null ? null : this.#open(keys[i] as string, v)
      if (record) records.push(record)
    })
    return records
  }

  async swap(current: T, next: T, f: Filing): Promise<boolean> {
    const { keys, args } = this.swapStep(current, next, f)
    return (await SWAP(this.#o.redis, ...keys, ...args)) === 1
  }

  /** The keys and arguments of SWAP_RECORD_LUA's `swapRecord` replacing `current` by `next`. */
  swapStep(current: T, next: T, f: Filing): ScriptStep {
    return { keys: [this.#o.keyOf(current.id), f.due, f.index], args: [this.sealed(current), this.sealed(next), current.id, f.ttlMs === null ? '' : Math.max(1, f.ttlMs), f.dueAt ?? '', f.indexScore] }
  }

  #open(key: string, value: string | null): T | null {
    if (value === null) return null
    const text = value.length <= MAX_RECORD_BYTES ? this.#o.seal.openText(key, value) : null
    const record = text === null ? null : this.#parse(text)
    if (record === null) this.#o.onUnverified(key)
    return record
  }

  #parse(text: string): T | null {
    try {
      return this.#o.parse(text)
    } catch {
      return null
    }
  }
}
