import { createHash, randomBytes } from 'node:crypto'
import type { Logger } from 'pino'
import type { RedisBreaker } from '../../redis/breaker.js'
import type { RedisBus } from '../../redis/bus.js'
import type { RedisClient } from '../../redis/client.js'
import { PRIORITIES } from './fair-queue.js'
import { MemoryPermits, type PermitRequest, type Permits, type Taken } from './permits.js'
import { systemClock, type Clock, type Timer } from '../../clock.js'

const CHANNEL = 'platform-permits'
// A replica refused a permit within this long: its peers tell it when they free one.
const CONTENTION_MS = 2000
// At most one "waiting" notice per credential and replica this often.
const WAITING_NOTICE_MS = 1000
// A call refused a permit asks again this often when no notice comes (a lost message, a
// peer's lease that lapsed): a bounded poll, one command per waiting replica.
export const PERMIT_RETRY_MS = 200
// A replica's mark that its team waits lives this long unless a refused take renews it:
// a few retry intervals, so a replica that stops asking stops holding permits back.
const WAITING_MARK_MS = 3 * PERMIT_RETRY_MS
// Unanswered leases remembered for dropping; past this many the oldest lapse on their own.
const MAX_UNHEARD = 64

/**
 * One permit for a call, in one script, on Redis' clock (TIME): drops lapsed leases and
 * marks, then grants a lease unless the limit is reached (`credential`), the team's own
 * ceiling is (`team`), or the permits left are wanted by calls waiting on other replicas
 * with a better claim (`turn`): another team with fewer permits for its weight (max-min
 * fairness), or the same team's call of a higher priority, or of the same priority on a
 * replica holding fewer of its permits (so a replica that frees a permit does not keep
 * taking it back from the others).
 * A refused call marks its team as waiting on its replica. Answers the permits held once
 * granted (every replica's), or why none.
 *
 * KEYS: permits (member `<replica>.<n>:<team>`, score its expiry), waiting marks (member
 * `<priority rank>:<weight>:<replica>:<team>`, score its expiry).
 * ARGV: lease id (`<replica>.<n>`), team, priority rank (0 highest), weight, limit, team
 * ceiling (0: none), lease ms, mark ms, replica, then lease members to drop first (leases
 * this replica asked for without hearing the answer, and does not hold).
 */
const TAKE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i = 10, #ARGV do redis.call('ZREM', KEYS[1], ARGV[i]) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local team, prio, weight, limit, cap = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local lease, markMs, replica = tonumber(ARGV[7]), tonumber(ARGV[8]), ARGV[9]
local mark = ARGV[3] .. ':' .. ARGV[4] .. ':' .. replica .. ':' .. team
local members = redis.call('ZRANGE', KEYS[1], 0, -1)
local held = {}
local heldOn = {}
for _, m in ipairs(members) do
  local colon = string.find(m, ':', 1, true)
  local tm = string.sub(m, colon + 1)
  local on = string.sub(m, 1, (string.find(m, '.', 1, true) or colon) - 1) .. ':' .. tm
  held[tm] = (held[tm] or 0) + 1
  heldOn[on] = (heldOn[on] or 0) + 1
end
local mine = held[team] or 0
local mineHere = heldOn[replica .. ':' .. team] or 0
if cap > 0 and mine >= cap then return 'team' end
local function waits()
  redis.call('ZADD', KEYS[2], now + markMs, mark)
  redis.call('PEXPIRE', KEYS[2], markMs * 2)
end
if #members >= limit then waits() return 'credential' end
local ahead = 0
for _, w in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  if w ~= mark then
    local a = string.find(w, ':', 1, true)
    local b = string.find(w, ':', a + 1, true)
    local c = string.find(w, ':', b + 1, true)
    local p = tonumber(string.sub(w, 1, a - 1))
    local wt = tonumber(string.sub(w, a + 1, b - 1))
    local tm = string.sub(w, c + 1)
    local on = string.sub(w, b + 1)
    if tm ~= team then
      if ((held[tm] or 0) + 1) / wt < (mine + 1) / weight then ahead = ahead + 1 end
    elseif p < prio or (p == prio and (heldOn[on] or 0) < mineHere) then ahead = ahead + 1 end
  end
