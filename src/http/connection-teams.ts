import type { Socket } from 'node:net'

// Whose answer a connection carries, and which team's answers a full listener cuts.
// A connection with an answer under way is bounded by requestTimeout and
// connectionTimeout, not by the listener's bound: a team with a valid key that keeps the
// bound's worth of them (large answers it reads slowly or not at all, calls the platform
// holds) would hold every other team out, each new connection closed unanswered
// (docs/decisions/connection-bound.md). So each connection is marked with the team of
// the request last admitted on it, and when a connection comes past a full listener with
// none idle, the team holding the most answers under way gives up its longest silent
// ones, down to no less than its part of the bound: the bound split evenly between the
// teams holding answers and one more, the newcomer's, whose team is known only once its
// request is read. A team within its part keeps every answer. Connections on which no
// request was admitted (callers with no key: refusals, health checks, the API's
// description, and every connection of the admin listener) count as one team of their
// own: answers asked with no key and never read (GET /openapi.json pipelined, a few MB on
// each connection) would otherwise hold every team out as well.

const TEAM = Symbol('the team of the request last admitted on the connection')

type Marked = Socket & { [TEAM]?: string }

/** Marks `socket` as carrying the answers of `team`: the team of the request last admitted on it. */
export function carries(socket: Socket, team: string): void {
  ;(socket as Marked)[TEAM] = team
}

/** The team of the request last admitted on `socket`; undefined before any was. */
export function carrier(socket: Socket): string | undefined {
  return (socket as Marked)[TEAM]
}

/** A team's part of a full listener's bound `max` while `teams` teams hold answers under way: an even split with the newcomer's team, rounded up. */
export function partOfBound(max: number, teams: number): number {
  return Math.ceil(max / (teams + 1))
}

/**
 * The connections to cut at a full listener of `max`: of the team holding the most
 * answers under way (`busy`, each with its team and how long silent: the earliest its
 * last byte may have come, lower is longer), its longest silent, at most `room` and no
 * more than take it down to its part of the bound (partOfBound); none when no team holds
 * more than its part. Connections of no team (undefined) are one team.
 */
export function cutAtFullBound<T>(busy: readonly { conn: T; team: string | undefined; after: number }[], max: number, room: number): T[] {
  const byTeam = new Map<string | undefined, { conn: T; after: number }[]>()
  for (const { conn, team, after } of busy) {
    let held = byTeam.get(team)
    if (held === undefined) byTeam.set(team, (held = []))
    held.push({ conn, after })
  }
  let most: { conn: T; after: number }[] = []
  for (const held of byTeam.values()) if (held.length > most.length) most = held
  const past = most.length - partOfBound(max, byTeam.size)
  if (past <= 0) return []
  return most
    .sort((a, b) => a.after - b.after)
    .slice(0, Math.min(room, past))
    .map((c) => c.conn)
}
