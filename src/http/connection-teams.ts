import type { ServerResponse } from 'node:http'
import type { Socket } from 'node:net'

// Whose answer a connection carries, and which team's answers a full listener cuts.
// A connection with an answer under way is bounded by requestTimeout and
// connectionTimeout, not by the listener's bound: a team with a valid key that keeps the
// bound's worth of them (large answers it reads slowly or not at all, calls the platform
// holds) would hold every other team out, each new connection closed unanswered
// (docs/decisions/connection-bound.md). So each answer is marked with the team of its
// request as it is admitted, and a connection is charged to the team of the answer under
// way on it: the one Node writes (its first unfinished, as answers go in the order asked),
// whatever team's request was admitted on it last. A connection a balancer shares among
// teams carries one team's answer, then another's pipelined behind it: the answers behind
// the first wait for it, and cutting the connection for them would cut the first team's.
// An answer the entrance writes itself (http/socket-entrance.ts) has no Node answer: its
// connection is marked. And when a connection comes past a full listener with
// none idle, the team holding the most answers under way gives up its longest silent
// ones, down to no less than its part of the bound: the bound split evenly between the
// teams holding answers and one more, the newcomer's, whose team is known only once its
// request is read. A team within its part keeps every answer. Answers to no admitted
// request (callers with no key: refusals, health checks, the API's description, and every
// answer of the admin listener) count as one team of their own: answers asked with no key and never read (GET /openapi.json pipelined, a few MB on
// each connection) would otherwise hold every team out as well.

const TEAM = Symbol('the team of an answer\'s admitted request')

type Marked = { [TEAM]?: string }
/** Node's socket of a connection: the answer it is writing, if any (lib/_http_server.js). */
type HttpSocket = Socket & Marked & { _httpMessage?: (ServerResponse & Marked) | null }

/** Marks `answer` (Node's, or the connection the entrance writes one on) as `team`'s: its request was admitted. */
export function carries(answer: ServerResponse | Socket, team: string): void {
  ;(answer as Marked)[TEAM] = team
}

/** The team of the answer under way on `socket`: the one Node writes (undefined: its request admitted none), else the last the entrance wrote there; undefined before any. */
export function carrier(socket: Socket): string | undefined {
  const http = socket as HttpSocket
  return http._httpMessage ? http._httpMessage[TEAM] : http[TEAM]
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
