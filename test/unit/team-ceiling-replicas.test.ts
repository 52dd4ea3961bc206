import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { credentialGovernor } from '../../src/platform/governor/credential-governor.js'
import { ceilingPart } from '../../src/platform/governor/lease-plan.js'
import { MemoryLeaseStore } from '../helpers/memory-lease-store.js'
import { SimClock } from '../sim/sim-clock.js'

// A team's ceiling (teams[].maxConcurrent) holds across replicas (docs/configuration.md,
// docs/governor.md "A team's ceiling across replicas"): the parts of it the replicas fill add
// up to it at most, and the seats left over go round in turns, so that a replica where the
// team has calls waiting is served too.
const log = pino({ level: 'silent' })

describe('ceilingPart', () => {
  it('gives each replica its part of the ceiling by its calls, rounded down, and the seats left over in turns', () => {
    const two = [{ run: 'a', calls: 2 }, { run: 'b', calls: 2 }]
    const seats = (cap: number, run: string, here: number, all: { run: string; calls: number }[], turn: number) => {
      const { whole, left } = ceilingPart(cap, run, here, all, turn)
      return whole + (left ? 1 : 0)
    }
    expect([0, 1, 2, 3].map((turn) => [seats(1, 'a', 2, two, turn), seats(1, 'b', 2, two, turn)])).toEqual([[1, 0], [0, 1], [1, 0], [0, 1]])
    expect(ceilingPart(1, 'a', 2, two, 0)).toEqual({ whole: 0, left: true })
    // Parts by calls: 3 of 4 seats for the replica with 6 calls of 8; the ceiling never passed.
    const uneven = [{ run: 'a', calls: 6 }, { run: 'b', calls: 2 }]
    for (const turn of [0, 1]) expect(seats(4, 'a', 6, uneven, turn) + seats(4, 'b', 2, uneven, turn)).toBe(4)
    // Calls within the ceiling: each replica fills what it wants.
    expect(ceilingPart(5, 'a', 2, [{ run: 'b', calls: 3 }], 0)).toEqual({ whole: 2, left: false })
    // A replica with none here has no part; its own count, not its record's, is read.
    expect(seats(2, 'a', 0, [{ run: 'a', calls: 5 }, { run: 'b', calls: 3 }], 0)).toBe(0)
  })
})

function replica(clock: SimClock, store: MemoryLeaseStore, i: number, cap: number) {
  const g = credentialGovernor({
    credential: 'default',
    settings: { adaptive: false, initialConcurrent: 8, minConcurrent: 1, maxConcurrent: 8, maxConcurrentPerReplica: null, seatLeaseMs: 600, queue: 100, queueTimeoutMs: 60_000, maxPauseMs: 60_000, timeoutMs: 1000 },
    store, replica: `r${i}`, run: `r${i}`, seal: null, key: 'seats', log,
    limitsOf: (team) => ({ maxConcurrent: team === 'capped' ? cap : null, queue: null }),
    clock,
  })
  const served = { count: 0 }
  // A caller that asks again as soon as its call ends: each call holds its seat CALL_MS.
  const ask = (): void => void g.seats.ask({ team: 'capped', workClass: 'w', deadline: Infinity }).then((seat) => {
    served.count += 1
    clock.setTimeout(() => { seat.end({ kind: 'answer', status: 200, latencyMs: CALL_MS }); ask() }, CALL_MS)
  }, () => undefined)
  return { g, served, ask }
}

const CALL_MS = 300

describe("a team's ceiling across replicas", () => {
  for (const [replicas, cap] of [[2, 1], [4, 1], [4, 2], [3, 4]] as const) {
    it(`holds a team of maxConcurrent ${cap} to ${cap} call(s) in flight over ${replicas} replicas, each replica's callers served`, async () => {
      const clock = new SimClock()
      const store = new MemoryLeaseStore(clock, 1)
      const rs = Array.from({ length: replicas }, (_, i) => replica(clock, store, i, cap))
      for (const r of rs) await r.g.leased?.start()
      for (const r of rs) { r.ask(); r.ask() }
      // From 1 s on: each replica has heard the others' calls (the calls of the first moment, each
      // replica's own before it heard of any other, may outlast that: docs/governor.md).
      await clock.run(clock.now() + 1000)
      const before = rs.map((r) => r.served.count)
      let most = 0
      for (let t = 0; t < 20_000; t += 5) {
        await clock.run(clock.now() + 5)
        most = Math.max(most, rs.reduce((sum, r) => sum + r.g.seats.inFlight, 0))
      }
      expect(most).toBe(cap)
      // Every replica's callers are served in the 20 s, the seats left over going round.
      expect(rs.map((r, i) => r.served.count - (before[i] as number) > 0)).toEqual(rs.map(() => true))
      for (const r of rs) r.g.leased?.stop()
    })
  }
})
