// A window's latency over floor, what the learned limit is judged by (limit-estimator.ts).
// Pure functions over the window's answers; the floor of each is passed in.

import { median, percentile } from './order-statistics.js'
import { FLOOR_PERCENTILE } from './latency-floors.js'

/** One answer of a window: its latency class, team, route and latency (ms). */
export interface Observation {
  klass: string
  team: string
  route: string
  latencyMs: number
}

/** The floor an answer is judged by: its class's, or its own latency while the class has none (a ratio of 1). */
export type FloorOf = (o: Observation) => number

/** A team's answers a window needs for the delay it saw to count: with two such teams, the window is judged by the delay every team saw. */
export const MIN_TEAM_SAMPLES = 3

/**
 * The window's latency over floor: the lower of its answers' and the same without the
 * slowest route's (when `minRest` of the others are there: one route's slowness is about
 * its own calls). `windowMs`: teams whose calls take longer do not speak for the platform
 * now while another team's do (ratioOf).
 */
export function windowRatio(all: readonly Observation[], floorOf: FloorOf, windowMs: number, minRest: number): number {
  let ratio = ratioOf(all, floorOf, windowMs)
  const byRoute = new Map<string, number[]>()
  for (const o of all) {
    const group = byRoute.get(o.route)
    if (group) group.push(o.latencyMs / floorOf(o))
    else byRoute.set(o.route, [o.latencyMs / floorOf(o)])
  }
  if (byRoute.size < 2) return ratio
  let worst: string | null = null
  let worstMedian = -Infinity
  for (const [name, values] of byRoute) {
    const m = median(values)
    if (m > worstMedian) [worst, worstMedian] = [name, m]
  }
  const rest = all.filter((o) => o.route !== worst)
  if (rest.length >= minRest) ratio = Math.min(ratio, ratioOf(rest, floorOf, windowMs))
  return ratio
}

/**
 * The latency over floor of `observations`. With two teams or more answering
 * (MIN_TEAM_SAMPLES each), the delay every one of them saw: the smallest of their
 * median delays past their floors, over the smallest of their median floors. A platform
 * that queues our calls delays every team's by the same wait, which the shortest calls
 * show the most; a team whose own answers are slow (its reports, or answers it made
 * slow on purpose) delays only its own, and another team's say so. With one team, the
 * FLOOR_PERCENTILE of its answers' ratios (the floor's own percentile: like with like,
 * so a platform whose answers spread widely sits at 1 when unloaded).
 */
function ratioOf(observations: readonly Observation[], floorOf: FloorOf, windowMs: number): number {
  const byTeam = new Map<string, Observation[]>()
  for (const o of observations) {
    const own = byTeam.get(o.team)
    if (own) own.push(o)
    else byTeam.set(o.team, [o])
  }
  const answering = [...byTeam.values()].filter((own) => own.length >= MIN_TEAM_SAMPLES)
  // Teams whose calls answer within a window speak for the platform now: a long call
  // that found a worker when it started says nothing of the calls queued since.
  const prompt = answering.filter((own) => median(own.map(floorOf)) <= windowMs)
  const teams = prompt.length > 0 ? prompt : answering
  if (teams.length >= 2) {
    let delay = Infinity
    let floor = Infinity
    for (const own of teams) {
      delay = Math.min(delay, median(own.map((o) => o.latencyMs - floorOf(o))))
      floor = Math.min(floor, median(own.map(floorOf)))
    }
    if (floor > 0) return Math.max(0, floor + delay) / floor
  }
  return percentile((prompt.length > 0 ? prompt.flat() : observations).map((o) => o.latencyMs / floorOf(o)), FLOOR_PERCENTILE)
}
