import { randomBytes } from 'node:crypto'
import type { Logger } from 'pino'
import { systemClock, type Clock, type Timer } from '../../clock.js'
import { ceilingPart, ElsewhereCharges, encodeRecord, fitting, heldWhileContended, leasePlan, needOf, type LeasePlan, type LeaseShares, type ReplicaDemand, type ReplicaRecord, type SharedLimit } from './lease-plan.js'
import type { LeaseAnswer, LeaseStore } from './lease-store.js'
import { redated } from './answer-timeline.js'

// docs/governor.md, "Constants".
const MIN_RENEW_MS = 20
export const STARVED_RETRY_MS = 250
const TRIM_AFTER_MS = 1000
const DOWN_RETRY_MS = 100
const DOWN_GRACE_MS = 1000
export const CLOCK_SLACK_MS = 100
const CEILING_TURN_MS = 1000

/**
 * `replica`: this replica (host and port, hashed), its field in the store with `run` (default a random id; the simulator's
 * fixed); `perReplica`: its own cap in a store outage (platform.maxConcurrentPerReplica; null: its share); `unseen`: seats of
 * a replica that never reached the store (platform.minConcurrent); `leaseMs`: platform.seatLease; `callsEndMs`: the longest
 * a call holds its seat, budget and watch (twice platform.timeout); `onLost`: seats the store had lost, asked for again.
 */
export interface LeasedSeatsOptions {
  store: LeaseStore
  credential: string
  replica: string
  perReplica: number | null
  unseen: number
  leaseMs: number
  callsEndMs: number
  log: Pick<Logger, 'warn'>
  onLost?: (count: number) => void
  onRenewed?: (answer: LeaseAnswer, plan: LeasePlan) => void
  clock?: Clock
  run?: string
}

/** This replica's lease of a credential's seats, renewed as its demand moves: docs/governor.md, "Across replicas". */
export class LeasedSeats {
  readonly #o: LeasedSeatsOptions
  readonly #clock: Clock
  readonly #run: string
  #lease = 0
  // Seats the store counts it holding until its next renewal: its lease, or the calls in flight its last ask told if more.
  #occupied = 0
  #grantedUnder = Infinity // the limit its lease was granted under (Infinity: none yet)
  #plan: LeasePlan | null = null
  #others: ReplicaRecord[] = []
  readonly #charges = new ElsewhereCharges()
  #free = Infinity
  #demand: ReplicaDemand = { limit: 0, inFlight: 0, waiting: 0, teams: [] }
  // While a renewal is on its way, the seats it asked for (Infinity: none): seats being given back are not filled meanwhile.
  #asking = Infinity
  #again = false
  #lastAnswer = -Infinity
  // The last renewal came at once on a tell and found no seat; the one scheduled is one at once on a tell.
  #atOnce = false
  #onTell = false
  #starvedAt = -Infinity
  #downSince: number | null = null
  // Back from an outage (its first answer then): no more than the seats the outage rule let it fill until every replica
  // back is counted, and, past a lease's life in it, while one it saw as it began has not renewed, for ABSENT_WAIT (a lease).
  #backAt = -Infinity
  #outageSeats = 0
  // At its last answer it held no seat, and ranked, in run order among the replicas that held none, below the seats free then.
  #spareSeat = false
  #awaited = new Set<string>()
  readonly #seen = new Map<string, number>() // the other runs seen in an answer, and when last
  #downTimers: Timer[] = []
  #timer: Timer | null = null
  #timerAt = Infinity
  #keepAlive: Timer | null = null
  #unusedSince: number | null = null
  // Seat-time held past the target (negative: short of it) while contended: whose turn the rounding is.
  #credit = 0
  #creditAt = 0
  #answered = 0 // answers a second, smoothed; #answers: since the last renewal
  #answers = 0
  #waited = false
  #limitRecord: string | null = null
  // The last shared limit record that named its writer: the learner every replica goes on with while it writes.
  #learner: SharedLimit | null = null
  #readLimit: (text: string) => SharedLimit | null = () => null
  #shared: SharedLimit | null = null // as the store last held it: a record that moves neither is written telling no one
  #tellOthers = false
  #wake: () => void = () => undefined
  #calls: () => string | null = () => null
  #turnTimer: Timer | null = null
  #offset = 0 // offsetMs

