import { randomBytes } from 'node:crypto'
import type { Clock, Timer } from '../../clock.js'
import type { RedisBreaker } from '../../redis/breaker.js'
import type { RedisClient } from '../../redis/client.js'
import type { RedisSeal } from '../../redis/seal.js'
import { redisScript } from '../../redis/script.js'
import { COUNT_WINDOW_MS, type CountRecord, type CountShares, type TeamTally } from './count-shares.js'

/**
 * The platform's count shared out across replicas (docs/governor.md, "The platform's count,
 * shared out"): while a replica shares the count out, it writes its record (count-shares.ts
 * `record`) to one hash per credential every COUNT_SYNC_MS and reads the others' in the same
 * script; a replica that reads one shares the count out too (`heard`), and writes its own.
 * A replica whose count binds nothing writes nothing and reads nothing: no Redis command
 * until the platform refuses past its count. The records' times are ages when written, and
 * the script stamps each on Redis' clock: replicas need no common clock.
 */

/** How often a replica sharing the count out writes its record and reads the others': a call's time at the platform, about. */
export const COUNT_SYNC_MS = 250
/** A record not written again within this is a replica that stopped (it ended the count's sharing, or itself): its calls count to the end of the counting window, its teams ask no more. */
export const RECORD_LIFE_MS = 4 * COUNT_SYNC_MS

/**
 * KEYS: the credential's hash. ARGV: run, record ('' to drop it), records' life ms. Writes the
 * run's record stamped with Redis' time, drops the records past their life (or stamped
 * ahead of Redis' time: no replica wrote them), and answers
 * Redis' time then the others' fields and values.
 */
const EXCHANGE = redisScript<(string | number)[]>('gatewayCountExchange', `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local life = tonumber(ARGV[3])
if ARGV[2] == '' then redis.call('HDEL', KEYS[1], ARGV[1]) else redis.call('HSET', KEYS[1], ARGV[1], now .. '|' .. ARGV[2]) end
local out = { now }
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local at = tonumber(string.match(all[i + 1], '^(%d+)|'))
  if at == nil or at + life < now or at > now + life then
    redis.call('HDEL', KEYS[1], all[i])
  elseif all[i] ~= ARGV[1] then
    out[#out + 1] = all[i]
    out[#out + 1] = all[i + 1]
  end
end
if #all > 0 then redis.call('PEXPIRE', KEYS[1], life * 2) end
return out
`, 1)

/** A record as written: `<limit>|<window age>|<refusal left>|<lend asks>|<team>,<sent>,<asks>,<last or ->,<asked age>;…` (ms; a team name holds no `,;|`). */
export function encodeCountRecord(r: CountRecord, now: number): string {
  const teams = r.teams.map((t) => `${t.team},${t.sent},${t.asks},${t.last ?? '-'},${Math.max(0, now - t.askedAt)}`).join(';')
  return `${r.limit}|${Math.max(0, now - r.windowAt)}|${Math.max(0, r.refusedUntil - now)}|${r.lendAsks}|${teams}`
}

/** A written record, `age` ms old, on this clock at `now`; `maxHoldMs`: the longest refusal it may tell; null when it is not one. */
export function decodeCountRecord(text: string, age: number, now: number, maxHoldMs: number): CountRecord | null {
  const m = /^(\d{1,9})\|(\d{1,12})\|(\d{1,12})\|(\d{1,9})\|([^|]*)$/.exec(text)
  if (m === null || Number(m[1]) === 0) return null
  const teams: TeamTally[] = []
  for (const part of (m[5] as string).split(';')) {
    if (part === '') continue
    const f = /^([A-Za-z0-9_.-]{1,64}),(\d{1,9}),(\d{1,9}),(\d{1,9}|-),(\d{1,12})$/.exec(part)
    if (f === null) return null
    const [, team, sent, asks, last, askedAgo] = f as unknown as [string, string, string, string, string, string]
    teams.push({ team, sent: Number(sent), asks: Number(asks), last: last === '-' ? null : Number(last), askedAt: now - age - Number(askedAgo) })
  }
  const refusedFor = Math.min(maxHoldMs, Number(m[3]) - age)
  return { limit: Number(m[1]), windowAt: now - age - Number(m[2]), refusedUntil: refusedFor > 0 ? now + refusedFor : 0, lendAsks: Number(m[4]), teams }
}

