import { describe, expect, it } from 'vitest'
import { ASKS_DECAY, LATENCY_GAIN, LEAD_MARGIN_MS, LEAD_PRICE, REFRESH_AHEAD_ASKS, REFRESH_AHEAD_BUDGET, UNKNOWN_LEAD_SHARE, aheadCalls, budgetAsks, demandOf, expectedAsks, leadLatency, learnLatency, priorOf, refreshAheadStart, refreshLead, rescheduledStart, revalidateCalls, type Demand } from '../../src/reports/refresh-ahead.js'
import { Random } from '../sim/random.js'

// When a copy is refreshed ahead (docs/refresh-ahead.md): whether, when, and the rate it is read from.

const T0 = 1_800_000_000_000
const copy = (freshS: number) => ({ fetchedAt: T0, freshUntil: T0 + freshS * 1000 })
const asked = (asks: number, priorAsks = 0, priorMs = 0) => ({ asks, priorAsks, priorMs })
// A report asked so often that any lead's last millisecond spares more than LEAD_PRICE stale answers: led by the latency's bound.
const OFTEN = 1e7

describe('learnLatency and refreshLead', () => {
  it('starts from the first answer with half of it as deviation, then moves by the gains of RFC 6298', () => {
    const first = learnLatency(undefined, 400)
    expect(first).toEqual({ meanMs: 400, devMs: 200 })
    const second = learnLatency(first, 400)
    expect(second.meanMs).toBe(400)
    expect(second.devMs).toBeCloseTo(200 - 2 * LATENCY_GAIN * 200)
    const slow = learnLatency(second, 1200)
    expect(slow.meanMs).toBeCloseTo(400 + LATENCY_GAIN * 800)
    expect(slow.devMs).toBeGreaterThan(second.devMs)
  })

  it('leads a report asked very often by the mean and four deviations plus the margin; a class never answered here by a share of the freshness', () => {
    expect(refreshLead({ meanMs: 400, devMs: 25 }, 4000, OFTEN)).toBe(400 + 100 + LEAD_MARGIN_MS)
    expect(refreshLead(undefined, 10_000, 10)).toBe(UNKNOWN_LEAD_SHARE * 10_000)
  })

  it('leads a steady class by barely more than its latency, a spread one by more', () => {
    let steady
    let spread
    for (let i = 0; i < 50; i++) {
      steady = learnLatency(steady, 400)
      spread = learnLatency(spread, i % 2 ? 200 : 600)
    }
    expect(refreshLead(steady, 4000, OFTEN)).toBeLessThan(400 + LEAD_MARGIN_MS + 1)
    expect(refreshLead(spread, 4000, OFTEN)).toBeGreaterThan(600 + LEAD_MARGIN_MS)
  })

  it("leads by the refreshes' own latency once one was answered: a refresh waits for a seat behind its team's callers' calls, whose fast answers would read its long wait as spread", () => {
    let calls
    let refreshes
    for (let i = 0; i < 200; i++) {
      // A burst: a caller's call takes a seat first (100 ms), a refresh ahead after them (900 ms).
      calls = learnLatency(calls, i % 4 === 3 ? 900 : 100)
      if (i % 4 === 3) refreshes = learnLatency(refreshes, 900)
    }
    expect(leadLatency(refreshes, calls)).toBe(refreshes)
    expect(refreshLead(leadLatency(refreshes, calls), 10_000, OFTEN)).toBeLessThan(900 + LEAD_MARGIN_MS + 1)
    expect(refreshLead(calls, 10_000, OFTEN)).toBeGreaterThan(900 + LEAD_MARGIN_MS)
    // No refresh of the class answered yet: all its calls'.
    expect(leadLatency(undefined, calls)).toBe(calls)
  })
})

