import type { RedisClient } from './client.js'
import { redisScript } from './script.js'

// A hash read from Redis with its bounds checked there, before a byte of it crosses the
// wire: Redis is shared, not trusted, and a hash someone filled with millions of fields,
// or with values of megabytes, must cost a reader no more than the gateway's own would.
// nil when the hash has more fields than `maxFields`; else only the fields and values of
// the gateway's sizes (a longer one is not the gateway's and is left out).
const READ_BOUNDED = redisScript<unknown>('gatewayReadBoundedHash', `
local n = redis.call('HLEN', KEYS[1])
if n > tonumber(ARGV[1]) then return false end
local flat = redis.call('HGETALL', KEYS[1])
local out = {}
for i = 1, #flat, 2 do
  if #flat[i] <= tonumber(ARGV[2]) and #flat[i + 1] <= tonumber(ARGV[3]) then
    out[#out + 1] = flat[i]
    out[#out + 1] = flat[i + 1]
  end
end
return out`, 1)

/** What a hash of the gateway's may hold at most. */
export interface HashBounds {
  maxFields: number
  maxFieldBytes: number
  maxValueBytes: number
}

/** Pairs of a flat reply, or null when the reply is not one (the hash has too many fields). */
function pairs(flat: unknown): [string, string][] | null {
  if (!Array.isArray(flat)) return null
  const out: [string, string][] = []
  for (let i = 0; i + 1 < flat.length; i += 2) out.push([String(flat[i]), String(flat[i + 1])])
  return out
}

/** The fields of `key` within `bounds`, or null when it holds more fields than the bounds allow. Throws when Redis fails. */
export async function readBoundedHash(redis: RedisClient, key: string, bounds: HashBounds): Promise<[string, string][] | null> {
  return pairs(await READ_BOUNDED(redis, key, bounds.maxFields, bounds.maxFieldBytes, bounds.maxValueBytes))
}

/** readBoundedHash of each of `keys`, in one pipeline (the keys must share a hash slot on a Cluster); a hash that failed reads as null. */
export async function readBoundedHashes(redis: RedisClient, keys: readonly string[], bounds: HashBounds): Promise<([string, string][] | null)[]> {
  if (keys.length === 0) return []
  // Defined on the client before the pipeline is made from it: the pipeline has the script then.
  READ_BOUNDED.define(redis)
  const batch = redis.pipeline()
  for (const key of keys) READ_BOUNDED.queue(batch, key, bounds.maxFields, bounds.maxFieldBytes, bounds.maxValueBytes)
  const results = (await batch.exec()) ?? []
  return keys.map((_key, i) => {
    const [err, flat] = results[i] ?? [new Error('no reply'), null]
    return err ? null : pairs(flat)
  })
}

// Deletes each field given (field, value pairs) that still holds the value read.
const DROP_UNCHANGED = redisScript<number>(
  'gatewayDropUnchangedFields',
  `local n = 0
for i = 1, #ARGV, 2 do
  if redis.call('HGET', KEYS[1], ARGV[i]) == ARGV[i + 1] then n = n + redis.call('HDEL', KEYS[1], ARGV[i]) end
end
return n`,
  1,
)

/**
 * Deletes from `key` each of `fields` (as read) that still holds the value read: a field
 * another replica rewrote since is kept. Returns how many were deleted; throws when Redis fails.
 */
export async function dropUnchangedFields(redis: RedisClient, key: string, fields: readonly [string, string][]): Promise<number> {
  return fields.length === 0 ? 0 : DROP_UNCHANGED(redis, key, ...fields.flat())
}

// Sets a field to ARGV[3] only while it holds what was read: ARGV[2] with ARGV[4] = '1', nothing with '0'.
const SET_UNCHANGED = redisScript<number>(
  'gatewaySetUnchangedField',
  `local v = redis.call('HGET', KEYS[1], ARGV[1])
if (ARGV[4] == '0' and v == false) or (ARGV[4] == '1' and v == ARGV[2]) then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
  return 1
end
return 0`,
  1,
)

/**
 * Sets `field` of `key` to `value` if it still holds `read` (null: the field was absent):
 * a read, a decision and a write that no other replica's write comes between. Returns
 * whether it was set (false: it changed since it was read); throws when Redis fails.
 */
export async function setUnchangedField(redis: RedisClient, key: string, field: string, read: string | null, value: string): Promise<boolean> {
  return (await SET_UNCHANGED(redis, key, field, read ?? '', value, read === null ? '0' : '1')) === 1
}
