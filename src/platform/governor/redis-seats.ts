import { createHash, randomBytes } from 'node:crypto'
import type { Logger } from 'pino'
import type { RedisBreaker } from '../../redis/breaker.js'
import type { RedisBus } from '../../redis/bus.js'
import type { RedisClient } from '../../redis/client.js'
import { redisScript } from '../../redis/script.js'
import type { ReplicaDemand, SeatLease } from './seat-lease.js'
import { systemClock, type Clock, type Timer } from '../../clock.js'

/**
 * One replica's lease of seats, in one script on Redis' clock (TIME), over one hash per
 * credential (a field per replica run:
 * `<expiry>|<lease>|<in flight>|<need>|<ask>|<waiting since>|<turn since>|<teams>`, teams
 * as `<team>,<weight>,<cap>,<demand>,<in flight>;…`, cap 0 for none; waiting since 0 when
 * the replica has every seat its target rounds to, turn since 0 when it holds no seat
 * beyond the whole seats of its target):
 *
 * 1. drops the records of replicas that stopped renewing (lapsed);
 * 2. shares the limit between the teams of every replica by weight over what each uses
 *    and waits for (max-min, water-filling: the same shares as seat-shares.ts), and each
 *    team's share between the replicas by their demand: this replica's target;
 * 3. grants what this replica asks, within the seats no other replica holds or uses (the
 *    leases add up to the limit), within a capped team's part of its ceiling, and within
 *    its target while another replica needs more seats than it holds (borrowing ends when
 *    someone waits); after a Redis restart (no record of it), no more than it held;
 * 4. takes turns for the seat a fraction of a target rounds to: while others wait, a
 *    replica has the whole seats of its target, and a seat beyond them for a turn of
 *    TURN_MS (ARGV) from when it took it, taken only if free seats remain once each
 *    replica that has waited longer for one has its seat (more replicas than seats: every
 *    replica gets one in turn, none is passed over, and seats change hands once a turn,
 *    not once a call);
 * 5. names one replica to tell: the one that has waited longest when this one took seats
 *    and more are left free for those in line before it (each told replica tells the next
 *    as it takes its seat), or when this one holds or uses fewer seats than Redis had recorded (it gave
 *    some back, or its calls ended: else the one that needs most); the one furthest over
 *    its target when this one needs more than it got.
 *
 * KEYS: the hash. ARGV: replica run, lease ms, limit, in flight, held, need, ask, teams,
 * turn ms.
 * Returns { granted, this replica's team targets
 * (`<team>=<share>;…`), seats free after the grant, calls in flight on the others,
 * replica to tell or '', 1 when Redis had a record of this replica, 1 when another
 * replica needs more seats than it holds, the replicas holding a record, the replicas
 * that have waited longer than this one for a seat, ms left of its turn (0: none) }.
 */
