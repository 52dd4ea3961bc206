// The answers a second each level of calls in flight gives (docs/governor.md, "Cruise"):
// Little's law read across the limit's own moves, which tells a platform whose calls slow
// past its knee (no queue: the own times fit every guess of W alike) from one with room;
// across replicas, on every replica's calls, the limit dips to a level to read it against.
// Used by the limit rule (knee-estimator.ts). Pure: time is passed in.

import { MIN_CALLS, PRIOR_DOF, PRIOR_SPREAD, SURE } from './knee-verdicts.js'

/**
 * A level's answers a second are weighed against those of the levels below it measured
 * within RECENT_MS: FALL less, by √(2·SURE) standard errors of the two means at least, puts
 * the knee at the best of them. FALL: a platform whose calls slow past its knee gives 23 %
 * less one call past it (the capacity bench's), a few calls past it 10 % at least;
 * RECENT_MS: the limit moves at most once a DECIDE_MS, so the level it left was held a
 * moment before, and a platform that slows 3× over a minute moves a level 9 % in 5 s.
 */
export const RECENT_MS = 5_000
export const FALL = 0.1
/** Across replicas the limit dips to DIP of itself (two FALLs below) to measure a level below it: the likelihood there shows no room, calls ending apart and in order (docs/governor.md, "Cruise"). */
export const DIP = 1 - 2 * FALL
/** A dip put back is not tried again for DIP_MS: it costs a second or two of DIP of the seats, once a minute at most. */
export const DIP_MS = 60_000

/**
 * Per level of calls in flight at a call's start: the weight of its answers fading over
 * EVIDENCE_MS (whether it was measured); over RECENT_MS (what it gives now) their weight,
 * Σ of their kinds' first latency and of their latency (ms), Σ and Σ² of their log answers
 * a second (the level over the latency, against its kind's first); when the last came.
 */
type Level = { n: number; m: number; base: number; low: number; lat: number; sum: number; sum2: number; at: number }
/** A knee set where answers a second fell, or a dip, checked: the level it went to, its answers a second then (a dip's: the level left's), the limit and knee before, the last serial started then, that level's answers since, and whether it is a dip. */
type Check = { index: number; mean: number; limit: number; knee: number; serial: number; fresh: Level; dip: boolean }
const noLevel = (): Level => ({ n: 0, m: 0, base: 0, low: 0, lat: 0, sum: 0, sum2: 0, at: -Infinity })

export class ThroughputLevels {
  readonly #max: number
  #levels: Level[]
  #check: Check | null = null
  // When a dip was last put back.
  #dipBack = -Infinity

  constructor(max: number) {
    this.#max = max
    this.#levels = Array.from({ length: max }, noLevel)
  }

