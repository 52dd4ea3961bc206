import { GATEWAY_TEAM } from '../gateway-team.js'
import { FAULT_MS } from './fault-watch.js'
import type { TeamRecord } from './lease-plan.js'
import type { CallAhead } from './seat.js'

// docs/governor.md, "Constants".
export const LINGER_MS = 5_000
export const RETURN_MS = 100

/** A call in flight: its start, its expected seat-time then (null: a kind never answered), when it is overdue (Infinity once answered), whether it was expected short, its work, and what ends its seat as lost. */
type RunningCall = { at: number; ms: number | null; dueAt: number; short: boolean; work: string; lose: () => void }

/** One team's seats on one replica (docs/governor.md, "State"): its calls in flight (seats held), its tag is seat-time charged over its weight; its peak, the most it held and waited for at once since `peakAt`; when a call of it last ended and whether that call was expected short; when its queue last emptied. */
interface TeamAccount { seatMs: number; running: Set<RunningCall>; tag: number; lastAsked: number; peak: number; peakAt: number; lastEnd: number; lastShort: boolean; emptiedAt: number }

/** The teams' accounts of one credential on one replica, and which are active (holding, waiting, or asked within the linger). */
export class TeamAccounts {
  readonly #teams = new Map<string, TeamAccount>()
  // The seat-time held on the other replicas already charged to each team's tag.
  readonly #chargedElsewhere = new Map<string, number>()
  /** The least start tag a team may take (start-time fair queueing's virtual time). */
  virtual = 0
  /** The last answer here, and the call sent past seats all held by calls overdue, while it is out. */
  heardAt = -Infinity
  probe: RunningCall | null = null
  // Every call in flight, in the order they started.
  readonly #started = new Set<RunningCall>()

