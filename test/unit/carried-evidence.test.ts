import { describe, expect, it } from 'vitest'
import { readEvidence, writeEvidence } from '../../src/platform/governor/knee-verdicts.js'

describe('the evidence a shared limit record carries', () => {
  it('reads back each w below the likeliest, to a tenth of a nat, faded over the time since it was weighed', () => {
    const text = writeEvidence(Float64Array.from([-3.04, -1, -1.26]), 10_000)
    expect(text).toBe('10000;20,0,3')
    expect(Array.from(readEvidence(text, 3, 10_000, 20_000) ?? [])).toEqual([-2, -0, -0.3])
    const faded = Array.from(readEvidence(text, 3, 30_000, 20_000) ?? [])
    expect(faded[0]).toBeCloseTo(-2 * Math.exp(-1), 12)
    expect(faded[2]).toBeCloseTo(-0.3 * Math.exp(-1), 12)
  })

  it('is none where the record carries none, another count of guesses, or anything else', () => {
    for (const text of [null, '', '10000;', '10000;1,2', 'x;1,2,3', '10000;1,-2,3', '10000;1,2,3;4', '{"a":1}']) {
      expect(readEvidence(text, 3, 10_000, 20_000)).toBeNull()
    }
  })
})
