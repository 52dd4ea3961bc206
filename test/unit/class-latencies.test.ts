import { describe, expect, it } from 'vitest'
import { ClassLatencies } from '../../src/reports/class-latencies.js'

// The work classes' latencies of refresh ahead: each team's own, in its part, beside any team's.

describe('ClassLatencies', () => {
  it("keeps each team's own latency of a class, from its own calls; any team's where a team has none", () => {
    const c = new ClassLatencies({ max: 4, teams: () => 2, configured: () => true })
    c.learn('w', 'a', 100)
    c.learn('w', 'b', 300)
    expect([c.own('w', 'a')?.meanMs, c.own('w', 'b')?.meanMs, c.own('w', 'c')]).toEqual([100, 300, undefined])
    expect(c.any('w')?.meanMs).toBe(100 + (300 - 100) / 8)
  })

  it("one team's many classes push out its own, never another team's, whoever called the class first", () => {
    const c = new ClassLatencies({ max: 4, teams: () => 2, configured: () => true })
    c.learn('shared', 'flood', 50)
    c.learn('shared', 'dash', 100)
    for (let i = 0; i < 10; i++) c.learn(`w${i}`, 'flood', 10)
    expect(c.own('shared', 'dash')?.meanMs).toBe(100)
    expect(c.own('shared', 'flood')).toBeUndefined()
    expect(c.any('shared')).toBeUndefined()
  })
})