const LEASE = redisScript<Answer>('gatewaySeatLease', `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local me, ttl, limit = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local inflight, held, need, ask, mine, turnMs = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), ARGV[8], tonumber(ARGV[9])
local function teamsOf(text)
  local out = {}
  for name, w, cap, d, h in string.gmatch(text, '([^,;]+),([%d%.]+),(%d+),(%d+),(%d+)') do
    out[#out + 1] = { name = name, w = tonumber(w), cap = tonumber(cap), d = tonumber(d), h = tonumber(h) }
  end
  return out
end
local others, known, before, since, turn = {}, 0, held, 0, 0
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local r, v = all[i], all[i + 1]
  local exp, l, f, n, a, w, tn, ts = string.match(v, '^(%d+)|(%d+)|(%d+)|(%d+)|(%d+)|(%d+)|(%d+)|(.*)$')
  if exp == nil or tonumber(exp) < now then
    redis.call('HDEL', KEYS[1], r)
  elseif r == me then
    known = 1
    before = math.max(tonumber(l), tonumber(f))
    since = tonumber(w)
    turn = tonumber(tn)
  else
    others[#others + 1] = { id = r, lease = tonumber(l), inflight = tonumber(f), need = tonumber(n), since = tonumber(w), teams = teamsOf(ts) }
  end
end
-- This replica's place in the line for a seat: since when it has waited (now if it starts to).
if since == 0 then since = now end
local myTeams = teamsOf(mine)
local demand, weight, cap = {}, {}, {}
local function add(list)
  for _, e in ipairs(list) do
    demand[e.name] = (demand[e.name] or 0) + e.d
    weight[e.name] = math.max(weight[e.name] or 1, e.w)
    if e.cap > 0 then cap[e.name] = math.min(cap[e.name] or e.cap, e.cap) end
  end
end
add(myTeams)
for _, o in ipairs(others) do add(o.teams) end
local share, open, left = {}, {}, limit
for name, d in pairs(demand) do
  local want = d
  if cap[name] then want = math.min(want, cap[name]) end
  share[name] = 0
  if want > 0 then open[#open + 1] = { name = name, want = want } end
end
while #open > 0 and left > 1e-9 do
  local weights = 0
  for _, e in ipairs(open) do weights = weights + weight[e.name] end
  local level = left / weights
  local rest = {}
  for _, e in ipairs(open) do
    if e.want - share[e.name] <= level * weight[e.name] then
      left = left - (e.want - share[e.name])
      share[e.name] = e.want
    else
      rest[#rest + 1] = e
    end
  end
  if #rest == #open then
    for _, e in ipairs(open) do share[e.name] = share[e.name] + level * weight[e.name] end
    left = 0
    rest = {}
  end
  open = rest
end
local heldElsewhere = {}
for _, o in ipairs(others) do
  for _, e in ipairs(o.teams) do heldElsewhere[e.name] = (heldElsewhere[e.name] or 0) + e.h end
end
-- A team's part of the seats on a replica: its share by the replica's demand; a capped
-- team's never more than its ceiling leaves beside its calls in flight elsewhere.
local function partOf(e, mine)
  local part = share[e.name] * e.d / demand[e.name]
  if mine and cap[e.name] then part = math.min(part, math.max(0, cap[e.name] - (heldElsewhere[e.name] or 0))) end
  return part
end
local function targetOf(list, mine)
  local total, parts = 0, {}
  for _, e in ipairs(list) do
    if demand[e.name] > 0 then
      local part = partOf(e, mine)
      total = total + part
      parts[#parts + 1] = e.name .. '=' .. string.format('%.3f', part)
    end
  end
  return total, table.concat(parts, ';')
end
local target, targets = targetOf(myTeams, true)
-- What this replica may use at most: its whole demand, but a capped team's part only.
local ceiling = 0
for _, e in ipairs(myTeams) do
  if cap[e.name] and demand[e.name] > 0 then ceiling = ceiling + math.floor(partOf(e, true) + 0.5) else ceiling = ceiling + e.d end
end
local occupied, elsewhere, starving, gap, over, excess, first, ahead = 0, 0, '', 0, '', 0, '', 0
local firstSince = math.huge
for _, o in ipairs(others) do
  occupied = occupied + math.max(o.lease, o.inflight)
  elsewhere = elsewhere + o.inflight
  if o.need - o.lease > gap then starving, gap = o.id, o.need - o.lease end
  if o.since > 0 and o.need > o.lease then
    if o.since < since then ahead = ahead + 1 end
    if o.since < firstSince then first, firstSince = o.id, o.since end
  end
  local theirs = targetOf(o.teams, false)
  if math.max(o.lease, o.inflight) - theirs > excess then over, excess = o.id, math.max(o.lease, o.inflight) - theirs end
end
local free = limit - occupied
local grant = math.min(ask, free, ceiling)
local due = math.max(math.floor(target + 0.5), 1)
if starving ~= '' then
  grant = math.min(grant, due)
  -- Past the whole seats of its target, a seat is kept for the rest of a turn, or waits
  -- for those in line before this replica.
  local whole = math.floor(target + 1e-9)
  if grant > whole then
    if turn > 0 and now - turn < turnMs and before > whole then
      grant = math.min(grant, before)
    else
      grant = math.max(whole, math.min(grant, free - ahead))
      turn = 0
    end
  end
  if grant > whole then
    if turn == 0 then turn = now end
  else
    turn = 0
  end
else
  turn = 0
end
if known == 0 and held > 0 then grant = math.min(grant, held) end
if grant < 0 then grant = 0 end
if grant >= math.min(need, due, ceiling) then since = 0 end
local tell = ''
if first ~= '' and grant > before and (since == 0 or firstSince < since) and free - math.max(grant, inflight) > 0 then
  -- Seats are left for those in line: the first is told, and tells the next as it takes its own.
  tell = first
elseif starving ~= '' and math.max(grant, inflight) < before then
  tell = first ~= '' and first or starving
elseif grant < need and over ~= '' and excess >= 1 then
  tell = over
end
if grant == 0 and inflight == 0 and need == 0 then
  -- Idle: nothing of it is kept.
  redis.call('HDEL', KEYS[1], me)
else
  redis.call('HSET', KEYS[1], me, string.format('%d|%d|%d|%d|%d|%d|%d|%s', now + ttl, grant, inflight, need, ask, since, turn, mine))
  redis.call('PEXPIRE', KEYS[1], ttl * 2)
end
return { grant, targets, free - math.max(grant, inflight), elsewhere, tell, known, starving ~= '' and 1 or 0, #others + 1, ahead, turn > 0 and math.max(0, turn + turnMs - now) or 0 }
`, 1)

