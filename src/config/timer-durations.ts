import { LONGEST_TIMER_MS } from '../clock.js'
import { durationsOf } from './bare-durations.js'
import { isDuration, parseDuration } from './units.js'

// A duration the gateway waits on a timer (a poll, a lease, a drain, a timeout) is at most
// what Node's timers hold: a longer one fires after 1 ms, and an interval every millisecond
// (jobs.lease: 25d looked for jobs thousands of times a second on an idle replica). An age,
// how long something lives, is compared to the clock and may be any length: these are the
// ages, by path (* any team or list item).
const AGES = [
  'cache.ttl.recent',
  'cache.ttl.settled',
  'cache.staleWhileRevalidate',
  'cache.staleIfError',
  'cache.refreshMinAge',
  'ownership.ttl',
  'ownership.refreshMinInterval',
  'platform.refreshBefore',
  'platform.expiryWarnings.*',
  'jobs.keep',
  'limits.secretSuspension',
  'jobs.webhookRetryFor',
  'teams.*.rateLimit.window',
].map((age) => age.split('.'))

function isAge(path: string[]): boolean {
  return AGES.some((age) => age.length === path.length && age.every((part, i) => part === '*' || part === path[i]))
}

/**
 * One problem for each duration of `raw` (the merged settings) a timer waits that is longer
 * than a timer holds. A setting that is no duration is the schema's problem, not this one's:
 * so these are told beside the schema's, in the same start.
 */
export function timerDurationProblems(raw: Record<string, unknown>): string[] {
  return durationsOf(raw)
    .filter(({ path, value }) => isDuration(value) && !isAge(path) && parseDuration(value) > LONGEST_TIMER_MS)
    .map(({ path, value }) => `${path.join('.')}: must be at most 24d (a timer's longest wait, ${LONGEST_TIMER_MS} ms; got ${String(value)})`)
}
