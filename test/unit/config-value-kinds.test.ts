import { describe, expect, it } from 'vitest'
import { configProblems } from '../helpers/load-config.js'

// A setting given a value of another kind says, in words, the kind it takes and (for a
// mapping) the settings it holds: it said Ajv's `must be object`, `must be boolean`.
describe('a setting given a value of another kind', () => {
  it('says what it takes', () => {
    expect(configProblems('cache:\n  ttl: fast')).toEqual(['cache.ttl: must be a mapping of its settings (recent, settled) (got "fast")'])
    expect(configProblems('ownership:\n  fields: x')).toEqual(['ownership.fields: must be a mapping of its settings (data, id, lastPage, userId) (got "x")'])
    expect(configProblems('cache:\n  enabled: maybe')).toEqual(['cache.enabled: must be true or false (got "maybe")'])
    // A mapping in a union (or null) is said in the same words.
    expect(configProblems('platform:\n  probe: 3')).toEqual(['platform.probe: must be a mapping of its settings (method, path) or null (got 3)'])
    expect(configProblems('teams:\n  a: { keys: [], advertisers: 101 }')).toEqual([expect.stringMatching(/^teams\.a\.advertisers: must be a list of .* \(got 101\)$/)])
  })
})
