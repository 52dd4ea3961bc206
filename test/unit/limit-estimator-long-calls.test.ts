import { describe, expect, it } from 'vitest'
import { LimitEstimator } from '../../src/platform/governor/limit-estimator.js'

// The learned limit beside long calls: slow start, windows judged by the calls that answer
// within one, and the level long calls follow (long-calls.ts).

const T0 = 1_750_000_000_000

/** Feeds `n` ok answers of `team` (class `klass`) that came at `at`, each `latencyMs` long, started at `inFlight` calls in flight (`teamInFlight` of its team's). */
function answers(e: LimitEstimator, n: number, at: number, latencyMs: number, team: string, inFlight: number, teamInFlight?: number): void {
  for (let i = 0; i < n; i++) e.record({ at: at + i, latencyMs, klass: `${team}\nreport`, route: '/api/v1/report/campaigns/get', team, inFlight, ...(teamInFlight === undefined ? {} : { teamInFlight }), outcome: 'ok' })
}

/** Second `second` of the run: 16 week-long answers of `latencyMs` started at `inFlight`, a call waiting for a seat, `atEnd` calls in flight as the window is judged. */
function week(e: LimitEstimator, second: number, latencyMs: number, inFlight: number, atEnd = inFlight): void {
  const at = T0 + second * 1000
  answers(e, 16, at + 500, latencyMs, 'week', inFlight)
  e.note({ at: at + 900, inFlight, starved: true })
  e.note({ at: at + 950, inFlight: atEnd, starved: true })
  e.tick(at + 1000)
}

function estimator(initial = 8): LimitEstimator {
  const e = new LimitEstimator({ initial, min: 2, max: 64 })
  e.tick(T0)
  return e
}

