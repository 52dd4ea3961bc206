import type { TeamConfig } from '../config.js'
import type { RateDecision } from './rate-limit.js'

// The rate-limit fields of the IETF draft (draft-ietf-httpapi-ratelimit-headers, the
// structured-field form): `RateLimit-Policy: "default";q=600;w=60` says the quota and
// window, `RateLimit: "default";r=599;t=42` what is left and when the window ends.
// The policy string is made once per team limit, so a hit pays for one concatenation.

export const POLICY_HEADER = 'ratelimit-policy'
export const STATE_HEADER = 'ratelimit'

const policies = new WeakMap<object, string>()
// The last limit's policy, before the map: a replica's hits are mostly one team's in a row.
let lastLimit: object | undefined
let lastPolicy = ''

/** The two header values for a limited team's answer; null for a team without a limit. */
export function rateLimitHeaders(team: TeamConfig, decision: RateDecision): [policy: string, state: string] | null {
  const limit = team.rateLimit
  if (!limit) return null
  let policy = limit === lastLimit ? lastPolicy : policies.get(limit)
  if (policy === undefined) {
    policy = `"default";q=${limit.max};w=${Math.ceil(limit.windowMs / 1000)}`
    policies.set(limit, policy)
  }
  lastLimit = limit
  lastPolicy = policy
  // toFixed, not String(): V8 keeps each String(number) in its number-string cache, so a
  // count that changes on every answer would leave one string per answer alive long
  // enough to be promoted to the old generation (95 KB per young collection at 25k
  // hits/s). toFixed(0) writes the same digits for these whole numbers, uncached.
  return [policy, `"default";r=${decision.remaining.toFixed(0)};t=${decision.resetSec}`]
}