describe('refreshLead priced per report', () => {
  // Trace 7 of the benchmark's family: freshness 5 s, the platform 1.35 s median (σ 0.28), as the class learns it.
  const F = 5000
  const trace7 = { meanMs: 1400, devMs: 320 }
  const bound = trace7.meanMs + 4 * trace7.devMs + LEAD_MARGIN_MS

  // Stale answers spared per call a longer lead adds, at lead ℓ, counted on drawn calls of the
  // log-normal the class's mean and deviation stand for: λ(P(X > ℓ)·(F − ℓ + E[X]) − E[(X − ℓ)⁺]).
  const sigma = Math.sqrt(Math.log(1 + (Math.PI / 2) * (trace7.devMs / trace7.meanMs) ** 2))
  const random = new Random(7)
  const drawn = Array.from({ length: 200_000 }, () => trace7.meanMs * Math.exp(-(sigma ** 2) / 2) * random.spread(sigma))
  const spared = (asksPerFresh: number, leadMs: number) => {
    const late = drawn.filter((x) => x > leadMs)
    const excess = late.reduce((a, x) => a + x - leadMs, 0) / drawn.length
    return (asksPerFresh / F) * ((late.length / drawn.length) * (F - leadMs + trace7.meanMs) - excess)
  }

  it('leads a more asked report longer, under the latency bound: the report at the budget\'s edge is called less often, the most asked kept fresher', () => {
    const leads = [6, 10, 20, 70].map((a) => refreshLead(trace7, F, a))
    for (let i = 1; i < leads.length; i++) expect(leads[i]!).toBeGreaterThan(leads[i - 1]! + 100)
    expect(leads.at(-1)!).toBeLessThan(bound)
    // Asked 10 times a freshness: about 1.9 s, not the bound's 2.7 s.
    expect(leads[1]!).toBeGreaterThan(1800)
    expect(leads[1]!).toBeLessThan(2000)
  })

  it('is the least lead whose last millisecond spares at most LEAD_PRICE stale answers per call it adds', () => {
    for (const a of [6, 10, 20, 70]) {
      const lead = refreshLead(trace7, F, a) - LEAD_MARGIN_MS
      expect(spared(a, lead)).toBeLessThanOrEqual(LEAD_PRICE * 1.05)
      expect(spared(a, lead - 50)).toBeGreaterThan(LEAD_PRICE)
    }
  })

  it('moves the start of a report asked 10 times a freshness later than the bound would: the calls a longer lead costs buy under one fresh answer each', () => {
    const start = refreshAheadStart(copy(5), asked(10), refreshLead(trace7, F, 10), T0 + 4000)
    expect(start).not.toBeNull()
    expect(start!).toBeGreaterThan(T0 + F - bound + 700)
  })

  it('is the halving of [0, bound] to LEAD_PRECISION_MS: a point of its grid, not merely within the precision of the root', () => {
    // [mean, deviation, freshness, asks a freshness] and the lead the halving priced at every midpoint lands on.
    const halved: [number, number, number, number, number][] = [
      [1400, 320, 5000, 10, 1897.177734375],
      [1400, 320, 5000, 70, 2427.8125],
      [216, 60, 2400, 6.6, 305.890625],
      [63, 20, 2445, 3, 89.265625],
      [400, 1e-4, 4000, 50, 420.0004],
      [900, 700, 60_000, 2.5, 804.9853515625],
      [30, 2, 1000, 400, 58],
      [2500, 1200, 3000, 12, 3020],
    ]
    for (const [meanMs, devMs, freshMs, asks, lead] of halved) expect(refreshLead({ meanMs, devMs }, freshMs, asks)).toBe(lead)
  })

  it('leads a report asked no more than LEAD_PRICE times a freshness by the margin alone, and one on a class slower than its freshness by the whole freshness (refreshed at once)', () => {
    expect(refreshLead(trace7, F, LEAD_PRICE)).toBe(LEAD_MARGIN_MS)
    expect(refreshLead({ meanMs: 6000, devMs: 500 }, F, 10)).toBe(F + LEAD_MARGIN_MS)
  })
})

describe('expectedAsks', () => {
  it('is the count itself while less than one freshness has been watched: never extrapolated', () => {
    expect(expectedAsks(asked(3), 1000, 60_000)).toBe(3)
    expect(expectedAsks(asked(3), 60_000, 60_000)).toBe(3)
  })

  it('is a rate per freshness over the copy and the one before it', () => {
    // 6 asks over 2 freshnesses: 3 per freshness.
    expect(expectedAsks(asked(2, 4, 60_000), 60_000, 60_000)).toBe(3)
    // 8 asks over 4 s of a 2 s freshness: 4.
    expect(expectedAsks(asked(4, 4, 2000), 2000, 2000)).toBe(4)
  })
})

