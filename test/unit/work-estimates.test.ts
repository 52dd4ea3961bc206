import { describe, expect, it } from 'vitest'
import { CUT_CONFIRMS, CUT_GROWTH, CUT_MEMORY_MS, CUT_TRIAL_MS, ESTIMATE_GAIN, MAX_KINDS, roomFor, WorkEstimates } from '../../src/platform/governor/work-estimates.js'
import { learnFrom } from '../../src/platform/governor/seat.js'

// How long a call holds its seat, by its kind (docs/governor.md, "expected seat-time").

const NOW = 1_800_000_000_000

describe('WorkEstimates', () => {
  it('knows nothing of a kind no team has had answered', () => {
    const w = new WorkEstimates()
    expect(w.expectedMs('a', 'year', NOW)).toBeNull()
  })

  it('takes the first answer, then moves by ESTIMATE_GAIN of each answer\'s difference', () => {
    const w = new WorkEstimates()
    w.answered('a', 'week', 100)
    expect(w.expectedMs('a', 'week', NOW)).toBe(100)
    w.answered('a', 'week', 200)
    expect(w.expectedMs('a', 'week', NOW)).toBeCloseTo(100 + ESTIMATE_GAIN * 100)
  })

  it('takes a team\'s own answers first, else what the same work took for the other teams: no team makes another\'s calls look short', () => {
    const w = new WorkEstimates()
    w.answered('a', 'year', 4000)
    // b never had it answered: it takes a's.
    expect(w.expectedMs('b', 'year', NOW)).toBe(4000)
    // b's own answers are its own; a keeps its own.
    w.answered('b', 'year', 100)
    expect(w.expectedMs('b', 'year', NOW)).toBe(100)
    expect(w.expectedMs('a', 'year', NOW)).toBe(4000)
    // A third team takes the work's estimate over every team's answers.
    expect(w.expectedMs('c', 'year', NOW)).toBeCloseTo(4000 + ESTIMATE_GAIN * (100 - 4000))
    // Other work is its own kind.
    expect(w.expectedMs('a', 'week', NOW)).toBeNull()
  })

  it('tells a team its own answers and cuts alone (ownMs): never another team\'s, nor a cut of a kind it had no answer of', () => {
    const w = new WorkEstimates()
    w.answered('a', 'year', 4000)
    w.cut('a', 'month', 1000, NOW)
    // b's calls are scheduled by a's answers (expectedMs), but b is told nothing of them.
    expect(w.expectedMs('b', 'year', NOW)).toBe(4000)
    expect(w.ownMs('b', 'year', NOW)).toBeNull()
    expect(w.ownMs('b', 'month', NOW)).toBeNull()
    // a's cut of a kind it had no answer of is no estimate it is told either.
    expect(w.ownMs('a', 'month', NOW)).toBeNull()
    w.answered('b', 'year', 100)
    w.cut('a', 'year', 8000, NOW)
    expect(w.ownMs('b', 'year', NOW)).toBe(100)
    expect(w.ownMs('a', 'year', NOW)).toBe(CUT_GROWTH * 8000)
  })

  it('takes a kind cut by its deadline to take CUT_GROWTH times what it ran, for CUT_MEMORY_MS, then its answers\' estimate again', () => {
    const w = new WorkEstimates()
    w.answered('a', 'year', 1000)
    w.cut('a', 'year', 2000, NOW)
    expect(w.expectedMs('a', 'year', NOW)).toBe(CUT_GROWTH * 2000)
    expect(w.expectedMs('a', 'year', NOW + CUT_MEMORY_MS - 1)).toBe(CUT_GROWTH * 2000)
    expect(w.expectedMs('a', 'year', NOW + CUT_MEMORY_MS)).toBe(1000)
  })

  it('keeps the longer of a cut and the answers, and of two cuts within the memory; a cut of an unknown kind is all that is known of it', () => {
    const w = new WorkEstimates()
    w.answered('a', 'year', 5000)
    w.cut('a', 'year', 1000, NOW)
    expect(w.expectedMs('a', 'year', NOW)).toBe(5000)
    w.cut('a', 'month', 1000, NOW)
    w.cut('a', 'month', 400, NOW + 10)
    expect(w.expectedMs('a', 'month', NOW + 10)).toBe(CUT_GROWTH * 1000)
    // Once the first cut is forgotten, a new one is taken as it is.
    w.cut('a', 'month', 400, NOW + CUT_MEMORY_MS + 20)
    expect(w.expectedMs('a', 'month', NOW + CUT_MEMORY_MS + 20)).toBe(CUT_GROWTH * 400)
  })

  it('forgets a cut once a call of its kind is answered sooner than it said', () => {
    const w = new WorkEstimates()
    w.cut('a', 'month', 1000, NOW)
    w.answered('a', 'month', 300)
    expect(w.expectedMs('a', 'month', NOW + 1)).toBe(300)
  })

  it('needs for a call what its kind\'s answers took; a kind never answered but cut, what the cut says', () => {
    const w = new WorkEstimates()
    expect(w.neededMs('a', 'new', NOW)).toBeNull()
    w.answered('a', 'week', 130)
    w.cut('a', 'week', 30_000, NOW)
    // A hang of a kind that answers says nothing of the next call's need.
    expect(w.neededMs('a', 'week', NOW)).toBe(130)
    w.cut('a', 'year', 30_000, NOW)
    expect(w.neededMs('a', 'year', NOW + 1)).toBe(CUT_GROWTH * 30_000)
  })

  it('needs what the cuts say once CUT_CONFIRMS of them came after the kind\'s newest answer shorter than them, until one comes again', () => {
    const w = new WorkEstimates()
    w.answered('a', 'week', 20)
    // The kind became slower than twice its budget: its calls cut at the watch's end, never answered.
    for (let i = 1; i < CUT_CONFIRMS; i++) w.cut('a', 'week', 2000, NOW)
    expect(w.neededMs('a', 'week', NOW)).toBe(20)
    w.cut('a', 'week', 2000, NOW + 100)
    expect(w.neededMs('a', 'week', NOW + 100)).toBe(CUT_GROWTH * 2000)
    // Another team's cuts say nothing of this team's need.
    expect(w.neededMs('b', 'week', NOW + 100)).toBe(20)
    // An answer within the cut (a trial, or a call in flight) outweighs the cuts before it.
    w.answered('a', 'week', 30)
    expect(w.neededMs('a', 'week', NOW + 200)).toBeCloseTo(20 + ESTIMATE_GAIN * 10)
    for (let i = 1; i < CUT_CONFIRMS; i++) w.cut('a', 'week', 2000, NOW + 300)
    expect(w.neededMs('a', 'week', NOW + 300)).toBeCloseTo(20 + ESTIMATE_GAIN * 10)
    // Cuts are forgotten after CUT_MEMORY_MS.
    w.cut('a', 'week', 2000, NOW + 400)
    expect(w.neededMs('a', 'week', NOW + 400 + CUT_MEMORY_MS - 1)).toBe(CUT_GROWTH * 2000)
    expect(w.neededMs('a', 'week', NOW + 400 + CUT_MEMORY_MS)).toBeCloseTo(20 + ESTIMATE_GAIN * 10)
    for (let i = 1; i < CUT_CONFIRMS; i++) w.cut('a', 'week', 2000, NOW + 500 + CUT_MEMORY_MS)
    expect(w.neededMs('a', 'week', NOW + 500 + CUT_MEMORY_MS)).toBeCloseTo(20 + ESTIMATE_GAIN * 10)
  })

  it('sets aside the cut of a call when a call of its kind sent after it was answered within the cut: calls that hung together are one hang, not the kind slowing', () => {
    const w = new WorkEstimates()
    // A stopped platform: two calls sent at NOW hang; one sent 500 ms later is answered in 20 ms once the platform is back.
    w.answered('a', 'week', 20, NOW - 1000)
    w.answered('a', 'week', 20, NOW + 500)
    // The two are cut by their watch's end, with no answer between the cuts.
    for (let i = 0; i < CUT_CONFIRMS; i++) w.cut('a', 'week', 2000, NOW + 2000 + i, NOW)
    expect(w.neededMs('a', 'week', NOW + 2010)).toBe(20)
    expect(w.ownMs('a', 'week', NOW + 2010)).toBe(20)
    expect(w.expectedMs('b', 'week', NOW + 2010)).toBe(20)
    // Cuts of calls sent after the latest answer stand: the kind slowed.
    for (let i = 0; i < CUT_CONFIRMS; i++) w.cut('a', 'week', 2000, NOW + 2600 + i, NOW + 600)
    expect(w.neededMs('a', 'week', NOW + 2610)).toBe(CUT_GROWTH * 2000)
    // An answer sent later but slower than the cut says it: it sets no cut aside.
    const slowed = new WorkEstimates()
    slowed.answered('a', 'week', 20, NOW - 1000)
    slowed.answered('a', 'week', 3500, NOW + 500)
    for (let i = 0; i < CUT_CONFIRMS; i++) slowed.cut('a', 'week', 2000, NOW + 4000 + i, NOW)
    expect(slowed.neededMs('a', 'week', NOW + 4010)).toBe(CUT_GROWTH * 2000)
  })

  it('sends a kind that needs more than its budget once each CUT_TRIAL_MS, from the first call found too long', () => {
    const w = new WorkEstimates()
    expect(w.trial('a', 'year', NOW)).toBe(false)
    expect(w.trial('a', 'year', NOW + CUT_TRIAL_MS - 1)).toBe(false)
    expect(w.trial('a', 'year', NOW + CUT_TRIAL_MS)).toBe(true)
    expect(w.trial('a', 'year', NOW + CUT_TRIAL_MS + 1)).toBe(false)
    expect(w.trial('a', 'year', NOW + 2 * CUT_TRIAL_MS)).toBe(true)
  })

  it('learns nothing from a call that met a fault, neither its answer nor its cut: its time was the fault\'s (docs/governor.md, "Faults")', () => {
    const w = new WorkEstimates()
    expect(learnFrom(w, 'a', 'month', { kind: 'answer', status: 200, latencyMs: 2000 }, NOW, NOW - 2000)).toBe('ok')
    // Answered as a stall ended, and cut by its deadline in it: what the limit rule is told stands, the kind's time does not move.
    expect(learnFrom(w, 'a', 'month', { kind: 'answer', status: 200, latencyMs: 11_000 }, NOW, NOW - 11_000, true)).toBe('ok')
    expect(learnFrom(w, 'a', 'month', { kind: 'none', latencyMs: 4500, timedOut: true }, NOW, NOW - 4500, true)).toBe('other')
    expect(w.expectedMs('a', 'month', NOW)).toBe(2000)
    expect(w.neededMs('a', 'month', NOW)).toBe(2000)
    // The same answer outside a fault teaches it.
    learnFrom(w, 'a', 'month', { kind: 'answer', status: 200, latencyMs: 11_000 }, NOW, NOW - 11_000)
    expect(w.expectedMs('a', 'month', NOW)).toBeCloseTo(2000 + ESTIMATE_GAIN * 9000)
  })

  it('forgets the least recently seen kind past MAX_KINDS', () => {
    const w = new WorkEstimates()
    for (let i = 0; i < MAX_KINDS; i++) w.answered('a', `w${i}`, 10)
    // Seen again: w1 is now the least recently seen.
    w.answered('a', 'w0', 10)
    w.answered('a', 'new', 10)
    expect(w.expectedMs('a', 'w0', NOW)).toBe(10)
    expect(w.expectedMs('a', 'w1', NOW)).toBeNull()
    expect(w.expectedMs('a', 'new', NOW)).toBe(10)
  })

  it("makes room past MAX_KINDS from the team holding the most kinds: one team's many kinds push out its own, never another's", () => {
    const w = new WorkEstimates()
    w.answered('b', 'month', 10)
    w.answered('c', 'year', 20)
    for (let i = 0; i < MAX_KINDS; i++) w.answered('a', `w${i}`, 10)
    expect(w.kinds).toBe(MAX_KINDS)
    expect(w.ownMs('b', 'month', NOW)).toBe(10)
    expect(w.ownMs('c', 'year', NOW)).toBe(20)
    // a's own went, least recently seen first.
    expect(w.ownMs('a', 'w0', NOW)).toBeNull()
    expect(w.ownMs('a', 'w1', NOW)).toBeNull()
    expect(w.ownMs('a', `w${MAX_KINDS - 1}`, NOW)).toBe(10)
    // A team within its part, its new kind counted with it, takes its room from the team most past its part.
    w.answered('b', 'week', 5)
    expect(w.ownMs('b', 'month', NOW)).toBe(10)
    expect(w.ownMs('a', 'w2', NOW)).toBeNull()
  })
})

describe('roomFor', () => {
  it('names the least recently seen kind of the team holding the most, the new kind counted with its team; of work alone, the least recently seen', () => {
    expect(roomFor(['a\n1', 'b\n1', 'b\n2', 'a\n2'], 'a\n3')).toBe('a\n1')
    expect(roomFor(['a\n1', 'b\n1', 'b\n2', 'a\n2'], 'c\n1')).toBe('a\n1')
    expect(roomFor(['a\n1', 'b\n1', 'b\n2', 'b\n3'], 'a\n2')).toBe('b\n1')
    expect(roomFor(['b\n1', 'a\n1', 'a\n2', 'b\n2'], 'c\n1')).toBe('b\n1')
    expect(roomFor(['year', 'month'], 'week')).toBe('year')
  })
})