  /**
   * An answer to a call that took the limit's last seat (the calls in flight the limit's,
   * not their callers' demand) counts at its `level`, in its kind's unit (`baseLog`: the
   * log of its kind's first latency); `serial` is the call's, so that a level watched
   * counts only calls started after the watch began; `lowMs` its kind's lowest latency (served).
   */
  measure(level: number, weight: number, baseLog: number, latency: number, at: number, serial: number, lowMs = latency): void {
    const index = level - 1
    const y = Math.log(level) - Math.log(latency) + baseLog
    const add = (l: Level) => Object.assign(l, { n: l.n + weight, m: l.m + weight, base: l.base + weight * Math.exp(baseLog), low: l.low + weight * lowMs, lat: l.lat + weight * latency, sum: l.sum + weight * y, sum2: l.sum2 + weight * y * y, at })
    add(this.#levels[index]!)
    if (this.#check?.index === index && serial > this.#check.serial) add(this.#check.fresh)
  }

  /** Fades whether each level was measured by `evidence` (the limit rule's EVIDENCE_MS), and what it gives over RECENT_MS, `elapsedMs` on. */
  fade(evidence: number, elapsedMs: number): void {
    const g = Math.exp(-elapsedMs / RECENT_MS)
    for (const l of this.#levels) [l.n, l.m, l.base, l.low, l.lat, l.sum, l.sum2] = [l.n * evidence, l.m * g, l.base * g, l.low * g, l.lat * g, l.sum * g, l.sum2 * g]
  }

  /**
   * Where answers a second fell as the limit rose, and the likelihood shows room there
   * (`room`: the highest w it does; a queue below it explains a fall): the limit's level,
   * measured within RECENT_MS, gives FALL less (#fell) than the best of the levels below it
   * measured then: the knee is that level, or one below it where none below was measured
   * then; the limit at the knee, where the level above gave FALL less and the one below was
   * not measured within EVIDENCE_MS, one below. The steps down see whether fewer give more.
   */
  peak(now: number, limit: number, knee: number, min: number, room: () => number): number | null {
    const recent = (i: number) => this.#recent(i, now)
    const top = Math.min(limit, this.#max) - 1
    if (!recent(top)) return null
    let best = -1
    for (let i = 0; i < top; i++) if (recent(i) && (best < 0 || this.#mean(i) > this.#mean(best))) best = i
    const shown = room()
    if (best >= 0 && shown > top && this.#fell(best, top)) {
      for (let i = 0; i < best; i++) if (recent(i)) return best + 1
      return Math.max(min, best)
    }
    return limit === knee && knee > min && shown > knee && this.#levels[knee - 2]!.n < MIN_CALLS && this.fellAbove(knee) ? knee - 1 : null
  }

  /** The knee goes to `peak` from `limit` and `knee`: that level, if measured, is measured again on the calls started after `serial` (recheck). */
  watch(peak: number, limit: number, knee: number, serial: number): void {
    const level = this.#levels[peak - 1]!
    this.#check = level.n >= MIN_CALLS ? { index: peak - 1, mean: this.#mean(peak - 1), limit, knee, serial, fresh: noLevel(), dip: false } : null
  }

  /**
   * Across replicas, where the limit's level is measured within RECENT_MS and no level
   * from DIP of it up to below it is, and no dip was put back within DIP_MS: that level,
   * for the limit to go to and measure (dipFrom); else null.
   */
  dip(now: number, limit: number, min: number): number | null {
    const recent = (i: number) => this.#recent(i, now)
    const top = Math.min(limit, this.#max) - 1
    const low = Math.max(min, Math.floor((top + 1) * DIP))
    if (low > top || !recent(top) || now - this.#dipBack < DIP_MS) return null
    for (let i = low - 1; i < top; i++) if (recent(i)) return null
    return low
  }

  /** The limit goes down to `low` from `limit` and `knee` (dip): the calls started after `serial` measure it against the level it left. */
  dipFrom(low: number, limit: number, knee: number, serial: number): void {
    this.#check = { index: low - 1, mean: this.#mean(Math.min(limit, this.#max) - 1), limit, knee, serial, fresh: noLevel(), dip: true }
  }

  /**
   * The level a fall of answers a second put the knee at, measured again: FALL less than
   * before, the platform changed between the two measures (a step slowdown, a drift), not
   * with the calls in flight: the limit and knee to put back, every level measured
   * forgotten; a dip's level, not FALL more than the level it left: the limit and knee to
   * put back (fewer give no more); else (or not measured yet) null, the knee standing.
   */
  recheck(): { limit: number; knee: number } | null {
    const c = this.#check
    if (c === null || c.fresh.n < MIN_CALLS) return null
    this.#check = null
    const fresh = Math.log(c.index + 1) + Math.log(c.fresh.base / c.fresh.lat)
    if (c.dip && fresh - c.mean > -Math.log(1 - FALL)) return null
    if (c.dip) this.#dipBack = c.fresh.at
    if (c.dip) return { limit: c.limit, knee: c.knee }
    if (c.mean - fresh <= -Math.log(1 - FALL)) return null
    this.#levels = Array.from({ length: this.#max }, noLevel)
    return { limit: c.limit, knee: c.knee }
  }

  /** Whether the level above `knee` was measured giving FALL less than `knee` (the probe seat is not put back while that evidence holds). */
  fellAbove(knee: number): boolean {
    const [at, above] = [this.#levels[knee - 1]!, this.#levels[knee]]
    return above !== undefined && at.n >= MIN_CALLS && above.n >= MIN_CALLS && this.#fell(knee - 1, knee)
  }

  /** Of `past` seats beyond `knee`, those short of the first level above it measured giving FALL less than `knee`. */
  belowFall(knee: number, past: number): number {
    if (this.#levels[knee - 1]!.n < MIN_CALLS) return past
    for (let i = knee; i < Math.min(knee + past, this.#max); i++) if (this.#levels[i]!.n >= MIN_CALLS && this.#fell(knee - 1, i)) return i - knee
    return past
  }

  /**
   * The most workers' worth of answers a second a level gave within RECENT_MS of `now`: its
   * answers a second times its kinds' lowest latency (the level times the ratio of their Σs),
   * whole. Under the model W workers of own times no shorter than that give no more, so a
   * queue's verdict puts the knee no lower (docs/governor.md, "Cruise"); 0: none measured.
   */
  served(now: number): number {
    let most = 0
    for (let i = 0; i < this.#max; i++) if (this.#recent(i, now)) most = Math.max(most, Math.floor(((i + 1) * this.#levels[i]!.low) / this.#levels[i]!.lat))
    return most
  }

  /** Whether level index `i` was measured (MIN_CALLS answers) within RECENT_MS of `now`. */
  #recent(i: number, now: number): boolean {
    return this.#levels[i]!.n >= MIN_CALLS && now - this.#levels[i]!.at <= RECENT_MS
  }

  /** A level's answers a second (log, against its kinds' first latency): the level times the ratio of their Σs (Little's law over its answers, whatever their mix of kinds). */
  #mean(i: number): number {
    const l = this.#levels[i]!
    return Math.log(i + 1) + Math.log(l.base / l.lat)
  }

  /** Whether level index `hi` gives FALL less answers a second than level index `lo`, by √(2·SURE) standard errors of the difference of their means at least (the spread of each level's answers, PRIOR_SPREAD worth PRIOR_DOF answers before them). */
  #fell(lo: number, hi: number): boolean {
    const spread2 = (l: Level) => (Math.max(0, l.sum2 - (l.sum * l.sum) / l.m) + PRIOR_DOF * PRIOR_SPREAD ** 2) / (l.m + PRIOR_DOF) / l.m
    const [a, b] = [this.#levels[lo]!, this.#levels[hi]!]
    return this.#mean(lo) - this.#mean(hi) > -Math.log(1 - FALL) + Math.sqrt(2 * SURE * (spread2(a) + spread2(b)))
  }
}
