import { describe, expect, it } from 'vitest'
import { ADOPT_MAX_FACTOR, LearnedLimit, RECORD_MAX_AGE_MS, REWRITE_MS, TICK_MS } from '../../src/platform/governor/learned-limit.js'
import type { LeasedSeats } from '../../src/platform/governor/leased-seats.js'
import type { LeaseAnswer } from '../../src/platform/governor/lease-store.js'
import type { LeasePlan } from '../../src/platform/governor/lease-plan.js'
import { CredentialSeats } from '../../src/platform/governor/seats.js'
import { WorkEstimates } from '../../src/platform/governor/work-estimates.js'
import { RedisSeal } from '../../src/redis/seal.js'
import { fakeClock, type FakeClock } from '../helpers/clock.js'
import { LimitRuleStandIn } from '../helpers/limit-rule.js'

// The limit in force of one credential and the shared limit record (learned-limit.ts): the
// replica that learns writes it sealed; the others take it from their renewals, within bounds.
// The limit rule itself (knee-estimator.ts) is stood in for: only what LearnedLimit asks of it.

const SECRET = 'a-gateway-secret-of-32-characters!'
const KEY = 'rgw:seats:{default}'

function learnedLimit(clock: FakeClock, opts: { seal?: RedisSeal | null; lease?: boolean } = {}) {
  const estimator = new LimitRuleStandIn()
  const seats = new CredentialSeats({ credential: 'default', maxConcurrent: 64, limit: 2, queueLimit: 10, queueTimeoutMs: 1000, maxPauseMs: 60_000, work: new WorkEstimates(), clock })
  const written: string[] = []
  const writers: string[] = []
  let readLimit: (text: string) => { run?: string; at: number } | null = () => null
  const told: boolean[] = []
  const lease = { run: 'r1', leaseMs: 3000, offsetMs: 0, waitedElsewhere: () => lease.waiting, waiting: false, writeLimit: (record: string, tell = true) => written.push(record) && told.push(tell), reportCalls: () => undefined, readLimitWith: (fn: typeof readLimit) => (readLimit = fn) }
  const warnings: string[] = []
  const limits: [number, number][] = []
  const moves: [string, number, number][] = []
  const learned = new LearnedLimit({
    credential: 'default',
    estimator: estimator.estimator,
    seats,
    lease: opts.lease === false ? null : (lease as unknown as LeasedSeats),
    seal: opts.seal === undefined ? new RedisSeal(SECRET) : opts.seal,
    key: KEY,
    log: { info: () => undefined, warn: (_fields: unknown, msg: string) => warnings.push(msg) } as never,
    onLimit: (limit, knee) => limits.push([limit, knee]),
    onMove: (move, from, to) => moves.push([move, from, to]),
    clock,
  })
  /** A lease renewal's answer: the shared record it carries, and whether this replica learns. */
  const renewed = (limitRecord: string | null, learner: boolean, others: LeaseAnswer['others'] = []) => {
    // The lease reads the record's writer as it works out its plan (leased-seats.ts).
    const writer = limitRecord === null ? null : readLimit(limitRecord)
    if (writer?.run !== undefined) writers.push(writer.run)
    learned.renewed({ granted: 1, free: 0, known: true, others, limitRecord, now: clock.now() } satisfies LeaseAnswer, { learner } as LeasePlan)
  }
  return { estimator, seats, lease, written, told, writers, warnings, limits, moves, learned, renewed, read: (text: string) => readLimit(text) }
}

/** A shared record as a learner writes it: `{ limit, knee, at }`, sealed for KEY unless told. */
function record(r: { limit: unknown; knee: unknown; at: unknown; run?: string; evidence?: string }, seal: RedisSeal | null = new RedisSeal(SECRET), key = KEY): string {
  const text = JSON.stringify(r)
  return seal ? seal.sealText(key, text) : text
}

