import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { CallGovernor, type CallClass, type Release } from '../../src/platform/governor/call-governor.js'
import { ProvenLevel, platformLoad, type LongCallLimits, type ShortAnswer } from '../../src/platform/governor/long-calls.js'
import { LearnedLimit } from '../../src/platform/governor/learned-limit.js'
import { LimitEstimator } from '../../src/platform/governor/limit-estimator.js'
import { fakeClock, type FakeClock } from '../helpers/clock.js'

// Long calls follow the learned limit only to the level the platform carried: a long call
// started past the platform's workers holds a worker the short calls behind it queue for.

describe('ProvenLevel', () => {
  it('rises to the most calls in flight of a window at the floor, not while a knee is held', () => {
    const level = new ProvenLevel(8)
    level.atFloor(12, false)
    expect(level.level).toBe(12)
    level.atFloor(15, true)
    expect(level.level).toBe(12)
    level.atFloor(10, false)
    expect(level.level).toBe(12)
  })

  it('goes two below the peak that left the buffer past the last one at the floor; a fault at a carried peak leaves it', () => {
    const level = new ProvenLevel(8)
    level.atFloor(16, false)
    expect(level.pastBuffer(18, 2)).toBe(true)
    expect(level.level).toBe(16)
    level.atFloor(17, false)
    expect(level.level).toBe(17)
    expect(level.pastBuffer(18, 2)).toBe(true)
    expect(level.level).toBe(16)
    // The platform slowed at a peak it carried: the limit answers that, not the level.
    level.atFloor(17, true)
    expect(level.pastBuffer(17, 2)).toBe(false)
    expect(level.level).toBe(16)
    expect(new ProvenLevel(3).pastBuffer(40, 2)).toBe(false)
  })

  it('falls to what the platform served while a call or more queued there on average, never below the minimum, and never rises so', () => {
    const level = new ProvenLevel(8)
    level.atFloor(17, false)
    expect(level.served({ queued: 0.9, served: 16.1 }, 2)).toBe(false)
    expect(level.level).toBe(17)
    expect(level.served({ queued: 1.9, served: 16.4 }, 2)).toBe(true)
    expect(level.level).toBe(16)
    expect(level.served({ queued: 3, served: 19 }, 2)).toBe(false)
    expect(level.level).toBe(16)
    expect(level.served({ queued: 3, served: 0.2 }, 2)).toBe(true)
    expect(level.level).toBe(2)
  })

  it('lets long calls one call past the level beside short ones and its headroom alone, never past the limit', () => {
    const level = new ProvenLevel(16)
    expect(level.limits(64)).toEqual({ beside: 17, alone: 20 })
    expect(level.limits(18)).toEqual({ beside: 17, alone: 18 })
    expect(new ProvenLevel(1).limits(64)).toEqual({ beside: 2, alone: 2 })
  })
})

describe('platformLoad', () => {
  const answer = (team: string, latencyMs: number, teamInFlight: number, inFlight = 18): ShortAnswer => ({ team, latencyMs, floorMs: 100, inFlight, teamInFlight })

  it('counts the calls queued at the platform by Little\'s law over the short answers, and the calls it served', () => {
    // Eight callers on six workers: each answer takes 8/6 of its floor; two calls queue.
    const load = platformLoad(Array.from({ length: 12 }, () => answer('week', 400 / 3, 8)), 8)
    expect(load?.queued).toBeCloseTo(2)
    expect(load?.served).toBeCloseTo(16)
    // At their floors nothing queues, and every call in flight is served.
    expect(platformLoad(Array.from({ length: 12 }, () => answer('week', 100, 8, 12)), 8)).toEqual({ queued: 0, served: 12 })
  })

  it('takes the wait every team saw: one team\'s own slow answers are no queue at the platform for the others', () => {
    const slowOwn = Array.from({ length: 6 }, () => answer('slow', 200, 4))
    const prompt = Array.from({ length: 6 }, () => answer('b', 100, 4))
    expect(platformLoad([...slowOwn, ...prompt], 8)).toEqual({ queued: 0, served: 18 })
    // A queue delays both teams' calls: counted over both teams' calls in flight.
    const queued = platformLoad([...Array.from({ length: 6 }, () => answer('a', 250, 4)), ...Array.from({ length: 6 }, () => answer('b', 125, 4))], 8)
    expect(queued?.queued).toBeCloseTo(8 * 0.2)
  })

  it('counts the wait over every team\'s calls in flight, and says nothing from fewer answers than asked', () => {
    const answers = [...Array.from({ length: 6 }, () => answer('a', 125, 4)), ...Array.from({ length: 6 }, () => answer('b', 200, 2))]
    expect(platformLoad(answers, 8)?.queued).toBeCloseTo((4 + 2) * 0.2)
    expect(platformLoad(answers.slice(0, 7), 8)).toBeNull()
  })
})

