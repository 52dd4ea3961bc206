import { randomBytes } from 'node:crypto'
import type { Metrics } from './metrics.js'
import type { RedisBreaker } from '../redis/breaker.js'
import type { RedisClient } from '../redis/client.js'
import { systemClock, type Clock, type Timer } from '../clock.js'
import { redisKey } from '../redis/keys.js'
import { redisScript } from '../redis/script.js'
import { PlatformTime, utcDayStart } from './platform-time.js'

/** One team's totals of one UTC day. */
export interface UsageTotals {
  requests: number
  /** Report reads answered without a platform call of their own: each one a call saved. */
  cacheHits: number
  platformCalls: number
  /** Bytes written to the team's connections for its answers (status line, headers, body). */
  bytes: number
  /** Answers with status 429: the team's rate limit, or the platform's 429 passed through. */
  rateLimited: number
  /** Answers with a 5xx status. */
  errors: number
  /** The platform time the team's calls held (their seat-time), in ms. */
  platformMs: number
}

export interface UsageRow extends Omit<UsageTotals, 'platformMs'> {
  day: string
  team: string
  platformCallsSaved: number
  /** `platformMs` in seconds, to the ms. */
  platformSeconds: number
}

const FIELDS = ['requests', 'cacheHits', 'platformCalls', 'bytes', 'rateLimited', 'errors', 'platformMs'] as const
const DAY_MS = 86_400_000
// A team name longer than this in a day's set of teams is none of the gateway's.
const MAX_TEAM_CHARS = 128

// Adds one team's counts of one day (ARGV: the key's lifetime in seconds, this run's mark,
// the number of count pairs, the pairs, then the counts this run added before to the day:
// field and count pairs), keeps the key for the retention, and answers the day's platform
// time of every replica (PlatformTime learns it so) and 1 when this run's mark was not
// there: its first counts of the day, or a Redis that lost its data since (a restart
// without it, a flush). Then the counts this run added before are added again, once (the
// mark set with them): each run gives back its own, so a Redis emptied keeps the day's
// totals of the runs that go on, a spent day's platform time among them.
const ADD_COUNTS = redisScript<[string | null, number]>('gatewayUsageAdd', `
local fresh = redis.call('HEXISTS', KEYS[1], ARGV[2]) == 0
local n = tonumber(ARGV[3])
for i = 4, 3 + 2 * n, 2 do redis.call('HINCRBY', KEYS[1], ARGV[i], ARGV[i + 1]) end
if fresh then
  for i = 4 + 2 * n, #ARGV, 2 do redis.call('HINCRBY', KEYS[1], ARGV[i], ARGV[i + 1]) end
  redis.call('HSET', KEYS[1], ARGV[2], 1)
end
redis.call('EXPIRE', KEYS[1], ARGV[1])
return {redis.call('HGET', KEYS[1], 'platformMs') or '0', fresh and 1 or 0}`, 1)

/** The request counter's `result` label of an answer. */
export type UsageResult = 'hit' | 'ok' | 'rate_limited' | 'refused' | 'error'

export function usageResult(status: number, hit: boolean): UsageResult {
  if (status >= 500) return 'error'
  if (status === 429) return 'rate_limited'
  if (status >= 400) return 'refused'
  return hit ? 'hit' : 'ok'
}

/**
 * Whether an answer counts as a cache hit: a report served from the cache (HIT, STALE),
 * or by joining another caller's platform call (a coalesced MISS or REFRESH that made
 * no call of its own).
 */
export function answeredByCache(status: number, cache: string | null, platformCalls: number): boolean {
  if (status >= 400 || cache === null) return false
  if (cache === 'HIT' || cache === 'STALE') return true
  return (cache === 'MISS' || cache === 'REFRESH') && platformCalls === 0
}

/** The UTC day of an epoch-ms instant, YYYY-MM-DD. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10)
}

export interface TeamUsageOptions {
  redis: RedisClient | null
  breaker: RedisBreaker | null
  prefix: string
  metrics: Metrics
  flushMs: number
  retentionDays: number
  clock?: Clock
}

type DayCounts = Map<string, UsageTotals>

/** A team's Prometheus counts since start: plain numbers on the hit path, published at scrape. */
interface Tally {
  results: Record<UsageResult, number>
  calls: number
  published: { results: Record<UsageResult, number>; calls: number }
}

