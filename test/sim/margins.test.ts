import { describe, expect, it } from 'vitest'
import { compare, marginsOf, marginsReport, marginsText, parseMargins, signTest, summarize, type SweepMargins } from './margins.js'

describe("a sweep's margins", () => {
  it('keeps the worst verdict of a guarantee, and null only where none judged', () => {
    const of = marginsOf([
      { guarantee: 'recovery', ok: true, detail: '', margin: 0.5 },
      { guarantee: 'recovery', ok: false, detail: '', margin: 1.2 },
      { guarantee: 'recovery', ok: true, detail: '', margin: null },
      { guarantee: 'slower is not fuller', ok: true, detail: '', margin: null },
    ])
    expect(of).toEqual({ recovery: 1.2, 'slower is not fuller': null })
  })

  it('counts the seeds past the bound and gives the quantiles of the seeds judged', () => {
    const margins: SweepMargins = { 1: { isolation: 0.2 }, 2: { isolation: 1.5 }, 3: { isolation: null }, 4: { isolation: 0.9 } }
    expect(summarize(margins)).toEqual([{ guarantee: 'isolation', judged: 3, broken: 1, p50: 0.9, p90: 1.5, p99: 1.5 }])
  })

  it('pairs the seeds both sweeps judged: which crossed the bound, which moved past the noise, the median move', () => {
    const before: SweepMargins = { 1: { replicas: 0.95 }, 2: { replicas: 1.1 }, 3: { replicas: 0.5 }, 4: { replicas: 0.3 }, 5: { replicas: null } }
    const after: SweepMargins = { 1: { replicas: 1.02 }, 2: { replicas: 0.8 }, 3: { replicas: 0.52 }, 4: { replicas: 0.6 }, 5: { replicas: 2 } }
    const [c] = compare(before, after)
    expect(c).toMatchObject({ guarantee: 'replicas', judged: 4, brokenBefore: 1, brokenAfter: 1, nowBroken: 1, nowKept: 1, worse: 2, better: 1 })
    expect(c?.medianChange).toBeCloseTo(0.02)
    expect(marginsReport(after, before)).toContain('| replicas | 4 | 1 → 1 | 1 | 1 | 2 | 1 | 0.02 | 1.000 |')
  })

  it('writes a margin past every bound as itself, not as null: a file read back judges it broken', () => {
    const m: SweepMargins = { '1': { recovery: Infinity, isolation: null, replicas: 0.5 } }
    expect(parseMargins(marginsText(m))).toEqual(m)
    expect(JSON.parse(JSON.stringify(m))).not.toEqual(m)
  })

  it('tells a one-sided move from a coin', () => {
    // 2 × (1 + 10 + 45) / 1024 for 10 movers split 8 : 2; a split even is no sign; none moved, none.
    expect(signTest(8, 2)).toBeCloseTo(112 / 1024, 10)
    expect(signTest(2, 8)).toBeCloseTo(112 / 1024, 10)
    expect([signTest(5, 5), signTest(0, 0)]).toEqual([1, 1])
    expect(signTest(60, 20)).toBeLessThan(1e-5)
  })
})