  of(team: string): TeamAccount {
    if (!this.#teams.has(team)) this.#teams.set(team, { seatMs: 0, running: new Set(), tag: this.virtual, lastAsked: -Infinity, peak: 0, peakAt: -Infinity, lastEnd: -Infinity, lastShort: false, emptiedAt: -Infinity })
    return this.#teams.get(team) as TeamAccount
  }

  /** Charges each tag with the seat-time its team held on the other replicas since the last charge (`charged`: in all; none when counted here alone). */
  chargeElsewhere(charged: ReadonlyMap<string, number> | undefined, weight: (team: string) => number): void {
    for (const [team, ms] of charged ?? []) {
      const seats = this.#teams.get(team)
      if (seats) seats.tag += (ms - (this.#chargedElsewhere.get(team) ?? ms)) / weight(team)
      this.#chargedElsewhere.set(team, ms)
    }
  }

  /** The teams with an account here. */
  get size(): number { return this.#teams.size }
  has(team: string): boolean { return this.#teams.has(team) }
  names(): string[] { return [...this.#teams.keys()] }
  /** Drops `team`'s account and the seat-time charged to it from elsewhere: made again, it starts at the virtual time, as a team that starts waiting does. */
  forget(team: string): void {
    this.#teams.delete(team)
    this.#chargedElsewhere.delete(team)
  }
  /** A call of `team` starts; its seat is freed. */
  start(team: string, call: RunningCall): void {
    this.of(team).running.add(call)
    this.#started.add(call)
  }
  end(team: string, call: RunningCall): void {
    this.#teams.get(team)?.running.delete(call)
    this.#started.delete(call)
    if (this.probe === call) this.probe = null
  }
  held(team: string): number { return this.#teams.get(team)?.running.size ?? 0 }
  get inFlight(): number { return this.#started.size }
  #calls(team?: string | null): Iterable<RunningCall> { return team == null ? this.#started : (this.#teams.get(team)?.running ?? []) }

  /** The calls in flight (`team`'s; of every team, null) as calls ahead of a newcomer at `now`: their expected seat-time and what they have run. */
  inFlightAhead(now: number, team: string | null): CallAhead[] {
    return [...this.#calls(team)].map((call) => ({ ms: call.ms, ranMs: now - call.at }))
  }

  /** `team`'s calls in flight expected short; of every team's, without one. */
  shortRunning(team?: string): number {
    let n = 0
    for (const call of this.#calls(team)) if (call.short) n++
    return n
  }

  /** Whether a team holding no seat and waiting for nothing (`waiting`: the teams waiting) ended a call expected short within `ms` (the lending horizon): between two asks, as a dashboard between two views. */
  shortBetweenAsks(now: number, ms: number, waiting: ReadonlySet<string>): boolean {
    return [...this.#teams].some(([name, seats]) => seats.lastShort && seats.running.size === 0 && now - seats.lastEnd < ms && !waiting.has(name))
  }

  /** Whether calls are in flight and every one of them is expected long (of a kind answered, past the lending horizon). */
  onlyLongRunning(): boolean {
    for (const call of this.#started) if (call.short || call.dueAt === Infinity) return false
    return this.inFlight > 0
  }

  seatSeconds(team: string, now: number): number { return seatMs(this.#teams.get(team), now) / 1000 }

  /** Since when a call at a worker (of the calls in flight, the `atWorkers` started first) has been overdue, or null. */
  overdueSince(now: number, atWorkers = Infinity): number | null {
    // Asked after every answer: with no more calls in flight than workers, every call counts, and none is copied.
    const atWork = this.inFlight <= atWorkers ? this.#started : [...this.#started].slice(0, atWorkers)
    let due = Infinity
    for (const call of atWork) due = Math.min(due, call.dueAt)
    return due <= now ? due : null
  }

  /** When one call more may go past seats all held by calls overdue (docs/governor.md, dispatch rule 4): FAULT_MS after the last became so, or after the last answer if later; never with none in flight, nor while one such call is out. */
  silentSince(): number {
    if (this.probe !== null || this.#started.size === 0) return Infinity
    let at = this.heardAt
    for (const call of this.#started) at = Math.max(at, call.dueAt)
    return at + FAULT_MS
  }

  /** The calls of `work` in flight overdue that started before `before` and have run past `longerThan` ms (a later call of that work answered, its time OVERDUE times over): the platform answers, theirs did not come back. */
  lost(now: number, work: string, before: number, longerThan: number): RunningCall[] {
    const out: RunningCall[] = []
    for (const call of this.#started) {
      if (call.at >= before || now - call.at <= longerThan) break
      if (call.dueAt <= now && call.work === work) out.push(call)
    }
    return out
  }

  /** A team's demand (held and `waiting`) grew: its peak over the linger follows. */
  notePeak(team: string, waiting: number, now: number): void {
    const seats = this.of(team)
    const demand = seats.running.size + waiting
    if (demand >= peakNow(seats, now)) [seats.peak, seats.peakAt] = [demand, now]
  }

  /** The active teams: holding a seat, waiting, or lingering; with `seatTime`, the seat-time each held here (LocalTeam's). */
  active(now: number, waiting: ReadonlyMap<string, number>, weight: (team: string) => number, cap: (team: string) => number | null, seatTime = false): TeamRecord[] {
    const out: TeamRecord[] = []
    for (const [team, seats] of this.#teams) {
      const lingering = lingers(team, seats, now)
      const [held, w] = [seats.running.size, waiting.get(team) ?? 0]
      if (held > 0 || w > 0 || lingering) out.push({ team, weight: weight(team), held, waiting: w, cap: cap(team), lingering, peak: Math.max(peakNow(seats, now), held + w), ...(seatTime ? { seatMs: Math.round(seatMs(seats, now)) } : {}) })
    }
    return out
  }

  /** The teams holding a seat whose queue emptied within RETURN_MS of `now`: on one replica each holds the virtual time back as a waiting team does. */
  *returning(now: number): IterableIterator<string> {
    for (const [team, seats] of this.#teams) if (seats.running.size > 0 && now - seats.emptiedAt < RETURN_MS) yield team
  }

  /** When the first linger of a team holding no seat ends, or (`peaks`) the first peak of an active team past what it holds lapses (a millisecond past LINGER: it is held through LINGER itself): the owed seats that go then (Infinity: none). */
  lingerEnd(now: number, peaks: boolean): number {
    let at = Infinity
    for (const [team, seats] of this.#teams) {
      const held = seats.running.size
      if (held === 0 && !lingers(team, seats, now)) continue
      if (held === 0) at = Math.min(at, seats.lastAsked + LINGER_MS)
      if (peaks && peakNow(seats, now) > held) at = Math.min(at, seats.peakAt + LINGER_MS + 1)
    }
    return at
  }
}

/** Whether a team asked within the linger; the gateway's own calls (the probe, look-ups) are few and never linger. */
const lingers = (team: string, seats: TeamAccount, now: number): boolean => team !== GATEWAY_TEAM && now - seats.lastAsked < LINGER_MS
/** A team's peak within the linger (0 once the linger since it passed). */
const peakNow = (seats: TeamAccount, now: number): number => (now - seats.peakAt <= LINGER_MS ? seats.peak : 0)

/** A team's seat-time, its calls in flight included (none: 0). */
function seatMs(seats: TeamAccount | undefined, now: number): number {
  let ms = seats?.seatMs ?? 0
  for (const call of seats?.running ?? []) ms += now - call.at
  return ms
}