describe('priorOf', () => {
  const watch = (asks: number, priorAsks: number, priorMs: number, fetchedAt = T0, freshS = 4) => ({ fetchedAt, freshUntil: fetchedAt + freshS * 1000, asks, priorAsks, priorMs })

  it('carries nothing for a new report', () => {
    expect(priorOf(undefined, T0)).toEqual({ priorAsks: 0, priorMs: 0 })
  })

  it('carries the copy before over the part of its freshness it was served in, and its own history weighed ASKS_DECAY less', () => {
    // Replaced 3 s into its 4 s: 3 s served; it carried 8 asks over 8 s.
    expect(priorOf(watch(5, 8, 8000), T0 + 3000)).toEqual({ priorAsks: 5 + ASKS_DECAY * 8, priorMs: 3000 + ASKS_DECAY * 8000 })
    // Replaced after it expired: its whole freshness, no more.
    expect(priorOf(watch(5, 0, 0), T0 + 9000)).toEqual({ priorAsks: 5, priorMs: 4000 })
  })

  it('reads a steady rate as that rate, and forgets a report gone cold copy by copy', () => {
    // Asked 6 times in each 4 s copy, for 20 copies: 6 a freshness, the history bounded.
    let w = watch(6, 0, 0)
    for (let i = 1; i <= 20; i++) w = { ...watch(6, 0, 0, T0 + i * 4000), ...priorOf(w, T0 + i * 4000) }
    expect(expectedAsks(w, 4000, 4000)).toBeCloseTo(6)
    expect(w.priorMs).toBeLessThan(4000 / (1 - ASKS_DECAY))
    // Then asked once a copy: under K within a few copies.
    let copies = 0
    for (; expectedAsks(w, 4000, 4000) >= REFRESH_AHEAD_ASKS; copies++) w = { ...watch(1, 0, 0, T0 + (21 + copies) * 4000), ...priorOf(w, T0 + (21 + copies) * 4000) }
    expect(copies).toBeLessThanOrEqual(6)
  })
})

describe('refreshAheadStart', () => {
  it('is null until the report is asked K times in one freshness', () => {
    for (let n = 1; n < REFRESH_AHEAD_ASKS; n++) expect(refreshAheadStart(copy(60), asked(n), 500, T0 + 1000)).toBeNull()
    expect(refreshAheadStart(copy(60), asked(REFRESH_AHEAD_ASKS), 500, T0 + 1000)).toBe(T0 + 60_000 - 500)
  })

  it('does not count the asks the fill of the copy answered: the miss that made it says nothing of its rate', () => {
    // Asked K times, the first the miss that filled it: K − 1 of its own.
    expect(refreshAheadStart(copy(60), { ...asked(REFRESH_AHEAD_ASKS), filled: 1 }, 500, T0 + 1000)).toBeNull()
    expect(refreshAheadStart(copy(60), { ...asked(REFRESH_AHEAD_ASKS + 1), filled: 1 }, 500, T0 + 1000)).toBe(T0 + 60_000 - 500)
    // The budget reads the same rate.
    expect(demandOf(copy(60), { ...asked(3), filled: 1 }, undefined, T0 + 1000).asksPerFresh).toBe(2)
    // The copies before count whole: there the miss was one of the report's asks.
    expect(refreshAheadStart(copy(4), { ...asked(1, 12, 8000), filled: 1 }, 420, T0 + 100)).toBe(T0 + 4000 - 420)
  })

  it('starts the lead before expiry, whatever the freshness: never at a fixed fraction', () => {
    expect(refreshAheadStart(copy(4), asked(3), 420, T0)).toBe(T0 + 4000 - 420)
    expect(refreshAheadStart(copy(600), asked(3), 420, T0)).toBe(T0 + 600_000 - 420)
  })

  it('starts at once when the lead is the whole freshness or more (a platform slower than the TTL)', () => {
    expect(refreshAheadStart(copy(2), asked(3), 2500, T0 + 10)).toBe(T0)
  })

  it('counts a report asked less than K times per freshness over two copies as not popular, one asked more as popular', () => {
    // The previous copy was asked once over its whole 4 s; this one twice: 3 asks over 8 s.
    expect(refreshAheadStart(copy(4), asked(2, 1, 4000), 420, T0 + 1000)).toBeNull()
    // Asked 5 times over 4 s before: popular from this copy's first ask.
    expect(refreshAheadStart(copy(4), asked(1, 5, 4000), 420, T0 + 100)).toBe(T0 + 4000 - 420)
  })

  it('is null for an expired copy or a copy without freshness', () => {
    expect(refreshAheadStart(copy(4), asked(9), 420, T0 + 4000)).toBeNull()
    expect(refreshAheadStart(copy(0), asked(9), 420, T0)).toBeNull()
  })
})

