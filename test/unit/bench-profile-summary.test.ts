import { describe, expect, it } from 'vitest'
import { summarizeProfile, type CpuProfile } from '../../bench/profile-summary.mjs'

// bench/stampede-cpu.mjs --profile writes its counted rounds' windows: a summary restricted
// to them must count the samples inside them alone, each for at most twice the profile's
// median interval (a gap before a sample is time the thread did not run).

const frame = (functionName: string) => ({ functionName, url: 'file:///x/dist/a.js', lineNumber: 0 })
// Samples every 100 µs from 1,000: `work` at 1,100 to 1,500 and 5,100 (after a 3,500 µs gap), `other` elsewhere.
const profile: CpuProfile = {
  nodes: [
    { id: 1, callFrame: frame('(root)'), children: [2, 3] },
    { id: 2, callFrame: frame('work') },
    { id: 3, callFrame: frame('other') },
  ],
  startTime: 1000,
  endTime: 6000,
  samples: [3, 2, 2, 2, 2, 2, 2, 3, 3],
  timeDeltas: [0, 100, 100, 100, 100, 100, 3600, 100, 100],
}

const line = (text: string, name: string) => text.split('\n').find((l) => l.endsWith(` ${name} /x/dist/a.js:1`)) ?? ''

describe('summarizeProfile with windows', () => {
  it('counts only the samples inside the windows, a sample after a gap for twice the median interval', () => {
    const text = summarizeProfile(profile, { windows: [[1050, 1350], [5000, 5150]] })
    // Inside: work at 1,100, 1,200, 1,300 (100 µs each) and 5,100 (its 3,600 µs gap counted as 200); `other` at 1,000 and 5,200 outside.
    expect(text).toContain('inside 2 windows, a sample counted for at most 200 µs: 0.25 ms busy a window')
    expect(line(text, 'work')).toMatch(/^100\.0 %, {3}0\.250 ms a window/)
    expect(line(text, 'other')).toBe('')
  })

  it('counts every sample for its whole gap without windows', () => {
    const text = summarizeProfile(profile)
    expect(text).not.toContain('a window')
    // work: 5 samples of 100 µs and one of 3,600; other: 2 of 100 (the first sample's gap is 0).
    expect(line(text, 'work')).toMatch(/^ *95\.3 % {2}work/)
    expect(line(text, 'other')).toMatch(/^ *4\.7 % {2}other/)
  })
})
