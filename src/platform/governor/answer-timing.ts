import { performance } from 'node:perf_hooks'

/**
 * Whether the answer being handled now is timed apart from the one handled before: the
 * event loop idled between the two. Answers that reach the gateway together are handled
 * one after another, and the gaps between their handlings are the gateway's own work, not
 * the platform's: the limit rule takes such an answer as an end, not as evidence
 * (knee-estimator.ts). A gateway that idles between answers times every one.
 */
export function answerTiming(): () => boolean {
  let idle = performance.eventLoopUtilization().idle
  return () => {
    const now = performance.eventLoopUtilization().idle
    const timed = now > idle
    idle = now
    return timed
  }
}
