// The limit rule's faults, their cuts and the spans they cover (docs/governor.md, "Faults"). Pure: time is passed in.
import type { Answer } from './answer-timeline.js'

// docs/governor.md, "Constants".
export const OVERLOAD_SHARE = 0.05
export const SILENCE_GAPS = 10
const GAP_GAIN = 0.1
export const FAULT_MS = 1000

/** The gaps between answers, faded by GAP_GAIN: their mean and the mean of their squares; a gap is a silence past the gap a moment usually falls in (Σ gap² / Σ gap: answers cluster behind long calls) times SILENCE_GAPS, a FAULT_MS at least. `last`: the latest answer (ms). */
export class UsualGaps {
  #gapMs = FAULT_MS
  #gap2 = FAULT_MS * FAULT_MS
  last = -Infinity
  /** Takes in an answer at `at`; whether its gap since the latest was a silence. */
  add(at: number): boolean {
    const g = at - this.last
    const silent = Number.isFinite(g) && this.silence(g)
    if (Number.isFinite(g) && g > 0) [this.#gapMs, this.#gap2] = [this.#gapMs + GAP_GAIN * (g - this.#gapMs), this.#gap2 + GAP_GAIN * (g * g - this.#gap2)]
    this.last = Math.max(this.last, at)
    return silent
  }
  silence(g: number): boolean { return g > Math.max(FAULT_MS, SILENCE_GAPS * (this.#gap2 / this.#gapMs)) }
}

export class FaultWatch {
  #lastCut = -Infinity
  // The last evidence of the fault that cut (its last overload answer, or the moment of a silence or a pause), the last
  // overload answer counted, and the last answer that was not an error (any replica's, as the learner weighs them).
  #faultAt = -Infinity
  #overloadAt = -Infinity
  #okAt = -Infinity
  readonly #gaps = new UsualGaps()
  #second: { start: number; teams: Map<string, { answers: number; overloads: number }> } = { start: -Infinity, teams: new Map() }
  #spans: { from: number; to: number }[] = []
  /** An answer: counted in the second under way (an overload answer to a call sent before the last cut is the old limit's, already halved for), and in the gaps. */
  answered(a: Answer): void {
    const t = this.#second.teams.get(a.team) ?? { answers: 0, overloads: 0 }
    const counted = a.outcome === 'overload' && a.startedAt >= this.#lastCut
    this.#second.teams.set(a.team, { answers: t.answers + 1, overloads: t.overloads + (counted ? 1 : 0) })
    if (counted) this.#overloadAt = Math.max(this.#overloadAt, a.at)
    if (a.outcome !== 'overload') this.#gaps.add(a.at)
    this.heard(a.at, a.outcome === 'ok')
  }
  /** An answer of any replica's (across replicas, as the learner weighs them in time order): one that is not an error says the platform answers. */
  heard(at: number, ok: boolean): void { if (ok) this.#okAt = Math.max(this.#okAt, at) }
  /** A fault at a tick, as the moment of its last evidence (null: none): overload in the second just ended (its last overload answer), or a call overdue and no answer for a silence (now, UsualGaps). */
  shows(now: number, overdueSince: number | null): number | null {
    if (now - this.#second.start >= FAULT_MS) {
      // Overload in the second just ended from every answering team, or from two teams or more.
      let drawing = 0
      for (const t of this.#second.teams.values()) if (t.overloads >= Math.max(1, OVERLOAD_SHARE * t.answers)) drawing++
      const overloaded = drawing >= 2 || (drawing >= 1 && drawing === this.#second.teams.size)
      this.#second = { start: now, teams: new Map() }
      if (overloaded) return this.#overloadAt
    }
    return overdueSince !== null && this.#gaps.silence(now - Math.max(this.#gaps.last, this.#lastCut)) ? now : null
  }
  /** The second under way ends unjudged (a replica that follows another's limit): its first second as the learner is one it watched, not every answer since it last learned. */
  skip(now: number): void { if (now - this.#second.start >= FAULT_MS) this.#second = { start: now, teams: new Map() } }
  /** A cut at `now` for a fault last seen at `at`, unless one came within FAULT_MS. */
  cut(now: number, at = now): boolean {
    if (now - this.#lastCut < FAULT_MS) return false
    ;[this.#lastCut, this.#faultAt] = [now, at]
    return true
  }
  /** A cut is over once a FAULT_MS passed and an answer came after the fault's last evidence. */
  over(now: number): boolean { return now - this.#lastCut >= FAULT_MS && this.#okAt > this.#faultAt }
  /** A fault's span begins (from the FAULT_MS it was judged over) unless one is under way, or ends. */
  begin(now: number): void { if (this.#spans.at(-1)?.to !== Infinity) this.#spans.push({ from: now - FAULT_MS, to: Infinity }) }
  end(now: number): void { if (this.#spans.at(-1)?.to === Infinity) (this.#spans.at(-1) as { to: number }).to = now }
  forget(before: number): void { this.#spans = this.#spans.filter((f) => f.to > before) }
  met(startedAt: number, at: number): boolean { return this.#spans.some((f) => startedAt < f.to && at > f.from) }
}