/** A governor of `limit` seats whose teams' calls are long past 1 s of seat-time. */
function longAware(clock: FakeClock, limit: number): CallGovernor {
  return new CallGovernor({ credential: 'default', maxConcurrent: limit, queueLimit: 100, queueTimeoutMs: 60_000, log: pino({ level: 'silent' }), clock, longCallMs: 1000 })
}

/** Starts `n` calls of `team` (each waiting as `how` says) now and keeps their releases, in the order they start. */
function calls(g: CallGovernor, team: string, n: number, how: CallClass = {}): Release[] {
  const held: Release[] = []
  for (let i = 0; i < n; i++) void g.acquire(team, undefined, Infinity, how).then(({ release }) => held.push(release))
  return held
}

const settle = () => new Promise((resolve) => setImmediate(resolve))

/** Makes `team` a team of long calls: one call of `ms` run and ended, twice. */
async function teachLong(g: CallGovernor, clock: FakeClock, team: string, ms: number): Promise<void> {
  for (let i = 0; i < 2; i++) {
    const { release } = await g.acquire(team)
    clock.advance(ms)
    release()
  }
}

/** A governor of 32 seats with the long calls' `limits`, whose team `team` held seats `ms` a call. */
async function withLongTeam(limits: LongCallLimits, team: string, ms: number): Promise<{ clock: FakeClock; g: CallGovernor }> {
  const clock = fakeClock()
  const g = longAware(clock, 32)
  g.setLongCallLimits(limits)
  await teachLong(g, clock, team, ms)
  return { clock, g }
}

describe('CallGovernor: long calls beside short ones', () => {
  it('holds a team of long calls to the long calls\' limit while short calls hold seats, and to the alone one without them', async () => {
    const { clock, g } = await withLongTeam({ beside: 17, alone: 20 }, 'year', 4400)
    const year = calls(g, 'year', 40)
    await settle()
    // Alone, the long team takes the alone limit, not the whole of the learned one.
    expect(g.running('year')).toBe(20)
    expect(g.longCallLimit).toBe(20)
    clock.advance(4400)
    const week = calls(g, 'week', 8)
    await settle()
    // Short calls take the seats the limit has past the long calls.
    expect(g.running('week')).toBe(8)
    for (const release of year.splice(0, 11)) release()
    await settle()
    // Beside short calls, long ones start only while fewer than 17 are in flight.
    expect(g.longCallLimit).toBe(17)
    expect(g.running('year')).toBe(9)
    expect(g.inFlight).toBe(17)
    for (const release of week) release()
    await settle()
    // A short caller's seat is kept for it a moment: no long call takes it meanwhile.
    expect(g.running('year')).toBe(9)
    // Once no short caller comes back, the long team takes the alone limit again.
    clock.advance(60)
    await settle()
    expect(g.running('year')).toBe(20)
  })

  it('takes a short caller back into the seat kept for it: seats kept do not pile up as its callers come and go', async () => {
    const { clock, g } = await withLongTeam({ beside: 6, alone: 6 }, 'year', 4400)
    // Two short callers, each asking again as soon as it has its answer, 50 times.
    for (let i = 0; i < 50; i++) {
      const slots = await Promise.all([g.acquire('week'), g.acquire('week')])
      clock.advance(10)
      for (const slot of slots) slot.release()
    }
    void g.acquire('week')
    void g.acquire('week')
    calls(g, 'year', 10)
    await settle()
    // Two short calls in flight: four long ones fit under six.
    expect(g.running('week')).toBe(2)
    expect(g.running('year')).toBe(4)
  })

  it('lets a team whose calls\' length is unknown (none has ended, their kind has no floor) probe with the limit in force when it came: seats the limit grows meanwhile wait for its first call to end and say how long they hold', async () => {
    const clock = fakeClock()
    const g = longAware(clock, 64)
    g.setLimit(17)
    g.setLongCallLimits({ beside: 18, alone: 21 })
    calls(g, 'week', 8, { expectedMs: 124 })
    await settle()
    // A new team's year-long reports: nothing says yet that they are long.
    const year = calls(g, 'year', 24)
    await settle()
    expect(g.running('year')).toBe(9)
    // The limit grows while they run: its new seats are not theirs to take.
    g.setLimit(21)
    await settle()
    expect(g.running('year')).toBe(9)
    // Calls whose length is known take them.
    calls(g, 'week', 2, { expectedMs: 124 })
    await settle()
    expect(g.running('week')).toBe(10)
    // Its first call ends after 4.4 s: its calls are long from that one answer, and follow the long calls' limit.
    clock.advance(4400)
    ;(year[0] as Release)()
    await settle()
    expect(g.running('year')).toBe(8)
    expect(g.inFlight).toBe(18)
  })

  it('keeps the seats of short callers on their way back while one of them waits, and counts short calls waiting within their share: long calls and calls of unknown length take neither', async () => {
    const clock = fakeClock()
    const g = longAware(clock, 64)
    g.setLimit(17)
    g.setLongCallLimits({ beside: 18, alone: 21 })
    const week = calls(g, 'week', 8, { expectedMs: 124 })
    await settle()
    calls(g, 'year', 24)
    await settle()
    expect(g.running('year')).toBe(9)
    // Six week-long answers come back; their callers ask again one after another.
    for (const release of week.splice(0, 6)) release()
    await settle()
    calls(g, 'week', 1, { expectedMs: 124 })
    await settle()
    // One of them waits for nothing (a seat is free): the five still on their way keep theirs.
    expect(g.running('week')).toBe(3)
    expect(g.seatsKept('week')).toBe(5)
    expect(g.running('year')).toBe(9)
    // A cut leaves no seat free as the other five come back; they wait for the seats they gave back.
    g.setLimit(12)
    calls(g, 'week', 5, { expectedMs: 124 })
    await settle()
    expect(g.running('week')).toBe(3)
    // The limit grows: the short calls waiting within their share take it first.
    g.setLimit(21)
    await settle()
    expect(g.running('week')).toBe(8)
    expect(g.running('year')).toBe(9)
    expect(g.inFlight).toBe(17)
  })

  it('counts a call long by the floor of its own kind when one is known, not by its team\'s mean: year-long reports between cheap ones follow the level, a week queued at the platform does not', async () => {
    // The dashboard's week-long calls waited behind year-long ones at the platform: its seat-time says long.
    const { g } = await withLongTeam({ beside: 17, alone: 20 }, 'week', 1500)
    // The mixed team's cheap calls make its mean short.
    for (let i = 0; i < 20; i++) (await g.acquire('mixed')).release()
    const week = calls(g, 'week', 8, { expectedMs: 124 })
    await settle()
    expect(g.running('week')).toBe(8)
    calls(g, 'mixed', 20, { expectedMs: 4400 })
    await settle()
    // Beside the week's short calls, the year-long ones start only while fewer than 17 are in flight.
    expect(g.running('mixed')).toBe(9)
    // Its cheap calls are short, and start past the long ones' limit while the limit has seats.
    calls(g, 'cheap', 3, { expectedMs: 5 })
    await settle()
    expect(g.running('cheap')).toBe(3)
    for (const release of week) release()
  })
})

