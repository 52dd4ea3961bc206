import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { credentialGovernor } from '../../src/platform/governor/credential-governor.js'
import type { Seat } from '../../src/platform/governor/seat.js'
import { MemoryLeaseStore } from '../helpers/memory-lease-store.js'
import { SimClock } from '../sim/sim-clock.js'

// More replicas than seats (docs/governor.md, "Across replicas": the seat a due rounds to
// is taken in turns), on the simulator's clock against the in-memory store: how often
// the seats change hands is a matter of time (a turn's seat-time against a call's), so
// it is counted where time is simulated. test/slow/seats-replicas.test.ts runs the same
// replicas over a real Redis.

const log = pino({ level: 'silent' })
const REPLICAS = 5
const LIMIT = 2
// Every POLL_MS the calls held end and as many come: each replica always waits for a seat.
const POLL_MS = 5
const RUN_MS = 10_000
const LEASE_MS = 600

function replica(clock: SimClock, store: MemoryLeaseStore, i: number) {
  const g = credentialGovernor({
    credential: 'default',
    settings: { adaptive: false, initialConcurrent: LIMIT, minConcurrent: 1, maxConcurrent: LIMIT, maxConcurrentPerReplica: null, seatLeaseMs: LEASE_MS, queue: 100, queueTimeoutMs: 20_000, maxPauseMs: 60_000, timeoutMs: 1000 },
    store,
    replica: `r${i}`,
    run: `r${i}`,
    seal: null,
    key: 'seats',
    log,
    limitsOf: () => ({ maxConcurrent: null, queue: null }),
    clock,
  })
  const held: Seat[] = []
  const call = () => void g.seats.ask({ team: 'a', workClass: 'w', deadline: Infinity }).then((seat) => held.push(seat), () => undefined)
  return { g, held, call }
}

describe('more replicas than seats, on the simulator\'s clock', () => {
  // The seat a due rounds to goes round furthest behind first (lease-plan.ts): a replica further
  // behind than the others takes it at the next hand-over, so none waits behind the others' luck in
  // renewing first. Its turns change at renewals (a keep-alive each third of the 600 ms lease):
  // five replicas due 0.4 seat each wait about a lease between turns, and at most two.
  it('gives every replica a seat in turn, handing seats over once a turn rather than once a call, never past the limit', async () => {
    const clock = new SimClock()
    const store = new MemoryLeaseStore(clock, 1)
    const replicas = Array.from({ length: REPLICAS }, (_, i) => replica(clock, store, i))
    for (const r of replicas) {
      await r.g.leased?.start()
      r.call()
      r.call()
    }
    const served = new Set<number>()
    let [calls, handovers, peak] = [0, 0, 0]
    let holding = replicas.map(() => false)
    const start = clock.now()
    const heldLast = replicas.map(() => start)
    let [longestWait, full, samples] = [0, 0, 0]
    for (const end = clock.now() + RUN_MS; clock.now() < end; ) {
      await clock.run(clock.now() + POLL_MS)
      peak = Math.max(peak, replicas.reduce((sum, r) => sum + r.g.seats.inFlight, 0))
      const now = replicas.map((r) => r.g.seats.inFlight > 0)
      handovers += now.filter((h, i) => holding[i] && !h).length
      holding = now
      now.forEach((h, i) => {
        if (h) heldLast[i] = clock.now()
        longestWait = Math.max(longestWait, clock.now() - (heldLast[i] as number))
      })
      // Past the first lease, both seats in use whenever a call waits (one always does).
      if (clock.now() - start > LEASE_MS) {
        samples += 1
        if (replicas.reduce((sum, r) => sum + r.g.seats.inFlight, 0) === LIMIT) full += 1
      }
      replicas.forEach((r, i) => {
        if (r.held.length > 0) served.add(i)
        for (const seat of r.held.splice(0)) {
          seat.end({ kind: 'answer', status: 200, latencyMs: POLL_MS })
          calls += 1
          r.call()
        }
      })
    }
    for (const r of replicas) r.g.leased?.stop()
    expect(served.size).toBe(REPLICAS)
    expect(peak).toBeLessThanOrEqual(LIMIT)
    // A seat per call would change hands with every call; a turn holds it for many.
    expect(handovers).toBeLessThan(calls / 3)
    expect(longestWait).toBeLessThanOrEqual(2 * LEASE_MS)
    expect(full / samples).toBeGreaterThanOrEqual(0.98)
  })
})
