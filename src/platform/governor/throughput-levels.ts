// The answers a second each level of calls in flight gives, for the limit rule (docs/governor.md, "Cruise", "Start"). Pure.
import { MIN_CALLS, SURE, spread2 } from './knee-verdicts.js'

// docs/governor.md, "Constants".
export const RECENT_MS = 5_000
export const FALL = 0.1
const FELL = -Math.log(1 - FALL) // FALL as a difference of logs
export const DIP = 1 - 2 * FALL
export const DIP_MS = 60_000
export const START_GAIN = 0.5

/** Per level of calls in flight at a call's start: its answers' weight over EVIDENCE_MS (whether it was measured); over RECENT_MS (what it gives now, the RECENT sums) their weight, Σ of their kinds' first and lowest latency and of their latency (ms), Σ and Σ² of their log answers a second; when the last came. */
type Level = { n: number; m: number; base: number; low: number; lat: number; sum: number; sum2: number; at: number }
const RECENT = ['m', 'base', 'low', 'lat', 'sum', 'sum2'] as const
const noLevel = (): Level => ({ n: 0, m: 0, base: 0, low: 0, lat: 0, sum: 0, sum2: 0, at: -Infinity })

export class ThroughputLevels {
  readonly #levels: Level[]
  /** A dip checked: the level it went to, the answers a second of the level left, the limit and knee before, the last serial started then, and the level's answers since. */
  #check: { index: number; mean: number; limit: number; knee: number; serial: number; fresh: Level } | null = null
  // When a dip was last put back, and the limit it put back.
  #dipBack = { at: -Infinity, limit: 0 }
  constructor(max: number) { this.#levels = Array.from({ length: max }, noLevel) }

  /** An answer to a call that took the limit's last seat (or K's beside the probe seat back by PROBE_AGAIN), at its `level`, in its kind's unit (`baseLog`: its first latency's log; `lowMs`: its lowest); a dip's level counts only calls started after the dip began (`serial`). */
  measure(level: number, weight: number, baseLog: number, latency: number, at: number, serial: number, lowMs = latency): void {
    const [index, y] = [level - 1, Math.log(level) - Math.log(latency) + baseLog]
    const add = { m: weight, base: weight * Math.exp(baseLog), low: weight * lowMs, lat: weight * latency, sum: weight * y, sum2: weight * y * y }
    for (const l of this.#check?.index === index && serial > this.#check.serial ? [this.#levels[index]!, this.#check.fresh] : [this.#levels[index]!]) {
      ;[l.n, l.at] = [l.n + weight, at]
      for (const k of RECENT) l[k] += add[k]
    }
  }

  /** Fades whether each level was measured by `evidence` (the limit rule's EVIDENCE_MS), and what it gives over RECENT_MS, `elapsedMs` on. */
  fade(evidence: number, elapsedMs: number): void {
    const g = Math.exp(-elapsedMs / RECENT_MS)
    // The RECENT sums, each by name (not a loop over their keys): a fade runs over every level.
    for (const l of this.#levels) {
      l.n *= evidence
      l.m *= g
      l.base *= g
      l.low *= g
      l.lat *= g
      l.sum *= g
      l.sum2 *= g
    }
  }

  /** Where the likelihood shows room at the limit (`room`; a queue below it explains a fall) and the limit's level fell (#fell) from the best below it, all within RECENT_MS: that level, or one below where no other below was measured (a step down). */
  peak(now: number, limit: number, min: number, room: number): number | null {
    const top = Math.min(limit, this.#levels.length) - 1
    if (!this.#recent(top, now)) return null
    let best = -1
    for (let i = 0; i < top; i++) if (this.#recent(i, now) && (best < 0 || this.#mean(i) > this.#mean(best))) best = i
    if (best < 0 || room <= top || !this.#fell(best, top)) return null
    for (let i = 0; i < best; i++) if (this.#recent(i, now)) return best + 1
    return Math.max(min, best)
  }

  /** Across replicas, the limit's level measured within RECENT_MS and none from DIP of it up to below it (`twoFalls`: none at DIP of it or below, two FALLs below: a level within them may give less than FALL more), no dip put back within DIP_MS at this limit or above: DIP of it, for the limit to go to (wentDown); else null. */
  dip(now: number, limit: number, min: number, twoFalls = false): number | null {
    const top = Math.min(limit, this.#levels.length) - 1
    const low = Math.max(min, Math.floor((top + 1) * DIP))
    if (low > top || !this.#recent(top, now) || (now - this.#dipBack.at < DIP_MS && limit <= this.#dipBack.limit)) return null
    for (let i = twoFalls ? 0 : low - 1; i < (twoFalls ? low : top); i++) if (this.#recent(i, now)) return null
    return low
  }

  /** The limit goes down to `to` from `limit` and `knee`: after a dip (`dip`) the calls started after `serial` measure its level against the level it left; a fall ends a dip's check. */
  wentDown(to: number, dip: boolean, limit: number, knee: number, serial: number): void {
    this.#check = dip ? { index: to - 1, mean: this.#mean(Math.min(limit, this.#levels.length) - 1), limit, knee, serial, fresh: noLevel() } : null
  }

  /** A dip's level, measured: the limit and knee to put back where it gives not FALL more than the level it left (fewer give no more); else, or not measured yet, null. */
  recheck(): { limit: number; knee: number } | null {
    const c = this.#check
    if (c === null || c.fresh.n < MIN_CALLS) return null
    this.#check = null
    if (this.#mean(c.index, c.fresh) - c.mean > FELL) return null
    this.#dipBack = { at: c.fresh.at, limit: c.limit }
    return { limit: c.limit, knee: c.knee }
  }

  /** Whether `level` and the one below it were measured within RECENT_MS and `level` gives no less than FALL/2 under it: a seat past a pool that grew gives a worker's worth more, one past a knee whose calls slow past it less. */
  kept(now: number, level: number): boolean { return level >= 2 && this.#recent(level - 1, now) && this.#recent(level - 2, now) && this.#mean(level - 1) - this.#mean(level - 2) > -FELL / 2 }

  /** Of `past` seats beyond `knee`, those short of the first level above it measured giving FALL less than `knee`. */
  belowFall(knee: number, past: number): number {
    if (this.#levels[knee - 1]!.n < MIN_CALLS) return past
    for (let i = knee; i < Math.min(knee + past, this.#levels.length); i++) if (this.#levels[i]!.n >= MIN_CALLS && this.#fell(knee - 1, i)) return i - knee
    return past
  }

  /** The most workers' worth of answers a second a level gave within RECENT_MS: the level times its kinds' Σ lowest latency over Σ latency, whole (a queue's verdict puts the knee no lower: docs/governor.md, "Cruise"); 0: none measured. */
  served(now: number): number {
    let most = 0
    for (let i = 0; i < this.#levels.length; i++) if (this.#recent(i, now)) most = Math.max(most, Math.floor(((i + 1) * this.#levels[i]!.low) / this.#levels[i]!.lat))
    return most
  }

  /** Whether level index `i` was measured (MIN_CALLS answers) within RECENT_MS of `now`. */
  #recent(i: number, now: number): boolean { return this.#levels[i]!.n >= MIN_CALLS && now - this.#levels[i]!.at <= RECENT_MS }
  /** The answers a second of level index `i` (log, against its kinds' first latency), over `l` (its RECENT sums, or a dip's since it began): the level times the ratio of their Σs (Little's law over its answers, whatever their mix of kinds). */
  #mean(i: number, l = this.#levels[i]!): number { return Math.log(i + 1) + Math.log(l.base / l.lat) }

  /** Whether level index `hi` gives FALL less answers a second than level index `lo`, by √(2·SURE) standard errors of the difference of their means at least (the spread of each level's answers, PRIOR_SPREAD worth PRIOR_DOF answers before them). */
  #fell(lo: number, hi: number): boolean {
    const error2 = (l: Level) => spread2(Math.max(0, l.sum2 - (l.sum * l.sum) / l.m), l.m) / l.m
    return this.#mean(lo) - this.#mean(hi) > FELL + Math.sqrt(2 * SURE * (error2(this.#levels[lo]!) + error2(this.#levels[hi]!)))
  }
}

/** Per kind, at a level the start held: the ends counted, Σ and Σ² of their log latency. */
type KindEnds = { n: number; sum: number; sum2: number }

/** The answers a second of each level the start held (the limit at a call's start), from its calls' ends, timed or not, read by Little's law kind against kind (docs/governor.md, "Start"). */
export class StartLevels {
  // Per level, per kind its ends and those of its calls that took its last seat (the level held whole, as cruise's levels are read); its timed ends: the answers the likelihood weighed.
  readonly #levels = new Map<number, { all: Map<string, KindEnds>; full: Map<string, KindEnds>; timed: number }>()

  /** An end of a call of `kind` started while the start's limit was `level`, `latencyMs` after it started; `timed`, evidence the likelihood weighs (answer-timing.ts); `full`, the call took the level's last seat. */
  ended(level: number, kind: string, latencyMs: number, timed = true, full = false): void {
    const y = Math.log(Math.max(1, latencyMs))
    const l = this.#levels.get(level) ?? { all: new Map(), full: new Map(), timed: 0 }
    this.#levels.set(level, l)
    for (const kinds of full ? [l.all, l.full] : [l.all]) {
      const k = kinds.get(kind) ?? { n: 0, sum: 0, sum2: 0 }
      kinds.set(kind, { n: k.n + 1, sum: k.sum + y, sum2: k.sum2 + y * y })
    }
    if (timed) l.timed++
  }

  measured(level: number): boolean { return ends(this.#levels.get(level)?.all) >= MIN_CALLS }
  /** Whether the likelihood weighed MIN_CALLS of `level`'s answers. */
  timed(level: number): boolean { return (this.#levels.get(level)?.timed ?? 0) >= MIN_CALLS }

  /** The knee the start ends at, where `limit` and the level before have MIN_CALLS ends and `limit`'s fall surely short of START_GAIN's growth (√(2·SURE) standard errors), of the whole growth L/L′ where the likelihood weighed fewer than MIN_CALLS of `limit`'s answers: the most workers' worth a level up to it gave (#worth); else 'double'. */
  verdict(limit: number): 'double' | number {
    const measured = [...this.#levels.keys()].filter((l) => l <= limit && this.measured(l)).sort((a, b) => a - b)
    const below = measured.filter((l) => l < limit).at(-1)
    if (below === undefined || measured.at(-1) !== limit) return 'double'
    const grew = this.#gain(limit, below)
    // Untimed, a level's answers reach no queue verdict: its answers a second alone stand between the doubling and the platform's refusal, and they must show the growth of a platform that scales.
    const gain = this.timed(limit) ? START_GAIN : 1
    if (grew === null || grew.gain + Math.sqrt(2 * SURE * grew.variance) >= Math.log(1 + gain * (limit / below - 1))) return 'double'
    return Math.max(...measured.map((l) => this.#worth(l, measured[0]!)))
  }

  /** The workers' worth of answers a second `level` gave, counted in the start's first level measured (`unit`: each of its calls had a worker), whole, no more than the level; 0 where no kind was answered at both. */
  #worth(level: number, unit: number): number {
    const g = this.#gain(level, unit)
    return g === null ? 0 : Math.min(level, Math.round(unit * Math.exp(g.gain)))
  }

  /** The log of `level`'s answers a second over `before`'s, kind against kind (each kind's mean log latency, weighed by the inverse of its difference's variance), and its variance (one spread for all, PRIOR_SPREAD worth PRIOR_DOF ends before them); null where no kind was answered at both. */
  #gain(level: number, before: number): { gain: number; variance: number } | null {
    const at = this.#read(level)
    let [weight, diff, ss, n] = [0, 0, 0, 0]
    for (const [kind, b] of this.#read(before)) {
      const a = at.get(kind)
      if (a === undefined) continue
      const w = (a.n * b.n) / (a.n + b.n)
      ;[weight, diff] = [weight + w, diff + w * (b.sum / b.n - a.sum / a.n)]
      for (const k of [a, b]) [ss, n] = [ss + k.sum2 - (k.sum * k.sum) / k.n, n + k.n - 1]
    }
    return weight === 0 ? null : { gain: Math.log(level / before) + diff / weight, variance: spread2(ss, n) / weight }
  }

  /** A level's ends as its answers a second are read: those of calls that took its last seat where MIN_CALLS did (the level held whole: a call started as its seats filled found fewer in flight, and ended sooner, than the level gives), else all of them. */
  #read(level: number): Map<string, KindEnds> {
    const { all, full } = this.#levels.get(level)!
    return ends(full) >= MIN_CALLS ? full : all
  }
}

const ends = (kinds: Map<string, KindEnds> | undefined): number => [...(kinds?.values() ?? [])].reduce((n, k) => n + k.n, 0)
