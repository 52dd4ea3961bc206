import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { credentialGovernor } from '../../src/platform/governor/credential-governor.js'
import { CredentialSeats } from '../../src/platform/governor/seats.js'
import { WorkEstimates } from '../../src/platform/governor/work-estimates.js'
import { ElsewhereCharges, type ReplicaRecord } from '../../src/platform/governor/lease-plan.js'
import type { Seat } from '../../src/platform/governor/seat.js'
import { fakeClock } from '../helpers/clock.js'

// What one credential's governor keeps by team name is bounded by the teams configured now
// (docs/decisions/team-keyed-maps.md): a team a reload removes keeps its account and its own
// estimates while it holds a seat or waits for one, and loses them as its last call ends.

const ANSWER = { kind: 'answer', status: 200, latencyMs: 10 } as const

describe('the seats\' accounts and own estimates', () => {
  it('are kept for the teams configured now: a removed team holding nothing goes at once, one holding or waiting as its last call ends', async () => {
    const work = new WorkEstimates()
    const s = new CredentialSeats({ credential: 'c', maxConcurrent: 8, limit: 1, queueLimit: 10, queueTimeoutMs: 10_000, maxPauseMs: 60_000, work, clock: fakeClock() })
    const ask = (team: string): Promise<Seat> => s.ask({ team, workClass: 'w', deadline: Infinity })
    for (const team of ['a', 'b']) (await ask(team)).end(ANSWER)
    const holding = await ask('c')
    const waiting = ask('d')
    expect([s.teamsKept, work.kinds, s.inFlight, s.queued]).toEqual([4, 2, 1, 1])

    s.keepTeams((team) => team === 'a')
    // b goes; c holds its seat and d waits for one: theirs stay.
    expect([s.teamsKept, work.kinds]).toEqual([3, 1])
    holding.end(ANSWER)
    // c's last call ended (its answer taught its estimate first); d's call has c's seat now.
    expect([s.teamsKept, work.kinds, s.inFlight]).toEqual([2, 1, 1])
    ;(await waiting).end(ANSWER)
    expect([s.teamsKept, work.kinds]).toEqual([1, 1])
  })

  it('are not made for a removed team whose ask is refused at once (a request let in before the reload)', async () => {
    const clock = fakeClock()
    const s = new CredentialSeats({ credential: 'c', maxConcurrent: 8, limit: 1, queueLimit: 10, queueTimeoutMs: 10_000, maxPauseMs: 60_000, work: new WorkEstimates(), clock })
    s.keepTeams((team) => team === 'a')
    await expect(s.ask({ team: 'gone', workClass: 'w', deadline: clock.now() })).rejects.toThrow()
    expect(s.teamsKept).toBe(0)
  })
})

describe('the limit rule\'s kinds (team × work)', () => {
  // A removed team's kinds go with its account, their evidence kept in the rule's sums: the
  // likelihood of every guess is the same the moment after as before.
  it('are kept for the teams kept, a removed team\'s going as its account does, the rule\'s sums unmoved', async () => {
    const clock = fakeClock()
    const g = credentialGovernor({
      credential: 'c', store: null, replica: 'r', run: 'r', seal: null, key: 'k', log: pino({ level: 'silent' }), clock,
      settings: { adaptive: true, initialConcurrent: 4, minConcurrent: 1, maxConcurrent: 8, maxConcurrentPerReplica: null, seatLeaseMs: 600, queue: 100, queueTimeoutMs: 20_000, maxPauseMs: 60_000, timeoutMs: 10_000 },
    })
    const estimator = g.estimator!
    // Rounds of three calls at once, one a team, answered after 40, 60 and 90 ms (and i more).
    for (let i = 0; i < 8; i++) {
      const [a, b, c] = await Promise.all(['a', 'b', 'c'].map((team) => g.seats.ask({ team, workClass: 'w', deadline: Infinity })))
      let at = 0
      for (const [seat, ms] of [[a, 40], [c, 60], [b, 90]] as const) {
        clock.advance(ms + i - at)
        at = ms + i
        seat!.end({ kind: 'answer', status: 200, latencyMs: ms + i })
      }
    }
    expect(estimator.kinds.length).toBe(3)
    const before = estimator.evidence(clock.now())
    // Evidence that tells the guesses apart (tenths of log-likelihood below the likeliest).
    expect(before).toMatch(/;.*[1-9]/)
    const holding = await g.seats.ask({ team: 'c', workClass: 'w', deadline: Infinity })
    g.seats.keepTeams((team) => team === 'a')
    // b holds nothing: its kind goes; c holds a seat: its kind stays until its call ends.
    expect(estimator.kinds.map((k) => k.split('\n')[0])).toEqual(['a', 'c'])
    expect(estimator.evidence(clock.now())).toEqual(before)
    holding.end({ kind: 'answer', status: 200, latencyMs: 1 })
    expect(estimator.kinds.map((k) => k.split('\n')[0])).toEqual(['a'])
  })
})

/** Replica b's record, its teams' seat-time counters as given. */
const peer = (counters: Record<string, number>): ReplicaRecord => ({
  run: 'b~1', lease: 1, inFlight: 1, need: 1, answered: 0, waited: false,
  teams: Object.entries(counters).map(([team, seatMs]) => ({ team, weight: 1, cap: null, held: 1, waiting: 0, lingering: false, peak: 1, seatMs })),
})

describe('the seat-time charged from the other replicas', () => {
  it('is kept for the teams kept: a peer that still tells of a removed team adds no entry back', () => {
    const charges = new ElsewhereCharges()
    charges.seen([peer({ x: 0, y: 0 })])
    charges.seen([peer({ x: 100, y: 50 })])
    expect(charges.teams).toBe(2)
    charges.keep((team) => team === 'x')
    expect(charges.teams).toBe(1)
    charges.seen([peer({ x: 250, y: 80 })])
    expect(charges.teams).toBe(1)
    expect(charges.totals.get('x')).toBe(250)
  })
})