/**
 * Daily totals per team. Requests are counted in this process and added to Redis every
 * `flushMs`, as the rate limiter does: the hit path never waits on Redis. A flush sends
 * one command per team that had traffic since the last one, to that team's key of the
 * day (its own hash slot on a Cluster), and names the team once a day in the day's set of
 * teams, which a query reads: an idle replica costs Redis nothing. A team's counts that
 * were not written go back, for the next flush. Without Redis each replica keeps its own
 * totals in memory, for `retentionDays`.
 */
export class TeamUsage {
  readonly #o: TeamUsageOptions
  readonly #clock: Clock
  /** day → team → counts not yet in Redis. */
  #pending = new Map<string, DayCounts>()
  /** Without Redis: the totals themselves. */
  readonly #kept = new Map<string, DayCounts>()
  #timer: Timer | null = null
  #flushing: Promise<void> | null = null
  /** day → team → the counts this run added to Redis (today's and yesterday's): given back once where Redis lost them (ADD_COUNTS). */
  readonly #written = new Map<string, DayCounts>()
  /** This run's mark in a team's day (`run:<random>`): ADD_COUNTS tells by it that Redis lost the day. */
  readonly #mark = `run:${randomBytes(6).toString('base64url')}`
  /** `<day> <team>` this replica named in the day's set of teams. */
  readonly #named = new Set<string>()
  // The current day and its pending counts, so a request costs one map lookup.
  #day = { start: 0, end: 0, teams: new Map() as DayCounts }
  readonly #tallies = new Map<string, Tally>()
  /** Each team's platform time over the last minute and the day: what its answers say and its daily bound reads. */
  readonly platformTime: PlatformTime