/** Gives the seats of this run back (a clean stop). KEYS: the hash. ARGV: replica run. */
const GIVE_BACK = redisScript<number>('gatewaySeatGiveBack', `return redis.call('HDEL', KEYS[1], ARGV[1])`, 1)



// A lease is renewed no sooner than this after the last answer, whatever asks (a burst of
// calls is one renewal).
const MIN_RENEW_MS = 20
// A replica that got fewer seats than it needs, none being free, asks again this often
// unless told sooner (a peer gave seats back): a bounded poll, one command. One with
// others before it in line for a seat asks less often (the one before it is told first),
// up to STARVED_RETRY_STEPS times this.
export const STARVED_RETRY_MS = 250
const STARVED_RETRY_STEPS = 4
// While replicas wait for seats, one held beyond the whole seats of a replica's target
// (more replicas than seats) is kept this long, then handed to the next in line: seats
// change hands once a turn, not once a call.
export const TURN_MS = 1000
// Seats unused this long, nobody else wanting them, go back.
const TRIM_AFTER_MS = 1000
// While Redis cannot be reached, a renewal is tried again this often.
const DOWN_RETRY_MS = 100
// Redis out this long is an outage, not a connection still being made at start: a replica
// with its own cap (platform.maxConcurrentPerReplica) keeps to it from then on.
export const DOWN_GRACE_MS = 1000
// A lease asks for room to grow: a quarter more than it needs, at least one seat.
const ASK_HEADROOM = 1.25

export interface RedisSeatsOptions {
  redis: RedisClient
  breaker: RedisBreaker
  bus: RedisBus | null
  /** The credential's leases (keys.ts). */
  key: string
  credential: string
  /** Who this replica is (its host and port): with a random run id, its field in the hash. */
  replica: string
  /** This replica's own cap while Redis cannot be reached (platform.maxConcurrentPerReplica); null: its share, as below. */
  perReplica: number | null
  /** Seats of a replica that never reached Redis, and so never saw the others, while it cannot (platform.minConcurrent). */
  unseen: number
  /** How long a lease lives unless renewed (platform.permitLease): renewed every third of it while it holds seats. */
  leaseMs: number
  log: Pick<Logger, 'warn'>
  /** Seats Redis had lost (a restart, a flush) and that were asked for again. */
  onLost: (count: number) => void
  clock?: Clock
}

type Answer = [number, string, number, number, string, number, number, number, number, number]

const DOWN = Symbol('redis down')

/**
 * A replica's name: its host name (a pod's name) and proxy port, hashed to the
 * characters a lease field may hold; each run adds a random id, so that two processes
 * never share a lease whatever their names. A run that dies holds its lease no longer
 * than platform.permitLease.
 */
export function replicaIdentity(host: string, port: number): string {
  return createHash('sha256').update(`${host}\n${port}`).digest('base64url').slice(0, 12)
}

/**
 * This replica's share of a credential's seats, leased in Redis (LEASE): starting and
 * ending a call costs no Redis command; the lease is renewed when what the replica needs
 * outgrows it, when seats it holds are wanted elsewhere (then given back as its calls
 * end), when they sit unused, and every third of its life while it holds any. A replica
 * that gives seats back tells the one that needs them most (one message, to one
 * replica); one that needs more tells the one furthest over its share. While Redis
 * cannot be reached a replica keeps to its lease as last granted for as long as a lease
 * lives (a stall: the leases still add up to the limit), then to an even share of the
 * limit between the replicas it last saw (`unseen` seats if it never saw them); with
 * platform.maxConcurrentPerReplica, to that.
 */
