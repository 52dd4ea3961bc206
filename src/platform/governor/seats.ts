import { FairQueue, type Priority, type Queued } from './fair-queue.js'
import { heldBack, isShort, longBesideOthersShort, longWaitBesideShort, newcomerBesideLong, nextCall, owedNow, sharesView, type DispatchState, type SharesView, type WaitView } from './dispatch-order.js'
import { DeadlineError, OverloadedError } from '../../errors.js'
import { NoIdleSeatError, comeBackSec, learnFrom, tooLate, type RefusalReason, type Seat, type SeatLease, type SeatRequest, type SeatsOptions, type TeamLimits } from './seat.js'
import type { LocalTeam, TeamRecord } from './lease-plan.js'
import { GATEWAY_TEAM } from '../gateway-team.js'
import { TeamAccounts } from './team-accounts.js'
import { CUT_GROWTH, kindOf } from './work-estimates.js'
import { FAULT_MS } from './fault-watch.js'
import { LONGEST_TIMER_MS, systemClock, type Clock, type Timer } from '../../clock.js'

// docs/governor.md, "Constants".
const MIN_CHARGE_MS = 1
export const OVERDUE = 3

/** A call waiting for a seat (`expiresAt`: `#held`): one object and one listener per call, not closures over `ask`'s scope, which would keep its request while it waits. */
class QueuedCall implements Queued {
  timer: Timer | null = null
  constructor(readonly team: string, readonly priority: Priority, readonly seq: number, readonly workClass: string, readonly urgency: (() => number) | undefined, readonly timeoutAt: number,
    readonly deadline: number, public trial: boolean, public expiresAt: number, readonly resolve: (seat: Seat) => void, readonly reject: (err: Error) => void, readonly signal: AbortSignal | undefined, readonly aborted: (call: QueuedCall) => void) {}
  readonly onAbort = (): void => this.aborted(this)
}

/** The seats of one credential on one replica: docs/governor.md, "The dispatch rule" (which call goes next: dispatch-order.ts). */
export class CredentialSeats {
  readonly credential: string
  readonly #o: SeatsOptions
  readonly #clock: Clock
  readonly #lease: SeatLease | null
  #limit: number
  #probeLent = false
  readonly #teams = new TeamAccounts()
  readonly #queue = new FairQueue<QueuedCall>()
  // The calls waiting, by their work: those an answer of it can move (its team's estimate, or any team's for a team with none of its own).
  readonly #byWork = new Map<string, Set<QueuedCall>>()
  #seq = 0
  #lingerTimer: Timer | null = null
  #lingerAt = Infinity
  // The wake as a silence of calls all overdue may end (TeamAccounts.silentSince).
  #silence: Timer | null = null
  readonly #aborted = (call: QueuedCall): void => this.#drop(call, call.signal?.reason as Error)
  // The teams kept by name (keepTeams): those configured now, the gateway's own, and any still holding or waiting for a seat here.
  #configured: (team: string) => boolean = () => true
  readonly #kept = (team: string): boolean => this.#configured(team) || this.#teams.has(team)

  constructor(opts: SeatsOptions) {
    this.credential = opts.credential
    this.#o = opts
    this.#clock = opts.clock ?? systemClock
    this.#lease = opts.seats ?? null
    this.#limit = clamp(opts.limit, opts.maxConcurrent)
    this.#lease?.onGrown(() => this.wake())
  }

