import { describe, expect, it } from 'vitest'
import { configProblems as problems, loadConfigYaml } from '../helpers/load-config.js'

// Contract, "Configuration": invalid configuration stops the start with one line per
// problem, naming the key and what is wrong. A count setting given a value out of its
// range says the range it takes, not only what the setting is for; an item of a list
// shows the value it was given.

describe('a number setting out of its range says the range', () => {
  it('names the least whole number a count takes, then what the count is', () => {
    expect(problems('jobs: { perReplica: 0 }')).toEqual([
      'jobs.perReplica: must be a whole number, at least 1: report jobs one replica runs at once (each waits for a platform seat like any call) (got 0)',
    ])
  })

  it('says a fraction or a word is not a whole number, with the same range', () => {
    expect(problems('jobs: { maxOpenPerTeam: 1.5 }')).toEqual([
      'jobs.maxOpenPerTeam: must be a whole number, at least 1: report jobs a team may have queued or running at once (more: 429 GW_JOBS_FULL) (got 1.5)',
    ])
    expect(problems('jobs: { maxWaits: many }')).toEqual([
      'jobs.maxWaits: must be a whole number, at least 1: status calls held open at once by ?wait on a replica, every team\'s (more: 429 GW_WAITS_FULL) (got "many")',
    ])
  })

  it('names both ends of a bounded range, and a bound a number must pass', () => {
    const team = (fields: string) => `teams:\n  growth:\n    keys: []\n    advertisers: [101]\n    ${fields}\n`
    expect(problems(team('weight: 0'))).toEqual([
      'teams.growth.weight: must be a whole number from 1 to 100: the team\'s share of its credential\'s platform calls when they queue, relative to the other teams (1-100) (got 0)',
    ])
    expect(problems(team('platformSecondsPerDay: 0'))[0]).toMatch(/^teams\.growth\.platformSecondsPerDay: must be a number above 0: a bound on the platform-seconds .* \(got 0\)$/)
  })

  it('bounds the platform calls in flight a credential may learn up to: each seat of the ceiling is kept in memory from the start', () => {
    // 10^15 stopped the start with a RangeError's trace (the learned limit's tallies are one slot a seat).
    expect(problems('platform: { maxConcurrent: 1000000000000000 }')).toEqual([
      'platform.maxConcurrent: must be a whole number from 1 to 10000: the ceiling of the platform calls in flight at once per credential (the learned limit stays at or below it) (got 1000000000000000)',
    ])
    expect(problems('platform: { maxConcurrent: 0 }')).toEqual([
      'platform.maxConcurrent: must be a whole number from 1 to 10000: the ceiling of the platform calls in flight at once per credential (the learned limit stays at or below it) (got 0)',
    ])
    expect(loadConfigYaml('platform: { maxConcurrent: 10000, initialConcurrent: 10000, minConcurrent: 10000 }').platform.maxConcurrent).toBe(10000)
  })

  it('shows the value of a list item it refuses', () => {
    expect(problems('jobs: { webhookHosts: [""] }')).toEqual([
      'jobs.webhookHosts.0: must be a host as a URL writes it (a DNS name or IPv4 address, an IPv6 address in brackets; no scheme, port, path or wildcard), e.g. hooks.example.org, localhost, [::1] (got "")',
    ])
  })
})