export class RedisSeats implements SeatLease {
  readonly #o: RedisSeatsOptions
  readonly #clock: Clock
  // `<replica>~<run>`: no ',', ';' or '|', which the script splits on.
  readonly #me: string
  #lease = 0
  #granted = false
  #targets: Map<string, number> | null = null
  #elsewhere = 0
  #free = Infinity
  #demand: ReplicaDemand = { limit: 0, inFlight: 0, waiting: 0, teams: [] }
  #renewing = false
  #again = false
  #lastAnswer = -Infinity
  #starvedAt = -Infinity
  // Replicas before this one in line for a seat, as of the last answer.
  #ahead = 0
  // When the turn of the seat held beyond its target's whole seats ends (0: none held).
  #turnEnds = 0
  // When Redis stopped answering (null while it answers).
  #downSince: number | null = null
  // Replicas with a lease as of the last answer, this one included.
  #replicas = 1
  #downTimers: Timer[] = []
  // What Redis holds of this replica: seats in use or leased, as of the last answer.
  #recorded = 0
  #timer: Timer | null = null
  #timerAt = Infinity
  #keepAlive: Timer | null = null
  #unusedSince: number | null = null
  readonly #grown: (() => void)[] = []

  constructor(opts: RedisSeatsOptions) {
    this.#o = opts
    this.#clock = opts.clock ?? systemClock
    this.#me = `${opts.replica}~${randomBytes(6).toString('base64url')}`
  }

  get held(): number {
    return this.#lease
  }

  /** Replicas holding a lease of the credential, this one included, as of the last answer. */
  get replicas(): number {
    return this.#replicas
  }