end
if limit - #members <= ahead then waits() return 'turn' end
redis.call('ZADD', KEYS[1], now + lease, ARGV[1] .. ':' .. team)
redis.call('PEXPIRE', KEYS[1], lease * 2)
redis.call('ZREM', KEYS[2], mark)
return #members + 1
`

/**
 * Renews every lease this replica holds (ARGV[2..]) for ARGV[1] ms on Redis' clock, and
 * writes back any that Redis no longer has (a restart, an eviction): what Redis holds is
 * what the replicas hold. Returns how many were written back.
 */
const RENEW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[1])
local back = 0
for i = 2, #ARGV do back = back + redis.call('ZADD', KEYS[1], now + lease, ARGV[i]) end
redis.call('PEXPIRE', KEYS[1], lease * 2)
return back
`

/**
 * Drops the leases of this replica's earlier runs (ARGV[1]: `<replica>~`, ARGV[2]: this
 * run's `<replica>~<run>`): a replica killed and started again (the same pod, the same
 * port) gives back at once what its last run held, rather than after the lease.
 */
const FORGET_EARLIER_RUNS = `
local gone = 0
for _, m in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if string.sub(m, 1, #ARGV[1]) == ARGV[1] and string.sub(m, 1, #ARGV[2]) ~= ARGV[2] then
    gone = gone + redis.call('ZREM', KEYS[1], m)
  end
end
return gone
`

interface Notice {
  credential: string
  kind: 'waiting' | 'freed'
}

export interface RedisPermitsOptions {
  redis: RedisClient
  breaker: RedisBreaker
  bus: RedisBus | null
  /** The credential's leases and waiting marks (keys.ts: one hash slot). */
  keys: { permits: string; waiting: string }
  credential: string
  /** Who this replica is across its runs (its host and port): what an earlier run leased is given back at start. */
  replica: string
  /** This replica's own cap while Redis cannot be reached (platform.maxConcurrentPerReplica; null: the limit in force). */
  perReplica: number | null
  /** A permit's lease (platform.permitLease): renewed every third of it while its call runs. */
  leaseMs: number
  log: Pick<Logger, 'warn'>
  /** Leases Redis had lost and that were written back (a Redis restart, a lapse). */
  onLost: (count: number) => void
  /** Another replica freed a permit while calls waited. */
  onFreed: () => void
  clock?: Clock
}

const DOWN = Symbol('redis down')

/**
 * A replica's name across its runs: its host name (a pod's name) and proxy port, hashed
 * to the characters a lease member may hold. Two replicas share it only if they share
 * both, which a Service's pods never do.
 */
export function replicaIdentity(host: string, port: number): string {
  return createHash('sha256').update(`${host}\n${port}`).digest('base64url').slice(0, 12)
}

/**
 * Permits leased in Redis: a sorted set per credential of at most the limit in force,
 * granted by one script that also shares them fairly between the teams waiting on every
 * replica (TAKE). Every permit this replica holds, leased or granted while Redis could
 * not be reached, is renewed every third of its lease by one command, and written back if
 * Redis lost it; a permit given back leaves the renewals at once, so it lapses within its
 * lease even when its release cannot reach Redis. A replica that dies holds its permits
 * no longer than the lease. While Redis cannot be reached this replica caps itself at
 * `perReplica` (or the limit in force), counting the calls it already has in flight.
 */
export class RedisPermits implements Permits {
  readonly retryMs = PERMIT_RETRY_MS
  readonly #o: RedisPermitsOptions
  readonly #clock: Clock
  // Every permit of this replica, leased or granted while Redis was down.
  readonly #local = new MemoryPermits()
  // The lease members this replica renews: exactly the permits it holds.
  readonly #leases = new Set<string>()
  // `<replica>~<run>`: no ':' or '.', which the scripts split members on.
  readonly #prefix: string
  #seq = 0
  #renewal: Timer | null = null
  #contendedUntil = 0
  #lastWaitingNotice = 0
  // Leases asked for whose answer never came and that this replica does not hold (the
  // fallback refused them): Redis may have granted them. Dropped by the next TAKE.
  #unheard: string[] = []

  constructor(opts: RedisPermitsOptions) {
    this.#o = opts
    this.#clock = opts.clock ?? systemClock
    this.#prefix = `${opts.replica}~${randomBytes(6).toString('base64url')}`
  }

  get held(): number {
    return this.#local.held
  }

