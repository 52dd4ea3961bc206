import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import type { Clock } from '../../src/clock.js'
import { credentialGovernor } from '../../src/platform/governor/credential-governor.js'
import { SteadyClock } from '../../src/platform/governor/steady-clock.js'
import { fakeClock } from '../helpers/clock.js'

// The governor's clock never runs back (docs/governor.md, "The clock"): a wall clock set back
// is held as the time the governor's clock is past it, and a time from the rest of the
// gateway (a deadline, a pause's end) is read on it. The simulator's runs of a replica
// stepped back: test/sim/clock-offset.test.ts.

/** A fake clock whose reading `step` moves by hand, its timers running on the fake time. */
function wallClock(start = 1_800_000_000_000): Clock & { advance(ms: number): void; step(ms: number): void } {
  const time = fakeClock(start)
  let off = 0
  return { ...time, now: () => time.now() + off, advance: (ms) => time.advance(ms), step: (ms) => { off += ms } }
}

describe('the governor\'s clock', () => {
  it('reads the wall clock, stands still across a step back, then runs at its rate past it by the step', () => {
    const wall = wallClock()
    const clock = new SteadyClock(wall)
    const t0 = clock.now()
    expect(t0).toBe(wall.now())
    wall.advance(500)
    expect(clock.now()).toBe(t0 + 500)
    wall.step(-10_000)
    expect(clock.now()).toBe(t0 + 500)
    wall.advance(200)
    expect(clock.now()).toBe(t0 + 700)
    expect(clock.now() - wall.now()).toBe(10_000)
    // A step ahead is time passing, as the wall clock tells it.
    wall.step(3_000)
    expect(clock.now()).toBe(t0 + 3_700)
  })

  it('reads a wall clock time (a deadline, a pause\'s end) past the wall clock by its steps back; 0, none, stays 0', () => {
    const wall = wallClock()
    const clock = new SteadyClock(wall)
    clock.now()
    wall.step(-60_000)
    expect(clock.fromWall(wall.now() + 2_000)).toBe(clock.now() + 2_000)
    expect(clock.fromWall(0)).toBe(0)
    expect(clock.fromWall(Infinity)).toBe(Infinity)
  })

  it('sends a call whose deadline, on the wall clock set back, leaves it the time its kind takes', async () => {
    const wall = wallClock()
    const g = credentialGovernor({
      credential: 'default',
      settings: { adaptive: false, initialConcurrent: 4, minConcurrent: 1, maxConcurrent: 4, maxConcurrentPerReplica: null, seatLeaseMs: 600, queue: 10, queueTimeoutMs: 10_000, maxPauseMs: 60_000, timeoutMs: 10_000 },
      store: null, replica: 'r0', run: 'r0', seal: null, key: 'seats', log: pino({ level: 'silent' }), clock: wall,
    })
    // The team's calls of this kind take 1 s at the platform.
    const first = await g.seats.ask({ team: 'a', workClass: 'w', deadline: wall.now() + 5_000 })
    wall.advance(1_000)
    first.end({ kind: 'answer', status: 200, latencyMs: 1_000 })
    wall.step(-10_000)
    // 3 s left on the wall clock: the call is sent; read against the governor's clock unmoved, it would have none left.
    const next = await g.seats.ask({ team: 'a', workClass: 'w', deadline: wall.now() + 3_000 })
    expect(g.seats.inFlight).toBe(1)
    next.end({ kind: 'answer', status: 200, latencyMs: 1_000 })
  })
})