describe('LearnedLimit', () => {
  it('names the run that wrote the shared record to the lease (one learner for every replica), and signs what it writes on starting to learn', () => {
    const clock = fakeClock()
    const { writers, written, renewed } = learnedLimit(clock, { seal: null })
    renewed(record({ limit: 12, knee: 10, at: clock.now(), run: 'r2' }, null), false)
    expect(writers).toEqual(['r2'])
    renewed(record({ limit: 12, knee: 10, at: clock.now(), run: 'r2' }, null), true)
    expect(JSON.parse(written.at(-1) as string)).toMatchObject({ limit: 12, run: 'r1' })
  })

  it('writes its record again every third of a lease while it learns, telling no one (it learns while it writes), and gives the others\' calls to its limit rule only then', () => {
    const clock = fakeClock()
    const { written, told, estimator, renewed } = learnedLimit(clock, { seal: null })
    const other = { run: 'r2', lease: 1, inFlight: 1, need: 1, answered: 1, waited: false, teams: [], calls: 'x' }
    renewed(record({ limit: 8, knee: 8, at: clock.now(), run: 'r1' }, null), true, [other])
    expect(written).toEqual([])
    clock.advance(1000)
    renewed(record({ limit: 8, knee: 8, at: clock.now() - 1000, run: 'r1' }, null), true, [other])
    expect(JSON.parse(written.at(-1) as string)).toMatchObject({ limit: 8, knee: 8, at: clock.now(), run: 'r1' })
    expect(told).toEqual([false])
    renewed(record({ limit: 8, knee: 8, at: clock.now(), run: 'r2' }, null), false, [other])
    expect(estimator.heardOf).toEqual([['r2'], ['r2'], null])
  })

  it('puts the limit rule\'s limit and knee in force at once', () => {
    const { seats, limits } = learnedLimit(fakeClock())
    expect(seats.limit).toBe(8)
    expect(limits).toEqual([[8, 8]])
  })

  it('on the replica that does not learn, adopts the sealed shared record each renewal carries', () => {
    const clock = fakeClock()
    const { seats, limits, estimator, renewed } = learnedLimit(clock)
    renewed(record({ limit: 12, knee: 10, at: clock.now() }), false)
    expect([seats.limit, estimator.limit, estimator.knee]).toEqual([12, 12, 10])
    expect(limits.at(-1)).toEqual([12, 10])
  })

  it('says with the record whether its start goes on (the lease keeps it the learner until the start ends), and reads that from a record', () => {
    const clock = fakeClock()
    const learner = learnedLimit(clock, { seal: null })
    learner.estimator.phase = 'start'
    learner.estimator.next = { limit: 16, knee: 8, move: 'grew' }
    learner.renewed(null, true)
    learner.learned.tick()
    expect(JSON.parse(learner.written.at(-1) as string)).toMatchObject({ limit: 16, knee: 8, starting: true })
    expect(learner.read(learner.written.at(-1) as string)).toMatchObject({ run: 'r1', starting: true })
    learner.estimator.phase = 'cruise'
    learner.estimator.next = { limit: 17, knee: 16, move: 'knee' }
    learner.learned.tick()
    expect(JSON.parse(learner.written.at(-1) as string)).not.toHaveProperty('starting')
    expect(learner.read(learner.written.at(-1) as string)).not.toHaveProperty('starting')
  })

  it.each([
    ['stale', (now: number) => record({ limit: 12, knee: 10, at: now - RECORD_MAX_AGE_MS - 1 })],
    ['dated ahead', (now: number) => record({ limit: 12, knee: 10, at: now + RECORD_MAX_AGE_MS / 10 + 1 })],
    ['sealed with another secret', (now: number) => record({ limit: 12, knee: 10, at: now }, new RedisSeal('another-secret-of-32-characters!!!'))],
    ['sealed for another key', (now: number) => record({ limit: 12, knee: 10, at: now }, new RedisSeal(SECRET), 'rgw:seats:{other}')],
    ['not sealed', (now: number) => record({ limit: 12, knee: 10, at: now }, null)],
    ['sealed but no record', () => new RedisSeal(SECRET).sealText(KEY, 'not json')],
    ['a limit that is no whole number', (now: number) => record({ limit: 12.5, knee: 10, at: now })],
    ['a knee of 0', (now: number) => record({ limit: 12, knee: 0, at: now })],
    ['no date', () => record({ limit: 12, knee: 10, at: null })],
  ])('ignores a shared record %s, keeping its own limit, and warns once', (_what, make) => {
    const clock = fakeClock()
    const { seats, warnings, renewed } = learnedLimit(clock)
    renewed(make(clock.now()), false)
    renewed(make(clock.now()), false)
    expect(seats.limit).toBe(8)
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toMatch(/ignoring a shared platform limit/)
  })

  it('takes a record dated within its bounds: as old as RECORD_MAX_AGE_MS, or a tenth of it ahead (clocks differ)', () => {
    const clock = fakeClock()
    const { seats, renewed } = learnedLimit(clock)
    renewed(record({ limit: 12, knee: 12, at: clock.now() - RECORD_MAX_AGE_MS }), false)
    expect(seats.limit).toBe(12)
    renewed(record({ limit: 16, knee: 16, at: clock.now() + RECORD_MAX_AGE_MS / 10 }), false)
    expect(seats.limit).toBe(16)
  })

  it('warns again of a bad record after a good one came between', () => {
    const clock = fakeClock()
    const { warnings, renewed } = learnedLimit(clock)
    renewed(record({ limit: 12, knee: 10, at: 0 }), false)
    renewed(record({ limit: 12, knee: 10, at: clock.now() }), false)
    renewed(record({ limit: 12, knee: 10, at: 0 }), false)
    expect(warnings).toHaveLength(2)
  })

  it('moves its limit and knee by ADOPT_MAX_FACTOR at most on one record, up or down', () => {
    const clock = fakeClock()
    const { seats, estimator, renewed } = learnedLimit(clock)
    renewed(record({ limit: 64, knee: 60, at: clock.now() }), false)
    expect([seats.limit, estimator.knee]).toEqual([8 * ADOPT_MAX_FACTOR, 8 * ADOPT_MAX_FACTOR])
    renewed(record({ limit: 1, knee: 1, at: clock.now() }), false)
    expect([seats.limit, estimator.knee]).toEqual([8, 8])
  })

  it('takes a record without a seal when no GATEWAY_SECRET seals them', () => {
    const clock = fakeClock()
    const { seats, renewed } = learnedLimit(clock, { seal: null })
    renewed(record({ limit: 12, knee: 10, at: clock.now() }, null), false)
    expect(seats.limit).toBe(12)
  })

  it('on the replica that learns, ignores the shared record (its own), but starts from it when it starts learning', () => {
    const clock = fakeClock()
    const { seats, renewed } = learnedLimit(clock)
    renewed(record({ limit: 12, knee: 10, at: clock.now() }), true)
    expect(seats.limit).toBe(8)
    renewed(record({ limit: 12, knee: 10, at: clock.now() }), false)
    expect(seats.limit).toBe(12)
    renewed(record({ limit: 20, knee: 16, at: clock.now() }), true)
    expect(seats.limit).toBe(20)
    renewed(record({ limit: 30, knee: 30, at: clock.now() }), true)
    expect(seats.limit).toBe(20)
  })

  it('tells the limit rule each time this replica starts learning, after taking the shared limit, not at each renewal while it learns', () => {
    const clock = fakeClock()
    const { estimator, renewed } = learnedLimit(clock)
    renewed(null, true)
    expect(estimator.learningStarts).toBe(0)
    renewed(null, false)
    renewed(null, true)
    renewed(null, true)
    expect(estimator.learningStarts).toBe(1)
    renewed(null, false)
    const adopted: number[] = []
    estimator.startLearning = () => void adopted.push(estimator.limit)
    renewed(record({ limit: 20, knee: 16, at: clock.now() }), true)
    expect(adopted).toEqual([20])
  })

  // docs/governor.md, "Across replicas the learner weighs every replica's calls": a replica
  // that takes over starts from the evidence the learner before it wrote.
  it('writes its limit rule\'s evidence with the record, and gives the record\'s evidence to its limit rule as it starts learning', () => {
    const clock = fakeClock()
    const { estimator, written, renewed } = learnedLimit(clock, { seal: null })
    const carried: (string | null)[] = []
    estimator.startLearning = (_now: number, evidence: string | null = null) => void carried.push(evidence)
    estimator.evidence = () => '5;0,12'
    renewed(record({ limit: 12, knee: 10, at: clock.now(), run: 'r2', evidence: '3;4,0' }, null), false)
    renewed(record({ limit: 12, knee: 10, at: clock.now(), run: 'r2', evidence: '3;4,0' }, null), true)
    expect(carried).toEqual(['3;4,0'])
    expect(JSON.parse(written.at(-1) as string)).toMatchObject({ limit: 12, run: 'r1', evidence: '5;0,12' })
  })

  it('runs the limit rule on the replica that learns only, and writes each move sealed and dated with the next renewal', () => {
    const clock = fakeClock()
    const { estimator, seats, written, moves, learned, renewed } = learnedLimit(clock)
    learned.start()
    estimator.next = { limit: 10, knee: 9, move: 'grew' }
    clock.advance(TICK_MS)
    expect(seats.limit).toBe(10)
    expect(moves).toEqual([['grew', 8, 10]])
    expect(written).toHaveLength(1)
    expect(JSON.parse(new RedisSeal(SECRET).openText(KEY, written[0] as string) as string)).toEqual({ limit: 10, knee: 9, at: clock.now(), run: 'r1' })
    // Another replica takes it from its renewal.
    const other = learnedLimit(clock)
    other.renewed(written[0] as string, false)
    expect(other.seats.limit).toBe(10)
    // No longer the learner: the rule stands still.
    renewed(null, false)
    const ticks = estimator.ticks
    clock.advance(10 * TICK_MS)
    learned.paused()
    expect([estimator.ticks, estimator.pauses]).toEqual([ticks, 0])
    // Its fault watch's second rolls on unjudged (knee-estimator.ts `follows`).
    expect(estimator.followTicks).toBe(10)
    learned.stop()
  })

  it("dates the record on the store's clock and reads another's on its own (docs/governor.md, \"The clock\")", () => {
    const clock = fakeClock()
    const { estimator, written, learned, lease } = learnedLimit(clock)
    // This replica's clock 40 s behind the store's: past RECORD_MAX_AGE_MS / 10, a record dated ahead on a clock.
    lease.offsetMs = 40_000
    learned.start()
    estimator.next = { limit: 10, knee: 9, move: 'grew' }
    clock.advance(TICK_MS)
    expect(JSON.parse(new RedisSeal(SECRET).openText(KEY, written[0] as string) as string)).toMatchObject({ at: clock.now() + 40_000 })
    // A replica as far behind the store's clock takes it as written now; one on the store's clock refuses it, dated 40 s ahead.
    const behind = learnedLimit(clock)
    behind.lease.offsetMs = 40_000
    behind.renewed(written[0] as string, false)
    expect([behind.seats.limit, behind.warnings]).toEqual([10, []])
    const onTime = learnedLimit(clock)
    onTime.renewed(written[0] as string, false)
    expect(onTime.seats.limit).toBe(8)
    expect(onTime.warnings).toEqual([expect.stringContaining('stale or dated ahead')])
    learned.stop()
  })

  it('on the replica that learns, writes over a record another run wrote (one that learned for a moment), at most once a REWRITE_MS', () => {
    const clock = fakeClock()
    const { estimator, written, learned, renewed } = learnedLimit(clock, { seal: null })
    estimator.next = { limit: 30, knee: 29, move: 'grew' }
    learned.tick()
    renewed(written[0] as string, true)
    expect(written).toHaveLength(1)
    // A replica that learned while a store stall ended wrote its own, lower one.
    renewed(record({ limit: 3, knee: 29, at: clock.now(), run: 'r2' }, null), true)
    expect(written).toHaveLength(2)
    expect(JSON.parse(written[1] as string)).toMatchObject({ limit: 30, knee: 29, run: 'r1' })
    renewed(record({ limit: 3, knee: 29, at: clock.now(), run: 'r2' }, null), true)
    expect(written).toHaveLength(2)
    clock.advance(REWRITE_MS)
    renewed(record({ limit: 3, knee: 29, at: clock.now(), run: 'r2' }, null), true)
    expect(written).toHaveLength(3)
  })

  it('writes its record again when the store lost it (a Redis restart, a flush)', () => {
    const clock = fakeClock()
    const { estimator, written, learned, renewed } = learnedLimit(clock)
    estimator.next = { limit: 10, knee: 9, move: 'grew' }
    learned.tick()
    renewed(written[0] as string, true)
    expect(written).toHaveLength(1)
    renewed(null, true)
    expect(written).toEqual([written[0], written[0]])
  })

  it('writes the limit in force dated now when the store lost the record and it learns again long after its last write: never its old record, which the others would refuse as stale', () => {
    const clock = fakeClock()
    const { estimator, written, learned, renewed } = learnedLimit(clock)
    estimator.next = { limit: 10, knee: 9, move: 'grew' }
    learned.tick()
    renewed(written[0] as string, true)
    // Another replica learns for longer than a record may be old; then Redis is emptied and this one learns again.
    renewed(record({ limit: 10, knee: 9, at: clock.now(), run: 'r2' }), false)
    clock.advance(RECORD_MAX_AGE_MS + 60_000)
    const before = written.length
    renewed(null, true)
    const after = written.slice(before).map((sealed) => JSON.parse(new RedisSeal(SECRET).openText(KEY, sealed) as string) as { at: number; limit: number })
    expect(after.length).toBeGreaterThan(0)
    expect(after.every((r) => r.at === clock.now() && r.limit === 10)).toBe(true)
  })

  it('tells the limit rule that calls waited at the limit, here or on another replica, and of a credential pause', () => {
    const clock = fakeClock()
    const { estimator, lease, learned } = learnedLimit(clock)
    learned.tick()
    expect(estimator.waits).toBe(0)
    lease.waiting = true
    learned.tick()
    expect(estimator.waits).toBe(1)
    learned.paused()
    expect(estimator.pauses).toBe(1)
  })

  it('alone (no lease across replicas), moves the limit and writes nothing', () => {
    const clock = fakeClock()
    const { estimator, seats, written, learned } = learnedLimit(clock, { lease: false })
    estimator.next = { limit: 4, knee: 4, move: 'queue' }
    learned.tick()
    expect([seats.limit, written]).toEqual([4, []])
  })
})