describe('LimitEstimator beside long calls', () => {
  it('grows while no knee is known by its headroom for each window a window held open for long answers spans, up to doubling', () => {
    const short = estimator(8)
    answers(short, 16, T0 + 500, 100, 'a', 8)
    short.note({ at: T0 + 900, inFlight: 8, starved: true })
    expect(short.tick(T0 + 1000)).toMatchObject({ limit: 10, reason: 'growth' })
    // Year-long calls: the window waits 4.4 s for its answers, and grows as 4.4 windows would.
    const long = estimator(8)
    long.note({ at: T0 + 500, inFlight: 8, starved: true })
    expect(long.tick(T0 + 1000)).toMatchObject({ reason: 'few-samples' })
    answers(long, 8, T0 + 4400, 4400, 'a', 8)
    expect(long.tick(T0 + 4500)).toMatchObject({ limit: 16, reason: 'growth' })
  })

  it('is ready to be judged as the answer that completes a window comes, not at the next look', () => {
    const e = estimator(8)
    answers(e, 7, T0 + 1100, 100, 'a', 8)
    expect(e.ready(T0 + 1200)).toBe(false)
    answers(e, 1, T0 + 1200, 100, 'a', 8)
    expect(e.ready(T0 + 1200)).toBe(true)
    expect(e.ready(T0 + 900)).toBe(false)
  })

  it('judges a window by the team whose calls answer within it: another team\'s year-long answers that found a worker do not hide the queue', () => {
    const e = estimator(32)
    // Both teams' floors, unloaded: a week 124 ms, a year 4.4 s.
    answers(e, 12, T0 + 600, 124, 'week', 10)
    answers(e, 6, T0 + 700, 4400, 'year', 10)
    e.note({ at: T0 + 900, inFlight: 10, starved: false })
    e.tick(T0 + 1000)
    const before = e.limit
    // The platform queues: the week's answers take 1.6 times their floor; the year's,
    // started before the queue formed, took their floor.
    answers(e, 12, T0 + 1600, 200, 'week', 20)
    answers(e, 6, T0 + 1700, 4400, 'year', 20)
    e.note({ at: T0 + 1900, inFlight: 20, starved: true })
    expect(e.tick(T0 + 2000)).toMatchObject({ reason: 'latency' })
    expect(e.limit).toBeLessThan(before)
  })

  it('lets long calls follow to the level carried at the floor: one past it after the knee a probe found, not the doubled limit', () => {
    const e = estimator(8)
    week(e, 0, 100, 16)
    expect(e.limit).toBe(10)
    expect(e.longCallLimits).toEqual({ beside: 10, alone: 10 })
    // A window at 16 in flight (short calls past the limit's old value), at the floor: the level is 16.
    week(e, 1, 100, 16)
    expect(e.limit).toBe(14)
    week(e, 2, 100, 14)
    expect(e.limit).toBe(17)
    expect(e.longCallLimits).toEqual({ beside: 17, alone: 17 })
    // At 18 in flight the answers leave the buffer: the knee is at 17 or 18.
    week(e, 3, 100 * 1.4, 18)
    expect(e.longCallLimits.beside).toBe(17)
  })

  it('holds long calls to what the platform served while calls queued there, which a window within the buffer hides: two calls queued behind eight short callers', () => {
    const e = estimator(8)
    week(e, 0, 100, 16)
    week(e, 1, 100, 16)
    week(e, 2, 100, 14)
    week(e, 3, 100, 17)
    expect(e.longCallLimits.beside).toBe(18)
    // 18 in flight on 16 workers: two long calls past them, and the dashboard's 8 callers
    // share 6 workers. Most of its answers take 1.2 times their floor, some wait longer: a
    // median inside the buffer, a mean of 1.34 times the floor, two calls queued on average.
    const at = T0 + 4000
    answers(e, 12, at + 500, 120, 'week', 18, 8)
    answers(e, 4, at + 600, 175, 'week', 18, 8)
    e.note({ at: at + 900, inFlight: 18, starved: true })
    expect(e.tick(at + 1000)).toMatchObject({ reason: 'growth' })
    // The platform served 16: long calls start beside short ones while fewer than 17 are in flight.
    expect(e.longCallLimits.beside).toBe(17)
    // One call queued now (eight callers on seven workers): the level waits before it probes again.
    for (let second = 5; second < 10; second++) {
      answers(e, 16, T0 + second * 1000 + 500, 114, 'week', 17, 8)
      e.note({ at: T0 + second * 1000 + 900, inFlight: 17, starved: true })
      e.tick(T0 + second * 1000 + 1000)
      expect(e.longCallLimits.beside).toBe(17)
    }
  })

  it('cuts no lower than the last window at the floor carried while more calls are in flight: the long calls past it keep the latency up until they end; at or below it, slow answers are a fault and cut on', () => {
    const e = estimator(16)
    // The dashboard's week-long calls carried 17 in flight at the floor (and learned it).
    for (let second = 0; second < 3; second++) week(e, second, 100, 17)
    const carried = 17
    expect(e.limit).toBeGreaterThan(carried)
    // Year-long calls took the seats past it: 21 in flight, the week's answers queue behind them at the platform for seconds.
    const cuts: number[] = []
    for (let second = 3; second < 8; second++) {
      week(e, second, 300, 21, carried)
      cuts.push(e.limit)
    }
    expect(Math.min(...cuts)).toBe(carried)
    // The platform slows at what it carried: a fault, answered by cutting below it.
    for (let second = 8; second < 11; second++) week(e, second, 300, carried)
    expect(e.limit).toBeLessThan(carried)
  })

  it('at a fresh start, judges a window as soon as a round trip of answers at the limit comes while calls wait for a seat: the limit grows each round trip, not each second', () => {
    const e = estimator(8)
    e.note({ at: T0 + 10, inFlight: 8, starved: true })
    answers(e, 8, T0 + 130, 120, 'week', 8)
    expect(e.ready(T0 + 140)).toBe(true)
    expect(e.tick(T0 + 140)).toMatchObject({ limit: 10, reason: 'growth' })
    // The next round trip: calls started at the new limit.
    e.note({ at: T0 + 150, inFlight: 10, starved: true })
    answers(e, 8, T0 + 270, 120, 'week', 10)
    expect(e.tick(T0 + 280)).toMatchObject({ limit: 14, reason: 'growth' })
    // The level long calls follow moves only on whole windows: round trips of short calls do not ratchet it.
    expect(e.longCallLimits).toEqual({ beside: 9, alone: 10 })
  })

  it('ends the start-up at the first window judged with no call waiting for a seat: a gateway in service grows once a window', () => {
    const e = estimator(8)
    answers(e, 16, T0 + 500, 120, 'week', 8)
    e.note({ at: T0 + 900, inFlight: 8, starved: false })
    expect(e.tick(T0 + 1000)).toMatchObject({ limit: 10, reason: 'growth' })
    // Another team arrives, calls wait for seats, a round trip of answers comes: the window stays open its second.
    e.note({ at: T0 + 1010, inFlight: 10, starved: true })
    answers(e, 8, T0 + 1130, 120, 'week', 10)
    expect(e.ready(T0 + 1140)).toBe(false)
    expect(e.tick(T0 + 1140)).toBeNull()
  })

  it('ends the start-up at a window past the buffer, at an answer that says the platform is loaded, and at a limit adopted from another replica', () => {
    const knee = estimator(8)
    knee.note({ at: T0 + 10, inFlight: 8, starved: true })
    answers(knee, 8, T0 + 130, 120, 'week', 8)
    knee.tick(T0 + 140)
    knee.note({ at: T0 + 150, inFlight: 10, starved: true })
    answers(knee, 8, T0 + 400, 240, 'week', 10)
    expect(knee.tick(T0 + 410)).toMatchObject({ reason: 'latency' })
    knee.note({ at: T0 + 420, inFlight: 10, starved: true })
    answers(knee, 8, T0 + 540, 120, 'week', 10)
    expect(knee.tick(T0 + 550)).toBeNull()
    const adopted = estimator(8)
    adopted.adopt(12)
    adopted.note({ at: T0 + 10, inFlight: 12, starved: true })
    answers(adopted, 8, T0 + 130, 120, 'week', 12)
    expect(adopted.tick(T0 + 140)).toBeNull()
    const loaded = estimator(8)
    loaded.record({ at: T0 + 60, latencyMs: 50, klass: 'week\nreport', route: '/api/v1/report/campaigns/get', team: 'week', inFlight: 8, outcome: 'failed' })
    loaded.note({ at: T0 + 70, inFlight: 8, starved: true })
    answers(loaded, 8, T0 + 130, 120, 'week', 8)
    expect(loaded.tick(T0 + 140)).toBeNull()
  })

  it('after a cut, holds the limit while calls started under the one before are in flight past it: its answers queued behind them, and cut on once they end', () => {
    const e = estimator(16)
    for (let second = 0; second < 3; second++) week(e, second, 100, 17)
    const before = e.limit
    week(e, 3, 300, before)
    const cut = e.limit
    expect(cut).toBeLessThan(before)
    // Year-long calls started under the old limit hold it in flight: the week's answers still queue behind them.
    for (let second = 4; second < 8; second++) {
      week(e, second, 300, before)
      expect(e.limit).toBe(cut)
    }
    // They ended: what latency says now is of the limit in force.
    week(e, 8, 300, before, cut)
    expect(e.limit).toBeLessThan(cut)
  })
})
