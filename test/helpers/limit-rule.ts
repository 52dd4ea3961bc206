import type { KneeEstimator, Step } from '../../src/platform/governor/knee-estimator.js'

/**
 * The limit rule as LearnedLimit drives it (knee-estimator.ts, stood in for): its limit and
 * knee, what it was told, and the step its next tick takes. Tests of what is built on the
 * rule use it, so that they do not depend on how the rule learns.
 */
export class LimitRuleStandIn {
  limit: number
  knee: number
  /** The step the next tick takes (then null). */
  next: Step | null = null
  ticks = 0
  /** Ticks taken as a replica that follows another's limit. */
  followTicks = 0
  waits = 0
  pauses = 0
  /** How often it was told that this replica starts learning. */
  learningStarts = 0

  constructor(limit = 8, knee = limit) {
    this.limit = limit
    this.knee = knee
  }

  /** As KneeEstimator: what LearnedLimit takes it for. */
  get estimator(): KneeEstimator {
    return this as unknown as KneeEstimator
  }

  /** The phase it says it is in (the shared record says whether the start goes on). */
  phase: 'start' | 'cruise' | 'fault' = 'cruise'

  adopt(limit: number, knee: number): Step | null {
    if (limit === this.limit && knee === this.knee) return null
    Object.assign(this, { limit, knee })
    return { limit, knee, move: 'adopted' }
  }

  tick(): Step | null {
    this.ticks += 1
    const step = this.next
    this.next = null
    if (step) Object.assign(this, { limit: step.limit, knee: step.knee })
    return step
  }

  follows(): void {
    this.followTicks += 1
  }

  evidence(): string | null {
    return null
  }

  startLearning(_now = 0, _evidence: string | null = null): void {
    this.learningStarts += 1
  }

  waited(): void {
    this.waits += 1
  }

  pause(): Step | null {
    this.pauses += 1
    return null
  }

  /** The other replicas' records it was given at each renewal (none: this replica does not learn). */
  heardOf: (string[] | null)[] = []
  shareAnswers(): void {}
  heard(records: readonly { run: string }[] | null): void {
    this.heardOf.push(records === null ? null : records.map((r) => r.run))
  }
  calls(): string | null {
    return null
  }
}
