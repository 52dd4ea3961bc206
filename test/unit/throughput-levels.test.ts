import { describe, expect, it } from 'vitest'
import { DIP, DIP_MS, RECENT_MS, StartLevels, ThroughputLevels } from '../../src/platform/governor/throughput-levels.js'
import { MIN_CALLS } from '../../src/platform/governor/knee-verdicts.js'

// The capacity bench's platform: 100 ms a call while 12 are in flight, 40 ms more for each
// call past 12; its answers a second are the level over that latency (Little's law).
const BASE = Math.log(100)
const latency = (level: number) => 100 + 40 * Math.max(0, level - 12)

/** MIN_CALLS answers at `level` at `at`, serials from `serial`, as the platform gives them or (`slow`) as slow a call as `slow`'s. */
function measure(levels: ThroughputLevels, level: number, at: number, serial = 1, slow?: number): void {
  for (let i = 0; i < MIN_CALLS; i++) levels.measure(level, 1, BASE, slow === undefined ? latency(level) : (latency(slow) * level) / slow, at, serial + i)
}
function measured(...levelsAt: [number, number][]): ThroughputLevels {
  const levels = new ThroughputLevels(64)
  for (const [level, at] of levelsAt) measure(levels, level, at)
  return levels
}

describe('ThroughputLevels: a seat past the knee kept', () => {
  // The capacity bench's platform gives 13 calls 12 × 100 / 140 of 12's answers a second
  // (a fall of 26 %); a pool that grew gives 13 / 12 of them at 13, as its calls stay 100 ms.
  it('keeps a level that gives no less than FALL/2 under the one below it, both measured within RECENT_MS', () => {
    expect(measured([12, 1_000], [13, 1_000]).kept(1_000, 13), 'calls slower past the knee').toBe(false)
    const grew = new ThroughputLevels(64)
    for (const level of [12, 13]) for (let i = 0; i < MIN_CALLS; i++) grew.measure(level, 1, BASE, 100, 1_000, i + 1)
    expect(grew.kept(1_000, 13), 'a pool that grew').toBe(true)
    expect(grew.kept(1_000 + RECENT_MS + 1, 13), 'measured before RECENT_MS').toBe(false)
    expect(measured([13, 1_000]).kept(1_000, 13), 'the level below not measured').toBe(false)
  })
})

describe('ThroughputLevels across replicas: the dip', () => {
  it('dips to DIP of the limit where its level is measured within RECENT_MS and none from there up to below it is', () => {
    expect(measured([18, 1_000]).dip(1_000, 18, 2)).toBe(Math.floor(18 * DIP))
    expect(measured([15, 1_000], [18, 1_000]).dip(1_000, 18, 2), 'a level between measured').toBeNull()
    expect(measured([15, 1_000], [18, 1_000 + RECENT_MS + 1]).dip(1_000 + RECENT_MS + 1, 18, 2), 'a level between measured before RECENT_MS').toBe(14)
    expect(measured([13, 1_000], [18, 1_000]).dip(1_000, 18, 2), 'a level below the dip does not count').toBe(14)
    expect(measured([18, 1_000]).dip(1_000 + RECENT_MS + 1, 18, 2), 'the limit\'s level measured before RECENT_MS').toBeNull()
    expect(measured([2, 1_000]).dip(1_000, 2, 2), 'nothing below the least').toBeNull()
  })

  // Two FALLs below: past the knee of a platform whose calls slow, a level gives less than
  // FALL more than the one above it, and the limit moves between K + 1 and K + 2.
  it('dips, where the likelihood does not place the knee, where no level at DIP of the limit or below is measured within RECENT_MS', () => {
    expect(measured([15, 1_000], [16, 1_000], [17, 1_000], [18, 1_000]).dip(1_000, 18, 2, true), 'levels between measured').toBe(14)
    expect(measured([14, 1_000], [18, 1_000]).dip(1_000, 18, 2, true), 'the dip\'s level measured').toBeNull()
    expect(measured([11, 1_000], [18, 1_000]).dip(1_000, 18, 2, true), 'a level below the dip measured').toBeNull()
    expect(measured([13, 1_000], [18, 1_000 + RECENT_MS + 1]).dip(1_000 + RECENT_MS + 1, 18, 2, true), 'a level below measured before RECENT_MS').toBe(14)
  })

  it('keeps the dip where the level it went to gives FALL more than the limit\'s, and puts the limit back where it does not', () => {
    for (const slower of [false, true]) {
      const levels = measured([18, 1_000])
      levels.wentDown(14, true, 18, 17, 100)
      // The dip's level measured on calls started after it: as the platform gives it, or as slow a call as the limit's level.
      measure(levels, 14, 2_000, 101, slower ? 18 : undefined)
      expect(levels.recheck(), slower ? 'no more answers a second' : 'more answers a second').toEqual(slower ? { limit: 18, knee: 17 } : null)
    }
  })

  it('counts only the calls started after the dip, and tries no dip for DIP_MS after one put back', () => {
    const levels = measured([18, 1_000])
    levels.wentDown(14, true, 18, 17, 100)
    measure(levels, 14, 2_000, 50)
    expect(levels.recheck()).toBeNull()
    measure(levels, 14, 2_000, 101, 18)
    expect(levels.recheck()).toEqual({ limit: 18, knee: 17 })
    measure(levels, 18, 9_000, 200)
    expect(levels.dip(9_000, 18, 2)).toBeNull()
    measure(levels, 18, 2_000 + DIP_MS, 300)
    expect(levels.dip(2_000 + DIP_MS, 18, 2)).toBe(14)
  })

  it('dips again within DIP_MS once the limit is past the one put back: the dip said nothing of a higher level', () => {
    const levels = measured([18, 1_000])
    levels.wentDown(14, true, 18, 17, 100)
    measure(levels, 14, 2_000, 101, 18)
    expect(levels.recheck()).toEqual({ limit: 18, knee: 17 })
    measure(levels, 20, 9_000, 200)
    expect(levels.dip(9_000, 20, 2)).toBe(16)
  })
})

