import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import type { Clock } from '../../src/clock.js'
import { credentialGovernor } from '../../src/platform/governor/credential-governor.js'
import { SteadyClock } from '../../src/platform/governor/steady-clock.js'
import { fakeClock } from '../helpers/clock.js'

// The governor's clock is the wall clock's monotonic reading from the wall clock's time at
// its start (docs/governor.md, "The clock"): a wall clock set back or ahead does not move
// it, and a time from the rest of the gateway (a deadline, a pause's end) is read on it.
// The simulator's runs of a replica stepped: test/sim/clock-offset.test.ts.

/** A fake clock whose reading `step` moves by hand and whose monotonic reading it does not, its timers running on the fake time. */
function wallClock(start = 1_800_000_000_000): Clock & { advance(ms: number): void; step(ms: number): void } {
  const time = fakeClock(start)
  let off = 0
  return { ...time, now: () => time.now() + off, monotonic: () => time.now() - start + 12.5, advance: (ms) => time.advance(ms), step: (ms) => { off += ms } }
}

describe('the governor\'s clock', () => {
  it('reads the wall clock at its start, then runs with the monotonic reading across steps back and ahead', () => {
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
    // A step ahead is not time passing: the calls across it are not read as that much longer.
    wall.step(13_000)
    expect(clock.now()).toBe(t0 + 700)
    wall.advance(300)
    expect(clock.now()).toBe(t0 + 1_000)
    expect(clock.now() - wall.now()).toBe(-3_000)
  })

  it('reads a wall clock without a monotonic reading as its own', () => {
    const time = fakeClock(1_800_000_000_000)
    const clock = new SteadyClock(time)
    time.advance(700)
    expect(clock.now()).toBe(time.now())
    expect(clock.fromWall(time.now() + 2_000)).toBe(time.now() + 2_000)
  })

  it('reads a wall clock time (a deadline, a pause\'s end) moved by the wall clock\'s steps, either way; 0, none, stays 0', () => {
    for (const step of [-60_000, 60_000]) {
      const wall = wallClock()
      const clock = new SteadyClock(wall)
      wall.step(step)
      expect(clock.fromWall(wall.now() + 2_000)).toBe(clock.now() + 2_000)
      expect(clock.fromWall(0)).toBe(0)
      expect(clock.fromWall(Infinity)).toBe(Infinity)
    }
  })

  it('sends a call whose deadline, on the wall clock set back, leaves it the time its kind takes', async () => {
    const { wall, g } = await aKindOfOneSecond()
    wall.step(-10_000)
    // 3 s left on the wall clock: the call is sent; read against the governor's clock unmoved, it would have none left.
    const next = await g.seats.ask({ team: 'a', workClass: 'w', deadline: wall.now() + 3_000 })
    expect(g.seats.inFlight).toBe(1)
    next.end({ kind: 'answer', status: 200, latencyMs: 1_000 })
  })

  it('does not send a call whose deadline, on the wall clock set ahead, leaves it less than the time its kind takes', async () => {
    const { wall, g } = await aKindOfOneSecond()
    wall.step(10_000)
    // 0.5 s left on the wall clock for a call of 1 s: read against the governor's clock unmoved, it would have 10.5 s.
    await expect(g.seats.ask({ team: 'a', workClass: 'w', deadline: wall.now() + 500 })).rejects.toThrow()
    expect(g.seats.inFlight).toBe(0)
  })
})

/** A governor on a wall clock that steps, after one call of team a's kind took 1 s at the platform. */
async function aKindOfOneSecond(): Promise<{ wall: ReturnType<typeof wallClock>; g: ReturnType<typeof credentialGovernor> }> {
  const wall = wallClock()
  const g = credentialGovernor({
    credential: 'default',
    settings: { adaptive: false, initialConcurrent: 4, minConcurrent: 1, maxConcurrent: 4, maxConcurrentPerReplica: null, seatLeaseMs: 600, queue: 10, queueTimeoutMs: 10_000, maxPauseMs: 60_000, timeoutMs: 10_000 },
    store: null, replica: 'r0', run: 'r0', seal: null, key: 'seats', log: pino({ level: 'silent' }), clock: wall,
  })
  const first = await g.seats.ask({ team: 'a', workClass: 'w', deadline: wall.now() + 5_000 })
  wall.advance(1_000)
  first.end({ kind: 'answer', status: 200, latencyMs: 1_000 })
  return { wall, g }
}