  constructor(opts: TeamUsageOptions) {
    this.#o = opts
    this.#clock = opts.clock ?? systemClock
    this.platformTime = new PlatformTime(this.#clock)
  }

  start(): void {
    if (this.#timer) return
    this.#timer = this.#clock.setInterval(() => void this.flush(), this.#o.flushMs)
    this.#timer.unref()
  }

  /**
   * Reads from Redis the platform time of the UTC day every replica spent for each of
   * `teams`, so that a replica started after a team spent its day refuses the team's
   * first miss (a team with a daily bound) and says that day on the team's first answer,
   * instead of learning the day at its first flush: one Redis read per team, once per start. Without Redis, or when Redis cannot be read,
   * a team's day is what this replica's flushes learn.
   */
  async readDays(teams: readonly string[]): Promise<void> {
    const { redis, breaker, prefix } = this.#o
    if (!redis || !breaker || teams.length === 0) return
    const dayStart = utcDayStart(this.#clock.now())
    const day = utcDay(dayStart)
    const totals = await breaker.run(() => Promise.all(teams.map((team) => redis.hget(redisKey.usage(prefix, team, day), 'platformMs'))), null)
    if (totals === null) return
    teams.forEach((team, i) => this.platformTime.shared(team, dayStart, 0, Number(totals[i] ?? 0) || 0))
  }

  /** Stops after one last flush, so this replica's counts reach Redis. */
  async close(): Promise<void> {
    if (this.#timer) this.#clock.clearInterval(this.#timer)
    this.#timer = null
    await this.flush()
  }

  /** One answered request of a team, at `now` (the hit path passes the clock reading it took). */
  request(team: string, status: number, hit: boolean, bytes: number, now: number = this.#clock.now()): void {
    const counts = this.#counts(team, now)
    counts.requests += 1
    // A hit is a 200 or a 304: on the hit path the two checks below are skipped.
    if (hit) counts.cacheHits += 1
    else if (status === 429) counts.rateLimited += 1
    else if (status >= 500) counts.errors += 1
    counts.bytes += bytes
    this.#tally(team).results[usageResult(status, hit)] += 1
  }

  /** One platform call made for a team (a report fill's leader, a proxied call). */
  platformCall(team: string): void {
    this.#counts(team).platformCalls += 1
    this.#tally(team).calls += 1
  }

  /** A platform call of `team` held the platform `ms` (its seat-time): the day's total and the team's minute. */
  platformSpent(team: string, ms: number): void {
    const now = this.#clock.now()
    // Whole ms in Redis (HINCRBY), each call rounded up: a call that held the platform counts.
    const whole = Math.ceil(ms)
    if (!(whole > 0)) return
    this.#counts(team, now).platformMs += whole
    this.platformTime.spend(team, whole, now)
  }

  /**
   * Adds the counts since the last scrape to `gateway_team_requests_total` and
   * `gateway_team_platform_calls_total` (a prom-client increment costs more than the
   * rest of a hit's accounting, so it is done once per scrape).
   */
  publishMetrics(): void {
    const { teamRequests, teamPlatformCalls } = this.#o.metrics
    for (const [team, t] of this.#tallies) {
      for (const result of Object.keys(t.results) as UsageResult[]) {
        const delta = t.results[result] - t.published.results[result]
        if (delta > 0) teamRequests.inc({ team, result }, delta)
        t.published.results[result] = t.results[result]
      }
      if (t.calls > t.published.calls) teamPlatformCalls.inc({ team }, t.calls - t.published.calls)
      t.published.calls = t.calls
    }
  }

  #tally(team: string): Tally {
    let t = this.#tallies.get(team)
    if (!t) {
      const zero = () => ({ hit: 0, ok: 0, rate_limited: 0, refused: 0, error: 0 })
      t = { results: zero(), calls: 0, published: { results: zero(), calls: 0 } }
      this.#tallies.set(team, t)
    }
    return t
  }

  #counts(team: string, now: number = this.#clock.now()): UsageTotals {
    if (now < this.#day.start || now >= this.#day.end) {
      const start = Math.floor(now / DAY_MS) * DAY_MS
      const name = utcDay(start)
      let teams = this.#pending.get(name)
      if (!teams) {
        teams = new Map()
        this.#pending.set(name, teams)
      }
      this.#day = { start, end: start + DAY_MS, teams }
    }
    return teamTotals(this.#day.teams, team)
  }

  /** Adds the pending counts to Redis (or to this replica's totals without it). */
  flush(): Promise<void> {
    this.#flushing ??= this.#flush().finally(() => {
      this.#flushing = null
    })
    return this.#flushing
  }

  async #flush(): Promise<void> {
    if (this.#pending.size === 0) return
    const pending = this.#pending
    this.#pending = new Map()
    this.#day = { start: 0, end: 0, teams: new Map() }
    const { redis, breaker, prefix, retentionDays } = this.#o
    if (!redis || !breaker) {
      for (const [day, teams] of pending) {
        for (const [team, counts] of teams) {
          const kept = totalsOf(this.#kept, day, team)
          add(kept, counts)
          this.platformTime.shared(team, Date.parse(`${day}T00:00:00Z`), counts.platformMs, kept.platformMs)
        }
      }
      const oldest = utcDay(this.#clock.now() - retentionDays * DAY_MS)
      for (const day of this.#kept.keys()) if (day < oldest) this.#kept.delete(day)
      return
    }
    const ttl = retentionDays * 86_400
    await Promise.all(
      [...pending].flatMap(([day, teams]) =>
        [...teams].map(async ([team, counts]) => {
          const pairs = (c: UsageTotals) => FIELDS.filter((field) => c[field] > 0).flatMap((field) => [field, c[field]])
          const args = pairs(counts)
          const before = this.#written.get(day)?.get(team)
          const total = await breaker.run(async () => {
            const named = this.#named.has(`${day} ${team}`)
            await this.#name(redis, day, team, ttl)
            const [platformMs, fresh] = await ADD_COUNTS(redis, redisKey.usage(prefix, team, day), ttl, this.#mark, args.length / 2, ...args, ...(before ? pairs(before) : []))
            if (named && Number(fresh) === 1) {
              // Named before, yet this run's mark on the team's day was gone: Redis lost its
              // data (the day's set of teams with it). Name the team again.
              this.#named.delete(`${day} ${team}`)
              await this.#name(redis, day, team, ttl)
            }
            return Number(platformMs) || 0
          }, null)
          // Not written: the counts go back, to be added by the next flush.
          if (total === null) add(totalsOf(this.#pending, day, team), counts)
          else {
            add(totalsOf(this.#written, day, team), counts)
            this.platformTime.shared(team, Date.parse(`${day}T00:00:00Z`), counts.platformMs, total)
          }
        }),
      ),
    )
    const oldest = utcDay(this.#clock.now() - DAY_MS)
    for (const named of this.#named) if (named.slice(0, 10) < oldest) this.#named.delete(named)
    for (const day of this.#written.keys()) if (day < oldest) this.#written.delete(day)
  }

  /** Names `team` in the set of the day's teams, once a day per replica. */
  async #name(redis: RedisClient, day: string, team: string, ttl: number): Promise<void> {
    const named = `${day} ${team}`
    if (this.#named.has(named)) return
    const key = redisKey.usageTeams(this.#o.prefix, day)
    const results = await redis.multi().sadd(key, team).expire(key, ttl).exec()
    if (!results || results.some(([err]) => err)) throw new Error(`naming ${team} in the teams of ${day} failed`)
    this.#named.add(named)
  }

  /**
   * Totals per day and team from `from` to `to` (UTC days, inclusive), this replica's
   * pending counts flushed first; null when Redis could not be read.
   */
  async query(from: string, to: string, team: string | null): Promise<UsageRow[] | null> {
    await this.flush()
    const days: string[] = []
    for (let ms = Date.parse(`${from}T00:00:00Z`); ms <= Date.parse(`${to}T00:00:00Z`); ms += DAY_MS) days.push(utcDay(ms))
    const { redis, breaker } = this.#o
    let byDay: [string, DayCounts | undefined][]
    if (!redis || !breaker) {
      byDay = days.map((day) => [day, this.#kept.get(day)])
    } else {
      const read = await breaker.run(() => Promise.all(days.map((day) => this.#readDay(day, team))), null)
      if (!read) return null
      byDay = days.map((day, i) => [day, read[i]])
    }
    const rows: UsageRow[] = []
    for (const [day, teams] of byDay) {
      for (const [name, counts] of [...(teams ?? [])].sort(([a], [b]) => a.localeCompare(b))) {
        if (team === null || name === team) rows.push(usageRow(day, name, counts))
      }
    }
    return rows
  }

  /**
   * One day's totals in Redis, of one team or of every team named in the day's set,
   * with what versions before per-team keys wrote in the day's shared hash added.
   */
  async #readDay(day: string, team: string | null): Promise<DayCounts> {
    const { redis, prefix } = this.#o
    if (!redis) return new Map()
    const [shared, named] = await Promise.all([redis.hgetall(redisKey.usageDayShared(prefix, day)), team !== null ? [team] : redis.smembers(redisKey.usageTeams(prefix, day))])
    const names = named.filter((name) => name.length <= MAX_TEAM_CHARS)
    const hashes = await Promise.all(names.map((name) => redis.hgetall(redisKey.usage(prefix, name, day))))
    const teams = parseDay(shared)
    names.forEach((name, i) => {
      const hash = hashes[i] ?? {}
      if (Object.keys(hash).length > 0) add(teamTotals(teams, name), parseCounts(hash))
    })
    return teams
  }
}


/** One team's totals of one day as `GET /admin/usage` answers them. */
function usageRow(day: string, team: string, { platformMs, ...counts }: UsageTotals): UsageRow {
  return { day, team, ...counts, platformCallsSaved: counts.cacheHits, platformSeconds: platformMs / 1000 }
}

/** One team's hash of a day: a field per count. */
function parseCounts(hash: Record<string, string>): UsageTotals {
  const counts = noCounts()
  for (const field of FIELDS) counts[field] = Number(hash[field] ?? 0) || 0
  return counts
}

/** The day's shared hash of earlier versions: a field per team and count (`growth:requests`). */
function parseDay(hash: Record<string, string>): DayCounts {
  const teams: DayCounts = new Map()
  for (const [field, value] of Object.entries(hash)) {
    const colon = field.lastIndexOf(':')
    const name = field.slice(colon + 1) as (typeof FIELDS)[number]
    if (colon < 1 || !FIELDS.includes(name)) continue
    teamTotals(teams, field.slice(0, colon))[name] = Number(value)
  }
  return teams
}

function totalsOf(days: Map<string, DayCounts>, day: string, team: string): UsageTotals {
  let teams = days.get(day)
  if (!teams) {
    teams = new Map()
    days.set(day, teams)
  }
  return teamTotals(teams, team)
}

function teamTotals(teams: DayCounts, team: string): UsageTotals {
  let counts = teams.get(team)
  if (!counts) {
    counts = noCounts()
    teams.set(team, counts)
  }
  return counts
}

function noCounts(): UsageTotals {
  return { requests: 0, cacheHits: 0, platformCalls: 0, bytes: 0, rateLimited: 0, errors: 0, platformMs: 0 }
}

function add(into: UsageTotals, counts: UsageTotals): void {
  for (const field of FIELDS) into[field] += counts[field]
}
