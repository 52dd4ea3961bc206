import { redisKey } from '../redis/keys.js'
import { redisScript, type ScriptStep } from '../redis/script.js'
import { deliveryDueAt, type Delivery } from './delivery.js'
import { deliveryRecordMs, dueAfter, type DeliveryStore, type DueMark, type OutboxBounds } from './delivery-store.js'
import { SealedRecords, type SharedStoreOptions } from './sealed-records.js'

/**
 * Adds a delivery unless one of its id is kept (SET NX), files it due, in its team's set
 * and the list of all, and drops the team's oldest beyond its bound (their keys built from
 * A[8]). A Lua function of 4 keys and 8 arguments (`RedisDeliveryStore.addStep`), so that
 * a job's end adds its delivery in the same script (redis-job-store.ts). Every key of the
 * outbox shares the jobs' hash tag {jobs}: one slot, on a Cluster too.
 *
 * A delivery not yet made carries no expiry (A[5] ''), as a job's record does not
 * (redis-job-store.ts): a Redis that evicts keys with one at maxmemory would take it, and
 * the team would never be told its job ended. Each add drops those past their life.
 */
export const ADD_DELIVERY_LUA = `local function addDelivery(K, A)
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', K[4], '-inf', '(' .. A[7])) do
    redis.call('DEL', A[8] .. id)
    redis.call('ZREM', K[2], id)
  end
  redis.call('ZREMRANGEBYSCORE', K[3], '-inf', '(' .. A[7])
  redis.call('ZREMRANGEBYSCORE', K[4], '-inf', '(' .. A[7])
  local added
  if A[5] == '' then added = redis.call('SET', K[1], A[1], 'NX') else added = redis.call('SET', K[1], A[1], 'NX', 'PX', A[5]) end
  if not added then return 0 end
  redis.call('ZADD', K[2], A[3], A[2])
  redis.call('ZADD', K[3], A[4], A[2])
  redis.call('ZADD', K[4], A[4], A[2])
  local over = redis.call('ZCARD', K[3]) - tonumber(A[6])
  if over > 0 then
    for _, id in ipairs(redis.call('ZRANGE', K[3], 0, over - 1)) do
      redis.call('DEL', A[8] .. id)
      redis.call('ZREM', K[2], id)
      redis.call('ZREM', K[4], id)
    end
    redis.call('ZREMRANGEBYRANK', K[3], 0, over - 1)
  end
  return 1
end`

const ADD = redisScript<number>('gatewayDeliveryAdd', `${ADD_DELIVERY_LUA}\nreturn addDelivery(KEYS, ARGV)`, 4)

export interface RedisDeliveryStoreOptions extends SharedStoreOptions {
  bounds: OutboxBounds
}

/**
 * The webhook outbox shared by the replicas: each delivery a sealed record bound to its
 * key (SealedRecords, as the jobs), the pending ones in one sorted set by when a
 * deliverer may claim each, every one in its team's set and the list of all by when it
 * was made. Added with SET NX: the end of one job told twice is one delivery.
 */
export class RedisDeliveryStore implements DeliveryStore {
  readonly #o: RedisDeliveryStoreOptions
  readonly #records: SealedRecords<Delivery>

  constructor(o: RedisDeliveryStoreOptions) {
    this.#o = o
    this.#records = new SealedRecords<Delivery>({ redis: o.redis, seal: o.seal, keyOf: (id) => redisKey.delivery(o.prefix, id), parse: parseDelivery, onUnverified: o.onUnverified })
  }

  async add(d: Delivery, now: number): Promise<boolean> {
    const { keys, args } = this.addStep(d, now)
    return (await ADD(this.#o.redis, ...keys, ...args)) === 1
  }

  /** The keys and arguments of ADD_DELIVERY_LUA's `addDelivery` adding `d` at `now`. */
  addStep(d: Delivery, now: number): ScriptStep {
    const { prefix, bounds } = this.#o
    return {
      keys: [redisKey.delivery(prefix, d.id), redisKey.dueDeliveries(prefix), redisKey.teamDeliveries(prefix, d.team), redisKey.deliveries(prefix)],
      args: [this.#records.sealed(d), d.id, deliveryDueAt(d) ?? now, d.createdAt, recordMs(d, now, bounds) ?? '', bounds.perTeam, now - bounds.lifeMs, redisKey.delivery(prefix, '')],
    }
  }

  get(id: string): Promise<Delivery | null> {
    return this.#records.get(id)
  }

  swap(current: Delivery, next: Delivery, now: number): Promise<boolean> {
    const { prefix, bounds } = this.#o
    return this.#records.swap(current, next, { due: redisKey.dueDeliveries(prefix), dueAt: deliveryDueAt(next), index: redisKey.teamDeliveries(prefix, current.team), indexScore: current.createdAt, ttlMs: recordMs(next, now, bounds) })
  }

  async dueIds(now: number, after: DueMark | null, count: number): Promise<DueMark[]> {
    const key = redisKey.dueDeliveries(this.#o.prefix)
    const marks: DueMark[] = []
    // From `after`'s due time on, read past it and any due with it before it (one more than
    // `count` a read: `after` itself, when still due, is the one read past).
    for (let offset = 0; ; offset += count + 1) {
      const flat = await this.#o.redis.zrangebyscore(key, after?.at ?? '-inf', now, 'WITHSCORES', 'LIMIT', offset, count + 1)
      for (let i = 0; i + 1 < flat.length && marks.length < count; i += 2) {
        const mark = { id: flat[i] as string, at: Number(flat[i + 1]) }
        if (after === null || dueAfter(mark, after)) marks.push(mark)
      }
      if (marks.length === count || flat.length < 2 * (count + 1)) return marks
    }
  }

  async records(ids: readonly string[]): Promise<Delivery[]> {
    const { redis, prefix } = this.#o
    if (ids.length === 0) return []
    const due = await this.#records.many([...ids])
    // A record gone (dropped by its team's bound, or its time) leaves the due set.
    const gone = ids.filter((id) => !due.some((d) => d.id === id))
    if (gone.length > 0) await redis.zrem(redisKey.dueDeliveries(prefix), ...gone)
    return due
  }

  async nextDue(): Promise<number | null> {
    const [, score] = await this.#o.redis.zrange(redisKey.dueDeliveries(this.#o.prefix), 0, 0, 'WITHSCORES')
    return score === undefined ? null : Number(score)
  }

  async latest(limit: number, _now: number): Promise<Delivery[]> {
    const { redis, prefix } = this.#o
    return this.#records.many(await redis.zrevrange(redisKey.deliveries(prefix), 0, limit - 1))
  }
}

/** A settled delivery's record expires (deliveryRecordMs); one not yet made carries no expiry (ADD_DELIVERY_LUA). */
function recordMs(d: Delivery, now: number, bounds: OutboxBounds): number | null {
  return d.state === 'pending' ? null : deliveryRecordMs(d, now, bounds)
}

// Sealed by this gateway, so its shape is the gateway's; a record of another version that
// lacks what this one reads is read as absent.
function parseDelivery(text: string): Delivery | null {
  const d = JSON.parse(text) as Delivery
  return typeof d.id === 'string' && typeof d.team === 'string' && typeof d.state === 'string' && Array.isArray(d.attempts) && typeof d.runs === 'number' ? d : null
}
