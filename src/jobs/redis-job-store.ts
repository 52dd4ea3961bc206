import type { CacheEntry } from '../cache/cache-entry.js'
import { decodeEntry, encodeEntry, inflate, storedBytesLimit } from '../cache/cache-entry.js'
import { redisKey } from '../redis/keys.js'
import { redisScript } from '../redis/script.js'
import { dropAt, dueAt, heldResultBytes, type Job } from './job.js'
import { NO_OUTBOX, type HeldResults, type JobStore } from './job-store.js'
import { SealedRecords, SWAP_RECORD_LUA, type SharedStoreOptions } from './sealed-records.js'
import type { Delivery } from './delivery.js'
import { ADD_DELIVERY_LUA, type RedisDeliveryStore } from './redis-delivery-store.js'

// The score of an open job in its team's set; an ended job's is its drop time, so that
// one ZREMRANGEBYSCORE drops the records gone and one ZCOUNT counts the open ones.
const OPEN = 9e15

// Every key of the jobs shares the hash tag {jobs}: one slot, so that one script changes
// a job, the set of due jobs (scored by when a runner may start each: job.ts, dueAt) and
// its team's set together, on a Cluster too.
//
// A job's record and its result carry no expiry: a Redis at maxmemory that evicts keys
// with one (volatile-lru, as the replicas guide has it for the report copies) would take
// them before their time, a done job's status and result then 404 and a queued job's id
// left in the due set ahead of every job asked after it. The store drops them itself
// (SWEEP), each team's set scoring an ended job by its drop time.
const ADD = redisScript<number>(
  'gatewayJobAdd',
  `if redis.call('ZCOUNT', KEYS[3], ARGV[6], ARGV[6]) >= tonumber(ARGV[4]) then return 0 end
if redis.call('ZCOUNT', KEYS[3], ARGV[7], '+inf') >= tonumber(ARGV[8]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2])
redis.call('ZADD', KEYS[3], ARGV[6], ARGV[2])
redis.call('SADD', KEYS[4], ARGV[5])
return 1`,
  4,
)

// Over every team with a set of jobs: drops the jobs past their drop time (the record, the
// result, the id), and an open job whose record is gone (one evicted, or expired, as
// versions before this one wrote them) or that nobody ran for OPEN_DUE_MAX_MS after it was
// due (every replica down, or sealed with a GATEWAY_SECRET since changed), from the team's
// set and the due set; a team whose set is empty leaves the list and the count of its
// results kept (no end of its can be under way: its running job would be in its set).
// KEYS: the teams, the due set, the teams' counts of results kept. ARGV: now, the start of a team's set, of a record, of a result, an open job's
// score, the due time before which an open job is dropped. Each key it names shares the
// hash tag {jobs}: one slot.
const SWEEP = redisScript<number>(
  'gatewayJobSweep',
  `for _, team in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local set = ARGV[2] .. team
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', set, '-inf', ARGV[1])) do
    redis.call('DEL', ARGV[3] .. id, ARGV[4] .. id)
  end
  redis.call('ZREMRANGEBYSCORE', set, '-inf', ARGV[1])
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', set, ARGV[5], ARGV[5])) do
    local due = redis.call('ZSCORE', KEYS[2], id)
    if redis.call('EXISTS', ARGV[3] .. id) == 0 or not due or tonumber(due) <= tonumber(ARGV[6]) then
      redis.call('DEL', ARGV[3] .. id, ARGV[4] .. id)
      redis.call('ZREM', set, id)
      redis.call('ZREM', KEYS[2], id)
    end
  end
  if redis.call('EXISTS', set) == 0 then
    redis.call('SREM', KEYS[1], team)
    redis.call('HDEL', KEYS[3], team)
  end
end
return 1`,
  3,
)

/** How often a replica sweeps the jobs (SWEEP): an ended job's record outlives its drop time by this at most. */
export const JOB_SWEEP_MS = 60_000
/** An open job nobody ran for this long after it was due is dropped (SWEEP). */
export const OPEN_DUE_MAX_MS = 7 * 24 * 60 * 60_000

const REMOVE = redisScript<number>(
  'gatewayJobRemove',
  `if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[2])
redis.call('ZREM', KEYS[3], ARGV[2])
return 1`,
  3,
)

