import type { RedisBreaker } from '../../redis/breaker.js'
import type { RedisBus } from '../../redis/bus.js'
import type { RedisClient } from '../../redis/client.js'
import { redisScript } from '../../redis/script.js'
import { decodeRecord } from './lease-plan.js'
import type { LeaseAnswer, LeaseAsk, LeaseStore } from './lease-store.js'

/**
 * One hash per credential (keys.ts): a field per replica run (`<expiry>|<lease>|<record>`) and `limit` (the shared limit,
 * sealed by its writer). The script grants on Redis' clock (docs/governor.md, "Across replicas"); it writes the limit record it brings and
 * answers every live record, their calls (past `#`) only to the run that learns.
 * ARGV: run, record past its lease, in flight, need, ask, limit, held, lease ms, limit record ('' for none), 1 if it learns.
 * Returns granted, free after the grant, 1 if Redis had a record of the run, the limit record or '', Redis' clock (ms), the others' fields and values.
 */
const LEASE = redisScript<[number, number, number, string, number, ...string[]]>('gatewaySeatLease5', `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local run, record = ARGV[1], ARGV[2]
local inflight, need, ask, limit, held, ttl = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
-- Redis at its maxmemory (noeviction) refuses a script's first write that takes memory but
-- not a later one: the run's own field, written first, makes a refused renewal drop no
-- other run's lapsed record, whose replica keeps to its outage share.
redis.call('HSET', KEYS[1], run, redis.call('HGET', KEYS[1], run) or '')
local occupied, known, others = 0, 0, {}
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local field, value = all[i], all[i + 1]
  if field ~= 'limit' then
    local exp, lease, f, rest = string.match(value, '^(%d+)|(%d+)|(%d+)|(.*)$')
    if exp == nil or tonumber(exp) + ttl < now then
      redis.call('HDEL', KEYS[1], field)
    elseif tonumber(exp) < now then
      if field ~= run then occupied = occupied + tonumber(f) end
    elseif field == run then
      known = 1
    else
      occupied = occupied + math.max(tonumber(lease), tonumber(f))
      others[#others + 1] = field
      if ARGV[10] ~= '1' then rest = string.match(rest, '^[^#]*') end
      others[#others + 1] = lease .. '|' .. f .. '|' .. rest
    end
  end
end
local free = limit - occupied
local granted = math.max(0, math.min(ask, free))
if known == 0 and held > 0 then granted = math.min(granted, held) end
if ARGV[9] ~= '' then redis.call('HSET', KEYS[1], 'limit', ARGV[9]) end
if granted == 0 and inflight == 0 and need == 0 then
  redis.call('HDEL', KEYS[1], run)
else
  redis.call('HSET', KEYS[1], run, (now + ttl) .. '|' .. granted .. '|' .. record)
end
redis.call('PEXPIRE', KEYS[1], math.max(ttl * 2, 3600000))
local out = { granted, free - math.max(granted, inflight), known, redis.call('HGET', KEYS[1], 'limit') or '', now }
for i = 1, #others do out[#out + 1] = others[i] end
return out
`, 1)

/** Gives the seats of a run back (a clean stop). KEYS: the hash. ARGV: run. */
const GIVE_BACK = redisScript<number>('gatewaySeatGiveBack', `return redis.call('HDEL', KEYS[1], ARGV[1])`, 1)

const DOWN = Symbol('redis down')

/** `key`: the credential's hash (keys.ts). */
interface RedisLeaseStoreOptions { redis: RedisClient; breaker: RedisBreaker; bus: RedisBus | null; key: string; credential: string }

/** The lease store in Redis, through the breaker; a run is told of seats given back on a bus channel of its own, and of a new shared limit on one every run hears. */
export class RedisLeaseStore implements LeaseStore {
  readonly #o: RedisLeaseStoreOptions

  constructor(opts: RedisLeaseStoreOptions) { this.#o = opts }

  async renew(ask: LeaseAsk): Promise<LeaseAnswer> {
    const { breaker, redis, key } = this.#o
    const answer = await breaker.run(() => LEASE(redis, key, ask.run, ask.record, ask.inFlight, ask.need, ask.ask, ask.limit, ask.held, ask.leaseMs, ask.limitRecord ?? '', ask.learns ? 1 : 0), DOWN)
    if (answer === DOWN) throw new Error('redis cannot be reached')
    const [granted, free, known, limitRecord, now, ...fields] = answer
    const others = fields.flatMap((field, i) => (i % 2 === 1 ? [] : (decodeRecord(String(field), String(fields[i + 1])) ?? [])))
    return { granted: Number(granted), free: Number(free), known: Number(known) === 1, others, limitRecord: limitRecord ? String(limitRecord) : null, now: Number(now) }
  }

  async giveBack(run: string): Promise<void> { await this.#o.breaker.run(() => GIVE_BACK(this.#o.redis, this.#o.key, run), 0) }

  async listen(run: string, fn: (everyone: boolean) => void): Promise<void> {
    await this.#o.bus?.subscribe(this.#channel(run), () => fn(false))
    await this.#o.bus?.subscribe(this.#channel(null), (from) => from !== run && fn(true))
  }

  async tell(run: string): Promise<void> { await this.#o.bus?.publish(this.#channel(run), '1') }
  async tellAll(from: string): Promise<void> { await this.#o.bus?.publish(this.#channel(null), from) }

  /** A run's own channel, or (null) the one every run of the credential hears. */
  #channel(run: string | null): string { return `platform-seats:${this.#o.credential}${run === null ? '' : `:${run}`}` }
}
