import { describe, expect, it } from 'vitest'
import { configProblems as problems, loadConfigYaml } from '../helpers/load-config.js'

// Contract, "Calling the proxy listener": every answer to a team with a rate limit carries
// `RateLimit: "default";r=<remaining>;t=<seconds to reset>`, and a 429 says in
// `retry-after` when to come back. A window under a second (`window: 0s`) was taken at
// start, and every answer of the team said `t=NaN`, its 429s `retry-after: NaN` and
// "retry in NaN s", the team refused for good after `max` calls (black-box pass).

const team = (rateLimit: string) => `teams:\n  growth:\n    keys: []\n    advertisers: [101]\n    rateLimit: ${rateLimit}\n`

describe('a team\'s rate-limit window', () => {
  it('refuses a window under a second or not of whole seconds, naming the team\'s setting', () => {
    for (const window of ['0s', '0', '500ms', '1500ms']) {
      expect(problems(team(`{ max: 5, window: ${window} }`))).toContainEqual(expect.stringContaining(`teams.growth.rateLimit.window: must be whole seconds, 1s at least: the rate-limit headers and retry-after count it in whole seconds (got ${window}`))
    }
  })

  it('says that a bare number is milliseconds', () => {
    expect(problems(team('{ max: 5, window: 60 }'))).toContainEqual('teams.growth.rateLimit.window: must be whole seconds, 1s at least: the rate-limit headers and retry-after count it in whole seconds (got 60; a duration given as a number is milliseconds: write 60s if seconds were meant)')
  })

  it('takes a window of a second or more', () => {
    expect(loadConfigYaml(team('{ max: 5, window: 1s }')).teams[0]?.rateLimit).toEqual({ max: 5, windowMs: 1000 })
    expect(loadConfigYaml(team('{ max: 600, window: 1m }')).teams[0]?.rateLimit).toEqual({ max: 600, windowMs: 60_000 })
  })
})
