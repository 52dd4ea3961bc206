import { describe, expect, it } from 'vitest'
import { configProblems } from '../helpers/load-config.js'

describe('an unknown setting one or two letters from a known one', () => {
  it('names the setting meant, at its level of the file', () => {
    expect(configProblems('cache: { staleWhileRevalidat: 1m }')).toEqual(['cache.staleWhileRevalidat: unknown setting; did you mean cache.staleWhileRevalidate?'])
    expect(configProblems('teams:\n  a: { keys: [], advertisers: [1], rateLimt: { max: 1, window: 1m } }')).toEqual(['teams.a.rateLimt: unknown setting; did you mean teams.a.rateLimit?'])
    expect(configProblems('platfrom: { timeout: 30s }')).toEqual(['platfrom: unknown setting; did you mean platform?'])
  })

  it('says no more of a setting near none', () => {
    expect(configProblems('cache: { somethingElse: 1 }')).toEqual(['cache.somethingElse: unknown setting'])
  })
})