describe('rescheduledStart', () => {
  it('moves a scheduled refresh earlier when its class has learned a longer lead since: a burst\'s seat waits, learned after the timer was set', () => {
    // Set 150 ms before expiry; the class's answers have since waited for seats: lead 420 ms.
    expect(rescheduledStart(copy(4), T0 + 4000 - 150, 420)).toBe(T0 + 4000 - 420)
    // A lead over the whole freshness: at the copy's fetch, at once.
    expect(rescheduledStart(copy(4), T0 + 4000 - 150, 5000)).toBe(T0)
  })

  it('moves it later when the lead has shrunk: the lead is the class\'s as of the last ask, not the longest it had while the timer waited', () => {
    expect(rescheduledStart(copy(4), T0 + 4000 - 420, 150)).toBe(T0 + 4000 - 150)
  })

  it('leaves it (null) when the start moves by no more than the timer\'s own delay', () => {
    expect(rescheduledStart(copy(4), T0 + 4000 - 420, 420)).toBeNull()
    expect(rescheduledStart(copy(4), T0 + 4000 - 420, 420 + LEAD_MARGIN_MS)).toBeNull()
    expect(rescheduledStart(copy(4), T0 + 4000 - 420, 420 - LEAD_MARGIN_MS)).toBeNull()
  })
})

describe('budgetAsks', () => {
  // Freshness 8 s, a platform of 140 ms, its lead 350 ms: trace 5 of the benchmark's family.
  const demand = (asksPerFresh: number): Demand => ({ asksPerFresh, freshMs: 8000, latencyMs: 140, leadMs: 350 })
  const extra = (d: Demand) => aheadCalls(d) - revalidateCalls(d)

  it('prices a refresh ahead against stale-while-revalidate: 1 / (λF) extra calls per report, the lead besides', () => {
    // Asked 4 times a freshness: a call per F + L + F/4 without, per F − lead + L with.
    expect(revalidateCalls(demand(4))).toBeCloseTo(1 / (8000 + 140 + 2000))
    expect(aheadCalls(demand(4))).toBeCloseTo(1 / (8000 - 350 + 140))
    // Never asked: no call either way.
    expect(revalidateCalls(demand(0))).toBe(0)
  })

  it('takes the most asked reports first while their extra calls fit in the budget', () => {
    const demands = [100, 50, 20, 10, 6, 4, 3, 3, 2, 1, 0.5].map(demand)
    const threshold = budgetAsks(demands)
    const total = demands.reduce((a, d) => a + revalidateCalls(d), 0)
    const spent = demands.filter((d) => d.asksPerFresh >= threshold).reduce((a, d) => a + extra(d), 0)
    expect(spent).toBeLessThanOrEqual(REFRESH_AHEAD_BUDGET * total)
    // One more report, the next most asked, would not fit.
    const next = demands.filter((d) => d.asksPerFresh < threshold)[0]!
    expect(spent + extra(next)).toBeGreaterThan(REFRESH_AHEAD_BUDGET * total)
    expect(threshold).toBeGreaterThan(REFRESH_AHEAD_ASKS)
  })

  it('never goes under K, however large the budget; none fits: Infinity', () => {
    expect(budgetAsks([100, 50, 1.5, 1].map(demand), 10)).toBe(50)
    expect(budgetAsks([demand(3)])).toBe(Infinity)
    expect(budgetAsks([])).toBe(Infinity)
  })

  it('lets the budget reach a report asked twice a freshness when it has room: K = 2', () => {
    // Trace 8 of the family: its popular reports asked 1.8 to 2.3 times a freshness, the calls within the budget.
    expect(budgetAsks([100, 50, 2, 1].map(demand), 10)).toBe(2)
    expect(refreshAheadStart(copy(60), asked(2), 500, T0 + 1000)).toBe(T0 + 60_000 - 500)
  })

  it("keeps K where the reports of the freshness guarantee (asked 2K times a freshness) lose at most 1 % of their answers to copies nobody asked while fresh", () => {
    // A refresh is set by an ask of the fresh copy: a report asked a times a freshness leaves
    // e^(−a) of its copies unasked, and the first ask after each is served stale.
    const unasked = (a: number) => Math.exp(-a) / (a + Math.exp(-a))
    expect(unasked(2 * REFRESH_AHEAD_ASKS)).toBeLessThanOrEqual(0.01)
    expect(unasked(2 * 1.5)).toBeGreaterThan(0.01)
  })

  it('refreshes a lone report once it is asked often enough to cost no more than the budget', () => {
    // Its own extra calls against its own: (F + L + F/a) / (F − lead + L) − 1 ≤ the budget.
    expect(budgetAsks([demand(10)])).toBe(Infinity)
    expect(budgetAsks([demand(30)])).toBe(30)
  })
})
