/**
 * The calls in flight a long call may start at: one whose team's calls hold a seat longer
 * than a window of the learned limit, so that its answer comes too late to say it queued.
 * A platform that takes calls in order gives a worker freed by a short call to a long one
 * queued before it, and holds it for the long call's whole length: a long call started past
 * the platform's workers costs the short calls behind it a worker for seconds, where a
 * short call started there costs a fraction of a second and says so in its answer. So the
 * limit probes with short calls (it doubles while no knee is known), and long calls follow
 * only to the level the platform carried at its floor: one call past it while short calls
 * hold or wait for seats (a call queued at the platform keeps every worker busy while a
 * short one is on its way back), its headroom √level past it while long calls are alone
 * (they probe for themselves as fast as the limit grew before it doubled).
 * A latency buffer cannot hold long calls to the platform's workers: two calls queued
 * behind six workers of short answers delay each by a fifth, inside it. The short
 * answers say more by Little's law: the delay past their floors, over their calls in
 * flight, is the calls queued at the platform; the calls in flight less those, the calls
 * it serves. While a call or more queues on average, the platform serves all it has
 * workers for, and the level goes no higher than that (`served`).
 * Pure logic: the estimator feeds it each judged window (limit-estimator.ts).
 * Decision record: docs/decisions/long-calls.md.
 */

import { MIN_TEAM_SAMPLES } from './window-ratio.js'

/** The platform serves all it has workers for while at least this many calls queue there on average. */
export const QUEUED_CALLS = 1

/** A short answer of a window: its latency and its class's floor (ms), and the calls in flight when it started, on the credential and of its team. */
export interface ShortAnswer {
  team: string
  latencyMs: number
  floorMs: number
  inFlight: number
  teamInFlight: number
}

/** What the platform did with a window's calls, on average: how many queued, how many it served. */
export interface PlatformLoad {
  queued: number
  served: number
}

/**
 * The calls queued at the platform and those it served over a window, from its short
 * answers (those of classes whose floor is shorter than a window; `min` at least): the
 * short calls in flight wait the share of their latency past their floors that every
 * team saw (the smallest over teams of MIN_TEAM_SAMPLES answers: a queue delays every
 * team's calls, a team's own slow reports only its own), and the credential's calls in
 * flight less the queued are served. Null with fewer answers.
 */
export function platformLoad(answers: readonly ShortAnswer[], min: number): PlatformLoad | null {
  if (answers.length < Math.max(1, min)) return null
  const byTeam = new Map<string, { n: number; inFlight: number; latency: number; floor: number }>()
  let inFlight = 0
  for (const a of answers) {
    inFlight += a.inFlight
    const t = byTeam.get(a.team) ?? { n: 0, inFlight: 0, latency: 0, floor: 0 }
    t.n += 1
    t.inFlight += a.teamInFlight
    t.latency += a.latencyMs
    t.floor += a.floorMs
    byTeam.set(a.team, t)
  }
  const teams = [...byTeam.values()]
  const voting = teams.filter((t) => t.n >= MIN_TEAM_SAMPLES && t.latency > 0)
  const waited = Math.min(...(voting.length > 0 ? voting : teams).map((t) => (t.latency > 0 ? Math.max(0, 1 - t.floor / t.latency) : 0)))
  const queued = teams.reduce((sum, t) => sum + t.inFlight / t.n, 0) * waited
  return { queued, served: inFlight / answers.length - queued }
}

/** The calls in flight a long call may start at: beside short calls, and alone. */
export interface LongCallLimits {
  beside: number
  alone: number
}

export class ProvenLevel {
  /** The most calls in flight at once in a window judged at the floor, since the knee was last found. */
  #level: number
  /** The peak of the last window judged at the floor: a window past the buffer at a higher one found the knee. */
  #lastGoodPeak = Infinity

  constructor(initial: number) {
    this.#level = initial
  }

  get level(): number {
    return this.#level
  }

  /** The calls in flight of the last window judged at the floor (at most the level); 0 before one. */
  get carried(): number {
    return Number.isFinite(this.#lastGoodPeak) ? Math.min(this.#level, this.#lastGoodPeak) : 0
  }

  /** A window at the floor with at most `peak` calls in flight: the platform carried them (not counted while a knee's hold runs). */
  atFloor(peak: number, held: boolean): void {
    this.#lastGoodPeak = peak
    if (!held && peak > this.#level) this.#level = peak
  }

  /**
   * A window past the buffer with at most `peak` calls in flight. Past the last window at
   * the floor, the probe found the knee: it lies at `peak` or one below, so the level goes
   * two below (the long calls' probe of one then stays at or before the knee). Returns
   * whether it was the knee; at or below the peak the platform carried, it is a fault,
   * which the limit answers.
   */
  pastBuffer(peak: number, min: number): boolean {
    if (peak <= this.#lastGoodPeak) return false
    this.#level = Math.max(min, Math.min(this.#level, peak - 2))
    return true
  }

  /**
   * The platform queued QUEUED_CALLS or more on average while serving `load.served`: it
   * has no more workers than that, and the level goes no higher. Returns whether it fell.
   */
  served(load: PlatformLoad, min: number): boolean {
    if (load.queued < QUEUED_CALLS) return false
    const most = Math.max(min, Math.round(load.served))
    if (most >= this.#level) return false
    this.#level = most
    return true
  }

  /** The calls in flight a long call may start at, under the limit in force. */
  limits(limit: number): LongCallLimits {
    return {
      beside: Math.min(limit, this.#level + 1),
      alone: Math.min(limit, Math.max(this.#level + 1, Math.floor(this.#level + Math.sqrt(this.#level)))),
    }
  }
}
