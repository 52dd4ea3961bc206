// A team's record in the shared hash of suspensions, read as a number: a suspension's end
// (> 0), or the moment of a lift, negated (< 0). A lift ends the suspensions that began at
// or before it; a suspension began `limits.secretSuspension` before its end (a later hit
// moves both). Each replica decides what to write from the record it read, and writes it
// only if no replica wrote the record since (then it reads and decides again): so a
// write-back of a suspension never undoes a lift made after it began, nor a lift a
// suspension that began after it.

/** What keeping a suspension ending at `until` makes of the record: write it, leave a later end in place, or none (a lift made after it began ended it). */
export type SuspensionOutcome = 'write' | 'held' | 'lifted'

/** What keeping a lift made at `at` makes of the record: write it, leave a lift as late in place, or none (a suspension that began after it stands). */
export type LiftOutcome = 'write' | 'held' | 'suspended'

/** A stored record (opened), or null when there is none the gateway wrote. */
export function parseRecord(value: string | null): number | null {
  const n = value === null ? NaN : Number(value)
  return Number.isFinite(n) && n !== 0 ? n : null
}

export function keepSuspension(stored: number | null, until: number, periodMs: number): SuspensionOutcome {
  if (stored === null) return 'write'
  if (stored < 0) return until - periodMs <= -stored ? 'lifted' : 'write'
  return stored >= until ? 'held' : 'write'
}

export function keepLift(stored: number | null, at: number, periodMs: number): LiftOutcome {
  if (stored === null) return 'write'
  if (stored < 0) return -stored >= at ? 'held' : 'write'
  return stored - periodMs > at ? 'suspended' : 'write'
}

/** Whether a record has ended for good: a suspension past its end, a lift once every suspension that began before it has. */
export function recordEnded(stored: number, now: number, periodMs: number): boolean {
  return stored < 0 ? -stored + periodMs <= now : stored <= now
}