// The result a job's end keeps (sealed; '' for none), SET beside the job by the script
// that swaps the end in, after the swap took: a run that lost its job between its last
// read of it and its end (its lease ran out, another run took the job over) stores no
// result over the one the job's record describes. Each result kept adds one to its team's
// count (KEYS: the result, the teams' counts; ARGV: the sealed result, the team, the mark).
// An end given a mark (the count it read before it checked the team's bound, '' for
// none) is refused before anything is written once the count moved: another end kept a
// result the check did not count, so the end reads the team's results again. The check
// and the keep are one step: ends of one team on several replicas at once keep no more
// than its bound, as ends one after another do.
const KEEP_RESULT_LUA = `local function resultUnchecked(K, A)
  return A[1] ~= '' and A[3] ~= '' and (redis.call('HGET', K[2], A[2]) or '0') ~= A[3]
end
local function keepResult(K, A)
  if A[1] == '' then return end
  redis.call('SET', K[1], A[1])
  redis.call('HINCRBY', K[2], A[2], 1)
end`

// A job's end and its result in one step: the job swapped (3 keys, 6 arguments), then its
// result kept (2 keys, 3 arguments).
const END = redisScript<number>(
  'gatewayJobEnd',
  `${SWAP_RECORD_LUA}
${KEEP_RESULT_LUA}
if resultUnchecked({KEYS[4], KEYS[5]}, {unpack(ARGV, 7, 9)}) then return 0 end
if swapRecord({KEYS[1], KEYS[2], KEYS[3]}, {unpack(ARGV, 1, 6)}) == 0 then return 0 end
keepResult({KEYS[4], KEYS[5]}, {unpack(ARGV, 7, 9)})
return 1`,
  5,
)

// The same with its webhook delivery (4 keys, 8 arguments), added with SET NX. The
// outbox's keys share the jobs' hash tag: one slot, so one script, on a Cluster too.
const END_PUSHED = redisScript<number>(
  'gatewayJobEndPushed',
  `${SWAP_RECORD_LUA}
${KEEP_RESULT_LUA}
${ADD_DELIVERY_LUA}
if resultUnchecked({KEYS[4], KEYS[5]}, {unpack(ARGV, 7, 9)}) then return 0 end
if swapRecord({KEYS[1], KEYS[2], KEYS[3]}, {unpack(ARGV, 1, 6)}) == 0 then return 0 end
keepResult({KEYS[4], KEYS[5]}, {unpack(ARGV, 7, 9)})
addDelivery({KEYS[6], KEYS[7], KEYS[8], KEYS[9]}, {unpack(ARGV, 10, 17)})
return 1`,
  9,
)

export interface RedisJobStoreOptions extends SharedStoreOptions {
  /** cache.maxEntryBytes: a kept result is no larger than a cached report. */
  maxEntryBytes: number
  /** The webhook outbox on the same Redis and prefix: an end's delivery is added in the end's script. */
  outbox?: RedisDeliveryStore
}

/**
 * The jobs shared by the replicas: each job a sealed record bound to its key (the seal
 * says a replica of this gateway wrote it there), the open ones in one sorted set by
 * when a runner may start each, each team's in one of its own; results sealed beside them.
 * A swap compares the sealed text it read with the one stored, in one script: two
 * replicas racing to start a job, one wins; the swap of an end adds its webhook delivery
 * to the outbox in the same script.
 */
export class RedisJobStore implements JobStore {
  readonly #o: RedisJobStoreOptions
  readonly #records: SealedRecords<Job>
  #nextSweep = 0

  constructor(o: RedisJobStoreOptions) {
    this.#o = o
    this.#records = new SealedRecords<Job>({ redis: o.redis, seal: o.seal, keyOf: (id) => redisKey.job(o.prefix, id), parse: parseJob, onUnverified: o.onUnverified })
  }

