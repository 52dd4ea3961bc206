import { systemClock, type Clock } from '../clock.js'
import { describeTally, emptyTally } from './warm-plan.js'
import type { WarmProgress } from './warm-run.js'

/** How often a run whose output is no terminal (a job's log) writes where it stands. */
export const PLAIN_PROGRESS_MS = 5000

/**
 * The progress of a run, written as a plain line every `PLAIN_PROGRESS_MS` from the last
 * update it was given, until `stop`.
 */
export function plainProgress(total: number, write: (line: string) => void, clock: Pick<Clock, 'setInterval' | 'clearInterval'> = systemClock): { update: (p: WarmProgress) => void; stop: () => void } {
  let last: WarmProgress = { done: 0, total, tally: emptyTally() }
  const timer = clock.setInterval(() => write(`warm: ${last.done}/${last.total}: ${describeTally(last.tally)}${openJobs(last)}\n`), PLAIN_PROGRESS_MS)
  return {
    update: (p) => {
      last = p
    },
    stop: () => clock.clearInterval(timer),
  }
}

/** `--jobs`: how many of the reports asked as jobs are still queued or running. */
export function openJobs(p: WarmProgress): string {
  return p.open === undefined ? '' : `; ${p.open} jobs queued or running`
}