interface CountSyncOptions {
  redis: RedisClient
  breaker: RedisBreaker
  /** The credential's hash (keys.ts). */
  key: string
  counts: CountShares
  clock: Clock
  /** GATEWAY_SECRET's seal: a record without it is not read. Without one, a record tells a refusal of platform.maxPause at most. */
  seal: RedisSeal | null
  maxPauseMs: number
  /** A record read without this gateway's seal: its key and field. */
  onUnverified: (where: string) => void
}

/** One credential's count records in Redis, written and read every COUNT_SYNC_MS while this replica shares the count out. */
export class CountSync {
  readonly #o: CountSyncOptions
  readonly #run = randomBytes(9).toString('base64url')
  #timer: Timer | null = null
  #written = false
  #busy = false
  /** When the others' records were last read (this clock). */
  #heardAt = 0

  constructor(opts: CountSyncOptions) { this.#o = opts }

  /**
   * After an answer: starts the exchange once the count is shared out here; until then, where
   * the platform writes a count, looks at the others' records every PEEK_MS (a replica started
   * while the others share the count out shares it out from its first answer, not from its
   * first 429).
   */
  poke(): void {
    if (this.#timer !== null) return
    if (this.#o.counts.enforced) {
      this.#timer = this.#o.clock.setInterval(() => void this.exchange(), COUNT_SYNC_MS).unref()
      void this.exchange()
    } else if (this.#o.counts.peekDue()) {
      void this.exchange().then(() => this.#o.counts.enforced && this.poke())
    }
  }

  /** At start: a look at the others' records, before any call (a replica started while they share the count out shares it out from its first call). */
  async start(): Promise<void> {
    await this.exchange()
    this.poke()
  }

  /** Writes this replica's record (or drops it: the count is not shared out here, and a replica that wrote one stops) and hears the others'. */
  async exchange(): Promise<void> {
    if (this.#busy) return
    this.#busy = true
    try {
      const { counts, clock } = this.#o
      const record = counts.record()
      if (record === null) this.stop()
      if (record === null && this.#written) {
        // No longer shared out here: the record goes, and what the others say is not heard (this replica's answers ended it).
        await this.#swap('')
        this.#written = false
        return
      }
      const records = await this.#swap(record === null ? '' : this.#sealed(encodeCountRecord(record, clock.now())))
      this.#written = record !== null
      if (records === null) {
        // Redis unreachable: once the records heard would have lapsed in it, this replica shares out what it reads alone.
        if (clock.now() - this.#heardAt > RECORD_LIFE_MS) counts.heard([])
        return
      }
      this.#heardAt = clock.now()
      // A look (nothing written) hears the others only where they share the count out.
      if (record !== null || records.length > 0) counts.heard(records)
    } finally {
      this.#busy = false
    }
  }

  /** Writes `text` as this run's record ('' drops it) and reads the others' (null: Redis unreachable). */
  async #swap(text: string): Promise<CountRecord[] | null> {
    const { redis, breaker, key, clock, seal } = this.#o
    // Kept for the counting window: a replica that stopped (a restart) made calls that count in it still.
    const answer = await breaker.run(() => EXCHANGE(redis, key, this.#run, text, COUNT_WINDOW_MS), null)
    if (answer === null) return null
    const [redisNow, ...fields] = answer.map(String)
    const records: CountRecord[] = []
    for (let i = 0; i + 1 < fields.length; i += 2) {
      const [, at, body] = /^(\d+)\|(.*)$/s.exec(fields[i + 1] as string) ?? []
      const where = `${key}#${fields[i] as string}`
      const opened = body === undefined ? null : seal ? seal.openText(where, body) : body
      const age = Number(redisNow) - Number(at)
      const heard = opened === null ? null : decodeCountRecord(opened, age, clock.now(), seal ? Infinity : this.#o.maxPauseMs)
      if (heard === null) this.#o.onUnverified(where)
      else records.push(age > RECORD_LIFE_MS ? { ...heard, gone: true } : heard)
    }
    return records
  }

  /** Ends the exchange (the count no longer shared out here, or shutdown: the record lapses within RECORD_LIFE_MS). */
  stop(): void {
    this.#o.clock.clearInterval(this.#timer)
    this.#timer = null
  }

  #sealed(text: string): string {
    return this.#o.seal ? this.#o.seal.sealText(`${this.#o.key}#${this.#run}`, text) : text
  }
}
