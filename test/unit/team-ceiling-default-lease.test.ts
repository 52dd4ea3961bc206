import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { credentialGovernor } from '../../src/platform/governor/credential-governor.js'
import { MemoryLeaseStore } from '../helpers/memory-lease-store.js'
import { SimClock } from '../sim/sim-clock.js'

// test/unit/team-ceiling-replicas.test.ts with the default platform.seatLease (5 s: renewals
// every 1.67 s, longer than CEILING_TURN) and from 15 s on (every replica has long heard the
// others): at most c in flight, and every replica served in its turn (docs/governor.md, "A
// team's ceiling across replicas"). With turns of a second, both failed (black-box pass F,
// session 134): 2 of 1 and 3 of 2 in flight, and with 2 s calls one replica served 30 calls
// and the other none in the minute.
const log = pino({ level: 'silent' })

function replica(clock: SimClock, store: MemoryLeaseStore, i: number, cap: number, callMs: number) {
  const g = credentialGovernor({
    credential: 'default',
    settings: { adaptive: false, initialConcurrent: 8, minConcurrent: 1, maxConcurrent: 8, maxConcurrentPerReplica: null, seatLeaseMs: 5000, queue: 100, queueTimeoutMs: 600_000, maxPauseMs: 60_000, timeoutMs: 30_000 },
    store, replica: `r${i}`, run: `r${i}`, seal: null, key: 'seats', log,
    limitsOf: (team) => ({ maxConcurrent: team === 'capped' ? cap : null, queue: null }),
    clock,
  })
  const served = { count: 0 }
  const ask = (): void => void g.seats.ask({ team: 'capped', workClass: 'w', deadline: Infinity }).then((seat) => {
    served.count += 1
    clock.setTimeout(() => { seat.end({ kind: 'answer', status: 200, latencyMs: callMs }); ask() }, callMs)
  }, () => undefined)
  return { g, served, ask }
}

describe("a team's ceiling across replicas at the default seatLease", () => {
  for (const [replicas, cap, callMs] of [[2, 1, 300], [3, 2, 700], [2, 1, 2000], [4, 1, 2000], [4, 2, 500], [3, 4, 5000]] as const) {
    it(`maxConcurrent ${cap} over ${replicas} replicas, calls of ${callMs} ms: at most ${cap} in flight, every replica served`, async () => {
      const clock = new SimClock()
      const store = new MemoryLeaseStore(clock, 1)
      const rs = Array.from({ length: replicas }, (_, i) => replica(clock, store, i, cap, callMs))
      for (const r of rs) await r.g.leased?.start()
      for (const r of rs) { r.ask(); r.ask() }
      await clock.run(clock.now() + 15_000)
      const before = rs.map((r) => r.served.count)
      let most = 0
      for (let t = 0; t < 60_000; t += 5) {
        await clock.run(clock.now() + 5)
        most = Math.max(most, rs.reduce((sum, r) => sum + r.g.seats.inFlight, 0))
      }
      expect(most).toBe(cap)
      expect(rs.map((r, i) => r.served.count - (before[i] as number) > 0)).toEqual(rs.map(() => true))
      for (const r of rs) r.g.leased?.stop()
    })
  }
})
