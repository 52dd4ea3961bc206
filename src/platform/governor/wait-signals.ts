import { LENDING_HORIZON_MS, isShort } from './dispatch-order.js'
import type { FairQueue, Queued } from './fair-queue.js'
import type { TeamAccounts } from './team-accounts.js'

// What one credential's calls waiting on one replica tell the limit rule, besides that they
// wait (docs/governor.md, "Start" and "Cruise"): plain functions over the queue, the
// accounts and the expected seat-times at one instant.

/** The calls waiting and in flight at `now`, and each call's expected seat-time (null: a kind never answered). */
export interface WaitView<W extends Queued & { workClass: string }> {
  queue: FairQueue<W>
  teams: TeamAccounts
  now: number
  expected(team: string, workClass: string): number | null
}

type View = WaitView<Queued & { workClass: string }>

const waitsMs = (v: View): (number | null)[] => v.queue.all().map((w) => v.expected(w.team, w.workClass))

/** With no call waiting known short while a short call is in flight, or a team is between two asks of short calls (TeamAccounts.shortBetweenAsks: a dashboard between two views), the longest expected seat-time of those waiting (Infinity: unknown); else null. */
export function longWaitBesideShort(v: View): number | null {
  if (v.queue.size === 0 || (v.teams.shortRunning() === 0 && !v.teams.shortBetweenAsks(v.now, LENDING_HORIZON_MS, new Set(v.queue.waitingTeams())))) return null
  const waits = waitsMs(v)
  return waits.some(isShort) ? null : Math.max(0, ...waits.map((ms) => ms ?? Infinity))
}

/** Whether every call waiting is of a kind known long while a team that waits for nothing has a short call in flight or is between two asks: another team's short calls, that the seats past W would queue those calls ahead of. */
export function longBesideOthersShort(v: View): boolean {
  if (v.queue.size === 0 || waitsMs(v).some((ms) => ms === null || isShort(ms))) return false
  const waiting = new Set(v.queue.waitingTeams())
  return v.teams.shortRunning() > [...waiting].reduce((n, team) => n + v.teams.shortRunning(team), 0) || v.teams.shortBetweenAsks(v.now, LENDING_HORIZON_MS, waiting)
}

/** Whether a team that holds no seat waits, its most pressing call not known long (short, or of a kind never answered), while every call in flight is known long. */
export function newcomerBesideLong(v: View): boolean {
  return v.teams.onlyLongRunning() && [...v.queue.waitingTeams()].some((team) => {
    if (v.teams.held(team) > 0) return false
    // A team in the queue has a call waiting.
    const ms = v.expected(team, (v.queue.pressing(team) as Queued & { workClass: string }).workClass)
    return ms === null || isShort(ms)
  })
}
