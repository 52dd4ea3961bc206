import { describe, expect, it } from 'vitest'
import { FixedWindow } from './platform.js'
import { simulate, type Scenario } from './simulate.js'
import { checkGuarantees } from './checks.js'
import { newGovernor } from './new-governor.js'
import { PAUSE_PROBE_INTERVAL_MS } from '../../src/platform/pauses/pauses.js'
import { PACE_HEADROOM } from '../../src/platform/pauses/count-shares.js'
import type { Report, TeamPlan } from './teams.js'

// The platform's Laravel throttle (platform.ts) and the pauses it draws (docs/governor.md, "Pauses").

describe('a Laravel throttle: N calls per fixed window', () => {
  it('lets the first N calls of a window through, refuses the rest with the seconds to its end, and starts a window at the first call after one ended', () => {
    const throttle = new FixedWindow(3, 10_000)
    expect([0, 1_000, 2_000].map((t) => throttle.hit(t))).toEqual([null, null, null])
    expect(throttle.hit(3_000)).toBe(7)
    // A refused call is not counted, and the window does not move.
    expect(throttle.hit(9_500)).toBe(1)
    expect(throttle.hit(12_000)).toBeNull()
    expect(throttle.hit(13_000)).toBeNull()
    expect(throttle.hit(14_000)).toBeNull()
    expect(throttle.hit(21_999)).toBe(1)
    expect(throttle.hit(22_000)).toBeNull()
  })
})

const SHORT: Report = { name: 'k0', costMs: 100 }
const OTHER: Report = { name: 'k1', costMs: 100 }

function team(name: string, reports: Report[]): TeamPlan {
  return { name, weight: 1, behaviour: { kind: 'callers', callers: 8, reports, thinkMs: [0, 0] }, replicas: [0], from: 0, until: 90_000 }
}

describe('the simulated platform throttles, and the pauses hold the calls back', () => {
  // 8 workers answer 80 calls of 100 ms a second, each team's 8 callers half of them on k0.
  const throttled = (throttle: Scenario['throttle']): Scenario => ({
    seed: 429, durationMs: 90_000, workers: 8, spread: 0.1, slowness: [], stalls: [], outages: [], shedding: [], replicas: 1, storeStalls: [],
    teams: [team('t0', [SHORT, OTHER]), team('t1', [SHORT, OTHER])],
    ...(throttle ? { throttle } : {}),
  })

  it("one team's route: its first 429s, then that team's calls on it refused until the window ends but for one trial every 5 s; the other team's calls on it go on", async () => {
    // One window of 20 s from 20 s, its 50 calls gone in a few seconds: the rest of it refuses.
    const trace = await simulate(throttled({ from: 20_000, to: 40_000, windowMs: 20_000, limit: 50, only: { team: 't0', route: 'k0' } }), newGovernor)
    const on = (name: string) => trace.records.filter((c) => c.team === name && c.workClass === 'k0')
    const refusing = trace.throttled as { from: number; to: number }
    const sent = (from: number, to: number) => on('t0').filter((c) => c.seated !== null && c.seated - trace.start >= from && c.seated - trace.start < to)
    // t0's calls on k0 already past the pause (in flight or waiting for a seat) when its first 429 came back: at most its 8 callers.
    const first = sent(refusing.from, refusing.from + 1_000)
    expect(first.length).toBeGreaterThan(0)
    expect(first.length).toBeLessThanOrEqual(8)
    // Then one trial every 5 s, each answered 429 and renewing the pause, until the window's end.
    const trials = sent(refusing.from + 1_000, refusing.to)
    expect(trials.map((c) => c.status)).toEqual(Array.from({ length: Math.floor((refusing.to - refusing.from) / PAUSE_PROBE_INTERVAL_MS) }, () => 429))
    expect(on('t0').filter((c) => c.refusal === 'paused').length).toBeGreaterThan(100)
    expect(on('t1').some((c) => c.refusal === 'paused' || c.status === 429)).toBe(false)
    expect(checkGuarantees(trace).filter((v) => !v.ok)).toEqual([])
  })

  it('the credential: the 429s stay within the bound, and the throughput comes back after the last retry-after', async () => {
    const trace = await simulate(throttled({ from: 20_000, to: 40_000, windowMs: 10_000, limit: 400 }), newGovernor)
    const answered429 = trace.records.filter((c) => c.status === 429).length
    expect(answered429).toBeGreaterThan(0)
    expect(trace.throttled).not.toBeNull()
    const verdicts = checkGuarantees(trace)
    expect(verdicts.find((v) => v.guarantee === '429s')?.ok).toBe(true)
    expect(verdicts.find((v) => v.guarantee === 'recovery')?.ok).toBe(true)
    expect(verdicts.filter((v) => !v.ok)).toEqual([])
  })
})

describe("the platform's count of the credential's calls, shared out by weight", () => {
  // A Laravel throttle:api of 200 calls a 10 s window on the credential; 8 workers answer 80
  // calls of 100 ms a second, 800 a window: team hog's 16 callers alone would spend the count
  // in a few seconds. Team dash, a dashboard of 2 users asking 2 reports a second each, asks
  // about 40 calls a window, below its share of 100.
  const scenario: Scenario = {
    seed: 4291, durationMs: 90_000, workers: 8, spread: 0.1, slowness: [], stalls: [], outages: [], shedding: [], replicas: 1, storeStalls: [],
    teams: [
      { name: 'hog', weight: 1, behaviour: { kind: 'callers', callers: 16, reports: [SHORT, OTHER], thinkMs: [0, 0] }, replicas: [0], from: 0, until: 90_000 },
      { name: 'dash', weight: 1, behaviour: { kind: 'dashboard', users: 2, fanOut: 2, reports: [SHORT, OTHER], thinkMs: [800, 1200] }, replicas: [0], from: 0, until: 90_000 },
    ],
    throttle: { from: 0, to: 90_000, windowMs: 10_000, limit: 200 },
  }

  it("after the window in which the platform first refused, the team within its share draws no 429 and is refused nothing, and the other team spends the rest of each window's count but what the first is kept", async () => {
    const trace = await simulate(scenario, newGovernor)
    const refusing = trace.throttled as { from: number; to: number }
    expect(refusing).not.toBeNull()
    // The count is shared out from the first 429; its window, and the pause that 429 drew, are over a window later (ms into the run).
    const from = refusing.from + 2 * 10_000
    const dash = trace.records.filter((c) => c.team === 'dash' && c.asked - trace.start >= from)
    expect(dash.length).toBeGreaterThan(200)
    expect(dash.filter((c) => c.status === 429 || c.result === 'refused')).toEqual([])
    // Each window's count spent but for what dash is kept past its asks (half again what it asked: PACE_HEADROOM), and one window's worth for where the windows fall.
    const answered = trace.records.filter((c) => c.status === 200 && (c.seated as number) - trace.start >= from).length
    const windows = (scenario.durationMs - from) / 10_000
    expect(answered).toBeGreaterThan(200 * windows - (PACE_HEADROOM - 1) * dash.length - 200)
  })
})