  async add(job: Job, maxOpen: number, now: number, maxKept: number = Number.MAX_SAFE_INTEGER): Promise<boolean> {
    const { redis, prefix } = this.#o
    const key = redisKey.job(prefix, job.id)
    const done = await ADD(redis, key, redisKey.dueJobs(prefix), redisKey.teamJobs(prefix, job.team), redisKey.jobTeams(prefix), this.#records.sealed(job), job.id, dueAt(job) ?? job.askedAt, maxOpen, job.team, OPEN, now, maxKept)
    return done === 1
  }

  get(id: string): Promise<Job | null> {
    return this.#records.get(id)
  }

  async swap(current: Job, next: Job, now: number, push: Delivery | null = null, result: CacheEntry | null = null, mark: string | null = null): Promise<boolean> {
    const { redis, prefix, seal, outbox } = this.#o
    const filing = { due: redisKey.dueJobs(prefix), dueAt: dueAt(next), index: redisKey.teamJobs(prefix, current.team), indexScore: dropAt(next) ?? OPEN, ttlMs: null }
    if (push === null && result === null) return this.#records.swap(current, next, filing)
    if (push && !outbox) throw new Error(NO_OUTBOX)
    const job = this.#records.swapStep(current, next, filing)
    // No expiry (see ADD): dropped with its job's record, an hour after its expiresAt.
    const resultKey = redisKey.jobResult(prefix, current.id)
    const kept = result === null ? '' : seal.seal(resultKey, encodeEntry(result))
    const keep = { keys: [resultKey, redisKey.jobResultEnds(prefix)], args: [kept, current.team, mark ?? ''] }
    if (push === null || !outbox) return (await END(redis, ...job.keys, ...keep.keys, ...job.args, ...keep.args)) === 1
    const delivery = outbox.addStep(push, now)
    return (await END_PUSHED(redis, ...job.keys, ...keep.keys, ...delivery.keys, ...job.args, ...keep.args, ...delivery.args)) === 1
  }

  async remove(current: Job): Promise<boolean> {
    const { redis, prefix } = this.#o
    const key = redisKey.job(prefix, current.id)
    return (await REMOVE(redis, key, redisKey.dueJobs(prefix), redisKey.teamJobs(prefix, current.team), this.#records.sealed(current), current.id)) === 1
  }

  /** Also sweeps the jobs (SWEEP), at most every JOB_SWEEP_MS: every replica's runner asks every jobs.poll. */
  async due(now: number, limit: number): Promise<Job[]> {
    const { redis, prefix } = this.#o
    if (now >= this.#nextSweep) {
      this.#nextSweep = now + JOB_SWEEP_MS
      await SWEEP(redis, redisKey.jobTeams(prefix), redisKey.dueJobs(prefix), redisKey.jobResultEnds(prefix), now, redisKey.teamJobs(prefix, ''), redisKey.job(prefix, ''), redisKey.jobResult(prefix, ''), OPEN, now - OPEN_DUE_MAX_MS)
    }
    // Past the ids whose records it cannot read (sealed with another GATEWAY_SECRET, of
    // another version): they are due before the jobs it can start, and would hold them all.
    const due: Job[] = []
    for (let offset = 0; due.length < limit; offset += limit) {
      const ids = await redis.zrangebyscore(redisKey.dueJobs(prefix), '-inf', now, 'LIMIT', offset, limit)
      due.push(...(await this.#records.many(ids)))
      if (ids.length < limit) break
    }
    return due.slice(0, limit)
  }

  async openOfTeam(team: string): Promise<Job[]> {
    const { redis, prefix } = this.#o
    return this.#records.many(await redis.zrangebyscore(redisKey.teamJobs(prefix, team), OPEN, OPEN))
  }

  keptOfTeam(team: string, now: number): Promise<number> {
    const { redis, prefix } = this.#o
    return redis.zcount(redisKey.teamJobs(prefix, team), now, '+inf')
  }

  async ofTeam(team: string, now: number): Promise<Job[]> {
    const { redis, prefix } = this.#o
    const ids = await redis.zrangebyscore(redisKey.teamJobs(prefix, team), now, '+inf')
    return this.#records.many(ids)
  }

  /** The mark is read first: a result kept after it, whether the read of the team's jobs saw it or not, moves the count past it. */
  async heldResults(team: string, now: number): Promise<HeldResults> {
    const { redis, prefix } = this.#o
    const mark = (await redis.hget(redisKey.jobResultEnds(prefix), team)) ?? '0'
    return { mark, bytes: heldResultBytes(await this.ofTeam(team, now), now) }
  }

  async result(id: string, _now: number): Promise<CacheEntry | null> {
    const { redis, prefix, seal, maxEntryBytes } = this.#o
    const key = redisKey.jobResult(prefix, id)
    const value = await redis.getBuffer(key)
    if (value === null) return null
    const data = value.length <= storedBytesLimit({ maxEntryBytes }) ? seal.open(key, value) : null
    const entry = data && decodeEntry(data)
    const identity = entry && inflate(entry.gzip, maxEntryBytes)
    if (!entry || !identity) {
      this.#o.onUnverified(key)
      return null
    }
    return { ...entry, identity }
  }
}

// Sealed by this gateway, so its shape is the gateway's; a record of another version that
// lacks what this one reads is read as absent.
function parseJob(text: string): Job | null {
  const job = JSON.parse(text) as Job
  return typeof job.id === 'string' && typeof job.team === 'string' && typeof job.state === 'string' && typeof job.runs === 'number' ? job : null
}