  constructor(opts: LeasedSeatsOptions) {
    this.#o = opts
    this.#clock = opts.clock ?? systemClock
    // `<replica>~<run>`: no ',', ';' or '|', which the records split on.
    this.#run = opts.run ?? `${opts.replica}~${randomBytes(6).toString('base64url')}`
  }

  get run(): string { return this.#run }
  get held(): number { return this.#lease }
  get leaseMs(): number { return this.#o.leaseMs }
  /** How far the store's clock is ahead of this replica's (ms; docs/governor.md, "The clock"): a time shared is this replica's plus it. */
  get offsetMs(): number { return this.#offset }
  /** The teams whose seat-time on the other replicas it keeps (ElsewhereCharges). */
  get chargedTeams(): number { return this.#charges.teams }
  /** Charges the seat-time of the other replicas' calls to the teams `keep` keeps alone (ElsewhereCharges.keep). */
  keepCharges(keep: (team: string) => boolean): void { this.#charges.keep(keep) }
  /** Replicas seen holding a lease of the credential within the time calls take to end, this one included. */
  get replicas(): number { return this.#seen.size + 1 }
  /** Whether this replica learns the limit (the one whose calls answered most); true before it heard the others. */
  get learner(): boolean { return this.#plan?.learner ?? true }

  /** docs/governor.md, "Across replicas": the lease (shrunk under a lower limit), within the others' seats; the outage rule. */
  size(limit: number): number {
    const scaled = limit >= this.#grantedUnder ? this.#lease : Math.floor((this.#lease * limit) / this.#grantedUnder)
    // In a stall the others shrink their leases with a cut as this one does: their seats as last heard, scaled alike (up).
    const heard = this.#plan?.occupiedElsewhere ?? 0
    const elsewhere = this.#downSince === null || limit >= this.#grantedUnder ? heard : Math.ceil((heard * limit) / this.#grantedUnder)
    const room = Math.min(Math.max(0, limit - elsewhere), this.#downSince === null ? this.#asking : Infinity)
    const lease = Math.min(room, this.#pastDue() && !this.#lends(limit) ? Math.min(scaled, this.#due()) : scaled)
    if (this.#downSince === null) return lease
    const out = this.#clock.now() - this.#downSince
    const cap = this.#o.perReplica
    if (cap !== null && out >= DOWN_GRACE_MS) return Math.min(limit, cap)
    if (this.#grantedUnder === Infinity) return Math.min(limit, this.#o.unseen)
    // Its part of seats split between the replicas it last saw, the odd ones to the first in order.
    const [replicas, rank] = [this.replicas, [...this.#seen.keys()].filter((run) => run < this.#run).length]
    const part = (seats: number) => Math.floor(seats / replicas) + (rank < seats % replicas ? 1 : 0)
    // The seats free at its last answer only where it saw no other replica (docs/governor.md, "While Redis cannot be reached").
    const free = replicas === 1 ? Math.max(0, this.#free) : 0
    const kept = Math.min(limit, lease + Math.min(free, cap === null ? Infinity : Math.max(0, cap - lease)))
    const held = out < this.#o.leaseMs ? kept : out < this.#o.leaseMs + this.#o.callsEndMs ? Math.min(part(limit), kept) : part(limit)
    // A seat at least from DOWN_GRACE on for a replica that held none at its last answer and ranked below the seats free then,
    // unless the others held past that answer's limit (docs/governor.md, as above).
    return out >= DOWN_GRACE_MS && this.#spareSeat && (this.#plan?.occupiedElsewhere ?? 0) <= this.#grantedUnder ? Math.max(held, Math.min(limit, 1)) : held
  }

  /** Whether the seats of its lease past its due are not its own to fill: another replica waits, and no seat free in the store is this one's. */
  #pastDue(): boolean { return (this.#plan?.contended ?? false) && this.#spare() <= 0 }
  /** Whether the seats of its lease past its due, while another replica waits, are lent to short calls (2.2) until its next answer: the store answers, and the limit is the one they were granted under. */
  #lends(limit: number): boolean { return this.#downSince === null && limit >= this.#grantedUnder }
  /** The seats free in the store at the last answer that it may take: those past what the replicas that wait lack of their due (those are theirs). */
  #spare(): number { return Math.max(0, this.#free - (this.#plan?.contended ? this.#plan.shortElsewhere : 0)) }

  shares(): LeaseShares | null {
    const plan = this.#plan
    if (plan === null || this.#downSince !== null) return null
    const pastDue = this.#pastDue() && this.#lends(this.#demand.limit) ? Math.max(0, this.#lease - this.#due()) : 0
    return { targets: plan.targets, lent: Math.min(Math.max(0, this.#lease - plan.target), plan.owedElsewhere + pastDue), shares: plan.shares, heldElsewhere: plan.heldElsewhere, charged: this.#charges.totals }
  }

  /** The calls `team` may have in flight here of its ceiling `cap` across replicas, `here` its calls held and waiting here (docs/governor.md, "A team's ceiling across replicas"); woken as a turn, or the renewal into it, may let a call start. Null: no plan (alone in the store, or in an outage): the ceiling is this replica's own. */
  ceilingHere(team: string, cap: number, here: number): number | null {
    const plan = this.#plan
    if (plan === null || this.#downSince !== null) return null
    const now = this.#clock.now()
    const [turnMs, renewMs] = [Math.max(CEILING_TURN_MS, 2 * this.#o.leaseMs), this.#o.leaseMs / 3]
    // Turns on the store's clock: every replica counts the same one.
    const turn = Math.floor((now + this.#offset) / turnMs)
    const begun = turn * turnMs - this.#offset
    const { whole, left } = ceilingPart(cap, this.#run, here, plan.wantedElsewhere.get(team) ?? [], turn)
    const heard = this.#lastAnswer >= begun + renewMs
    const spare = left && heard && now < begun + turnMs - renewMs ? 1 : 0
    const room = Math.max(0, cap - (plan.heldElsewhere.get(team) ?? 0))
    if (whole + spare < Math.min(cap, here, room)) {
      // Its turn begun and not yet heard into: a renewal a renewal period into it, whose answer wakes the queue; else the turn's end.
      if (left && !heard) this.#schedule(begun + renewMs + 1 - now)
      else if (this.#turnTimer === null) this.#turnTimer = this.#clock.setTimeout(() => { this.#turnTimer = null; this.#wake() }, begun + turnMs + 1 - now).unref()
    }
    return Math.min(whole + spare, room)
  }

  elsewhere(): number { return this.#plan?.elsewhere ?? 0 }
  /** While the store cannot be reached no one knows: calls held by the lease as last granted say nothing of the limit. */
  saturated(): boolean { return this.#downSince === null && (this.#free <= 0 || this.#plan?.contended === true) }
  /** Whether calls waited at the limit on another replica, as of the last answer. */
  waitedElsewhere(): boolean { return this.#plan?.waitedElsewhere ?? false }
  /** Opens the shared limit record (learned-limit.ts): its writer learns while it wrote within a lease's life (lease-plan.ts). */
  readLimitWith(fn: (text: string) => SharedLimit | null): void { this.#readLimit = fn }
  /** This replica's calls of late for its record (answer-timeline.ts), while it sees other replicas: the learner weighs them. */
  reportCalls(fn: () => string | null): void { this.#calls = fn }
  onGrown(fn: () => void): void { this.#wake = fn }
  answered(): void { this.#answers += 1 }
  waited(): void { this.#waited = true }

  /** The shared limit record to write with the next renewal (this replica learns it); once written, `tell`: every other replica renews and takes it at once. */
  writeLimit(record: string, tell = true): void {
    this.#limitRecord = record
    this.#tellOthers ||= tell
    if (tell) this.#schedule(0)
  }

  async start(): Promise<void> {
    await this.#o.store.listen(this.#run, (everyone) => {
      // A new shared limit: a replica that neither holds nor wants seats takes it with its next renewal.
      if (everyone && this.#lease === 0 && needOf(this.#demand) === 0) return
      this.#starvedAt = -Infinity
      this.#onTell ||= !everyone && !this.#atOnce
      this.#schedule(0, this.#onTell)
    })
    this.#keepAlive = this.#clock.setInterval(() => {
      if (this.#lease > 0 || this.#demand.inFlight > 0 || this.#answers > 0) this.#schedule(0)
    }, Math.max(1, Math.floor(this.#o.leaseMs / 3))).unref()
  }

  stop(): void {
    ;[...this.#downTimers, this.#timer, this.#turnTimer].forEach((t) => this.#clock.clearTimeout(t))
    this.#clock.clearInterval(this.#keepAlive)
    this.#keepAlive = this.#timer = null
    this.#o.store.giveBack(this.#run).catch(() => undefined)
  }

  demand(demand: ReplicaDemand): void {
    this.#demand = demand
    const need = this.#needed(demand)
    const now = this.#clock.now()
    const plan = this.#plan
    if (this.#downSince !== null) this.#schedule(DOWN_RETRY_MS)
    // At once: another replica waits, and seats held past the due, or counted for calls since ended, go back.
    else if (plan !== null && plan.contended && (this.#lease > heldWhileContended(demand.inFlight, need, this.#due()) || Math.max(this.#lease, demand.inFlight) < this.#occupied)) this.#schedule(0, true)
    // Soon: the limit fell below the seats leased (the lease shrinks); a team new here has no target until a renewal says it.
    else if (plan !== null && ((this.#lease > 0 && this.#lease + plan.occupiedElsewhere > demand.limit) || demand.teams.some((t) => !plan.targets.has(t.team)))) this.#schedule(0)
    else if (need > this.#lease) {
      this.#unusedSince = null
      // None free (or none that is not another replica's due): wait to be told, or for the bounded retry. Holding no seat
      // and none in flight where seats are free it may take, not MIN_RENEW_MS after its last answer: its call has no seat to
      // start in (a lease given back whole at need 0 left the calls that came within MIN_RENEW_MS waiting: seed 394 at 40.0 s).
      const spare = this.#spare()
      this.#schedule(spare <= 0 ? STARVED_RETRY_MS - (now - this.#starvedAt) : 0, spare > 0 && this.#lease === 0 && demand.inFlight === 0)
    } else if (this.#lease > fitting(need, demand.limit)) {
      this.#unusedSince ??= now
      this.#schedule(TRIM_AFTER_MS - (now - this.#unusedSince))
    } else this.#unusedSince = null
  }

  /** The seats its calls want (`needOf`); while another replica waits, its calls in flight and waiting alone: the seats free in the store are then the short replicas' (its due holds its teams' owed seats). */
  #needed(d: ReplicaDemand): number { return this.#plan?.contended ? d.inFlight + d.waiting : needOf(d) }

  /** The seats this replica is due while others wait: its target's whole seats, and the one its fraction rounds to in its turn. */
  #due(): number {
    const target = this.#plan?.due ?? 0
    const whole = Math.floor(target + 1e-9)
    return whole + (target - whole > 1e-9 && this.#credit < 0 ? 1 : 0)
  }

  #planFor(need: number, d: ReplicaDemand): LeasePlan {
    const learner = this.#learner !== null && this.#clock.now() - this.#learner.at <= this.#o.leaseMs ? this.#learner : null
    return leasePlan({ run: this.#run, lease: this.#lease, inFlight: d.inFlight, need, answered: this.#answered, waited: false, behind: Math.max(0, -this.#credit), teams: d.teams }, this.#others, d.limit, learner?.run ?? null, learner?.starting === true)
  }

  /** The seats to ask for: while another replica waits, its due and the seats free past what the replicas that wait lack of theirs; else the seats it keeps. */
  #wanted(d: ReplicaDemand): number {
    const need = this.#needed(d)
    if (need === 0) return 0
    if (this.#plan?.contended) return Math.min(need, this.#due() + this.#spare())
    // What fits its demand, or its lease until seats have been past that TRIM_AFTER_MS.
    const fit = fitting(need, d.limit)
    const trimmed = this.#unusedSince !== null && this.#clock.now() - this.#unusedSince >= TRIM_AFTER_MS
    return trimmed ? fit : Math.max(fit, Math.min(this.#lease, d.limit))
  }

  /** A renewal in `ms` (at once when none is left); `atOnce`: not MIN_RENEW_MS after the last answer. */
  #schedule(ms: number, atOnce = false): void {
    this.#again ||= this.#asking !== Infinity
    if (this.#asking !== Infinity) return
    const now = this.#clock.now()
    const at = now + Math.max(ms, atOnce ? 0 : MIN_RENEW_MS - (now - this.#lastAnswer), 0)
    if (this.#timer !== null && this.#timerAt <= at) return
    this.#clock.clearTimeout(this.#timer)
    this.#timerAt = at
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = null
      void this.#renew()
    }, at - now).unref()
  }

  async #renew(): Promise<void> {
    this.#again = false
    const d = this.#demand
    const need = d.inFlight + d.waiting
    const now = this.#clock.now()
    const atOnce = this.#onTell && now - this.#lastAnswer < MIN_RENEW_MS
    this.#onTell = false
    this.#credit = this.#plan?.contended ? this.#credit + ((this.#lease - this.#plan.due) * (now - this.#creditAt)) / 1000 : 0
    this.#creditAt = now
    const since = Math.max(1, now - this.#lastAnswer)
    // Smoothed over about a lease's life (renewals come at any pace).
    if (Number.isFinite(this.#lastAnswer)) this.#answered += (1 - Math.exp(-since / this.#o.leaseMs)) * ((this.#answers * 1000) / since - this.#answered)
    // Past a lease's life in an outage the lease as last granted is no longer its: every
    // replica keeps to its part of an even split, and one still out fills its own.
    const lapsed = this.#downSince !== null && now - this.#downSince >= this.#o.leaseMs
    const sizeBefore = this.#downSince === null ? Infinity : this.size(d.limit)
    const held = Math.max(lapsed ? 0 : this.#lease, d.inFlight)
    if (this.#plan !== null) this.#plan = this.#planFor(need, d)
    const wanted = this.#wanted(d)
    if (this.#downSince !== null) this.#outageSeats = this.size(d.limit)
    const counted = now >= this.#backAt + (this.#awaited.size > 0 ? this.#o.leaseMs : this.#o.leaseMs / 3 + DOWN_RETRY_MS)
    const ask = this.#downSince === null && counted ? wanted : Math.min(wanted, Math.max(held, this.#outageSeats, 1))
    const calls = this.#others.length > 0 ? this.#calls() : null
    const record = encodeRecord({ lease: 0, inFlight: d.inFlight, need, answered: this.#answered, waited: this.#waited, behind: Math.max(0, -this.#credit), teams: d.teams, ...(calls === null ? {} : { calls: redated(calls, this.#offset) }) })
    const limitRecord = this.#limitRecord
    // Only a record that moves the limit or the knee the store held tells the other replicas to renew and take it.
    const written = this.#tellOthers && limitRecord !== null ? this.#readLimit(limitRecord) : undefined
    const tell = written !== undefined && (this.#shared === null || written === null || written.limit !== this.#shared.limit || written.knee !== this.#shared.knee)
    this.#asking = ask
    const sent = this.#clock.now()
    try {
      const answer = await this.#o.store.renew({ run: this.#run, record: record.slice(record.indexOf('|') + 1), inFlight: d.inFlight, need, ask, limit: d.limit, held, leaseMs: this.#o.leaseMs, limitRecord, learns: this.learner })
      this.#answers = 0
      this.#waited = false
      if (this.#limitRecord === limitRecord) [this.#limitRecord, this.#tellOthers] = [null, false]
      // A renewal at once that found no seat for it keeps the next one to MIN_RENEW_MS: tells bring no chain of them.
      this.#atOnce = atOnce && answer.granted <= held
      this.#readClock(answer.now, sent)
      this.#taken(answer, need, d.limit, d.inFlight)
      if (tell) this.#o.store.tellAll(this.#run).catch(() => undefined)
    } catch {
      this.#lastAnswer = this.#clock.now()
      // Kept as last granted while leases live (size()): the other replicas keep theirs, and none is anyone's twice.
      if (this.#downSince === null) {
        this.#downSince = this.#lastAnswer
        this.#outageSeats = 0
        // An outage that begins while it waits goes on waiting for the same replicas.
        if (this.#downSince - this.#backAt >= this.#o.leaseMs) this.#awaited = new Set(this.#seen.keys())
        this.#downTimers = [DOWN_GRACE_MS, this.#o.leaseMs, this.#o.leaseMs + this.#o.callsEndMs].map((ms) => this.#clock.setTimeout(() => this.#wake(), ms + 1).unref())
        this.#wake()
        // A renewal tried in an outage works its seats out again from its demand: the queue looks again where they grew.
      } else if (this.size(d.limit) > sizeBefore) this.#wake()
    } finally {
      this.#asking = Infinity
      if (this.#again) this.demand(this.#demand)
      // Short: at once when the answer left seats free it may now take (its plan moved), else after the bounded retry.
      else if (this.#needed(this.#demand) > this.size(this.#demand.limit)) this.#schedule(this.#downSince !== null ? DOWN_RETRY_MS : this.#starvedAt === this.#lastAnswer ? STARVED_RETRY_MS : 0)
    }
  }

  /** The store's clock at the grant, read against this replica's at the middle of the round trip: taken within CLOCK_SLACK_MS of round trip (its error half that), it moves the offset only when it is further off than that (a clock stepped), so that the times of records read again do not move. */
  #readClock(storeNow: number, sent: number): void {
    const back = this.#clock.now()
    if (back < sent || back - sent > CLOCK_SLACK_MS || !Number.isFinite(storeNow)) return
    const offset = Math.round(storeNow - (sent + back) / 2)
    if (Math.abs(offset - this.#offset) > CLOCK_SLACK_MS) this.#offset = offset
  }

  #taken(answer: LeaseAnswer, need: number, limit: number, inFlight: number): void {
    this.#lastAnswer = this.#clock.now()
    if (this.#downSince !== null) {
      // Within a lease's life the records from before it live: the store counts them, and a replica still out keeps its lease.
      if (this.#lastAnswer - this.#downSince < this.#o.leaseMs && this.#downSince - this.#backAt >= this.#o.leaseMs) this.#awaited.clear()
      this.#backAt = this.#lastAnswer
    }
    // Past a lease's life, a record answered was written since the outage began.
    for (const r of answer.others) this.#awaited.delete(r.run)
    this.#downSince = null
    this.#downTimers.forEach((t) => this.#clock.clearTimeout(t))
    if (!answer.known && this.#lease > 0) {
      this.#o.log.warn({ credential: this.#o.credential, seats: this.#lease }, 'the store had lost the platform seats this replica leased: asked for again')
      this.#o.onLost?.(this.#lease)
    }
    const [before, occupiedBefore] = [this.#lease, this.#occupied]
    // The others' calls, dated on the store's clock, on this replica's.
    const others = this.#offset === 0 ? answer.others : answer.others.map((r) => (r.calls === undefined ? r : { ...r, calls: redated(r.calls, -this.#offset) }))
    this.#lease = answer.granted
    this.#occupied = Math.max(answer.granted, inFlight)
    this.#grantedUnder = limit
    this.#free = answer.free
    const none = answer.others.filter((r) => Math.max(r.lease, r.inFlight) === 0).map((r) => r.run)
    this.#spareSeat = this.#occupied === 0 && none.filter((run) => run < this.#run).length < answer.free
    for (const r of answer.others) this.#seen.set(r.run, this.#lastAnswer)
    const awaiting = this.#lastAnswer - this.#backAt < this.#o.leaseMs
    for (const [run, at] of this.#seen) if (this.#lastAnswer - at > this.#o.callsEndMs && !(awaiting && this.#awaited.has(run))) this.#seen.delete(run)
    this.#others = others
    this.#charges.seen(others)
    const written = answer.limitRecord === null ? null : this.#readLimit(answer.limitRecord)
    if (written?.run !== undefined) this.#learner = written
    this.#shared = written
    this.#plan = this.#planFor(need, this.#demand)
    // Short of seats with none free that it may take: it waits, and tells the replicas over their due to give theirs back.
    const starved = need > this.#lease && !(this.#free > 0 && this.#wanted(this.#demand) > this.#lease)
    if (starved) this.#starvedAt = this.#lastAnswer
    this.#unusedSince = this.#lease > fitting(this.#needed(this.#demand), this.#demand.limit) ? (this.#unusedSince ?? this.#lastAnswer) : null
    const freed = Math.max(0, answer.free) + Math.max(0, before - this.#lease, occupiedBefore - this.#occupied)
    const tell = freed === 0 ? [] : this.#plan.short.length > 0 ? this.#plan.short.slice(0, freed) : this.#plan.needsMost !== null ? [this.#plan.needsMost] : []
    for (const run of [...(starved ? this.#plan.over.slice(0, need - this.#lease) : []), ...tell]) this.#o.store.tell(run).catch(() => undefined)
    this.#o.onRenewed?.(others === answer.others ? answer : { ...answer, others }, this.#plan)
    // Targets moved with every renewal: the queue looks again.
    this.#wake()
  }
}
