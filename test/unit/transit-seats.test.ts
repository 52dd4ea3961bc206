import { describe, expect, it } from 'vitest'
import { TRANSIT_IDLE, TransitSeats } from '../../src/platform/governor/transit-seats.js'

/** `ticks` ticks 100 ms apart, `idle(i)` seats idle at the i-th. */
function counted(ticks: number, idle: (i: number) => number): TransitSeats {
  const transit = new TransitSeats(64, 20_000)
  for (let i = 0; i < ticks; i++) transit.count(idle(i), 100 * i)
  return transit
}

describe('TransitSeats: the seats past the knee across replicas for the seats in transit between them', () => {
  it('is the probe seat alone where no more than one seat is in transit but in TRANSIT_IDLE of the ticks', () => {
    expect(new TransitSeats(64, 20_000).past(24), 'nothing counted').toBe(1)
    expect(counted(1, () => 3).past(24), 'one tick: fewer than 1 / TRANSIT_IDLE cannot show that share').toBe(1)
    expect(counted(200, (i) => (i % 2 === 0 ? 1 : 0)).past(24), 'one seat in transit half the time').toBe(1)
    expect(counted(200, (i) => (i % 100 === 0 ? 2 : 0)).past(24), `two in ${100 * 2 / 200} % of the ticks`).toBe(1)
  })

  // The scale shape on 50 replicas (issue-shapes.test.ts): at K = W = 24 and the limit 25, two
  // seats or more in transit in 7.5 % of the samples, a worker idle while calls waited.
  it('adds a seat past the probe seat where more than one is in transit in more than TRANSIT_IDLE of the ticks', () => {
    expect(counted(200, (i) => (i % 13 === 0 ? 2 : i % 3 === 0 ? 1 : 0)).past(24)).toBe(2)
    expect(2 / 13).toBeGreaterThan(TRANSIT_IDLE)
  })

  it('adds no more than the calls in flight no standing queue allows past W: max(2, K / 10)', () => {
    expect(counted(200, () => 3).past(24)).toBe(2)
    expect(counted(200, () => 5).past(40)).toBe(4)
    expect(counted(200, (i) => (i % 4 === 0 ? 4 : 3)).past(40)).toBe(4)
    expect(counted(200, (i) => (i % 4 === 0 ? 3 : 2)).past(40)).toBe(3)
  })

  it('reads more seats idle than that bound and one are no transit: too few calls in flight, a limit just raised', () => {
    expect(counted(200, (i) => (i % 2 === 0 ? 4 : 0)).past(24)).toBe(1)
    expect(counted(200, (i) => (i % 2 === 0 ? 4 : i % 3 === 0 ? 3 : 0)).past(24)).toBe(2)
  })

  it('forgets over its fade: ticks of a transit long past weigh little against those now', () => {
    const transit = counted(200, () => 2)
    for (let i = 0; i < 1_000; i++) transit.count(0, 20_000 + 100 * i)
    expect(transit.past(24)).toBe(1)
  })
})
