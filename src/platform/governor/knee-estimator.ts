// The limit rule (docs/governor.md, "The limit rule": the model, s(w), each rule and its reason). Pure: time is passed in.
import { LENDING_HORIZON_MS } from './dispatch-order.js'
import { MIN_CALLS, SURE, atLeast, boundLead, endAt, endedBefore, firstAtOrAfter, highestRoom, highestTied, probeFall, readEvidence, spread2, verdicts, writeEvidence } from './knee-verdicts.js'
import { RECENT_MS, StartLevels, ThroughputLevels } from './throughput-levels.js'
import { AnswerTimeline, type Answer } from './answer-timeline.js'
import { FAULT_MS, FaultWatch, UsualGaps } from './fault-watch.js'
import { kindOf, take } from './work-estimates.js'

// docs/governor.md, "Constants".
const DECIDE_MS = 1000
export const EVIDENCE_MS = 20_000
const IMPOSSIBLE_LL = 10
const PACE_GAIN = 0.1
const OVERTAKEN = 0.05
const MEMORY_MS = 120_000
const PROBE_AGAIN_MS = 10_000

export type Phase = 'start' | 'cruise' | 'fault'
export type Move = 'probe' | 'again' | 'grew' | 'knee' | 'queue' | 'throughput' | 'refused' | 'fault' | 'restored' | 'adopted'
export interface Step { limit: number; knee: number; move: Move }
/** A call in flight as `started` saw it: the calls in flight then, how many of those ahead of it were this replica's, how many ends came before, whether its answer measures its level (it took the limit's last seat, or K's beside the seat back by PROBE_AGAIN), and the start's limit when it started (0: after the start). */
type Call = { load: number; local: number; endsBefore: number; full: boolean; level: number }
/** Per kind: answers seen (since this replica last started learning), its first answer's log latency (the unit its answers a second are counted in), its lowest latency (ms), per guess w (index w − 1) its pace of late (log own time), and its latency's pace when room was last shown; in the order last answered (past MAX_KINDS kinds, the least recently answered goes: work-estimates.ts `take`). */
type KindStats = { seen: number; base: number; low: number; m: Float64Array; room?: number }
/** Since the last decision: whether calls waited for a seat, a call known short waited, a team holding no seat waited beside long calls only, calls of kinds known long were all that waited beside another team's short calls (besideOthers); the longest expected of those not known short that waited; the most calls the dispatch let be in flight while calls waited, the limit less the seats it held back for teams owed them (0: no call waited). */
const noWait = () => ({ waited: false, shortWaited: false, newcomer: false, longMs: 0, reach: 0, besideOthers: false })
export class KneeEstimator {
  readonly #min: number
  readonly #max: number
  #knee: number
  #limit: number
  #phase: Phase = 'start'
  #serial = 0
  readonly #calls = new Map<number, Call>()
  // The ends of this replica's calls in time order (when, and whose), and how many were dropped: two arrays of numbers, not an object per end (MEMORY_MS of ends is held); the first end at or after the last tick's cut, and that cut (the ends before it stay before the next, a cut that only grows: the next tick looks from it).
  #endAt: number[] = []; #endSerial: number[] = []; #endsDropped = 0
  #kept = { from: 0, cut: -Infinity }
  // The evidence: per kind (a caller makes as many as its reports' shapes: MAX_KINDS at most); per guess w, Σ log own time, impossible answers, the evidence set aside past the bounded lead (`boundLead`), and the mean own time of late (ms); answers counted.
  readonly #kinds = new Map<string, KindStats>()
  // The faded Σ of squared residuals from their kinds' paces per guess, every kind's (one forgotten or dropped keeps its part: no guess's likelihood moves).
  readonly #ss: Float64Array; readonly #logs: Float64Array; readonly #impossible: Float64Array; readonly #lifted: Float64Array
  readonly #ownMs: Float64Array
  readonly #levels: ThroughputLevels
  readonly #startLevels = new StartLevels()
  #counted = 0
  // The evidence the learner before wrote with the shared record (the log-likelihood of each w, at most 0), fading as this replica's own.
  #carried: Float64Array | null = null
  #fadedAt = -Infinity
  #newCalls = 0
  // The last serial started when the limit last moved, and the answers since to calls started after it (the likelihood's moves wait for MIN_CALLS of them).
  #movedSerial = 0; #sinceMove = 0
  #decidedAt = -Infinity; #since = noWait()
  // The seats past the knee the limit took (a doubling a fall above the knee held back goes on from them: docs/governor.md, "Cruise"); whether a sure queue ever set the knee.
  #past = 1
  #queueSeen = false; #starting = false
  // The most calls in flight the platform took at the start, as its refusals say (a call answered 429 with n in flight: n − 1; on one replica, where the level left was read late, that level: seats there hold answers come but not read, so n overstates the calls at the platform); Infinity: none refused. Read only of a call in the new seats of a growth no queue verdict watches (past #left, the level it left, Infinity: watched; across replicas, or on one replica where that level was read late): that level drew no refusal, a 429 within it is a throttle's.
  #took = Infinity
  #left = Infinity
  // A queue verdict held: the last serial started when it first showed (0: none held).
  #held = 0
  // The gaps between ends (overloads aside); the last serial started when an end came after a pause (0: none).
  readonly #gaps = new UsualGaps()
  #paused = 0
  readonly #faults = new FaultWatch()
  // The share of late answers (PACE_GAIN a answer) that ended before a call started ahead of them; none before the first answer: calls are read as ending in order until one overtakes (docs/governor.md, "Start").
  #overtook = 0
  #latencyMs: number | null = null
  #timeline: AnswerTimeline | null = null
  // When a shared record last moved the limit or knee here.
  #adoptedAt = -Infinity
  // Across replicas, the lowest limit at which a queue at the limit alone was shown within EVIDENCE_MS (the knee stayed), and when; when room last raised the knee to it or past it.
  #queueAlone = { limit: Infinity, at: -Infinity }
  #roseAt = -Infinity
  // The level cruise's last sure queue showed at (the limit alone's, K's, the probe seat's), and when: room there or past it within MEMORY_MS needs e^(2·SURE).
  #queued = { level: Infinity, at: -Infinity }
  #lentUntil = 0 // the probe seat again is lent to short calls until then, as the lead set aside would have faded below SURE (0: no seat again; Infinity: every call's now)
  // When the probe seat came back again, the last serial started then, and whether a call that took it (started past K) has taught the evidence since: a queue there is its answers' verdict, for PROBE_AGAIN.
  #seatAt = -Infinity; #seatSince = 0; #seatHeard = false
  #now: () => number = () => 0
  /** `min` and `max`: platform.minConcurrent and maxConcurrent, integers with 1 ≤ min ≤ max (the settings' schema and normalize.ts hold them). */
  constructor({ initial, min, max }: { initial: number; min: number; max: number }) {
    ;[this.#min, this.#max] = [min, max]
    this.#knee = this.#limit = this.#clamp(initial)
    ;[this.#logs, this.#ss, this.#impossible, this.#lifted] = [0, 1, 2, 3].map(() => new Float64Array(max)) as [Float64Array, Float64Array, Float64Array, Float64Array]
    this.#ownMs = new Float64Array(max).fill(FAULT_MS)
    this.#levels = new ThroughputLevels(max)
  }
  get limit(): number { return this.#limit }
  get knee(): number { return this.#knee }
  get phase(): Phase { return this.#phase }
  /** The pace of the kind answered most, at the knee (ms), for the operators; null before one. */
  get floorMs(): number | null { return this.#latencyMs }
  get kinds(): string[] { return [...this.#kinds.keys()] }
  /** Forgets `team`'s kinds (a team a reload removed, holding nothing: CredentialSeats.keepTeams); their spread stays in the rule's sums, so no guess's likelihood moves. */
  forget(team: string): void {
    for (const kind of [...this.#kinds.keys()].filter((k) => k.startsWith(kindOf(team, '')))) this.#kinds.delete(kind)
  }
  /** A call started with `load` calls in flight, itself included, on every replica; returns its serial, which its answer carries. */
  started(kind: string, load: number): number { return this.#timeline ? this.#timeline.started(kind, load, this.#now()) : this.#start(load) }
  /** Across replicas: the calls go through a timeline (answer-timeline.ts) that, on the learner, weaves in every replica's; `keepMs` how far back a record's calls go. */
  shareAnswers(keepMs: number, now: () => number): void { [this.#timeline, this.#now] = [new AnswerTimeline({ start: (_kind, load) => this.#start(load), end: (a) => this.#end(a) }, keepMs), now] }
  /** The other replicas' records (null: this replica does not learn), and this replica's calls for its own. */
  heard(records: readonly { run: string; calls?: string | undefined }[] | null): void { this.#timeline?.heard(records, this.#now()) }
  calls(): string | null { return this.#timeline?.calls(this.#now()) ?? null }
  #start(load: number): number {
    const serial = ++this.#serial
    this.#calls.set(serial, { load, local: this.#calls.size, endsBefore: this.#endsDropped + this.#endAt.length, full: load >= this.#limit || (this.#lentUntil > 0 && load === this.#limit - 1), level: this.#phase === 'start' ? this.#limit : 0 })
    if (this.#calls.size > 100_000) this.#calls.delete(this.#calls.keys().next().value as number)
    return serial
  }
  /** Calls waited with every seat of the limit taken or owed: the limit is in use. `longMs`: none of them known short beside a short call in flight, the longest expected of them (ms); `newcomer`: a team holding no seat waited with a call not known long beside long calls only (the start ends); `heldBack`: seats free that the dispatch held back from them (owed, on one replica: room is judged at the limit less those, docs/governor.md "Cruise"); `longBesideOthers`: every one of them of a kind known long, beside another team's short calls (the start steps). */
  waited(longMs: number | null = null, newcomer = false, heldBack = 0, longBesideOthers = false): void {
    const s = this.#since
    // Across replicas the seats held back are each replica's and the limit the learner's: no reach.
    if (this.#timeline === null) s.reach = Math.max(s.reach, this.#limit - heldBack)
    ;[s.waited, s.shortWaited, s.newcomer, s.longMs, s.besideOthers] = [true, s.shortWaited || longMs === null, s.newcomer || newcomer, Math.max(s.longMs, longMs ?? 0), s.besideOthers || longBesideOthers]
  }
  ended(a: Answer): void {
    this.#faults.answered(a)
    // Read at once, on the learner across replicas too: the platform refuses within ms, before any level is measured.
    if (a.refused === true && this.#phase === 'start' && a.load > this.#left) this.#took = Math.max(this.#min, Math.min(this.#took, this.#timeline === null ? this.#left : a.load - 1))
    return this.#timeline ? this.#timeline.ended(a, this.#now()) : this.#end(a)
  }
  /** The evidence of one answer, in the order calls ended. */
  #end(a: Answer): void {
    this.#faults.heard(a.at, a.outcome === 'ok')
    const call = this.#calls.get(a.window)
    if (call === undefined) return
    // An end after a silence (UsualGaps) across which a call was in flight ends a pause: the calls then in flight teach nothing (docs/governor.md, "Cruise").
    if (a.outcome !== 'overload' && this.#gaps.add(a.at) && (this.#calls.values().next().value as Call).endsBefore < this.#endsDropped + this.#endAt.length) this.#paused = this.#serial
    // It overtook a call: one started before it, here, is still in flight (the map keeps start order).
    this.#overtook += PACE_GAIN * (Number((this.#calls.keys().next().value as number) < a.window) - this.#overtook)
    this.#calls.delete(a.window)
    if (a.outcome === 'ok' && !this.metFault(a.startedAt, a.at)) {
      // Across replicas the levels' answers are the records' and the limit the learner's: every answer counts as timed there (the half gain).
      if (call.level > 0) this.#startLevels.ended(call.level, a.kind, a.at - a.startedAt, a.timed !== false || this.#timeline !== null, call.full)
      this.#learn(a, call)
    }
    this.#endAt.push(a.at)
    this.#endSerial.push(a.window)
  }
  /** This replica starts learning across replicas, at K and its probe seat (not in the start, nor past the probe seat, nor at the ceiling the start ended at with no verdict, nor where a shared record moved the limit within a DECIDE_MS): the evidence it holds goes (mostly weighed while another learned: its own calls alone), each kind's pace and spread with it, its first decision waits for MIN_CALLS answers weighed since, and the calls in flight now teach nothing (their place among the others' calls is not known). docs/governor.md, "Across replicas the learner weighs every replica's calls". */
  startLearning(now: number, carried: string | null = null): void {
    if (this.#phase !== 'cruise' || this.#limit > this.#knee + 1 || this.#knee >= this.#max || now - this.#adoptedAt < DECIDE_MS) return
    this.#paused = this.#serial
    for (const st of this.#kinds.values()) st.seen = 0
    for (const a of [this.#logs, this.#impossible, this.#ss, this.#lifted]) a.fill(0)
    this.#ownMs.fill(FAULT_MS)
    ;[this.#counted, this.#newCalls] = [0, 0]
    this.#carried = readEvidence(carried, this.#max, now, EVIDENCE_MS)
    if (this.#carried !== null) this.#fadedAt = now
  }
  /** The evidence this learner weighed, for the shared record (a replica that takes over starts from it): the log-likelihood of each w below the likeliest, in tenths of a nat, and the moment; null before any. */
  evidence(now: number): string | null { return this.#counted < 1 && this.#carried === null ? null : writeEvidence(this.#likelihoods(), now) }
  /** Another replica's limit and knee (the shared record): taken as they are; a limit below the knee is a fault here too. */
  adopt(limit: number, knee: number, now: number): Step | null {
    const [l, k] = [this.#clamp(limit), this.#clamp(knee)]
    if (l === this.#limit && k === this.#knee) return null
    ;[this.#adoptedAt, this.#knee] = [now, k]
    this.#phase = l < k ? 'fault' : 'cruise'
    this.#faults[this.#phase === 'fault' ? 'begin' : 'end'](now)
    return this.#set(l, 'adopted', true)
  }
  /** A tick of a replica that follows another's limit: nothing is judged, and its fault watch's second rolls on (FaultWatch.skip). */
  follows(now: number): void { this.#faults.skip(now) }
  /** Watches for faults (fault-watch.ts: `overdueSince`, seats.ts, and no answer for a while is silence; a queue keeps answers coming) and moves the knee as the evidence says; null while nothing moves. */
  tick(now: number, overdueSince: number | null): Step | null {
    const fault = this.#faults.shows(now, overdueSince)
    if (fault !== null) return this.pause(now, fault)
    const cut = now - MEMORY_MS
    const drop = firstAtOrAfter(this.#endAt, cut, cut >= this.#kept.cut ? this.#kept.from : 0)
    this.#kept = { from: drop < 0 ? this.#endAt.length : drop, cut }
    if (drop > 1000) [this.#endsDropped, this.#endAt, this.#endSerial, this.#kept.from] = [this.#endsDropped + drop, this.#endAt.slice(drop), this.#endSerial.slice(drop), 0]
    this.#faults.forget(cut)
    if (this.#phase === 'fault') return this.#faults.over(now) ? this.#restore(now) : null
    // The start's limit past what the platform took falls to it at once: its seats past the refusal turn over a 429 each few ms.
    if (this.#phase === 'start' && this.#limit > this.#took) return this.#set(this.#took, 'refused')
    if (now - this.#decidedAt < DECIDE_MS || this.#newCalls < MIN_CALLS) return null
    ;[this.#decidedAt, this.#newCalls] = [now, 0]
    const back = this.#levels.recheck()
    if (back !== null) {
      this.#knee = back.knee
      return this.#set(back.limit, 'throughput', true)
    }
    const ll = this.#likelihoods()
    const peak = this.#levels.peak(now, this.#limit, this.#min, highestRoom(ll))
    // At the probe seat back by PROBE_AGAIN, the room is the lead set aside: a fall there is the seat's queue, and the seat goes with K kept (docs/governor.md, "Cruise").
    const seatFell = peak !== null && this.#lentUntil > 0 && this.#limit === this.#knee + 1
    if (seatFell) this.#queued = { level: this.#limit, at: now }
    if (peak !== null) return seatFell ? this.#set(this.#knee, 'knee') : this.#fellTo(peak, false)
    // Room raised K to a limit a queue at the limit alone took it back from: the likelihood does not place the knee, and the limit moves between K + 1 and K + 2.
    const ratchet = now - this.#roseAt <= RECENT_MS
    const dip = this.#timeline?.merging && (this.#overtook < OVERTAKEN || ratchet) ? this.#levels.dip(now, this.#limit, this.#min, ratchet) : null
    if (dip !== null) return this.#fellTo(dip, true)
    // On one replica the likelihood's verdicts are of the limit in force: until MIN_CALLS calls started under it have answered, its answers are the limit's before (docs/governor.md, "Cruise").
    if (!this.#timeline?.merging && this.#sinceMove < MIN_CALLS) return null
    return this.#phase === 'start' ? this.#startStep(ll, now) : this.#cruise(ll, now)
  }
  /** At a fresh start: a sure queue ends the doubling at the likeliest w below its level, on one replica the highest within TIE of it (held, as in cruise, while its limit is not in use: no call waited for a seat); else the limit doubles at a decision (MIN_CALLS new answers) once calls waited for a seat, unless its level's answers a second, measured, fell surely short of START_GAIN's growth on the level before (StartLevels: the start ends at the workers' worth of them); on one replica, where calls of kinds known long were all that waited beside another team's short calls at some moment since the last decision, or held every seat while a team holding none waited (their time known), it steps by limit × H / e instead of doubling or ending (one seat at least, a doubling at most). */
  #startStep(ll: Float64Array, now: number): Step | null {
    const { queueBelow: sure, best } = verdicts(ll, this.#limit)
    // Calls that waited for a seat use the limit: the queue is the doubling's own, acted on at once.
    const queueBelow = this.#since.waited ? sure && this.#queueShows() : this.#queueHolds(sure)
    if (queueBelow || this.#limit >= this.#max) {
      this.#phase = 'cruise'
      if (!queueBelow) this.#roomShown()
      this.#queueSeen ||= queueBelow
      return this.#setKnee(queueBelow ? this.#served(this.#timeline === null ? highestTied(ll, this.#limit) : best, this.#limit, now) : this.#max, 'knee')
    }
    if (!this.#since.waited) return null
    this.#held = 0
    const { newcomer, besideOthers, longMs } = this.#since
    // On one replica, beside another team's short calls or a team holding no seat, calls of kinds known long (waited beside short ones: their time known) step the start; across replicas the teams beside are each replica's and the limit the learner's: it doubles.
    const stepping = (besideOthers || newcomer) && this.#timeline === null && longMs > 0 && Number.isFinite(longMs)
    const longOnly = this.#longWaits() !== null || (newcomer && !stepping)
    const verdict = longOnly ? 'double' : this.#startLevels.verdict(this.#limit)
    this.#knee = this.#limit
    this.#roomShown()
    if (longOnly || verdict !== 'double') this.#phase = 'cruise'
    if (verdict !== 'double') return this.#setKnee(verdict, 'throughput')
    // At what the platform took, no doubling: its level read, the start ends one below it, the probe seat at it; until then it holds.
    if (!longOnly && this.#limit >= this.#took) {
      if (!this.#startLevels.measured(this.#limit)) return null
      this.#phase = 'cruise'
      return this.#setKnee(this.#took - 1, 'knee')
    }
    // The seats past the level long calls may take are as many as end within H at its pace: past W they queue ahead of the others' calls (cruise's bound, the level for K).
    this.#left = this.#timeline !== null || !this.#startLevels.timed(this.#limit) ? this.#limit : Infinity
    const step = stepping ? Math.min(this.#limit, Math.max(1, Math.floor((this.#limit * LENDING_HORIZON_MS) / longMs))) : this.#limit
    return longOnly ? this.#setKnee(this.#limit, 'knee') : this.#set(this.#clamp(Math.min(this.#took, this.#limit + step)), 'grew')
  }
  /** In service: the knee rises with room shown at the limit (short of it, it stays), falls when it queues; the probe seat stays while a call there is not known to wait, and a sure queue there puts the knee at the likeliest w below it, if lower and the knee not within TIE of it. */
  #cruise(ll: Float64Array, now: number): Step | null {
    const k = this.#knee
    const room = highestRoom(ll)
    const reach = this.#since.reach > 0 && !this.#queueSeen ? Math.min(this.#limit, this.#since.reach) : this.#limit
    const bears = this.#longWaits() ?? Infinity
    const sureRoom = this.#limit >= this.#queued.level && now - this.#queued.at <= MEMORY_MS ? highestRoom(ll, 2 * SURE) : room
    if (this.#limit > k && sureRoom >= reach && (reach === this.#limit || !verdicts(ll, this.#limit).queueBelow) && (this.#lentUntil === 0 || this.#levels.kept(now, this.#limit))) {
      this.#past = this.#levels.belowFall(this.#limit, Math.min(2 * Math.max(1, this.#past), bears))
      if (this.#limit >= this.#queueAlone.limit && now - this.#queueAlone.at <= EVIDENCE_MS) this.#roseAt = now
      return this.#setKnee(this.#limit, 'grew', this.#past)
    }
    const { queueBelow: sure, best } = verdicts(ll, k)
    const queueBelow = this.#queueHolds(sure)
    if (queueBelow || (this.#limit > k + 1 && verdicts(ll, this.#limit).queueBelow)) {
      ;[this.#past, this.#queueSeen, this.#queued] = [1, true, { level: queueBelow ? k : this.#limit, at: now }]
      if (!queueBelow && this.#timeline?.merging) this.#queueAlone = { limit: now - this.#queueAlone.at > EVIDENCE_MS ? this.#limit : Math.min(this.#limit, this.#queueAlone.limit), at: now }
      // On one replica a queue at the limit alone leaves K at the room shown below the limit, when above K: the queue says W is below the limit, the room that it is at least there.
      return this.#setKnee(queueBelow ? this.#served(best, k, now) : this.#timeline?.merging ? k : Math.max(k, Math.min(room, this.#limit - 1)), 'queue')
    }
    // A sure queue at the probe seat: the seat goes, and K falls to the likeliest w below it when that is below K and K is not within TIE of it (knee-verdicts.ts); PROBE_AGAIN after it, on one replica while no queue at K is held, the lead past SURE over the seat's guess is set aside, so the seat comes back, lent to short calls until that lead would have faded, and its answers tell a pool that grew (room there needs its level kept: docs/governor.md, "Cruise").
    const again = this.#timeline === null && this.#limit === k && this.#held === 0 && now - this.#queued.at >= PROBE_AGAIN_MS && verdicts(ll, k + 1).queueBelow
    if (again) [this.#lentUntil, this.#seatAt] = [now + EVIDENCE_MS * Math.log(boundLead(ll, this.#lifted, SURE, k, k + 1) / SURE), now]
    if (this.#lentUntil > 0 && now >= this.#lentUntil && this.#limit === k + 1) return this.#set(this.#limit, 'probe', true)
    // At the seat again, once a call that took it has answered, or PROBE_AGAIN on where none did: before, the lead set aside grows on the answers of calls below it.
    const known = verdicts(ll, k + 1).queueBelow && !this.#timeline?.merging && (this.#lentUntil === 0 || this.#seatHeard || now - this.#seatAt >= PROBE_AGAIN_MS)
    this.#queueSeen ||= known && this.#limit > k
    if (known && this.#limit > k) {
      this.#queued = { level: k + 1, at: now }
      const to = this.#served(probeFall(ll, k), k, now)
      return to < k ? this.#setKnee(to, 'queue') : this.#set(k, 'knee')
    }
    return !known && this.#limit === k ? this.#set(this.#clamp(k + 1), again ? 'again' : 'probe') : null
  }
  /** K and the limit go to `to`, no seat past it (the start ends): answers a second fell past it (a peak), or a dip across replicas (put back unless it gives FALL more: ThroughputLevels.recheck). */
  #fellTo(to: number, dip: boolean): Step | null {
    this.#levels.wentDown(to, dip, this.#limit, this.#knee, this.#serial)
    ;[this.#phase, this.#past, this.#queueSeen, this.#since] = ['cruise', 1, this.#queueSeen || !dip, noWait()]
    this.#knee = this.#clamp(to)
    return this.#set(this.#knee, 'throughput', true)
  }
  /** A sure queue, believed (#queueShows), first shown sets aside the calls then in flight; it is acted on once they have all ended and it still holds (cruise; at the start while no call waited for a seat: docs/governor.md). */
  #queueHolds(sure: boolean): boolean {
    if (!sure) this.#held = 0
    if (!sure || !this.#queueShows()) return false
    if (this.#held === 0) this.#held = this.#serial
    if ((this.#calls.keys().next().value ?? Infinity) <= this.#held) return false
    this.#held = 0
    return true
  }
  /** Since the last decision, only calls not known short waited beside short ones: the seats past K long calls may take, as many as end within H at K's pace (a short call queued behind them waits H at most); else null. */
  #longWaits(): number | null {
    const s = this.#since
    this.#since = noWait()
    return s.waited && !s.shortWaited ? Math.max(1, Math.floor((this.#knee * LENDING_HORIZON_MS) / s.longMs)) : null
  }
  /** Room was shown: each kind's latency now is its pace with no call waiting at the platform. */
  #roomShown(): void { for (const st of this.#kinds.values()) st.room = st.m[this.#max - 1]! }
  /** Whether a sure queue is believed: where calls overtake others, yes; where they end in the order they started (which fits the guesses below the level as well as those at or above), only once a kind's latency got slower than when room was last shown by SURE spreads of own times (docs/governor.md). */
  #queueShows(): boolean {
    if (this.#overtook >= OVERTAKEN) return true
    const margin = SURE * Math.sqrt(spread2(this.#ss[this.#max - 1]!, this.#counted))
    for (const st of this.#kinds.values()) if (st.room !== undefined && st.m[this.#max - 1]! - st.room > margin) return true
    return false
  }
  /** Where a queue's verdict puts the knee: its likeliest w, but no lower than the workers' worth of answers a second a level gave within RECENT (ThroughputLevels.served), and no higher than `top`. */
  #served(best: number, top: number, now: number): number { return Math.min(top, Math.max(best, this.#levels.served(now))) }
  /** The knee, and the limit `past` seats beyond it. */
  #setKnee(knee: number, move: Move, past = 1): Step | null {
    const [k, moved] = [this.#clamp(knee), this.#clamp(knee) !== this.#knee]
    this.#knee = k
    return this.#set(this.#clamp(k + past), move, moved)
  }
  /** The log-likelihood of each w (index w − 1) over the faded evidence, own times profiled per kind, one spread; all zero before any. */
  #likelihoods(): Float64Array {
    const ll = new Float64Array(this.#max)
    if (this.#carried !== null) ll.set(this.#carried)
    if (this.#counted < 1) return ll
    let most = 0
    for (const st of this.#kinds.values()) if (st.seen > most) [most, this.#latencyMs] = [st.seen, Math.exp(st.m[this.#knee - 1]!)]
    const n = this.#counted
    for (let i = 0; i < this.#max; i++) ll[i]! += -this.#logs[i]! - (n / 2) * Math.log(spread2(this.#ss[i]!, n)) - IMPOSSIBLE_LL * this.#impossible[i]! + this.#lifted[i]!
    boundLead(ll, this.#lifted)
    return ll
  }
  /** What an answer says of every guess w: its call's own time under w against its kind's pace of late, or how unlikely w makes so soon an end; an untimed one, its place among the ends alone; one in flight when a queue verdict was held, nothing (a new call all the same). */
  #learn(a: Answer, call: Call): void {
    if (a.window > this.#movedSerial) this.#sinceMove++
    this.#newCalls++
    if (a.window <= this.#held || a.window <= this.#paused || (a.timed === false && this.#timeline !== null)) return
    this.#fade(a.at)
    if (a.window > this.#seatSince && call.load > this.#knee) this.#seatHeard = true
    // Untimed (read late, one replica): its place among the ends rules out each w under which it could not have ended yet (docs/governor.md, "The gateway's own time").
    if (a.timed === false) {
      for (let w = 1, ended = endedBefore(this.#endSerial, Math.max(0, call.endsBefore - this.#endsDropped), a.window); w < call.load - ended; w++) this.#impossible[w - 1]! += 1
      return
    }
    const latency = Math.max(1, a.at - a.startedAt)
    const load = Math.max(1, call.load)
    const remote = Math.max(0, load - 1 - call.local)
    const remoteShare = load <= 1 ? 0 : remote / (load - 1)
    // The ends of this replica's calls ahead of it while it was in flight, from its start (ms), in order.
    const ends: number[] = []
    for (let i = Math.max(0, call.endsBefore - this.#endsDropped); i < this.#endAt.length && this.#endAt[i]! < a.at; i++) if (this.#endSerial[i]! < a.window) ends.push(Math.max(0, this.#endAt[i]! - a.startedAt))
    const weight = 1 - remoteShare
    const latencyLog = Math.log(latency) // its own time under every guess at or above its load
    const st = take(this.#kinds, a.kind, () => ({ seen: 0, base: latencyLog, low: latency, m: new Float64Array(this.#max) }))
    const first = st.seen++ === 0
    st.low = Math.min(st.low, latency)
    if (call.full) this.#levels.measure(Math.min(load, this.#max), weight, st.base, latency, a.at, a.window, st.low)
    const gain = Math.max(PACE_GAIN, 1 / st.seen) // the mean of its answers until there are 1 / PACE_GAIN of them, not the first one's weight
    for (let w = 1; w <= this.#max; w++) {
      const k = load - w
      const rate = (remoteShare * Math.min(load - 1, w)) / this.#ownMs[w - 1]!
      const at = k > 0 ? endAt(ends, rate, k) : 0
      const possible = at !== null && latency - at >= 1
      const x = possible ? (at === 0 ? latencyLog : Math.log(latency - at)) : first ? latencyLog : st.m[w - 1]! // impossible: its kind's pace stands in
      if (first) {
        st.m[w - 1] = x
        continue
      }
      if (!possible) this.#impossible[w - 1]! += weight * Math.min(1, -Math.log(atLeast(k - ends.length, remote, rate * latency)) / IMPOSSIBLE_LL)
      const r = x - st.m[w - 1]!
      this.#ss[w - 1]! += weight * r * r
      st.m[w - 1]! += gain * r
      this.#ownMs[w - 1]! += PACE_GAIN * (Math.exp(st.m[w - 1]!) - this.#ownMs[w - 1]!)
      this.#logs[w - 1]! += weight * x
    }
    if (!first) this.#counted += weight
  }
  #fade(now: number): void {
    if (!Number.isFinite(this.#fadedAt)) this.#fadedAt = now
    if (now - this.#fadedAt < 100) return
    const f = Math.exp(-(now - this.#fadedAt) / EVIDENCE_MS)
    this.#levels.fade(f, now - this.#fadedAt)
    this.#fadedAt = now
    this.#counted *= f
    for (const a of [this.#logs, this.#impossible, this.#ss, this.#lifted, this.#carried ?? []]) for (let i = 0; i < a.length; i++) a[i]! *= f
  }
  /** The limit to `limit`: the step, or null where the limit stays and `kneeMoved` is not said. */
  #set(limit: number, move: Move, kneeMoved = false): Step | null {
    if (limit === this.#limit && !kneeMoved) return null
    if (limit !== this.#limit) [this.#movedSerial, this.#sinceMove] = [this.#serial, 0]
    ;[this.#limit, this.#lentUntil] = [limit, move === 'again' ? this.#lentUntil : move === 'probe' && this.#lentUntil > 0 ? Infinity : 0]
    if (move === 'again') [this.#seatSince, this.#seatHeard] = [this.#serial, false]
    return { limit, knee: this.#knee, move }
  }
  /** The fault is over: the limit is the knee's again (and the probe seat's); at a fresh start, the doubling goes on. */
  #restore(now: number): Step | null {
    this.#faults.end(now)
    this.#phase = this.#starting ? 'start' : 'cruise'
    return this.#set(this.#clamp(this.#starting ? this.#knee : this.#knee + 1), 'restored')
  }
  /** docs/governor.md, "Faults": a call that met one (under way included) teaches nothing. */
  metFault(startedAt: number, at: number): boolean { return this.#faults.met(startedAt, at) }
  /** docs/governor.md, dispatch rule 4: how many times a later call's time an overdue call of its work runs before its answer is taken as lost: OVERDUE, or SURE spreads of the ratio of two own times (√2 own times' spread) if more, which two calls of a spread kind differ by without either being lost. */
  lostAfter(overdue: number): number { return Math.max(overdue, Math.exp(SURE * Math.sqrt(2 * spread2(this.#ss[this.#max - 1]!, this.#counted)))) }
  /** A fault (overload, silence, or the platform paused the whole credential) last seen at `at`: the limit in force (at most the knee) halves, at most once a FAULT_MS; the knee stays. */
  pause(now: number, at = now): Step | null {
    if (!this.#faults.cut(now, at)) return null
    if (this.#phase !== 'fault') this.#starting = this.#phase === 'start'
    this.#faults.begin(now)
    this.#phase = 'fault'
    return this.#set(Math.max(this.#min, Math.floor(Math.min(this.#limit, this.#knee) / 2)), 'fault')
  }
  #clamp(n: number): number { return Math.max(this.#min, Math.min(this.#max, Math.round(n))) }
}
