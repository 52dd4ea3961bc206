// The dispatch rule over one credential's seats on one replica at one instant (docs/governor.md, "The dispatch rule"), and what its calls waiting tell the limit rule. Pure.
import type { FairQueue, Queued } from './fair-queue.js'
import type { LeaseShares, TeamRecord } from './lease-plan.js'
import { fairShares, owedSeats } from './shares.js'
import type { TeamAccounts } from './team-accounts.js'

/** A seat owed to another team is lent only to a call expected to end within this long. */
export const LENDING_HORIZON_MS = 500

/** A short call: one expected to end within the lending horizon (null: a kind never answered). */
export const isShort = (expectedMs: number | null): boolean => expectedMs !== null && expectedMs <= LENDING_HORIZON_MS

/** The shares as the dispatch rule reads them: worked out here alone (`one`) or across replicas. */
export type SharesView = LeaseShares & { teams: TeamRecord[]; owed: number; one: boolean }

type WaitingCall = Queued & { workClass: string }

const NONE: ReadonlyMap<string, number> = new Map()

/** The shares the rule reads: the lease's across replicas, or worked out here alone over `capacity` less the probe seat again (`probeLent`, lent to short calls only; owed: whole seats; "Words"). */
export function sharesView(across: LeaseShares | null, capacity: number, teams: TeamRecord[], probeLent = 0): SharesView {
  if (across) return { ...across, teams, owed: owedSeats(across.targets, teams), one: false }
  const targets = fairShares(capacity - probeLent, teams)
  return { targets, lent: probeLent, shares: targets, heldElsewhere: NONE, charged: NONE, teams, owed: owedSeats(targets, teams, true), one: true }
}

/** What the dispatch rule reads of one credential's seats on this replica, at one instant. */
export interface DispatchState<W extends WaitingCall> {
  queue: FairQueue<W>
  view: SharesView
  teams: TeamAccounts
  atCeiling(team: string): boolean
  isShort(team: string, workClass: string): boolean
}

/** Whether a team holding `held` seats (on every replica) is below its share (2.1): a whole seat below it. */
function below(view: SharesView, team: string, held: number): boolean {
  return held + 1 <= (view.shares.get(team) ?? 0) + 1e-9
}

/** A waiting team's call to consider (its most pressing; past its share, its most pressing short one), whether it is below its share (2.1), whether that call is long past its share (it may take only a seat no one is owed: 2.3). */
function standing<W extends WaitingCall>(s: DispatchState<W>, team: string): { head: W; within: boolean; long: boolean } {
  const within = below(s.view, team, s.teams.held(team) + (s.view.heldElsewhere.get(team) ?? 0))
  // A team in the queue has a call waiting.
  const head = s.queue.pressing(team) as W
  if (within || s.isShort(team, head.workClass)) return { head, within, long: false }
  const shortHead = s.queue.pressing(team, (w) => s.isShort(team, w.workClass))
  return { head: shortHead ?? head, within, long: shortHead === null }
}

/** Seats held back from long calls (2.3): owed to active teams (on one replica, but those short calls of waiting teams past their shares keep), or lent here by other replicas; whole seats. */
export function owedNow<W extends WaitingCall>(s: DispatchState<W>): number {
  const covered = s.view.one ? s.view.teams.reduce((n, t) => n + (t.waiting > 0 && !below(s.view, t.team, t.held) ? s.teams.shortRunning(t.team) : 0), 0) : 0
  return Math.floor(Math.max(0, s.view.owed - covered) + s.view.lent + 1e-9)
}

/** The next call to start on `free` seats (docs/governor.md, "The dispatch rule" 2 and 3), or null. */
export function nextCall<W extends WaitingCall>(s: DispatchState<W>, free: number): W | null {
  const owed = owedNow(s)
  let [best, bestRank, bestTag]: [W | null, number, number] = [null, Infinity, Infinity]
  for (const team of s.queue.waitingTeams()) {
    if (s.atCeiling(team)) continue
    const { head, within, long } = standing(s, team)
    if (long && free - owed < 1) continue
    const rank = within ? 0 : 1
    const tag = Math.max(s.teams.of(team).tag, s.teams.virtual)
    if (rank < bestRank || (rank === bestRank && (tag < bestTag || (tag === bestTag && head.seq < (best?.seq ?? Infinity))))) [best, bestRank, bestTag] = [head, rank, tag]
  }
  return best
}

/** What the rule holds back from the calls waiting: the seats owed, and whether every waiting call is held back (every call of a team past its share long, a ceiling, a pause): the simulator's work-conserving check reads it. */
export function heldBack<W extends WaitingCall>(s: DispatchState<W>, paused: boolean): { owed: number; longOnly: boolean } {
  const longOnly = paused || [...s.queue.waitingTeams()].every((team) => s.atCeiling(team) || standing(s, team).long)
  return { owed: owedNow(s), longOnly }
}

/** What the calls waiting tell the limit rule besides that they wait (docs/governor.md, "Start" and "Cruise"): the calls waiting and in flight at `now`, and each call's expected seat-time (null: a kind never answered). */
export interface WaitView {
  queue: FairQueue<WaitingCall>
  teams: TeamAccounts
  now: number
  expected(team: string, workClass: string): number | null
}

/** With no call waiting known short while a short call is in flight, or a team is between two asks of short calls (TeamAccounts.shortBetweenAsks: a dashboard between two views), the longest expected seat-time of those waiting (Infinity: unknown); else null. */
export function longWaitBesideShort(v: WaitView): number | null {
  if (v.queue.size === 0 || (v.teams.shortRunning() === 0 && !v.teams.shortBetweenAsks(v.now, LENDING_HORIZON_MS, new Set(v.queue.waitingTeams())))) return null
  let longest = 0
  // The first call waiting known short settles it: those after it are not looked up (the rule asks at every call that waits).
  for (const list of v.queue.lists()) {
    for (const w of list) {
      const ms = v.expected(w.team, w.workClass)
      if (isShort(ms)) return null
      longest = Math.max(longest, ms ?? Infinity)
    }
  }
  return longest
}

/** Whether every call waiting is of a kind known long while a team that waits for nothing has a short call in flight or is between two asks: another team's short calls, that the seats past W would queue those calls ahead of. */
export function longBesideOthersShort(v: WaitView): boolean {
  if (v.queue.size === 0) return false
  for (const list of v.queue.lists()) {
    for (const w of list) {
      const ms = v.expected(w.team, w.workClass)
      if (ms === null || isShort(ms)) return false
    }
  }
  const waiting = new Set(v.queue.waitingTeams())
  return v.teams.shortRunning() > [...waiting].reduce((n, team) => n + v.teams.shortRunning(team), 0) || v.teams.shortBetweenAsks(v.now, LENDING_HORIZON_MS, waiting)
}

/** Whether a team that holds no seat waits, its most pressing call not known long (short, or of a kind never answered), while every call in flight is known long. */
export function newcomerBesideLong(v: WaitView): boolean {
  return v.teams.onlyLongRunning() && [...v.queue.waitingTeams()].some((team) => {
    if (v.teams.held(team) > 0) return false
    // A team in the queue has a call waiting.
    const ms = v.expected(team, (v.queue.pressing(team) as WaitingCall).workClass)
    return ms === null || isShort(ms)
  })
}