  get limit(): number { return this.#limit }
  /** Whether the limit's last seat is the probe seat again, lent to short calls only: no share counts it. */
  get probeLent(): boolean { return this.#probeLent }
  /** Seats this replica may fill now: the limit, or its lease of it across replicas. */
  get capacity(): number { return Math.min(this.#limit, this.#lease?.size(this.#limit) ?? this.#o.perReplica ?? Infinity) }
  get inFlight(): number { return this.#teams.inFlight }
  get queued(): number { return this.#queue.size }
  /** The teams with an account here. */
  get teamsKept(): number { return this.#teams.size }
  get seatsHeld(): number { return this.#lease?.held ?? this.inFlight }
  /** The credential pause's end on this governor's clock (`fromWall`); 0: none. */
  get pausedUntil(): number { const until = this.#fromWall(this.#o.pausedUntil?.() ?? 0); return until > this.#clock.now() ? until : 0 }

  /** `probeLent`: the limit's last seat is the probe seat again (knee-estimator.ts), lent to a call known short only. */
  setLimit(limit: number, probeLent = false): void {
    const next = clamp(limit, this.#o.maxConcurrent)
    const raised = next > this.#limit
    ;[this.#limit, this.#probeLent] = [next, probeLent]
    this.#demandChanged()
    if (raised) this.wake()
  }

  /** Whether calls wait while every seat of the limit is taken or held back from them (owed, lent: dispatch-order.ts owedNow): the limit is in use (not a wait for a ceiling, a pause or a lease). */
  waitingAtLimit(): boolean {
    if (this.#queue.size === 0 || this.pausedUntil > 0 || this.#lease?.saturated() === false) return false
    if ([...this.#queue.waitingTeams()].every((team) => this.#atCeiling(team))) return false
    // Seats held back are never negative: with every seat in use, the shares need not be worked out (asked at every answer).
    return this.inFlight >= this.capacity - 1e-9 || this.inFlight + owedNow(this.#dispatchState()) >= this.capacity - 1e-9
  }

  /** What the calls waiting tell the limit rule (dispatch-order.ts, docs/governor.md "Start" and "Cruise"). */
  longWaitBesideShort(): number | null { return longWaitBesideShort(this.#waitView()) }
  longBesideOthersShort(): boolean { return longBesideOthersShort(this.#waitView()) }
  newcomerBesideLong(): boolean { return newcomerBesideLong(this.#waitView()) }
  #waitView(): WaitView { const now = this.#clock.now(); return { queue: this.#queue, teams: this.#teams, now, expected: this.#expectedAt(now) } }

  /** The expected seat-time of a call at `now` (null: a kind never answered), looked up once for calls of one kind in a row (a team's waiting calls are mostly of one kind); the estimates do not change while it is in use. */
  #expectedAt(now: number): (team: string, workClass: string) => number | null {
    let last: { team: string; workClass: string; ms: number | null } | null = null
    return (team, workClass) => {
      if (last?.team !== team || last.workClass !== workClass) last = { team, workClass, ms: this.#o.work.expectedMs(team, workClass, now) }
      return last.ms
    }
  }

  /** Since when a call in flight here, among the `atWorkers` started first, has been overdue (OVERDUE times its expected time), or null. */
  overdueSince(now = this.#clock.now(), atWorkers = Infinity): number | null { return this.#teams.overdueSince(now, atWorkers) }
  waiting(): Map<string, number> { return this.#queue.countByTeam() }
  /** `team`'s share of this replica's seats now (0 while it is not active). */
  shareOf(team: string): number { return this.#shares().targets.get(team) ?? 0 }
  running(team: string): number { return this.#teams.held(team) }
  /** Seat-seconds charged to `team` on this replica, its calls still running included. */
  seatSeconds(team: string): number { return this.#teams.seatSeconds(team, this.#clock.now()) }

  /** The team's own ceilings (null: none), within the credential's. */
  limitsOf(team: string): TeamLimits {
    const own = this.#o.limitsOf?.(team)
    const within = (n: number | null | undefined, ceiling: number) => (n == null ? null : Math.min(n, ceiling))
    return { maxConcurrent: within(own?.maxConcurrent, this.#o.maxConcurrent), queue: within(own?.queue, this.#o.queueLimit) }
  }

  /** Keeps by name only the teams `configured` keeps (a reload replaced the teams): docs/governor.md, "State" (decisions/team-keyed-maps.md). */
  keepTeams(configured: (team: string) => boolean): void {
    this.#configured = configured
    this.#forgetIfGone(this.#teams.names(), true)
  }

  /** Forgets the account and own estimates of each of `teams` that is removed and holds and waits for nothing (at the reload, else as a call of it leaves: its seat freed, its wait, its ask refused); then, if one went (`reload`: at once), the seat-time charged from elsewhere to the teams not kept. */
  #forgetIfGone(teams: string[], reload = false): void {
    let gone = reload
    for (const team of teams) {
      if (this.#configured(team) || this.#teams.held(team) > 0 || this.#queue.count(team, null) > 0) continue
      this.#teams.forget(team)
      this.#o.work.forget(team)
      this.#o.rule?.forget(team)
      gone = true
    }
    if (gone) this.#lease?.keepCharges(this.#kept)
  }

  /** A seat may have come free (a wider lease, the pause ended): queued calls try again. */
  wake(): void { if (this.#queue.size > 0) this.#dispatch() }

  /** A seat for one call, by dispatch rule 1 and 2 (refusals: `#refuse`); rejects with the signal's reason on abort. */
  ask(req: SeatRequest): Promise<Seat> {
    const { team, signal } = req
    if (signal?.aborted) return Promise.reject(signal.reason as Error)
    const priority = req.priority ?? 'caller'
    const now = this.#clock.now()
    const deadline = this.#fromWall(req.deadline)
    this.#teams.of(team).lastAsked = now
    const sending = this.#sendBy(team, req.workClass, deadline, priority, now, () => this.#o.work.trial(team, req.workClass, now))
    if (sending instanceof Error) return this.#refusedAtOnce(team, sending)
    const { sendBy, trial } = sending
    const timeoutAt = now + this.#o.queueTimeoutMs
    const expiresAt = Math.min(timeoutAt, sendBy)
    if (this.pausedUntil > expiresAt) return this.#refusedAtOnce(team, this.#refuse('paused', null, priority))
    const limits = this.limitsOf(team)
    if (priority === 'caller' && limits.queue !== null && limits.queue < this.#o.queueLimit && this.#queue.count(team) >= limits.queue) {
      return this.#refusedAtOnce(team, this.#refuse('team_queue_full', `team ${team} has ${limits.queue} platform calls of credential ${this.credential} waiting already`, priority, team))
    }
    const out = this.#queue.displaced({ team, priority }, this.#o.queueLimit, (t) => this.#weight(t))
    if (out === 'refuse') return this.#refusedAtOnce(team, this.#refuse('queue_full', `the queue of credential ${this.credential} is full`, priority))
    if (out) this.#drop(out, this.#refuse('displaced', `the queue of credential ${this.credential} is full: a call of a team with fewer calls waiting took this one's place`, out.priority, null, out))
    const seq = this.#seq++
    return new Promise<Seat>((resolve, reject) => {
      const waiter = new QueuedCall(team, priority, seq, req.workClass, req.urgency, timeoutAt, deadline, trial, expiresAt, resolve, reject, signal, this.#aborted)
      this.#arm(waiter, now)
      signal?.addEventListener('abort', waiter.onAbort, { once: true })
      this.#chargeElsewhere()
      // A team that starts waiting again saved no credit while it did not.
      if (this.#queue.count(team, null) === 0) this.#teams.of(team).tag = Math.max(this.#teams.of(team).tag, this.#teams.virtual)
      this.#queue.push(waiter)
      this.#byWork.set(waiter.workClass, (this.#byWork.get(waiter.workClass) ?? new Set()).add(waiter))
      this.#teams.notePeak(team, this.#queue.count(team, null), this.#clock.now())
      this.#dispatch()
      if (this.#queue.has(waiter)) {
        if (this.waitingAtLimit()) {
          this.#o.rule?.waited(this.longWaitBesideShort(), this.newcomerBesideLong(), this.heldBackNow(), this.longBesideOthersShort())
          this.#lease?.waited()
        }
        this.#demandChanged()
      }
    })
  }

  #fromWall(at: number): number { return this.#o.fromWall?.(at) ?? at }

  /** An ask refused before it waits: a removed team it made the account of holds nothing (`#forgetIfGone`). */
  #refusedAtOnce(team: string, err: Error): Promise<Seat> { this.#forgetIfGone([team]); return Promise.reject(err) }

  /** The credential's pause began: calls that would still wait when their time is up are told so now. */
  paused(): void {
    const until = this.pausedUntil
    for (const waiter of this.#queue.all().filter((w) => w.expiresAt < until)) this.#drop(waiter, this.#refuse('paused', null, waiter.priority, null, waiter))
  }

  /** The seats free that the dispatch holds back from the calls waiting here (owed, lent): none while every seat is in flight. */
  heldBackNow(): number { return this.inFlight >= this.capacity ? 0 : Math.min(this.capacity - this.inFlight, owedNow(this.#dispatchState())) }
  heldBack(): { owed: number; longOnly: boolean } { return heldBack(this.#dispatchState(), this.pausedUntil > 0) }

  #dispatchState(): DispatchState<QueuedCall> {
    const expected = this.#expectedAt(this.#clock.now())
    return {
      queue: this.#queue,
      view: this.#shares(),
      teams: this.#teams,
      atCeiling: (team) => this.#atCeiling(team),
      isShort: (team, workClass) => isShort(expected(team, workClass)),
    }
  }

  /** The deadline rule (dispatch rule 1), one test as a call asks and while it waits: when it is to be sent by (WorkEstimates.neededMs), a `trial`'s its deadline; else its refusal. */
  #sendBy(team: string, workClass: string, deadline: number, priority: Priority, now: number, trial: () => boolean): { sendBy: number; trial: boolean } | Error {
    const sendBy = deadline - (this.#o.work.neededMs(team, workClass, now) ?? 0)
    if (sendBy > now) return { sendBy, trial: false }
    if (deadline > now && trial()) return { sendBy: deadline, trial: true }
    return this.#refuse('deadline', tooLate(this.#o.work.ownMs(team, workClass, now), deadline - now), priority)
  }

  /** The deadline rule on a waiting call by its kind's estimate now: refused at once when it can no longer end before its deadline; else, `timedOut`, at its queue timeout; else its wait ends at its time to be sent by, or its queue timeout if sooner. */
  #held(call: QueuedCall, now: number, timedOut = false): void {
    const sending = this.#sendBy(call.team, call.workClass, call.deadline, call.priority, now, () => call.trial)
    if (sending instanceof Error) return this.#drop(call, sending)
    if (timedOut) return this.#drop(call, this.#refuse('queue_timeout', `no platform seat of credential ${this.credential} within ${this.#o.queueTimeoutMs} ms`, call.priority, null, call))
    call.trial = sending.trial
    const expiresAt = Math.min(call.timeoutAt, sending.sendBy)
    if (expiresAt === call.expiresAt && call.timer !== null) return
    call.expiresAt = expiresAt
    this.#arm(call, now)
  }

  /** A waiting call's timer, at its `expiresAt` (made apart from `ask`, it keeps the call alone): its wait ends refused by the deadline rule, or at its queue timeout (its kind's estimate may have fallen since its timer was set: it waits on). */
  #arm(call: QueuedCall, now: number): void {
    this.#clock.clearTimeout(call.timer)
    call.timer = this.#timer(() => {
      call.timer = null
      this.#held(call, this.#clock.now(), this.#clock.now() >= call.timeoutAt)
    }, call.expiresAt - now)
  }

  /** A refused call's error: NoIdleSeatError for background work, GW_UPSTREAM_TIMEOUT for the deadline rule, else GW_OVERLOADED with its retry-after (`#comeBackSec`; `text` null: the pause's). */
  #refuse(reason: RefusalReason, text: string | null, priority: Priority, team: string | null = null, leaving: QueuedCall | null = null): Error {
    this.#o.onRefused?.(reason)
    if (priority !== 'caller') return new NoIdleSeatError(this.credential)
    if (reason === 'deadline') return new DeadlineError(text ?? '')
    const pauseSec = Math.ceil((this.pausedUntil - this.#clock.now()) / 1000)
    const retryAfterSec = Math.max(pauseSec, this.#comeBackSec(team, leaving))
    return Object.assign(new OverloadedError(`${text ?? `credential ${this.credential} is paused by the platform for ${pauseSec} s`}; retry in ${retryAfterSec} s`), { retryAfterSec })
  }

  /** docs/governor.md, "A refusal's retry-after": the calls waiting but `leaving` and those in flight here, over the seats this replica may fill; of `team`'s full queue, its own, over its share of them. */
  #comeBackSec(team: string | null, leaving: QueuedCall | null): number {
    const now = this.#clock.now()
    const expected = this.#expectedAt(now)
    const waiting = this.#queue.all().filter((w) => w !== leaving && (team === null || w.team === team)).map((w) => ({ ms: expected(w.team, w.workClass), ranMs: 0 }))
    const seats = team === null ? this.capacity : Math.min(this.capacity, this.shareOf(team))
    return comeBackSec([...waiting, ...this.#teams.inFlightAhead(now, team)], seats, this.#o.maxPauseMs)
  }

  /** The active teams here; with `seatTime`, the seat-time each held (the lease's record carries it, the dispatch reads none). */
  #localTeams(): TeamRecord[]
  #localTeams(seatTime: true): LocalTeam[]
  #localTeams(seatTime?: true): TeamRecord[] { return this.#teams.active(this.#clock.now(), this.#queue.countByTeam(null), (t) => this.#weight(t), (t) => this.limitsOf(t).maxConcurrent, seatTime) }
  #shares(): SharesView { return sharesView(this.#lease?.shares() ?? null, this.capacity, this.#localTeams(), this.#probeLent && this.capacity === this.#limit ? 1 : 0) }
  #chargeElsewhere(): void { this.#teams.chargeElsewhere(this.#lease?.shares()?.charged, (t) => this.#weight(t)) }

  #atCeiling(team: string): boolean {
    const cap = this.limitsOf(team).maxConcurrent
    if (cap === null) return false
    return this.running(team) >= (this.#lease?.ceilingHere(team, cap, this.running(team) + this.#queue.count(team, null)) ?? cap)
  }

  /** Counted here alone, no lease takes the demand: its fields are not worked out (`?.` skips them). */
  #demandChanged(): void { this.#lease?.demand({ limit: this.#limit, inFlight: this.inFlight, waiting: this.#queue.size, heldBack: this.#queue.size > 0 ? this.heldBackNow() : 0, teams: this.#localTeams(true) }) }

  #dispatch(): void {
    this.#chargeElsewhere()
    let started = false
    while (this.#queue.size > 0 && this.pausedUntil === 0) {
      const free = this.capacity - this.inFlight
      // Every seat held by a call overdue for FAULT_MS with no answer since: one call more within the ceilings, whose answer tells them lost (dispatch rule 4); on one replica also past a cut of the limit.
      const probe = (free >= 0 || this.#lease === null) && free < 1 && this.inFlight < Math.min(this.#o.maxConcurrent, this.#o.perReplica ?? Infinity) && this.#silent() && (this.#lease === null || this.#lease.shares() !== null)
      const waiter = this.#next(probe ? 1 : free)
      if (waiter === null) break
      this.#detach(waiter)
      if (this.#queue.count(waiter.team, null) === 0) this.#teams.of(waiter.team).emptiedAt = this.#clock.now()
      started = true
      waiter.resolve(this.#start(waiter, probe))
    }
    if (started) this.#demandChanged()
    this.#watchSilence()
  }

  /** A wake as a silence may end: FAULT_MS past the last answer, then as the last call became overdue if later; the queue looks again only once it has. */
  #watchSilence(): void {
    const now = this.#clock.now()
    const at = this.#queue.size === 0 || this.#silence !== null ? Infinity : now < this.#teams.heardAt + FAULT_MS ? this.#teams.heardAt + FAULT_MS : this.#teams.silentSince()
    if (Number.isFinite(at) && at >= now) this.#silence = this.#timer(() => { this.#silence = null; if (this.#silent()) this.#dispatch(); else this.#watchSilence() }, at + 1 - now)
  }

  /** Whether every seat has been held by a call overdue with no answer for FAULT_MS (TeamAccounts.silentSince; no scan while answers come). */
  #silent(): boolean { const now = this.#clock.now(); return now >= this.#teams.heardAt + FAULT_MS && this.#teams.silentSince() < now }

  /** The next call to start on `free` seats; when none may, the queue is woken as the first linger ends (its owed seats go then), on one replica also as the first peak past what its team holds lapses (its owed seats go then too): a team that gave back its last seat since the wake was set may linger less long than the one it waits for. */
  #next(free: number): QueuedCall | null {
    if (free <= 0) return null
    const best = nextCall(this.#dispatchState(), free)
    if (best !== null) return best
    const now = this.#clock.now()
    const at = this.#teams.lingerEnd(now, this.#lease === null)
    if (!Number.isFinite(at) || (this.#lingerTimer !== null && at >= this.#lingerAt)) return null
    this.#clock.clearTimeout(this.#lingerTimer)
    this.#lingerAt = at
    this.#lingerTimer = this.#timer(() => { this.#lingerTimer = null; this.wake() }, at - now)
    return null
  }

  #start(waiter: QueuedCall, probe = false): Seat {
    const { team, workClass } = waiter
    const weight = this.#weight(team)
    const seats = this.#teams.of(team)
    const startedAt = this.#clock.now()
    const expected = this.#o.work.expectedMs(team, workClass, startedAt)
    // Charged the platform's time: what calls of its kind held less the loop's lateness, as its end will be (dispatch rule 2).
    const charged = Math.max(MIN_CHARGE_MS, (expected ?? MIN_CHARGE_MS) - this.#late())
    const start = Math.max(seats.tag, this.#teams.virtual)
    seats.tag = start + charged / weight
    // The virtual time: the least tag waiting, or of a team holding a seat whose queue emptied within RETURN_MS (dispatch rule 2).
    const others = [...this.#queue.waitingTeams(), ...this.#teams.returning(startedAt)].filter((other) => other !== team && !this.#atCeiling(other))
    this.#teams.virtual = Math.max(this.#teams.virtual, Math.min(start, ...others.map((other) => this.#teams.of(other).tag)))
    const call = { at: startedAt, ms: expected, dueAt: expected === null ? Infinity : startedAt + OVERDUE * expected, short: isShort(expected), work: workClass, lose: () => lose() }
    this.#teams.start(team, call)
    if (probe) this.#teams.probe = call
    const load = this.inFlight + (this.#lease?.elsewhere() ?? 0)
    const kind = kindOf(team, workClass)
    const window = this.#o.rule?.started(kind, load) ?? 0
    let ended = false
    // A call never sent held the platform for no time: its team is charged none, its start's charge given back. One
    // freed as its answer is read (`lateMs`: how late the loop wakes then) is charged what it held less that lateness.
    const free = (sent: boolean, lateMs = 0) => {
      const held = sent ? Math.max(MIN_CHARGE_MS, this.#clock.now() - startedAt) : 0
      seats.seatMs += held
      seats.tag += ((sent ? Math.max(MIN_CHARGE_MS, held - lateMs) : 0) - charged) / weight
      this.#teams.end(team, call)
      if (sent) [seats.lastEnd, seats.lastShort] = [this.#clock.now(), call.short]
      this.#dispatch()
      this.#demandChanged()
      this.#forgetIfGone([team])
    }
    // Lost on the way back (dispatch rule 4): its seat goes back, charged until now; its end, if one comes, teaches nothing.
    const lose = () => {
      if (ended) return
      ended = true
      this.#o.onEnded?.({ startedAt, at: this.#clock.now(), team, kind, load, window, outcome: 'other' })
      free(true)
    }
    return {
      end: (outcome) => {
        if (ended) return
        ended = true
        call.dueAt = Infinity
        const now = this.#clock.now()
        const at = outcome.kind === 'dropped' || outcome.kind === 'unsent' ? now : startedAt + outcome.latencyMs
        if (outcome.kind === 'answer') this.#lease?.answered()
        const learned = learnFrom(this.#o.work, team, workClass, outcome, now, startedAt, this.#o.rule?.metFault(startedAt, at))
        // An end taught the estimate of its work (an answer, a cut): the calls of that work waiting are held to the deadline rule by it now, before a seat goes to one.
        for (const waiter of [...(this.#byWork.get(workClass) ?? [])]) this.#held(waiter, now)
        this.#o.onEnded?.({ startedAt, at, team, kind, load, window, outcome: learned, ...(outcome.kind === 'answer' && outcome.status === 429 ? { refused: true } : {}) })
        if (outcome.kind === 'answer') this.#teams.heardAt = now
        // The platform answered a later call of its work in a third (or SURE spreads) of what an earlier one has run: that one's answer was lost.
        if (learned === 'ok' && outcome.kind === 'answer') for (const other of this.#teams.lost(now, workClass, startedAt, (this.#o.rule?.lostAfter(OVERDUE) ?? OVERDUE) * outcome.latencyMs)) other.lose()
        // Cut by its deadline, or its callers gone: held to its expected end, a watched call to CUT_GROWTH times what it ran though it met a fault; never sent: free at once (dispatch rule 4).
        if (outcome.kind === 'unsent') return free(false)
        const goesOn = outcome.kind === 'dropped' || (outcome.kind === 'none' && outcome.timedOut)
        const ran = outcome.kind === 'none' ? CUT_GROWTH * outcome.latencyMs : 0
        const until = goesOn ? startedAt + Math.max(ran, this.#o.work.expectedMs(team, workClass, now) ?? 0) : 0
        if (until > now) this.#timer(() => free(true), until - now)
        else free(true, this.#late())
      },
    }
  }

  /** A queued call leaves the queue (false: it was not in it), its timer and abort listener gone. */
  #detach(waiter: QueuedCall): boolean {
    this.#clock.clearTimeout(waiter.timer)
    waiter.signal?.removeEventListener('abort', waiter.onAbort)
    const sameWork = this.#byWork.get(waiter.workClass)
    if (sameWork?.delete(waiter) && sameWork.size === 0) this.#byWork.delete(waiter.workClass)
    return this.#queue.remove(waiter)
  }

  #drop(waiter: QueuedCall, err: Error): void {
    if (this.#detach(waiter)) this.#demandChanged()
    this.#forgetIfGone([waiter.team])
    waiter.reject(err)
  }

  #timer(fn: () => void, ms: number): Timer { return this.#clock.setTimeout(fn, Math.min(Math.max(0, ms), LONGEST_TIMER_MS)).unref() }
  /** How late the loop wakes, as a charge reads it: on one replica; across replicas none (dispatch rule 2). */
  #late(): number { return this.#lease === null ? this.#o.loopLateMs?.() ?? 0 : 0 }
  #weight(team: string): number { return team === GATEWAY_TEAM ? 1 : Math.max(1, this.#o.weightOf?.(team) ?? 1) }
}

function clamp(limit: number, ceiling: number): number { return Math.max(1, Math.min(ceiling, Math.floor(limit))) }