  /** The lease members this replica holds (what Redis should hold for it). */
  leases(): string[] {
    return [...this.#leases]
  }

  /** Gives back what this replica's earlier runs leased, then follows the other replicas' notices. */
  async start(): Promise<void> {
    const { breaker, redis, keys, log, credential, replica } = this.#o
    const gone = await breaker.run(() => redis.eval(FORGET_EARLIER_RUNS, 1, keys.permits, `${replica}~`, this.#prefix) as Promise<number>, 0)
    if (gone > 0) log.warn({ credential, leases: gone }, 'gave back the platform permits an earlier run of this replica still held')
    await this.#o.bus?.subscribe(CHANNEL, (message) => {
      let notice: Notice
      try {
        notice = JSON.parse(message) as Notice
      } catch {
        return // not a notice
      }
      if (notice.credential !== this.#o.credential) return
      if (notice.kind === 'waiting') this.#contendedUntil = this.#clock.now() + CONTENTION_MS
      else this.#o.onFreed()
    })
  }

  /** Stops renewing (shutdown): the leases still held lapse within their lease. */
  stop(): void {
    if (this.#renewal) this.#clock.clearInterval(this.#renewal)
    this.#renewal = null
  }

  async take(request: PermitRequest): Promise<Taken> {
    const { breaker, redis, keys, leaseMs, perReplica } = this.#o
    const id = `${this.#prefix}.${(this.#seq++).toString(36)}`
    const rank = PRIORITIES.indexOf(request.priority)
    const drop = this.#unheard.splice(0, MAX_UNHEARD)
    const got = await breaker.run(
      () => redis.eval(TAKE, 2, keys.permits, keys.waiting, id, request.team, rank, request.weight, request.limit, request.cap ?? 0, leaseMs, WAITING_MARK_MS, this.#prefix, ...drop) as Promise<string | number>,
      DOWN,
    )
    if (got === DOWN) {
      const local = this.#local.take({ team: request.team, cap: request.cap, limit: Math.min(request.limit, perReplica ?? request.limit) })
      // Granted here, the lease is renewed and given back as any other; refused, it is
      // dropped by a later TAKE, as are those this one could not drop.
      const unheard = 'full' in local ? [`${id}:${request.team}`] : []
      this.#unheard = [...drop, ...unheard, ...this.#unheard].slice(0, MAX_UNHEARD)
      return 'full' in local ? local : this.#held(id, request.team, local.release, local.inFlight)
    }
    if (typeof got !== 'number') return this.#refused(got as 'credential' | 'team' | 'turn')
    return this.#held(id, request.team, this.#local.grant(request.team).release, got)
  }

  #held(id: string, team: string, local: () => void, inFlight: number): Taken {
    const member = `${id}:${team}`
    this.#leases.add(member)
    this.#renewal ??= this.#clock.setInterval(() => void this.#renew(), Math.max(1, Math.floor(this.#o.leaseMs / 3))).unref()
    let released = false
    return {
      inFlight,
      release: () => {
        if (released) return
        released = true
        local()
        // Out of the renewals first: the lease lapses even if the release below cannot reach Redis.
        this.#leases.delete(member)
        if (this.#leases.size === 0) this.stop()
        const { breaker, redis, keys, credential } = this.#o
        void breaker.run(() => redis.zrem(keys.permits, member), null)
        if (this.#clock.now() < this.#contendedUntil) this.#notify({ credential, kind: 'freed' })
      },
    }
  }

  async #renew(): Promise<void> {
    if (this.#leases.size === 0) return
    const { breaker, redis, keys, leaseMs, onLost, log, credential } = this.#o
    const back = await breaker.run(() => redis.eval(RENEW, 1, keys.permits, leaseMs, ...this.#leases) as Promise<number>, null)
    if (typeof back === 'number' && back > 0) {
      log.warn({ credential, leases: back }, 'redis had lost platform permit leases this replica holds: written back')
      onLost(back)
    }
  }

  #refused(full: 'credential' | 'team' | 'turn'): Taken {
    const now = this.#clock.now()
    this.#contendedUntil = now + CONTENTION_MS
    if (now - this.#lastWaitingNotice >= WAITING_NOTICE_MS) {
      this.#lastWaitingNotice = now
      this.#notify({ credential: this.#o.credential, kind: 'waiting' })
    }
    return { full }
  }

  #notify(notice: Notice): void {
    // A lost notice costs a waiting call one retry interval at most.
    this.#o.bus?.publish(CHANNEL, JSON.stringify(notice)).catch(() => undefined)
  }
}