/** A governor of 64 seats whose limit a LearnedLimit learns (windows of 1 s), started. */
async function learning(): Promise<{ clock: FakeClock; g: CallGovernor; learned: LearnedLimit }> {
  const clock = fakeClock()
  const g = longAware(clock, 64)
  const estimator = new LimitEstimator({ initial: 8, min: 2, max: 64 })
  const learned = new LearnedLimit({ credential: 'default', governor: g, estimator, windowMs: 1000, shared: null, log: pino({ level: 'silent' }), onLimit: () => undefined, onChange: () => undefined, clock })
  await learned.start()
  return { clock, g, learned }
}

describe('LearnedLimit: a window judged as its last answer comes', () => {
  it('moves the long calls\' limit before the answering calls\' seats are handed on, not at the next look', async () => {
    const { clock, g, learned } = await learning()
    await teachLong(g, clock, 'year', 4400)
    clock.advance(60)
    const week = calls(g, 'week', 16)
    await settle()
    expect(g.inFlight).toBe(8)
    // The window's first answers: the floor of a week's report, with the limit full.
    clock.advance(900)
    for (let i = 0; i < 7; i++) learned.record({ url: '/api/v1/report/campaigns/get', team: 'week', latencyMs: 100, inFlight: 8, outcome: 'ok' })
    clock.advance(200)
    const before = g.longCallLimit
    // The answer that makes the window's eighth comes between two looks (every 250 ms).
    learned.record({ url: '/api/v1/report/campaigns/get', team: 'week', latencyMs: 100, inFlight: 8, outcome: 'ok' })
    expect(g.limit).toBeGreaterThan(8)
    expect(g.longCallLimit).toBeGreaterThan(before)
    for (const release of week) release()
    learned.stop()
  })

  it('knows how long a kind of call takes from its team\'s own answers: the floor a call is counted long or short by', async () => {
    const { clock, learned } = await learning()
    const year = { url: '/api/v1/report/campaigns/get?dateFrom=2025-01-01', team: 'mixed', workClass: 'report|r9' }
    expect(learned.expectedMs(year)).toBeNull()
    clock.advance(100)
    for (let i = 0; i < 8; i++) learned.record({ ...year, latencyMs: 4400, inFlight: 8, outcome: 'ok' })
    // The window closes (looked at every 250 ms) and the floors move with it.
    clock.advance(2000)
    await settle()
    expect(learned.expectedMs(year)).toBeCloseTo(4400, -2)
    // Another team's answers set no floor of its: the same work asked by a team never seen is unknown.
    expect(learned.expectedMs({ ...year, team: 'new' })).toBeNull()
    expect(learned.expectedMs({ ...year, workClass: 'report|r3' })).toBeNull()
    learned.stop()
  })
})
