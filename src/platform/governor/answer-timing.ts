import { performance } from 'node:perf_hooks'

/**
 * At most this share of an answer's latency may be the gateway's own work since the answer
 * handled before it, for the answer to be timed: its time is then the platform's within a
 * tenth, as close as the spread of own times the limit rule weighs.
 */
export const OWN_WORK_SHARE = 0.1

/** The event loop's idle and active milliseconds since the process began (`performance.eventLoopUtilization()`). */
export interface LoopTime {
  idle: number
  active: number
}

/**
 * Whether the answer being handled now, `latencyMs` after its call started, is timed apart
 * from the one handled before: the event loop idled between the two, and worked no more
 * than OWN_WORK_SHARE of its latency since. Answers that reach the gateway together are
 * handled one after another, and the gaps between their handlings are the gateway's own
 * work, not the platform's; an answer that came while the loop was busy (a start's first
 * requests compiled, a collection, a flood of callers handled) waited for the gateway as
 * long as that work took. The limit rule takes such an answer as an end, not as evidence
 * (knee-estimator.ts). A gateway that idles between answers times every one.
 */
export function answerTiming(loop: () => LoopTime = () => performance.eventLoopUtilization()): (latencyMs: number) => boolean {
  let last = loop()
  return (latencyMs) => {
    const now = loop()
    const timed = now.idle > last.idle && now.active - last.active <= OWN_WORK_SHARE * latencyMs
    last = now
    return timed
  }
}