  size(limit: number): number {
    const out = this.#downSince === null ? 0 : this.#clock.now() - this.#downSince
    if (out < DOWN_GRACE_MS) return Math.min(limit, this.#lease)
    if (this.#o.perReplica !== null) return Math.min(limit, this.#o.perReplica)
    if (!this.#granted) return Math.min(limit, this.#o.unseen)
    if (out < this.#o.leaseMs) return Math.min(limit, this.#lease)
    return Math.max(1, Math.floor(limit / this.#replicas))
  }

  targets(): ReadonlyMap<string, number> | null {
    return this.#targets
  }

  elsewhere(): number {
    return this.#elsewhere
  }

  saturated(): boolean {
    // While Redis cannot be reached no one knows: calls held by the lease as last granted
    // say nothing of the limit, which is not to grow on them.
    return this.#downSince === null && this.#free <= 0
  }

  onGrown(fn: () => void): void {
    this.#grown.push(fn)
  }

  /** Follows the other replicas' word (a seat given back, a seat wanted) and keeps the lease alive. */
  async start(): Promise<void> {
    await this.#o.bus?.subscribe(this.#channel(), () => {
      this.#starvedAt = -Infinity
      this.#schedule(0)
    })
    this.#keepAlive = this.#clock.setInterval(() => {
      if (this.#lease > 0 || this.#demand.inFlight > 0) this.#schedule(0)
    }, Math.max(1, Math.floor(this.#o.leaseMs / 3))).unref()
  }

  stop(): void {
    this.#downTimers.forEach((t) => this.#clock.clearTimeout(t))
    if (this.#keepAlive) this.#clock.clearInterval(this.#keepAlive)
    if (this.#timer) this.#clock.clearTimeout(this.#timer)
    this.#keepAlive = this.#timer = null
    const { breaker, redis, key } = this.#o
    void breaker.run(() => GIVE_BACK(redis, key, this.#me), 0)
  }

  demand(demand: ReplicaDemand): void {
    this.#demand = demand
    const need = demand.inFlight + demand.waiting
    const now = this.#clock.now()
    if (this.#downSince !== null) {
      this.#schedule(DOWN_RETRY_MS)
      return
    }
    // Seats another replica waits for: what this one no longer uses goes back as its calls
    // end; a seat past its target at the end of its turn.
    if (this.#contended && (Math.max(this.#lease, demand.inFlight) < this.#recorded || this.#overTarget())) {
      this.#schedule(Math.max(0, this.#turnEnds - now))
      return
    }
    if (need > this.#lease) {
      this.#unusedSince = null
      // None free: wait to be told, or for the bounded retry.
      const wait = this.#free <= 0 && now - this.#starvedAt < this.#retryMs() ? this.#retryMs() - (now - this.#starvedAt) : 0
      this.#schedule(wait)
      return
    }
    if (need < this.#lease) {
      // Unused a while, nobody else wanting them: given back.
      this.#unusedSince ??= now
      this.#schedule(Math.max(0, TRIM_AFTER_MS - (now - this.#unusedSince)))
    }
  }

  // Another replica needs more seats than it holds (the last answer's word).
  #contended = false

  /** How long a replica short of seats waits before it asks again, unless told: longer the further back in line it is. */
  #retryMs(): number {
    return STARVED_RETRY_MS * Math.min(STARVED_RETRY_STEPS, 1 + this.#ahead)
  }

  /** Whether this replica holds more seats than its target (and than it uses). */
  #overTarget(): boolean {
    let target = 0
    for (const share of this.#targets?.values() ?? []) target += share
    return this.#lease > Math.max(Math.round(target), this.#demand.inFlight)
  }

  /** A renewal in `ms` (no sooner than MIN_RENEW_MS after the last answer), unless one is due sooner. */
  #schedule(ms: number): void {
    if (this.#renewing) {
      this.#again = true
      return
    }
    const now = this.#clock.now()
    const at = now + Math.max(ms, MIN_RENEW_MS - (now - this.#lastAnswer), 0)
    if (this.#timer) {
      if (this.#timerAt <= at) return
      this.#clock.clearTimeout(this.#timer)
    }
    this.#timerAt = at
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = null
      void this.#renew()
    }, at - now)
    this.#timer.unref()
  }

  async #renew(): Promise<void> {
    this.#renewing = true
    this.#again = false
    try {
      const { breaker, redis, key } = this.#o
      const d = this.#demand
      const need = d.inFlight + d.waiting
      const ask = need === 0 ? 0 : Math.min(d.limit, Math.max(need + 1, Math.ceil(need * ASK_HEADROOM)))
      const teams = d.teams.map((t) => `${t.team},${t.weight},${t.cap ?? 0},${t.demand},${t.held ?? 0}`).join(';')
      const answer = await breaker.run(() => LEASE(redis, key, this.#me, this.#o.leaseMs, d.limit, d.inFlight, this.#lease, need, ask, teams, TURN_MS), DOWN)
      this.#lastAnswer = this.#clock.now()
      if (answer === DOWN) {
        // Kept as last granted while leases live: the other replicas keep theirs, and none is anyone's twice.
        if (this.#downSince === null) {
          this.#downSince = this.#lastAnswer
          // The seats this replica may fill change as the outage lasts (size()).
          const wake = () => this.#grown.forEach((fn) => fn())
          this.#downTimers = [DOWN_GRACE_MS, this.#o.leaseMs].map((ms) => this.#clock.setTimeout(wake, ms + 1).unref())
        }
        return
      }
      this.#downSince = null
      this.#downTimers.forEach((t) => this.#clock.clearTimeout(t))
      const [granted, targets, free, elsewhere, tell, known, othersNeed, replicas, ahead, turnLeft] = answer
      if (known === 0 && this.#granted && this.#lease > 0) {
        this.#o.log.warn({ credential: this.#o.credential, seats: this.#lease }, 'redis had lost the platform seats this replica leased: asked for again')
        this.#o.onLost(this.#lease)
      }
      const before = this.#lease
      this.#lease = Number(granted)
      this.#recorded = Math.max(this.#lease, d.inFlight)
      this.#granted = true
      this.#free = Number(free)
      this.#elsewhere = Number(elsewhere)
      this.#replicas = Math.max(1, Number(replicas))
      this.#targets = parseTargets(String(targets))
      this.#contended = othersNeed === 1
      this.#ahead = Number(ahead)
      this.#turnEnds = Number(turnLeft) > 0 ? this.#lastAnswer + Number(turnLeft) : 0
      if (need > this.#lease && this.#free <= 0) this.#starvedAt = this.#lastAnswer
      if (this.#lease >= need) this.#unusedSince = this.#lease > need ? (this.#unusedSince ?? this.#lastAnswer) : null
      if (tell) this.#o.bus?.publish(this.#channelOf(String(tell)), '1').catch(() => undefined)
      if (this.#lease > before) for (const fn of this.#grown) fn()
    } finally {
      this.#renewing = false
      const short = this.#demand.inFlight + this.#demand.waiting > this.size(this.#demand.limit)
      if (this.#again) this.demand(this.#demand)
      // Still short of seats (none free, or Redis out): asked again after the bounded wait, unless told sooner.
      else if (short) this.#schedule(this.#downSince !== null ? DOWN_RETRY_MS : this.#retryMs())
    }
  }

  #channel(): string {
    return this.#channelOf(this.#me)
  }

  #channelOf(run: string): string {
    return `platform-seats:${this.#o.credential}:${run}`
  }
}

function parseTargets(text: string): Map<string, number> {
  const out = new Map<string, number>()
  for (const part of text.split(';')) {
    const eq = part.lastIndexOf('=')
    if (eq > 0) out.set(part.slice(0, eq), Number(part.slice(eq + 1)))
  }
  return out
}
