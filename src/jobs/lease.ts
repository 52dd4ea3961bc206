/**
 * A claim on a shared record that one runner at a time works on: a report job while it
 * runs, a webhook delivery while it is attempted. A runner claims a record by a
 * compare-and-swap in its store (two runners racing, one wins), holds it until
 * `leaseUntil`, and once that has passed (its replica stopped or crashed) any runner may
 * claim it again: `runs` counts the claims, and only the run of the last claim may change
 * the record. Pure: each function returns the next record, the stores swap it in.
 */
export interface Leased {
  /** The runner of the last claim; null while nobody holds it. */
  runner: string | null
  /** Until when the last claim holds (epoch ms). */
  leaseUntil: number
  /** How many times it was claimed. */
  runs: number
}

/** A claim: the runner that made it and the claim's count. */
export interface Run {
  runner: string
  runs: number
}

/** `record` claimed by `runner` at `now`, held for `leaseMs`. */
export function claim<T extends Leased>(record: T, runner: string, now: number, leaseMs: number): T {
  return { ...record, runner, leaseUntil: now + leaseMs, runs: record.runs + 1 }
}

/** Whether `run` is the record's last claim (whether it is still held is the record's state to say). */
export function holds(record: Leased, run: Run): boolean {
  return record.runner === run.runner && record.runs === run.runs
}

/** `record` with its claim held `leaseMs` more from `now`. */
export function extended<T extends Leased>(record: T, now: number, leaseMs: number): T {
  return { ...record, leaseUntil: now + leaseMs }
}

/** `record` held by nobody. */
export function released<T extends Leased>(record: T): T {
  return { ...record, runner: null, leaseUntil: 0 }
}