describe('StartLevels: the start doubles while a level answers more a second than the level before', () => {
  /** MIN_CALLS ends at each level, of `kind` (or kinds in turn), each `latency(level)` ms give or take `spread` (log, alternately). */
  function start(levels: number[], latencyOf: (level: number, kind: string) => number, kinds = ['report'], spread = 0.2, timed = true): StartLevels {
    const s = new StartLevels()
    for (const level of levels) for (let i = 0; i < MIN_CALLS; i++) {
      const kind = kinds[i % kinds.length]!
      s.ended(level, kind, latencyOf(level, kind) * Math.exp(i % 2 === 0 ? spread : -spread), timed)
    }
    return s
  }

  it('doubles from the first level, and from a level not yet measured', () => {
    expect(start([8], latency).verdict(8)).toBe('double')
    expect(start([8], latency).verdict(16)).toBe('double')
  })

  it('doubles while calls take no longer at twice the calls in flight (twice the answers a second)', () => {
    expect(start([8, 16], () => 100).verdict(16)).toBe('double')
  })

  it('ends at the workers\' worth where the answers a second surely grew by less than half: a queue of 20 workers', () => {
    // Calls past 20 in flight wait at the platform: 64 take 64 / 20 of a call's time, and give what 20 give.
    const queue = (level: number) => 100 * Math.max(1, level / 20)
    expect(start([16, 32], queue).verdict(32)).toBe('double') // 1.25 times 16's: short of 1.5, not surely
    expect(start([8, 16, 32, 64], queue).verdict(64)).toBe(20)
  })

  it('asks the whole gain of a level the likelihood weighed fewer than MIN_CALLS answers of (read late, untimed): 1.25 times 16\'s at 32 ends at the workers\' worth', () => {
    const queue = (level: number) => 100 * Math.max(1, level / 20)
    expect(start([16, 32], queue, ['report'], 0.2, false).verdict(32)).toBe(20)
    expect(start([16, 32], () => 100, ['report'], 0.2, false).verdict(32)).toBe('double') // twice the answers a second: it scales
  })

  it('ends at the level that gave the most where calls past the knee are slower (the capacity bench\'s platform, knee 12)', () => {
    // 6 and 12 give 60 and 120 a second, 24 (580 ms a call) 41; 8 gives 80, 16 (260 ms) 62.
    expect(start([6, 12, 24], latency).verdict(24)).toBe(12)
    expect(start([8, 16], latency).verdict(16)).toBe(8)
  })

  it('reads a level on the calls that took its last seat: those that filled its seats found fewer in flight and ended sooner than the level gives', () => {
    // Knee 13, 259 ms a call and 66 ms more for each call past it (seed 4 of the start's family): 8 give 31 a second, 16 (457 ms a call) 35.
    const ms = (inFlight: number) => 259 + 66 * Math.max(0, inFlight - 13)
    const s = new StartLevels()
    for (let n = 1; n <= 2 * MIN_CALLS; n++) s.ended(8, 'report', ms(Math.min(n, 8)), true, n >= 8)
    // The doubling's new seats fill at once, at 9 to 16 calls in flight; the calls after them each find 16.
    for (let n = 9; n <= 16; n++) s.ended(16, 'report', ms(n), true, n === 16)
    for (let i = 1; i < MIN_CALLS; i++) s.ended(16, 'report', ms(16), true, true)
    // Read on every end, 16 gives 1.4 times 8's, not surely short of 1.5: it doubled, past a refusal at 23.
    expect(s.verdict(16)).toBe(9)
  })

  it('weighs kind against kind: long calls at the level and short ones before it are no fall', () => {
    const s = start([8], () => 100)
    for (let i = 0; i < MIN_CALLS; i++) s.ended(8, 'year', 4000)
    for (let i = 0; i < MIN_CALLS; i++) s.ended(16, i < 6 ? 'year' : 'report', i < 6 ? 4000 : 100)
    expect(s.verdict(16)).toBe('double')
  })
})
