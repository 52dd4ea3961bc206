import { redisKey } from '../redis/keys.js'
import { redisScript } from '../redis/script.js'
import { deliveryDueAt, type Delivery } from './delivery.js'
import { deliveryRecordMs, type DeliveryStore, type OutboxBounds } from './delivery-store.js'
import { SealedRecords, type SharedStoreOptions } from './sealed-records.js'

// Every key of the outbox shares the jobs' hash tag {jobs}: one slot, so that one script
// adds a delivery, files it due, in its team's set and the list of all, and drops the
// team's oldest beyond its bound (their keys built from ARGV[8], in the same slot).
const ADD = redisScript<number>(
  'gatewayDeliveryAdd',
  `redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. ARGV[7])
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', '(' .. ARGV[7])
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[5]) then return 0 end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[2])
redis.call('ZADD', KEYS[4], ARGV[4], ARGV[2])
local over = redis.call('ZCARD', KEYS[3]) - tonumber(ARGV[6])
if over > 0 then
  for _, id in ipairs(redis.call('ZRANGE', KEYS[3], 0, over - 1)) do
    redis.call('DEL', ARGV[8] .. id)
    redis.call('ZREM', KEYS[2], id)
    redis.call('ZREM', KEYS[4], id)
  end
  redis.call('ZREMRANGEBYRANK', KEYS[3], 0, over - 1)
end
return 1`,
  4,
)

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
    const { redis, prefix, bounds } = this.#o
    const keys = [redisKey.delivery(prefix, d.id), redisKey.dueDeliveries(prefix), redisKey.teamDeliveries(prefix, d.team), redisKey.deliveries(prefix)]
    const done = await ADD(redis, ...keys, this.#records.sealed(d), d.id, deliveryDueAt(d) ?? now, d.createdAt, deliveryRecordMs(d, now, bounds), bounds.perTeam, now - bounds.lifeMs, redisKey.delivery(prefix, ''))
    return done === 1
  }

  get(id: string): Promise<Delivery | null> {
    return this.#records.get(id)
  }

  swap(current: Delivery, next: Delivery, now: number): Promise<boolean> {
    const { prefix, bounds } = this.#o
    return this.#records.swap(current, next, { due: redisKey.dueDeliveries(prefix), dueAt: deliveryDueAt(next), index: redisKey.teamDeliveries(prefix, current.team), indexScore: current.createdAt, ttlMs: deliveryRecordMs(next, now, bounds) })
  }

  async due(now: number, limit: number): Promise<Delivery[]> {
    const { redis, prefix } = this.#o
    const ids = await redis.zrangebyscore(redisKey.dueDeliveries(prefix), '-inf', now, 'LIMIT', 0, limit)
    const due = await this.#records.many(ids)
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

// Sealed by this gateway, so its shape is the gateway's; a record of another version that
// lacks what this one reads is read as absent.
function parseDelivery(text: string): Delivery | null {
  const d = JSON.parse(text) as Delivery
  return typeof d.id === 'string' && typeof d.team === 'string' && typeof d.state === 'string' && Array.isArray(d.attempts) && typeof d.runs === 'number' ? d : null
}
